import type { SqlClient } from "@effect/sql"
import { SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Schema } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import { Confidence, Severity } from "../domain/severity.ts"
import { dbErrors } from "./errors.ts"

export const EventRow = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  incidentId: Schema.String,
  sensorId: Schema.String,
  sensorName: Schema.String,
  sensorEventId: Schema.String,
  time: Schema.DateFromSelf,
  sourceIp: Schema.String,
  sourcePort: Schema.Int,
  service: Schema.String,
  port: Schema.Int,
  type: Schema.String,
  action: Schema.String,
  severity: Severity,
  confidence: Confidence,
  tags: Schema.Array(Schema.String),
  summary: Schema.String,
  attackerInput: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
})
export type EventRow = typeof EventRow.Type
export type NewEvent = Omit<EventRow, "sensorName">

export interface EventFilters {
  readonly sensorId?: string | undefined
  readonly severity?: Severity | undefined
  readonly type?: string | undefined
  readonly sourceIp?: string | undefined
  readonly incidentId?: string | undefined
  /** Inclusive lower bound of `time` (D6). */
  readonly from?: Date | undefined
  /** Exclusive upper bound of `time` (D6). */
  readonly to?: Date | undefined
}

export interface EventListQuery {
  readonly orgId: string
  readonly filters: EventFilters
  readonly after: CursorPosition | undefined
  readonly fetch: number
}

const columns = (sql: SqlClient.SqlClient) => sql`
  e.id, e.org_id, e.incident_id, e.sensor_id, s.name as sensor_name, e.sensor_event_id, e.time, e.source_ip,
  e.source_port, e.service, e.port, e.type, e.action, e.severity, e.confidence, e.tags, e.summary, e.attacker_input`

/** Events. Every query takes the organization id and filters on it in SQL. */
export class EventsRepo extends Effect.Service<EventsRepo>()("EventsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient

    // D7: keyset paging on (time desc, id desc); each filter has an index led by (org_id, filter).
    const list = SqlSchema.findAll({
      Request: Schema.Any as Schema.Schema<EventListQuery>,
      Result: EventRow,
      execute: ({ orgId, filters: f, after, fetch }) => sql`
        select ${columns(sql)}
        from events e join sensors s on s.id = e.sensor_id
        where ${sql.and([
          sql`e.org_id = ${orgId}`,
          ...(f.sensorId !== undefined ? [sql`e.sensor_id = ${f.sensorId}`] : []),
          ...(f.severity !== undefined ? [sql`e.severity = ${f.severity}`] : []),
          ...(f.type !== undefined ? [sql`e.type = ${f.type}`] : []),
          ...(f.sourceIp !== undefined ? [sql`e.source_ip = ${f.sourceIp}`] : []),
          ...(f.incidentId !== undefined ? [sql`e.incident_id = ${f.incidentId}`] : []),
          ...(f.from !== undefined ? [sql`e.time >= ${f.from}`] : []),
          ...(f.to !== undefined ? [sql`e.time < ${f.to}`] : []),
          ...(after ? [sql`(e.time, e.id) < (${after.time}, ${after.id})`] : []),
        ])}
        order by e.time desc, e.id desc
        limit ${fetch}`,
    })

    const findById = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, id: Schema.String }),
      Result: EventRow,
      execute: ({ orgId, id }) => sql`
        select ${columns(sql)} from events e join sensors s on s.id = e.sensor_id
        where e.org_id = ${orgId} and e.id = ${id}`,
    })

    // Member events in time order (events_incident_idx): oldest first for D8's first 200, newest first for the
    // webhook payload's most recent 20.
    const members = SqlSchema.findAll({
      Request: Schema.Struct({
        orgId: Schema.String,
        incidentId: Schema.String,
        limit: Schema.Int,
        newestFirst: Schema.Boolean,
      }),
      Result: EventRow,
      execute: ({ orgId, incidentId, limit, newestFirst }) => sql`
        select ${columns(sql)} from events e join sensors s on s.id = e.sensor_id
        where e.incident_id = ${incidentId} and e.org_id = ${orgId}
        ${newestFirst ? sql`order by e.time desc, e.id desc` : sql`order by e.time asc, e.id asc`}
        limit ${limit}`,
    })

    return {
      list: (q: EventListQuery) => list(q).pipe(dbErrors),
      /** The most recent member events, newest first (webhooks). */
      recent: (orgId: string, incidentId: string, limit: number) =>
        members({ orgId, incidentId, limit, newestFirst: true }).pipe(dbErrors),
      findById: (orgId: string, id: string) => findById({ orgId, id }).pipe(dbErrors),
      members: (orgId: string, incidentId: string, limit: number) =>
        members({ orgId, incidentId, limit, newestFirst: false }).pipe(dbErrors),
      /** The sensor event ids of this sensor already stored (D22 duplicates). */
      existingSensorEventIds: (sensorId: string, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed([])
          : SqlSchema.findAll({
              Request: Schema.Void,
              Result: Schema.Struct({ id: Schema.String, sensorEventId: Schema.String }),
              execute: () =>
                sql`select id, sensor_event_id from events where sensor_id = ${sensorId} and sensor_event_id in ${sql.in(ids)}`,
            })(undefined).pipe(dbErrors),
      /** One multi-row insert; a concurrent duplicate is skipped, and what was written is returned. */
      insertMany: (rows: ReadonlyArray<NewEvent>, receivedAt: Date) =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: Schema.Struct({ id: Schema.String, sensorEventId: Schema.String }),
          execute: () => sql`
            insert into events ${sql.insert(
              rows.map((row) => ({
                ...row,
                tags: [...row.tags],
                attackerInput: sql.json(row.attackerInput),
                receivedAt,
              })),
            )}
            on conflict (sensor_id, sensor_event_id) do nothing
            returning id, sensor_event_id`,
        })(undefined).pipe(dbErrors),
      insert: (row: NewEvent) =>
        sql`insert into events ${sql.insert({
          ...row,
          tags: [...row.tags],
          attackerInput: sql.json(row.attackerInput),
          receivedAt: new Date(),
        })}`.pipe(Effect.asVoid, dbErrors),
    } as const
  }),
}) {}
