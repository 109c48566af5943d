import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schedule, String as Str } from "effect"
import { AppConfig } from "../config.ts"
import { embeddedDatabase } from "./embedded.ts"

/** Column names are snake_case in SQL and camelCase in TypeScript; the client translates both ways. */
const naming = { transformResultNames: Str.snakeToCamel, transformQueryNames: Str.camelToSnake } as const

const embeddedClient = (dataDir: string) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const endpoint = yield* embeddedDatabase(dataDir)
      yield* Effect.logInfo(
        endpoint.hosted
          ? `embedded database: ${dataDir}/pgdata, served on ${endpoint.socketDir}/.s.PGSQL.${endpoint.port}`
          : `embedded database: connected to the process that hosts ${dataDir}`,
      )
      return PgClient.layer({
        host: endpoint.socketDir,
        port: endpoint.port,
        database: "postgres",
        username: "postgres",
        // PGlite runs one statement at a time; a few connections only let transactions wait their turn.
        maxConnections: 4,
        ...naming,
      })
    }),
  ).pipe(
    // The process that hosted the database may have just exited (a finished admin command): try again, and
    // this process takes over hosting.
    Layer.retry(Schedule.intersect(Schedule.recurs(20), Schedule.spaced("250 millis"))),
  )

/**
 * The one SQL client of the service: PostgreSQL when DATABASE_URL is set, otherwise the embedded PGlite
 * reached through the same `pg` driver over its Unix socket.
 */
export const DatabaseLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.isSome(config.databaseUrl)
      ? PgClient.layer({ url: config.databaseUrl.value, maxConnections: 20, ...naming })
      : embeddedClient(config.dataDir),
  ),
)

/**
 * The server's database layer: a PostgreSQL still starting (a container started alongside it) is waited for, about
 * 45 s, with a warning per try; after that start-up fails and the supervisor's restart policy takes over. The admin
 * tool uses DatabaseLive and fails at once instead.
 */
export const DatabaseLiveWaiting = DatabaseLive.pipe(
  Layer.tapError(() => Effect.logWarning("database not reachable yet; retrying")),
  Layer.retry(
    Schedule.intersect(
      Schedule.recurs(15),
      Schedule.union(Schedule.exponential("250 millis", 1.5), Schedule.spaced("5 seconds")),
    ),
  ),
)
