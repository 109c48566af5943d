import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schema } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import { type EventId, type IncidentId, idTimeMs, type OrgId, type SensorId, StoredId } from "../domain/ids.ts"
import { Confidence, Severity } from "../domain/severity.ts"
import { readRows } from "../platform/db/directReads.ts"
import { dbErrors } from "../platform/db/errors.ts"
import type { SqlText } from "./statement.ts"

export const EventRow = Schema.Struct({
  id: StoredId.EventId,
  orgId: StoredId.OrgId,
  incidentId: StoredId.IncidentId,
  sensorId: StoredId.SensorId,
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
/**
 * An event to store. An event ignored by a rule names the rule and belongs to no incident (incidentId null);
 * every other event belongs to one.
 */
export type NewEvent = Omit<EventRow, "sensorName" | "incidentId"> & {
  readonly incidentId: IncidentId | null
  readonly ignoreRuleId?: string | null | undefined
}

export interface EventFilters {
  readonly sensorId?: SensorId | undefined
  readonly severity?: Severity | undefined
  readonly type?: string | undefined
  readonly sourceIp?: string | undefined
  readonly incidentId?: IncidentId | undefined
  /** Inclusive lower bound of `time`. */
  readonly from?: Date | undefined
  /** Exclusive upper bound of `time` (so consecutive windows never overlap). */
  readonly to?: Date | undefined
}

export interface EventListQuery {
  readonly orgId: OrgId
  readonly filters: EventFilters
  readonly after: CursorPosition | undefined
  readonly fetch: number
  /**
   * The console's source network (CIDR text, host bits cleared): events whose source address is in it. Not an API
   * filter and served by no index of its own (the organization's time index, filtered).
   */
  readonly sourceNetwork?: string | undefined
  /** The console's inside/outside filter: events whose incident's source is inside (or outside) the networks. */
  readonly scope?: "internal" | "external" | undefined
  /**
   * The console's search (1–200 characters): events whose search text (summary and attacker input, sql/0034) holds
   * it, served by the trigram index events_search_idx.
   */
  readonly q?: string | undefined
}

/**
 * Event rows as insertMany's one JSON parameter, keys already snake_case (no per-key transform of the whole batch);
 * attackerInput is stored as sent, with the attacker's own member names. Every text is well-formed by then (a lone
 * surrogate would make jsonb refuse the whole batch): attacker text is sanitized, and a sensorEventId with a lone
 * surrogate is refused at validation.
 */
const eventsJson = (rows: ReadonlyArray<NewEvent>, receivedAt: Date) => {
  // Times as their JSON text already (toJSON: what JSON.stringify writes for a Date): an object holding a Date is
  // serialized on JSON.stringify's slow path.
  const received = receivedAt.toJSON()
  return JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      org_id: r.orgId,
      incident_id: r.incidentId,
      ignore_rule_id: r.ignoreRuleId ?? null,
      sensor_id: r.sensorId,
      sensor_event_id: r.sensorEventId,
      time: r.time.toJSON(),
      source_ip: r.sourceIp,
      source_port: r.sourcePort,
      service: r.service,
      port: r.port,
      type: r.type,
      action: r.action,
      severity: r.severity,
      confidence: r.confidence,
      tags: r.tags,
      summary: r.summary,
      attacker_input: r.attackerInput,
      received_at: received,
    })),
  )
}

/**
 * A stored attackerInput larger than this (the UTF-8 length of its JSON text) is not read: rows stored before
 * attackerInput was bounded could hold megabytes each, which no page could read in time.
 * Rows bounded at ingestion (16 KiB of compact JSON) stay far below it. The size is the one kept in
 * attacker_input_bytes when the row was written (sql/0020: an integer compared, nothing decompressed); a row written
 * before that column existed is measured here, without decompressing it when its stored (compressed) size is
 * already over the bound.
 */
export const STORED_INPUT_READ_MAX = 64 * 1024

const STORED_INPUT_SIZE = `coalesce(e.attacker_input_bytes, case
    when pg_column_size(e.attacker_input) > ${STORED_INPUT_READ_MAX} then pg_column_size(e.attacker_input)
    else octet_length(e.attacker_input::text) end)`

/** The API's event columns, aliased to EventRow's names (the read path runs without name transforms). */
export const EVENT_SELECT = `select e.id, e.org_id as "orgId", e.incident_id as "incidentId", e.sensor_id as "sensorId",
  s.name as "sensorName", e.sensor_event_id as "sensorEventId", e.time, e.source_ip as "sourceIp",
  e.source_port as "sourcePort", e.service, e.port, e.type, e.action, e.severity, e.confidence, e.tags, e.summary,
  case when ${STORED_INPUT_SIZE} <= ${STORED_INPUT_READ_MAX} then e.attacker_input
    else jsonb_build_object('…', 'cut: the stored value is too large to show (over ${STORED_INPUT_READ_MAX} bytes)')
  end as "attackerInput"
  from events e join sensors s on s.id = e.sensor_id`

/**
 * A typed search as the LIKE pattern that finds it anywhere in an event's search text (sql/0034): `\`, `%` and `_`
 * typed by a user are themselves, never wildcards.
 */
export const searchPattern = (q: string): string => `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/**
 * The condition that an event (alias `e`) matches a search, its pattern parameter `n`: lower-cased as the stored
 * text is, so the search ignores case.
 */
export const eventSearchCondition = (n: number, alias = "e") => `${alias}.search_text like lower($${n})`

/** One page of GET /v1/events, keyset on (time desc, id desc); each filter has an index led by (org_id, filter). */
export const eventListStatement = ({
  orgId,
  filters: f,
  after,
  fetch,
  sourceNetwork,
  scope,
  q,
}: EventListQuery): SqlText => {
  const params: Array<unknown> = [orgId]
  // An event an ignore rule ignored is never listed (the keyset indexes hold only the others).
  let where = "e.org_id = $1 and e.ignore_rule_id is null"
  const and = (condition: (n: number) => string, value: unknown) => {
    params.push(value)
    where += ` and ${condition(params.length)}`
  }
  if (f.sensorId !== undefined) and((n) => `e.sensor_id = $${n}`, f.sensorId)
  if (f.severity !== undefined) and((n) => `e.severity = $${n}`, f.severity)
  if (f.type !== undefined) and((n) => `e.type = $${n}`, f.type)
  if (f.sourceIp !== undefined) and((n) => `e.source_ip = $${n}`, f.sourceIp)
  if (f.incidentId !== undefined) and((n) => `e.incident_id = $${n}`, f.incidentId)
  // Times go as Date objects: the driver spells years past 9999 (and BC) the way PostgreSQL reads them.
  if (f.from !== undefined) and((n) => `e.time >= $${n}::timestamptz`, f.from)
  if (f.to !== undefined) and((n) => `e.time < $${n}::timestamptz`, f.to)
  // Stored source addresses are canonical address text (domain/ip.ts), so the cast cannot fail.
  if (sourceNetwork !== undefined) and((n) => `e.source_ip::inet <<= $${n}::cidr`, sourceNetwork)
  // A listed event always belongs to an incident, whose judgement says whether its source is inside.
  if (scope !== undefined) {
    and(
      (n) => `e.incident_id in (select si.id from incidents si where si.org_id = $1 and si.source_scope = $${n})`,
      scope,
    )
  }
  if (q !== undefined) and((n) => eventSearchCondition(n), searchPattern(q))
  if (after) {
    params.push(after.time, after.id)
    // The plain bound on time (implied by the pair) lets PostgreSQL skip the month partitions after the cursor.
    where += ` and (e.time, e.id) < ($${params.length - 1}::timestamptz, $${params.length}) and e.time <= $${
      params.length - 1
    }::timestamptz`
  }
  params.push(fetch)
  return { text: `${EVENT_SELECT} where ${where} order by e.time desc, e.id desc limit $${params.length}`, params }
}

export const eventByIdStatement = (orgId: OrgId, id: EventId): SqlText => ({
  text: `${EVENT_SELECT} where e.org_id = $1 and e.id = $2 and e.ignore_rule_id is null`,
  params: [orgId, id],
})

/**
 * The same lookup in the one month partition the id's time names (sql/0044): an event id is made from the event's
 * time, so this finds every event but one whose time was written otherwise, which eventByIdStatement then finds.
 */
export const eventByIdInItsMonthStatement = (orgId: OrgId, id: EventId, time: Date): SqlText => ({
  text: `${EVENT_SELECT} where e.org_id = $1 and e.id = $2 and e.time = $3::timestamptz and e.ignore_rule_id is null`,
  params: [orgId, id, time],
})

/**
 * Member events in time order, and in order of arrival within one time (change_seq, taken as each row is inserted;
 * events_incident_arrival_idx): a sensor's lines of one millisecond (a Cowrie connect and its login) stay in the order
 * the sensor sent them. Oldest first for an incident's first 200, newest first for the webhook's most recent 20.
 */
export const eventMembersStatement = (
  orgId: OrgId,
  incidentId: IncidentId,
  limit: number,
  newestFirst: boolean,
): SqlText => ({
  text: `${EVENT_SELECT} where e.incident_id = $1 and e.org_id = $2 and e.ignore_rule_id is null order by ${
    newestFirst ? "e.time desc, e.change_seq desc" : "e.time asc, e.change_seq asc"
  } limit $3`,
  params: [incidentId, orgId, limit],
})

/** Events. Every query takes the organization id and filters on it in SQL. */
export class EventsRepo extends Effect.Service<EventsRepo>()("EventsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* PgClient.PgClient

    // The API's reads, cheap per row: fixed SQL text with camelCase aliases, run without the client's
    // name transforms and without a per-row Schema decode (the columns' SQL types and checks are the row's types).
    const readEvents = ({ text, params }: SqlText) => readRows<EventRow>(sql, text, params).pipe(dbErrors)

    const findById = (orgId: OrgId, id: EventId) => {
      const time = idTimeMs(id)
      const anywhere = Effect.map(readEvents(eventByIdStatement(orgId, id)), (rows) => Option.fromNullable(rows[0]))
      return time === undefined
        ? anywhere
        : Effect.flatMap(readEvents(eventByIdInItsMonthStatement(orgId, id, new Date(time))), (rows) =>
            rows[0] === undefined ? anywhere : Effect.succeed(Option.some(rows[0])),
          )
    }

    const members = (orgId: OrgId, incidentId: IncidentId, limit: number, newestFirst: boolean) =>
      readEvents(eventMembersStatement(orgId, incidentId, limit, newestFirst))

    return {
      list: (q: EventListQuery) => readEvents(eventListStatement(q)),
      /** The most recent member events, newest first (webhooks). */
      recent: (orgId: OrgId, incidentId: IncidentId, limit: number) => members(orgId, incidentId, limit, true),
      findById,
      members: (orgId: OrgId, incidentId: IncidentId, limit: number) => members(orgId, incidentId, limit, false),
      /** The sensor event ids of this sensor already stored (a resend is a duplicate, never stored twice). */
      existingSensorEventIds: (sensorId: SensorId, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.succeed([])
          : // One lookup of the unique index per id (a lateral join): with `sensor_event_id in (…)` the planner may
            // keep only sensor_id as the index condition and filter all of the sensor's events (it does while the
            // sensor's statistics are new). One JSON parameter: the same statement text for any batch size.
            sql<{ readonly id: EventId; readonly sensorEventId: string }>`
              select e.event_id as id, e.sensor_event_id
              from jsonb_array_elements_text(${JSON.stringify(ids)}::text::jsonb) as k(sensor_event_id)
              cross join lateral (
                select event_id, sensor_event_id from event_keys
                where sensor_id = ${sensorId} and sensor_event_id = k.sensor_event_id
              ) e`.pipe(dbErrors),
      /**
       * One insert for a whole request's events; a concurrent duplicate is skipped, and the sensor event ids written
       * are returned. The rows travel as one JSON parameter (jsonb_to_recordset): the statement text is the same for
       * any batch size and the driver binds one value instead of 18 per row.
       */
      insertMany: (rows: ReadonlyArray<NewEvent>, receivedAt: Date) =>
        rows.length === 0
          ? Effect.succeed([] as ReadonlyArray<{ readonly sensorEventId: string }>)
          : sql<{ readonly sensorEventId: string }>`
            with r as (
              select * from rows from (jsonb_to_recordset(${eventsJson(rows, receivedAt)}::text::jsonb)
                as (id text, org_id text, incident_id text, ignore_rule_id text, sensor_id text, sensor_event_id text,
                  time timestamptz, source_ip text, source_port integer, service text, port integer, type text,
                  action text, severity text, confidence text, tags text[], summary text, attacker_input jsonb,
                  received_at timestamptz)) with ordinality
            ), k as (
              -- The key first: a partitioned table cannot hold "stored once per sensor" itself (sql/0044).
              insert into event_keys (sensor_id, sensor_event_id, event_id, received_at)
              select sensor_id, sensor_event_id, id, received_at from r order by ordinality
              on conflict (sensor_id, sensor_event_id) do nothing
              returning event_id
            )
            insert into events (id, org_id, incident_id, ignore_rule_id, sensor_id, sensor_event_id, time, source_ip,
              source_port, service, port, type, action, severity, confidence, tags, summary, attacker_input, received_at)
            select id, org_id, incident_id, ignore_rule_id, sensor_id, sensor_event_id, time, source_ip, source_port,
              service, port, type, action, severity, confidence, tags, summary, attacker_input, received_at
            from r where r.id in (select event_id from k)
            -- change_seq (the arrival order within one time, eventMembersStatement) is taken in the batch's order.
            order by r.ordinality
            returning sensor_event_id`.pipe(dbErrors),
      insert: (row: NewEvent) => {
        const receivedAt = new Date()
        return sql
          .withTransaction(
            Effect.zipRight(
              sql`insert into event_keys ${sql.insert({
                sensorId: row.sensorId,
                sensorEventId: row.sensorEventId,
                eventId: row.id,
                receivedAt,
              })}`,
              sql`insert into events ${sql.insert({
                ...row,
                tags: [...row.tags],
                attackerInput: sql.json(row.attackerInput),
                receivedAt,
              })}`,
            ),
          )
          .pipe(Effect.asVoid, dbErrors)
      },
    } as const
  }),
}) {}
