import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
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

/**
 * Waits until every writing transaction that began before this call has ended, on the whole server. A change feed
 * shows a change only once every older writing transaction of its server has ended (it never moves past a change
 * that might still commit), so a test that reads a feed right after writing waits here first: on a server shared
 * with other test workers, their transactions (copying a database, a bulk insert) hold the feed back for a moment.
 */
export const olderWritersEnded = (db: TestDatabase) =>
  db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [mark] = yield* sql<{ xid: string }>`select pg_current_xact_id()::text as xid`
      for (let tries = 0; tries < 1500; tries++) {
        const [row] = yield* sql<{ passed: boolean }>`
          select pg_snapshot_xmin(pg_current_snapshot()) > ${mark?.xid ?? "0"}::xid8 as passed`
        if (row?.passed === true) return
        yield* Effect.sleep("20 millis")
      }
      return yield* Effect.die(new Error("older writing transactions did not end within 30 s"))
    }),
  )
