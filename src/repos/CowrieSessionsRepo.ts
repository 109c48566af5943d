import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { CowrieSession } from "../ingest/formats/cowrie.ts"
import { dbErrors } from "./errors.ts"

const Port = Schema.Int.pipe(Schema.between(0, 65535))

const CowrieSessionRow = Schema.Struct({
  session: Schema.String,
  protocol: Schema.Literal("ssh", "telnet"),
  sourcePort: Port,
  port: Port,
})

const NewCowrieSession = Schema.Struct({
  orgId: Schema.String,
  sensorId: Schema.String,
  ...CowrieSessionRow.fields,
  createdAt: Schema.DateFromSelf,
})

/**
 * D22: the connects of Cowrie sessions (protocol and ports, which only `cowrie.session.connect` carries), by
 * (sensor, session), so a session's later lines that arrive in another request map to the right types and ports.
 * Every query but the prune takes the organization and filters on it.
 */
export class CowrieSessionsRepo extends Effect.Service<CowrieSessionsRepo>()("CowrieSessionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findAll({
      Request: Schema.Struct({
        orgId: Schema.String,
        sensorId: Schema.String,
        sessions: Schema.NonEmptyArray(Schema.String),
      }),
      Result: CowrieSessionRow,
      execute: ({ orgId, sensorId, sessions }) => sql`
        select session, protocol, source_port, port from cowrie_sessions
        where org_id = ${orgId} and sensor_id = ${sensorId} and session in ${sql.in(sessions)}`,
    })

    const insert = SqlSchema.void({
      Request: Schema.NonEmptyArray(NewCowrieSession),
      execute: (rows) =>
        sql`insert into cowrie_sessions ${sql.insert(rows)} on conflict (sensor_id, session) do nothing`,
    })

    const prune = SqlSchema.single({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ deleted: Schema.Int }),
      execute: (cutoff) => sql`
        with gone as (delete from cowrie_sessions where created_at < ${cutoff} returning 1)
        select count(*)::int as deleted from gone`,
    })

    return {
      /** The remembered sessions among `sessions` of this sensor, by session id. */
      find: (orgId: string, sensorId: string, sessions: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const found = new Map<string, CowrieSession>()
          const [first, ...rest] = sessions
          if (first === undefined) return found
          for (const row of yield* find({ orgId, sensorId, sessions: [first, ...rest] })) {
            found.set(row.session, { protocol: row.protocol, sourcePort: row.sourcePort, port: row.port })
          }
          return found
        }).pipe(dbErrors),
      /**
       * Remembers these sessions' connects; a session already remembered keeps its first record. Rows go in session
       * order, so two concurrent requests with the same sessions wait for each other instead of deadlocking.
       */
      remember: (orgId: string, sensorId: string, connects: ReadonlyMap<string, CowrieSession>, createdAt: Date) => {
        const rows = [...connects]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([session, c]) => ({ orgId, sensorId, session, ...c, createdAt }))
        const [first, ...rest] = rows
        return first === undefined ? Effect.void : insert([first, ...rest]).pipe(dbErrors)
      },
      /**
       * Deletes every remembered session created before `cutoff`, of all organizations (maintenance); returns how
       * many. A later line of a pruned session maps with the defaults (ssh, source port 0, the type's port).
       */
      pruneOlderThan: (cutoff: Date) =>
        prune(cutoff).pipe(
          Effect.map((r) => r.deleted),
          Effect.catchTag("NoSuchElementException", () => Effect.succeed(0)),
          dbErrors,
        ),
    } as const
  }),
}) {}
