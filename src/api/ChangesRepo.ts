import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AuditRowWithActor } from "../domain/audit.ts"
import type { FeedPosition } from "../domain/feedToken.ts"
import type { OrgId } from "../domain/ids.ts"
import { readRows } from "../platform/db/directReads.ts"
import { type DatabaseError, dbErrors } from "../platform/db/errors.ts"
import { AUDIT_SELECT, auditRowOf } from "../repos/AuditRepo.ts"
import { EVENT_SELECT, type EventRow } from "../repos/EventsRepo.ts"
import { type IncidentRow, SOURCE_COLUMNS } from "../repos/IncidentsRepo.ts"
import type { SqlText } from "../repos/statement.ts"

/**
 * Change feeds that never skip a committed change (sql/0015_change_feeds.sql explains positions and the horizon). One
 * statement reads the horizon h = pg_snapshot_xmin(pg_current_snapshot()) and the page from the same snapshot:
 * positions after the token's, with change_xid < h (that part of the order is final), in position order, as one range
 * scan of (org_id, change_xid, change_seq). The horizon comes back even when no row does (a left join on it).
 */
export interface ChangeQuery {
  readonly orgId: OrgId
  readonly after: FeedPosition
  /** Rows to fetch: the page size plus one. */
  readonly fetch: number
}

/** A change with its position. */
export type Positioned<Row> = Row & { readonly changeXid: string; readonly changeSeq: string }

export interface ChangePage<Row> {
  readonly rows: ReadonlyArray<Positioned<Row>>
  /** xid8 as text: every position below (horizon, 0) is final. */
  readonly horizon: string
  /** The furthest position the retention purge has deleted from this feed, if any (read in the same snapshot). */
  readonly purged?: { readonly xid: string; readonly seq: string } | undefined
}

/**
 * `select` reads `from <table> <alias> join sensors s on s.id = <alias>.sensor_id`: the page is cut from the table
 * alone (a range scan of (org_id, change_xid, change_seq) in index order, stopped at the limit) and each of its rows
 * looks its sensor's name up by primary key, so nothing reorders the rows and no sort is needed. With the join first,
 * the planner may take the rows after the token for very few (a large load is one transaction, one xid, which the
 * statistics cannot see) and hash-join and sort all of them: 18,000 rows for a 100-row page with ten million events
 * stored.
 */
const pageStatement = (
  feed: "incidents/changes" | "events/changes",
  select: string,
  table: string,
  alias: string,
  timeColumn: string,
  q: ChangeQuery,
  only = "",
): SqlText => {
  const params: Array<unknown> = [q.orgId, q.after.xid, q.after.seq]
  let where = `${alias}.org_id = $1 and (${alias}.change_xid, ${alias}.change_seq) > ($2::xid8, $3::bigint)
    and ${alias}.change_xid < h.horizon${only}`
  if (q.after.fromMs !== null) {
    params.push(new Date(q.after.fromMs))
    where += ` and ${alias}.${timeColumn} >= $${params.length}::timestamptz`
  }
  params.push(q.fetch)
  const order = `order by ${alias}.change_xid, ${alias}.change_seq`
  const join = `from ${table} ${alias} join sensors s on s.id = ${alias}.sensor_id`
  const sensorName = `s.name as "sensorName"`
  if (!select.includes(join) || !select.includes(sensorName)) throw new Error(`feed statement without "${join}"`)
  const page = `from (select * from ${table} ${alias} where ${where} ${order} limit $${params.length}) ${alias}`
  const statement = select
    .replace(sensorName, () => `(select s.name from sensors s where s.id = ${alias}.sensor_id) as "sensorName"`)
    .replace(join, () => page)
  return {
    text: `with h as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as horizon,
        (select p.purged_xid::text from feed_purges p where p.org_id = $1 and p.feed = '${feed}') as purged_xid,
        (select p.purged_seq::text from feed_purges p where p.org_id = $1 and p.feed = '${feed}') as purged_seq)
      select h.horizon::text as "horizon", h.purged_xid as "purgedXid", h.purged_seq as "purgedSeq", r.*
      from h left join lateral (
        ${statement}
        ${order}
      ) r on true`,
    params,
  }
}

/**
 * The events feed: stored events in position order (events_org_change_idx). `from` is the time of storing. An event
 * an ignore rule ignored is never a change (ignored events stay hidden from the API): the position index holds only the
 * others, so a page's rows and its token's position come from the same scan and nothing in between is skipped; an
 * ignored event only lies between two positions the feed hands out.
 */
export const eventChangesStatement = (q: ChangeQuery): SqlText =>
  pageStatement(
    "events/changes",
    EVENT_SELECT.replace(
      "select e.id,",
      `select e.change_xid::text as "changeXid", e.change_seq::text as "changeSeq", e.id,`,
    ),
    "events",
    "e",
    "received_at",
    q,
    ` and e.ignore_rule_id is null`,
  )

/** The incidents feed: each incident as of each change (incident_changes_pkey). `from` is the time of the change. */
export const incidentChangesStatement = (q: ChangeQuery): SqlText =>
  pageStatement(
    "incidents/changes",
    `select c.change_xid::text as "changeXid", c.change_seq::text as "changeSeq", c.incident_id as id,
      c.org_id as "orgId", c.sensor_id as "sensorId", s.name as "sensorName", c.source_ip as "sourceIp", c.status,
      c.severity, c.title, c.narrative, c.recommended_action as "recommendedAction", c.event_count as "eventCount",
      c.event_types as "eventTypes", c.high_confidence as "highConfidence", c.first_seen_at as "firstSeenAt",
      c.last_seen_at as "lastSeenAt", c.resolved_at as "resolvedAt", c.bait_credential as "baitCredential",
      c.source_scope as "sourceScope", c.source_network as "sourceNetwork", c.other_sensors as "otherSensors", c.close_reason as "closeReason",
      (select u.email from console_users u where u.id = c.assignee_user_id) as "assignee",
      c.acknowledged_at as "acknowledgedAt", ${SOURCE_COLUMNS}
      from incident_changes c join sensors s on s.id = c.sensor_id
      left join address_enrichment a on a.address = c.source_ip`,
    "incident_changes",
    "c",
    "changed_at",
    q,
  )

/**
 * The audit feed: one organization's audit rows in position order (audit_log_org_change_idx), with the same horizon
 * and purge mark as the other feeds, read in the same statement. `from` is the time of the entry. An audit row has no
 * sensor, so the page is cut from the table directly; each row looks its actor's email up by primary key.
 */
export const auditChangesStatement = (q: ChangeQuery): SqlText => {
  const params: Array<unknown> = [q.orgId, q.after.xid, q.after.seq]
  let where = `a.org_id = $1 and (a.change_xid, a.change_seq) > ($2::xid8, $3::bigint) and a.change_xid < h.horizon`
  if (q.after.fromMs !== null) {
    params.push(new Date(q.after.fromMs))
    where += ` and a.at >= $${params.length}::timestamptz`
  }
  params.push(q.fetch)
  const order = "order by a.change_xid, a.change_seq"
  const select = AUDIT_SELECT.replace(
    "select a.id,",
    `select a.change_xid::text as "changeXid", a.change_seq::text as "changeSeq", a.id,`,
  )
  return {
    text: `with h as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as horizon,
        (select p.purged_xid::text from feed_purges p where p.org_id = $1 and p.feed = 'audit/changes') as purged_xid,
        (select p.purged_seq::text from feed_purges p where p.org_id = $1 and p.feed = 'audit/changes') as purged_seq)
      select h.horizon::text as "horizon", h.purged_xid as "purgedXid", h.purged_seq as "purgedSeq", r.*
      from h left join lateral (
        ${select} where ${where} ${order} limit $${params.length}
      ) r on true`,
    params,
  }
}

type Raw<Row> = Partial<Positioned<Row>> & {
  readonly horizon: string
  readonly purgedXid: string | null
  readonly purgedSeq: string | null
}

export class ChangesRepo extends Effect.Service<ChangesRepo>()("ChangesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const read = <Row extends { readonly id: string }>({
      text,
      params,
    }: SqlText): Effect.Effect<ChangePage<Row>, DatabaseError> =>
      readRows<Raw<Row>>(sql, text, params).pipe(
        dbErrors,
        Effect.map((raw) => {
          const first = raw[0]
          return {
            horizon: first?.horizon ?? "0",
            purged:
              first?.purgedXid != null && first.purgedSeq != null
                ? { xid: first.purgedXid, seq: first.purgedSeq }
                : undefined,
            // The purge mark's columns are not part of a row.
            rows: raw
              .filter((r) => r.id != null)
              .map(({ purgedXid: _x, purgedSeq: _s, ...row }) => row) as unknown as ReadonlyArray<Positioned<Row>>,
          }
        }),
      )

    return {
      events: (q: ChangeQuery) => read<EventRow>(eventChangesStatement(q)),
      /** Audit rows in the order they were written. */
      audit: (q: ChangeQuery) =>
        Effect.map(read<AuditRowWithActor>(auditChangesStatement(q)), (page) => ({
          ...page,
          rows: page.rows.map((r) => auditRowOf(r) as Positioned<AuditRowWithActor>),
        })),
      /** Incident rows as of each change; tags and usernames are not part of the listed shape. */
      incidents: (q: ChangeQuery) =>
        Effect.map(read<Omit<IncidentRow, "tags" | "usernames">>(incidentChangesStatement(q)), (page) => ({
          horizon: page.horizon,
          purged: page.purged,
          rows: page.rows.map((r) => ({ ...r, tags: [], usernames: [] }) as Positioned<IncidentRow>),
        })),
    } as const
  }),
}) {}
