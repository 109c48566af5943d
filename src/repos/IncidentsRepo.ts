import type { Statement } from "@effect/sql"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import { IncidentStatus } from "../domain/models.ts"
import { Severity } from "../domain/severity.ts"
import { dbErrors } from "./errors.ts"

export const IncidentRow = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  sensorId: Schema.String,
  sensorName: Schema.String,
  sourceIp: Schema.String,
  status: IncidentStatus,
  severity: Severity,
  title: Schema.String,
  narrative: Schema.String,
  recommendedAction: Schema.String,
  eventCount: Schema.Int,
  eventTypes: Schema.Array(Schema.String),
  tags: Schema.Array(Schema.String),
  usernames: Schema.Array(Schema.String),
  highConfidence: Schema.Boolean,
  firstSeenAt: Schema.DateFromSelf,
  lastSeenAt: Schema.DateFromSelf,
  resolvedAt: Schema.NullOr(Schema.DateFromSelf),
})
export type IncidentRow = typeof IncidentRow.Type

/** A stored incident as written (ingestion and tests); the sensor name is joined in on read. */
export type NewIncident = Omit<IncidentRow, "sensorName"> & { readonly createdAt?: Date }

export interface IncidentListQuery {
  readonly orgId: string
  readonly status: "open" | "closed" | undefined
  readonly after: CursorPosition | undefined
  /** Rows to fetch: the page size plus one, to know whether a next page exists. */
  readonly fetch: number
}

const columns = (sql: SqlClient.SqlClient) => sql`
  i.id, i.org_id, i.sensor_id, s.name as sensor_name, i.source_ip, i.status, i.severity, i.title, i.narrative,
  i.recommended_action, i.event_count, i.event_types, i.tags, i.usernames, i.high_confidence, i.first_seen_at, i.last_seen_at,
  i.resolved_at`

/** Incidents. Every query takes the organization id and filters on it in SQL. */
export class IncidentsRepo extends Effect.Service<IncidentsRepo>()("IncidentsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // D7: keyset paging on (last_seen_at desc, id desc), served by incidents_org_(status_)recent_idx.
    const list = SqlSchema.findAll({
      Request: Schema.Any as Schema.Schema<IncidentListQuery>,
      Result: IncidentRow,
      execute: (q) => sql`
        select ${columns(sql)}
        from incidents i join sensors s on s.id = i.sensor_id
        where ${sql.and([
          sql`i.org_id = ${q.orgId}`,
          ...(q.status ? [sql`i.status = ${q.status}`] : []),
          ...(q.after ? [sql`(i.last_seen_at, i.id) < (${q.after.time}, ${q.after.id})`] : []),
        ])}
        order by i.last_seen_at desc, i.id desc
        limit ${q.fetch}`,
    })

    const findById = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, id: Schema.String }),
      Result: IncidentRow,
      execute: ({ orgId, id }) => sql`
        select ${columns(sql)}
        from incidents i join sensors s on s.id = i.sensor_id
        where i.org_id = ${orgId} and i.id = ${id}`,
    })

    // D12: the newest incident of a grouping key, locked for the rest of the transaction.
    const newestForKey = SqlSchema.findOne({
      Request: Schema.Struct({ orgId: Schema.String, sensorId: Schema.String, sourceIp: Schema.String }),
      Result: IncidentRow,
      execute: ({ orgId, sensorId, sourceIp }) => sql`
        select ${columns(sql)}
        from incidents i join sensors s on s.id = i.sensor_id
        where i.org_id = ${orgId} and i.sensor_id = ${sensorId} and i.source_ip = ${sourceIp}
        order by i.created_at desc, i.id desc
        limit 1
        for update of i`,
    })

    const closedRow = Schema.Struct({ id: Schema.String, orgId: Schema.String, severity: Severity })
    // Closing sets resolvedAt (D13) and touches only open incidents, so two closers never close one twice.
    const closeWhere = (condition: Statement.Fragment, now: Date) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: closedRow,
        execute: () => sql`
          update incidents set status = 'closed', resolved_at = ${now}, updated_at = ${now}
          where status = 'open' and ${condition}
          returning id, org_id, severity`,
      })(undefined).pipe(dbErrors)

    return {
      list: (q: IncidentListQuery) => list(q).pipe(dbErrors),
      newestForKey: (orgId: string, sensorId: string, sourceIp: string) =>
        newestForKey({ orgId, sensorId, sourceIp }).pipe(dbErrors),
      /** Writes the aggregate and texts of an existing incident (ingestion, inside its transaction). */
      update: (id: string, row: Omit<NewIncident, "id" | "orgId" | "sensorId" | "sourceIp">, now: Date) =>
        sql`update incidents set ${sql.update({
          ...row,
          eventTypes: [...row.eventTypes],
          tags: [...row.tags],
          usernames: [...row.usernames],
          updatedAt: now,
        })} where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      /** Recounts after a concurrent duplicate slipped past the pre-check (rare). */
      recount: (id: string) =>
        sql`update incidents set event_count = (select count(*) from events where incident_id = ${id}) where id = ${id}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** D13: closes open incidents idle since before `cutoff`; returns what it closed. */
      closeIdle: (cutoff: Date, now: Date) => closeWhere(sql`last_seen_at < ${cutoff}`, now),
      /** Closes one open incident (admin); none when it is unknown or already closed. */
      close: (id: string, now: Date) =>
        closeWhere(sql`id = ${id}`, now).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
      findById: (orgId: string, id: string) => findById({ orgId, id }).pipe(dbErrors),
      insert: (row: NewIncident) =>
        sql`insert into incidents ${sql.insert({
          ...row,
          eventTypes: [...row.eventTypes],
          tags: [...row.tags],
          usernames: [...row.usernames],
          createdAt: row.createdAt ?? row.firstSeenAt,
          updatedAt: new Date(),
        })}`.pipe(Effect.asVoid, dbErrors),
    } as const
  }),
}) {}
