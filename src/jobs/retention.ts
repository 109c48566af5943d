import { SqlClient, type Statement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { AppConfig } from "../platform/config.ts"
import { EVENT_MONTHS_AHEAD } from "../platform/db/migrate.ts"

/** Rows one statement of the purge deletes at most: each batch is its own short transaction. */
export const PURGE_BATCH = 1000
/** Event keys one statement deletes at most (narrow rows: two short texts, an id and a time). */
const KEY_BATCH = 5000
/** Empty incidents one transaction deletes at most (with their transitions, notes, triage and deliveries). */
const INCIDENT_BATCH = 200
/** How often the purge runs (and once at start-up). */
export const RETENTION_EVERY = Duration.hours(1)

const DAY_MS = 86_400_000

export interface PurgeCounts {
  readonly events: number
  readonly incidents: number
  readonly feedRows: number
  /** Month partitions dropped whole (their rows are counted in `events` and `feedRows`). */
  readonly months: number
}

/**
 * How long the purge waits for the table lock that dropping a month takes: ingestion and reads queue behind it while
 * it waits, so it gives up soon (and before PostgreSQL's deadlock_timeout, 1 s) and the month goes at the next pass.
 */
const MONTH_DROP_LOCK_TIMEOUT = "500ms"

/** The two tables partitioned by month (sql/0044), each with the feed its rows are and what decides a row's age. */
const MONTHLY = {
  events: { feed: "events/changes", changesOnly: "e.ignore_rule_id is null" },
  incident_changes: { feed: "incidents/changes", changesOnly: "true" },
} as const
type Monthly = keyof typeof MONTHLY

/** A table's month partitions, oldest first, with the time their month ends. */
const monthPartitions = (sql: SqlClient.SqlClient, table: Monthly) =>
  sql<{ name: string; endsAt: Date }>`
    select c.relname as name, partition_ends_at(c.oid) as ends_at
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${table}::regclass and c.relname ~ ${`^${table}_[0-9]{4}_[0-9]{2}$`}
    order by ends_at`

/**
 * Whether a month partition of events still holds an event inside its organization's window (one probe of the
 * partition's (org_id, received_at) index per organization). The incidents feed's rows are written at the time they
 * say, so its month is past when its end is past the feed's window.
 */
const holdsKeptEvents = (sql: SqlClient.SqlClient, partition: string, now: Date, defaultDays: number) =>
  Effect.map(
    sql<{ kept: boolean }>`
      select exists (
        select from organizations o cross join lateral (
          select from ${sql(partition)} e
          where e.org_id = o.id and e.received_at >= ${now}::timestamptz - make_interval(days => coalesce(o.retention_days, ${defaultDays}::int))
          limit 1) x) as kept`,
    (rows) => rows[0]?.kept ?? true,
  )

/**
 * Drops a month partition in one short transaction under its table's lock (nothing can be written into it meanwhile;
 * the lock is the table's first, so it waits on no other): `stillKept` is asked again under it, and the feed's purge
 * mark moves past the month's changes first, as the batch purge's does. Dropping an attached partition locks neither
 * the default partition's neighbours nor the tables its foreign keys name. Returns the rows it held, or undefined when
 * it keeps them or the lock was not had in time (the next pass tries again; the batch purge below deletes what expired
 * meanwhile).
 */
const dropMonth = (
  sql: SqlClient.SqlClient,
  table: Monthly,
  partition: string,
  stillKept: Effect.Effect<boolean, SqlError>,
) =>
  sql
    .withTransaction(
      Effect.gen(function* () {
        yield* sql.unsafe(`set local lock_timeout = '${MONTH_DROP_LOCK_TIMEOUT}'`)
        yield* sql`lock table ${sql(table)} in access exclusive mode`
        if (yield* stillKept) return undefined
        yield* sql.unsafe(`
          insert into feed_purges (org_id, feed, purged_xid, purged_seq)
          select o.id, '${MONTHLY[table].feed}', x.change_xid, x.change_seq from organizations o cross join lateral (
            select change_xid, change_seq from "${partition}" e where e.org_id = o.id and ${MONTHLY[table].changesOnly}
            order by change_xid desc, change_seq desc limit 1) x
          on conflict (org_id, feed) do update set purged_xid = excluded.purged_xid, purged_seq = excluded.purged_seq
          where (excluded.purged_xid, excluded.purged_seq) > (feed_purges.purged_xid, feed_purges.purged_seq)`)
        const [count] = yield* sql<{ n: number }>`select count(*)::int as n from ${sql(partition)}`
        yield* sql`drop table ${sql(partition)}`
        return count?.n ?? (0 as number | undefined)
      }),
    )
    .pipe(
      // lock_not_available: a long read (a backup's snapshot, a big export) holds the table; not this pass.
      Effect.catchIf(
        (error) => error instanceof SqlError && (error.cause as { code?: unknown } | undefined)?.code === "55P03",
        () => Effect.as(Effect.logInfo("retention: a month partition waits for the next pass (table busy)"), undefined),
      ),
    )

/**
 * One pass of the retention purge (what attackers sent is kept only as long as the organization chose), for every
 * organization, at the clock's time.
 *
 * - Events stored (received_at) more than the organization's retention_days, or RETENTION_DAYS, ago are deleted,
 *   ignored ones included; the age is counted from storing, so an event sent late with an old time is kept as long
 *   as any other. The events feed reads the events themselves, so these deletions are its feed rows too.
 * - An incident left without events is deleted with what refers to it (transitions, notes, its acknowledgements and
 *   assignments, deliveries and their attempts). An incident that keeps some events keeps its counts and first-seen time as they were.
 * - incident_changes rows written more than FEED_RETENTION_DAYS ago are deleted.
 * - Each statement deletes at most PURGE_BATCH rows and is its own transaction, so the purge holds no lock for long;
 *   it writes the furthest position it deleted (feed_purges) in the same statement, so a feed token from before it
 *   gets 410 token_expired.
 */
export const purgeOnce = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const now = yield* Clock.currentTimeMillis
  const feedCut = new Date(now - config.feedRetentionDays * DAY_MS)
  // The primary key guarantees the kind of id.
  const orgs = yield* sql<{ id: OrgId }>`select id from organizations order by id`
  // A feed mark at or past the horizon is not this cluster's (a restored backup's positions); feeds ignore it, and
  // here it goes, so it can never come to apply to this cluster's own later positions.
  yield* sql`delete from feed_purges where purged_xid >= pg_snapshot_xmin(pg_current_snapshot())`
  let events = 0
  let incidents = 0
  let feedRows = 0
  let months = 0

  // Partitions ahead, so that no month's rows wait in a default partition.
  yield* sql`select month_partitions_ensure(${new Date(now)}::timestamptz, ${new Date(now)}::timestamptz + ${`${EVENT_MONTHS_AHEAD} months`}::interval)`
  // Whole months first: a month none of whose rows is still kept goes in one statement, whatever its size.
  for (const month of yield* monthPartitions(sql, "events")) {
    if (month.endsAt.getTime() > now) break
    const kept = holdsKeptEvents(sql, month.name, new Date(now), config.retentionDays)
    if (yield* kept) continue
    const dropped = yield* dropMonth(sql, "events", month.name, kept)
    if (dropped !== undefined) {
      events += dropped
      months += 1
    }
  }
  for (const month of yield* monthPartitions(sql, "incident_changes")) {
    if (month.endsAt.getTime() > feedCut.getTime()) break
    const dropped = yield* dropMonth(sql, "incident_changes", month.name, Effect.succeed(false))
    if (dropped !== undefined) {
      feedRows += dropped
      months += 1
    }
  }

  /** Runs `batch` until it deletes fewer than `size` rows; the total. */
  const untilShort = (batch: Effect.Effect<number, unknown>, size: number) =>
    Effect.gen(function* () {
      let total = 0
      for (;;) {
        const n = yield* batch
        total += n
        if (n < size) return total
      }
    })

  for (const org of orgs) {
    // The organization's retention as it is when each statement runs, not when the pass began: a pass over many or
    // large organizations takes minutes, and a window an admin lengthens meanwhile must hold from the next batch on.
    const cut = sql`(${new Date(now)}::timestamptz - make_interval(days => coalesce(
      (select retention_days from organizations where id = ${org.id}), ${config.retentionDays}::int)))`

    // Oldest first by the (org_id, received_at) index; the feed mark moves to the furthest position deleted (ignored
    // events are not in the feed, so they do not move it).
    events += yield* untilShort(
      sql<{ n: number }>`
        with d as (
          delete from events where id in (
            select id from events where org_id = ${org.id} and received_at < ${cut}
            order by received_at limit ${PURGE_BATCH} for update skip locked)
          returning change_xid, change_seq, ignore_rule_id
        ), mark as (
          insert into feed_purges (org_id, feed, purged_xid, purged_seq)
          select ${org.id}, 'events/changes', change_xid, change_seq from d where ignore_rule_id is null
          order by change_xid desc, change_seq desc limit 1
          on conflict (org_id, feed) do update set purged_xid = excluded.purged_xid, purged_seq = excluded.purged_seq
          where (excluded.purged_xid, excluded.purged_seq) > (feed_purges.purged_xid, feed_purges.purged_seq)
        )
        select count(*)::int as n from d`.pipe(Effect.map((rows) => rows[0]?.n ?? 0)),
      PURGE_BATCH,
    )

    // A sensor's event keys (a resend is a duplicate, sql/0044) go when the organization's events of that time do.
    yield* untilShort(
      sql<{ n: number }>`
        with d as (
          delete from event_keys where (sensor_id, sensor_event_id) in (
            select k.sensor_id, k.sensor_event_id from sensors s cross join lateral (
              select sensor_id, sensor_event_id from event_keys k
              where k.sensor_id = s.id and k.received_at < ${cut} limit ${KEY_BATCH}) k
            where s.org_id = ${org.id} limit ${KEY_BATCH})
          returning 1)
        select count(*)::int as n from d`.pipe(Effect.map((rows) => rows[0]?.n ?? 0)),
      KEY_BATCH,
    )

    // A Cowrie session's links to its events are remembered from the time of storing, as the events are.
    yield* sql`delete from cowrie_session_events where org_id = ${org.id} and created_at < ${cut}`
    yield* sql`delete from cowrie_session_details where org_id = ${org.id} and created_at < ${cut}`

    // An incident's last-seen time is its newest event's time, which may be a little after that event was stored
    // (MAX_CLOCK_SKEW): a day's margin finds it in the same pass as its last event.
    incidents += yield* untilShort(deleteEmptyIncidents(sql, org.id, sql`${cut} + interval '1 day'`), INCIDENT_BATCH)

    feedRows += yield* untilShort(
      sql<{ n: number }>`
        with d as (
          delete from incident_changes where (org_id, change_xid, change_seq) in (
            select org_id, change_xid, change_seq from incident_changes
            where org_id = ${org.id} and changed_at < ${feedCut}
            order by changed_at limit ${PURGE_BATCH})
          returning change_xid, change_seq
        ), mark as (
          insert into feed_purges (org_id, feed, purged_xid, purged_seq)
          select ${org.id}, 'incidents/changes', change_xid, change_seq from d
          order by change_xid desc, change_seq desc limit 1
          on conflict (org_id, feed) do update set purged_xid = excluded.purged_xid, purged_seq = excluded.purged_seq
          where (excluded.purged_xid, excluded.purged_seq) > (feed_purges.purged_xid, feed_purges.purged_seq)
        )
        select count(*)::int as n from d`.pipe(Effect.map((rows) => rows[0]?.n ?? 0)),
      PURGE_BATCH,
    )
  }
  return { events, incidents, feedRows, months } satisfies PurgeCounts
})

/**
 * One transaction: up to INCIDENT_BATCH incidents of the organization last seen before `before` that have no event left,
 * deleted with what refers to them. Ingestion groups under an advisory lock per (organization, sensor, source
 * address), taken first and in hash order; the purge takes the same locks the same way before it looks again and
 * deletes, so an event being stored into one of these incidents either committed before (the incident is kept) or
 * waits and then finds it gone (it opens a new one).
 */
const deleteEmptyIncidents = (sql: SqlClient.SqlClient, orgId: OrgId, before: Statement.Fragment) =>
  sql.withTransaction(
    Effect.gen(function* () {
      const candidates = yield* sql<{ id: string; lockKey: string }>`
        select i.id, i.org_id || '|' || i.sensor_id || '|' || i.source_ip as lock_key from incidents i
        where i.org_id = ${orgId} and i.last_seen_at < ${before}
          and not exists (select 1 from events e where e.org_id = i.org_id and e.incident_id = i.id)
        order by i.last_seen_at limit ${INCIDENT_BATCH}`
      if (candidates.length === 0) return 0
      yield* sql`
        select pg_advisory_xact_lock(l.h) from (
          select distinct hashtextextended(k, 0) as h
          from jsonb_array_elements_text(${JSON.stringify(candidates.map((c) => c.lockKey))}::text::jsonb) as t(k)
          order by h
        ) l`
      // Looked at again under the locks (a new statement, a new snapshot): only those still empty go.
      const doomed = (yield* sql<{ id: string }>`
        select i.id from incidents i
        where i.id in ${sql.in(candidates.map((c) => c.id))}
          and not exists (select 1 from events e where e.org_id = i.org_id and e.incident_id = i.id)
        order by i.id for update`).map((r) => r.id)
      if (doomed.length === 0) return candidates.length
      yield* sql`
        delete from webhook_delivery_attempts where delivery_id in (
          select d.id from webhook_deliveries d
          where d.incident_id in ${sql.in(doomed)}
             or d.transition_id in (select t.id from incident_transitions t where t.incident_id in ${sql.in(doomed)}))`
      yield* sql`
        delete from webhook_deliveries d
        where d.incident_id in ${sql.in(doomed)}
           or d.transition_id in (select t.id from incident_transitions t where t.incident_id in ${sql.in(doomed)})`
      yield* sql`delete from incident_transitions where incident_id in ${sql.in(doomed)}`
      yield* sql`delete from incident_notes where incident_id in ${sql.in(doomed)}`
      yield* sql`delete from incident_triage where incident_id in ${sql.in(doomed)}`
      yield* sql`delete from incidents where id in ${sql.in(doomed)}`
      // The batch was full of candidates: there may be more (the loop goes on while it is).
      return candidates.length
    }),
  )

/**
 * The retention purge as a scoped fiber, at start-up and every RETENTION_EVERY (modelled on the idle close). A
 * failed pass is logged and the next one runs. Safe with several processes: every delete is conditional and skips
 * what another has locked.
 */
export const RetentionLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const pass = purgeOnce.pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.provideService(AppConfig, config),
      Effect.tap((counts) =>
        counts.events + counts.incidents + counts.feedRows + counts.months > 0
          ? Effect.logInfo("retention purge").pipe(Effect.annotateLogs({ ...counts }))
          : Effect.void,
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("retention purge failed", cause)),
    )
    yield* Effect.forkScoped(pass.pipe(Effect.repeat(Schedule.spaced(RETENTION_EVERY))))
  }),
)
