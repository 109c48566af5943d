import { ConfigProvider, type Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { AdminServicesLive } from "../../src/admin/layer.ts"
import { AppConfigLive } from "../../src/platform/config.ts"
import { DatabaseLive } from "../../src/platform/db/client.ts"
import { Keys } from "../../src/platform/keys.ts"
import { ChannelSender } from "../../src/platform/outbound/ChannelSender.ts"
import { ReposLive } from "../../src/repos/layers.ts"

/**
 * The test process's own connection to the server's database (the embedded one through its socket, or
 * PostgreSQL), with the real repositories: test data is written through them, never through mocks.
 */
export const testDatabase = (env: Record<string, string>) => {
  // The admin services with every repository, on one database client, as the admin CLI wires them.
  const layer = AdminServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(ReposLive, ChannelSender.Default)),
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(Keys.Default),
    Layer.provideMerge(AppConfigLive),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)),
  )
  const runtime = ManagedRuntime.make(layer)
  return {
    run: <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>) => runtime.runPromise(effect),
    close: () => runtime.dispose(),
  }
}
export type TestDatabase = ReturnType<typeof testDatabase>
