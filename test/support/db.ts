import { ConfigProvider, type Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { AdminLive } from "../../src/admin/cli.ts"
import { EventsRepo } from "../../src/repos/EventsRepo.ts"

/**
 * The test process's own connection to the server's database (the embedded one through its socket, or
 * PostgreSQL), with the real repositories: test data is written through them, never through mocks.
 */
export const testDatabase = (env: Record<string, string>) => {
  // The admin tool's own layer (repositories, database, config), plus the events repository.
  const layer = EventsRepo.Default.pipe(
    Layer.provideMerge(AdminLive),
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
