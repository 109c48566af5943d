import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { EventId, IncidentId, OrgId, SensorId } from "../domain/ids.ts"
import { isRecord } from "../domain/json.ts"
import { SEVERITIES, type Severity } from "../domain/severity.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { addClientDetails, type CowrieClientState, EMPTY_CLIENT_STATE, protocolOf } from "./formats/cowrie.ts"
import type { CowrieSession } from "./formats/native.ts"

/** An event stored from a session's line, and what that line named itself (cowrie_session_events). */
export interface CowrieSessionEvent {
  readonly session: string
  // Branded as read: the table's foreign keys guarantee the kinds.
  readonly eventId: EventId
  readonly action: string
  readonly ownProtocol: boolean
  readonly ownSourcePort: boolean
  readonly ownPort: boolean
  readonly complete: boolean
}

/**
 * A stored event of a session still waiting for its connect, with the columns its completion rewrites and those an
 * ignore rule is judged again with (the event joins its key's incidents as a fresh one when it is no longer ignored).
 */
export interface IncompleteCowrieEvent extends CowrieSessionEvent {
  /** Null for an event an ignore rule ignored (it joins no incident). */
  readonly incidentId: IncidentId | null
  /** The rule that ignored it (null: not ignored). */
  readonly ignoreRuleId: string | null
  readonly sensorEventId: string
  /** As JSON writes it. */
  readonly time: string
  readonly sourceIp: string
  readonly sourcePort: number
  readonly port: number
  readonly type: string
  readonly eventAction: string
  readonly severity: Severity
  readonly confidence: "low" | "normal" | "high"
  readonly tags: ReadonlyArray<string>
  readonly attackerInput: Record<string, unknown>
}

/** What an incident's member events add up to (memberTotals), for an incident some of whose events left it. */
export interface MemberTotals {
  readonly id: string
  readonly eventCount: number
  readonly eventTypes: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  readonly usernames: ReadonlyArray<string>
  readonly highConfidence: boolean
  /** The highest severity of the events (null when no event is left). */
  readonly eventsSeverity: Severity | null
  /** The events by type. */
  readonly typeCounts: Readonly<Record<string, number>>
  /** One of the events carries the bait-credential tag. */
  readonly baitCredential: boolean
  /** Null when no event is left. */
  readonly firstSeenAt: Date | null
  readonly lastSeenAt: Date | null
}

/** What is stored of a session: its connect (when known), its client state, and its events waiting for the connect. */
export interface CowrieSessionRow {
  readonly session: string
  readonly connect: CowrieSession | undefined
  /** cowrie_sessions.client as stored (readClientState reads it); null before the first merged line. */
  readonly client: unknown
  /** Only for the sessions asked for (those whose connect this request teaches), and only while the connect is unknown. */
  readonly waiting: ReadonlyArray<IncompleteCowrieEvent>
}

/** A session's row to write: the connect it learnt (kept only when none was known), and its new client state. */
export interface CowrieSessionWrite {
  readonly session: string
  readonly connect?: CowrieSession | undefined
  readonly client?: unknown
}

/** At most this many events of a session waiting for its connect are completed per request (oldest first). */
export const COWRIE_WAITING_MAX = 1000

/** At most this many of a session's merged lines stored before 0021 build its client state (earliest first). */
export const COWRIE_LEGACY_DETAILS_MAX = 1000

/** Merged lines' details as stored before 0021, as the client-state fold takes them; and the oldest row's age. */
const legacyLines = (
  rows: ReadonlyArray<{ lineId: unknown; time: unknown; details: unknown; createdAt: unknown }> | null,
): { lines: Array<{ at: string; details: Record<string, unknown> }>; createdAt: string } => {
  const lines: Array<{ at: string; details: Record<string, unknown> }> = []
  let createdAt: string | undefined
  for (const r of rows ?? []) {
    const time = typeof r.time === "string" ? new Date(r.time) : undefined
    if (time === undefined || Number.isNaN(time.getTime()) || typeof r.lineId !== "string") continue
    if (!isRecord(r.details)) continue
    // The same `at` as a merged line's (its time and id), so the earliest value wins across versions.
    lines.push({ at: `${time.toISOString()} ${r.lineId}`, details: r.details })
    if (typeof r.createdAt === "string" && (createdAt === undefined || r.createdAt < createdAt)) createdAt = r.createdAt
  }
  return { lines, createdAt: createdAt ?? new Date().toISOString() }
}

/** The severity scale as an SQL array, lowest first (array_position gives a severity's rank from 1). */
const SEVERITY_SCALE = `array[${SEVERITIES.map((s) => `'${s}'`).join(", ")}]::text[]`

const isPort = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 65535

// A lone UTF-16 surrogate would make jsonb refuse the statement.
const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "string" ? x.toWellFormed() : x))

/**
 * What the service knows of Cowrie sessions, by (sensor, session): the connect's protocol and ports and the
 * session's client state (`cowrie_sessions`, one row per session), and the events stored from the session's lines
 * (`cowrie_session_events`). The Ingestor calls these inside its transaction, under the advisory lock of the
 * session's source address. Every query but the prune takes the organization and filters on it.
 */
export class CowrieSessionsRepo extends Effect.Service<CowrieSessionsRepo>()("CowrieSessionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * One statement for what a request needs of its sessions: each session's connect and client state (when it has a
     * row), and, for the sessions whose connect is known or taught by this request (`teaching`), the stored events
     * still waiting for it (oldest first, at most COWRIE_WAITING_MAX per session: the rest are completed by the
     * session's next requests, each taking the next oldest).
     *
     * A session merged by a version before 0021 has no client state but its merged lines' details in
     * `cowrie_session_details` (no longer written): its state is built from the earliest COWRIE_LEGACY_DETAILS_MAX of
     * them with the same fold as merged lines (addClientDetails: bounded, the earliest value wins) and stored, in the
     * caller's transaction, so its next merged line adds to the old details instead of replacing them on its events.
     */
    const load = Effect.fn("CowrieSessionsRepo.load")(function* (
      orgId: OrgId,
      sensorId: SensorId,
      sessions: ReadonlyArray<string>,
      teaching: ReadonlyArray<string>,
    ) {
      const found = new Map<string, CowrieSessionRow>()
      if (sessions.length === 0) return found
      const rows = yield* sql<{
        session: string
        protocol: unknown
        sourcePort: unknown
        port: unknown
        client: unknown
        waiting: ReadonlyArray<IncompleteCowrieEvent> | null
        legacy: ReadonlyArray<{ lineId: unknown; time: unknown; details: unknown; createdAt: unknown }> | null
      }>`
        select w.session, s.protocol, s.source_port as "sourcePort", s.port, s.client,
          -- A session's events may wait before the session has a row (stored before any connect or client line).
          case when s.protocol is not null or w.session in ${sql.in(teaching.length === 0 ? [""] : [...teaching])}
          then (
            select jsonb_agg(jsonb_build_object('session', c.session, 'eventId', c.event_id, 'action', c.action,
                'ownProtocol', c.own_protocol, 'ownSourcePort', c.own_source_port, 'ownPort', c.own_port,
                'complete', c.complete, 'incidentId', e.incident_id, 'ignoreRuleId', e.ignore_rule_id,
                'sensorEventId', e.sensor_event_id, 'time', e.time, 'sourceIp', e.source_ip,
                'sourcePort', e.source_port, 'port', e.port, 'type', e.type, 'eventAction', e.action,
                'severity', e.severity, 'confidence', e.confidence, 'tags', e.tags,
                'attackerInput', e.attacker_input)
                order by c.event_id)
            from (
              select * from cowrie_session_events c
              where c.org_id = ${orgId} and c.sensor_id = ${sensorId} and c.session = w.session and not c.complete
              order by c.event_id limit ${COWRIE_WAITING_MAX}
            ) c join events e on e.id = c.event_id and e.org_id = c.org_id
          ) end as waiting,
          -- Merged lines' details as versions before 0021 stored them, for a session without a client state yet.
          case when s.client is null or jsonb_typeof(s.client) = 'null' then (
            select jsonb_agg(jsonb_build_object('lineId', d.line_id, 'time', d.time, 'details', d.details,
                'createdAt', d.created_at) order by d.time, d.line_id)
            from (
              select * from cowrie_session_details d
              where d.org_id = ${orgId} and d.sensor_id = ${sensorId} and d.session = w.session
              order by d.time, d.line_id limit ${COWRIE_LEGACY_DETAILS_MAX}
            ) d
          ) end as legacy
        from jsonb_array_elements_text(${json([...sessions])}::text::jsonb) as w(session)
        left join cowrie_sessions s on s.org_id = ${orgId} and s.sensor_id = ${sensorId} and s.session = w.session`
      const upgraded: Array<{ session: string; client: CowrieClientState; created_at: string }> = []
      for (const row of rows) {
        const protocol = protocolOf(row.protocol)
        const connect =
          protocol !== undefined && isPort(row.sourcePort) && isPort(row.port)
            ? { protocol, sourcePort: row.sourcePort, port: row.port }
            : undefined
        let client = row.client
        const legacy = legacyLines(row.legacy)
        if (legacy.lines.length > 0) {
          const state = addClientDetails(EMPTY_CLIENT_STATE, legacy.lines)
          client = state
          upgraded.push({ session: row.session, client: state, created_at: legacy.createdAt })
        }
        found.set(row.session, { session: row.session, connect, client, waiting: row.waiting ?? [] })
      }
      if (upgraded.length > 0) {
        // Stored once (kept only while no state is stored), with the old lines' age so pruning stays by age.
        yield* sql`
          insert into cowrie_sessions (org_id, sensor_id, session, client, created_at)
          select ${orgId}, ${sensorId}, session, client, created_at
          from jsonb_to_recordset(${json(upgraded.sort((a, b) => (a.session < b.session ? -1 : a.session > b.session ? 1 : 0)))}::text::jsonb)
            as r(session text, client jsonb, created_at timestamptz)
          on conflict (sensor_id, session) do update set client = excluded.client
          where cowrie_sessions.client is null or jsonb_typeof(cowrie_sessions.client) = 'null'`
      }
      return found
    }, dbErrors)

    /**
     * Writes sessions' rows: a connect is kept only when none was known (a session's first record stays), a client
     * state replaces the stored one. Rows go in session order, so two concurrent requests with the same sessions wait
     * for each other instead of deadlocking.
     */
    const save = (orgId: OrgId, sensorId: SensorId, writes: ReadonlyArray<CowrieSessionWrite>, createdAt: Date) => {
      const rows = [...writes]
        .sort((a, b) => (a.session < b.session ? -1 : a.session > b.session ? 1 : 0))
        .map((w) => ({
          session: w.session,
          protocol: w.connect?.protocol ?? null,
          source_port: w.connect?.sourcePort ?? null,
          port: w.connect?.port ?? null,
          client: w.client ?? null,
        }))
      if (rows.length === 0) return Effect.void
      return sql`
        insert into cowrie_sessions (org_id, sensor_id, session, protocol, source_port, port, client, created_at)
        select ${orgId}, ${sensorId}, session, protocol, source_port, port, client, ${createdAt}
        from jsonb_to_recordset(${json(rows)}::text::jsonb)
          as r(session text, protocol text, source_port integer, port integer, client jsonb)
        on conflict (sensor_id, session) do update set
          protocol = case when cowrie_sessions.protocol is null then excluded.protocol else cowrie_sessions.protocol end,
          source_port = case when cowrie_sessions.protocol is null then excluded.source_port
            else cowrie_sessions.source_port end,
          port = case when cowrie_sessions.protocol is null then excluded.port else cowrie_sessions.port end,
          client = coalesce(excluded.client, cowrie_sessions.client)`.pipe(Effect.asVoid, dbErrors)
    }

    /** Records the events stored from sessions' lines. */
    const linkEvents = (orgId: OrgId, sensorId: SensorId, rows: ReadonlyArray<CowrieSessionEvent>, createdAt: Date) =>
      rows.length === 0
        ? Effect.void
        : sql`
            insert into cowrie_session_events (org_id, sensor_id, session, event_id, action, own_protocol,
              own_source_port, own_port, complete, created_at)
            select ${orgId}, ${sensorId}, session, event_id, action, own_protocol, own_source_port, own_port, complete,
              ${createdAt}
            from jsonb_to_recordset(${json(
              rows.map((r) => ({
                session: r.session,
                event_id: r.eventId,
                action: r.action,
                own_protocol: r.ownProtocol,
                own_source_port: r.ownSourcePort,
                own_port: r.ownPort,
                complete: r.complete,
              })),
            )}::text::jsonb) as r(session text, event_id text, action text, own_protocol boolean, own_source_port boolean,
              own_port boolean, complete boolean)
            on conflict do nothing`.pipe(Effect.asVoid, dbErrors)

    /** Writes the completed columns of stored events and marks them complete. */
    const complete = Effect.fn("CowrieSessionsRepo.complete")(function* (
      orgId: OrgId,
      sensorId: SensorId,
      rows: ReadonlyArray<{
        readonly eventId: string
        readonly session: string
        readonly type: string
        readonly service: string
        readonly sourcePort: number
        readonly port: number
        readonly summary: string
      }>,
    ) {
      if (rows.length === 0) return
      const payload = json(
        rows.map((r) => ({
          id: r.eventId,
          session: r.session,
          type: r.type,
          service: r.service,
          source_port: r.sourcePort,
          port: r.port,
          summary: r.summary,
        })),
      )
      yield* sql`
          with done as (
            update cowrie_session_events c set complete = true
            from jsonb_to_recordset(${payload}::text::jsonb) as r(id text, session text)
            where c.sensor_id = ${sensorId} and c.session = r.session and c.event_id = r.id
          )
          update events e set type = r.type, service = r.service, source_port = r.source_port, port = r.port,
            summary = r.summary
          from jsonb_to_recordset(${payload}::text::jsonb)
            as r(id text, session text, type text, service text, source_port integer, port integer, summary text)
          where e.id = r.id and e.org_id = ${orgId}`
    }, dbErrors)

    /**
     * Sets stored events' incident and ignore rule after their session's connect changed what a rule says of them
     * (exactly one of the two is set). `renew`: the event takes a new position in the events feed, as a fresh event
     * does (an event no rule ignores any longer was never in the feed: at its old position, a follower already past
     * it would never see it).
     */
    const rejudge = (
      orgId: OrgId,
      rows: ReadonlyArray<{
        readonly eventId: EventId
        readonly incidentId: IncidentId | null
        readonly ignoreRuleId: string | null
        readonly renew: boolean
      }>,
    ) =>
      rows.length === 0
        ? Effect.void
        : sql`
            update events e set incident_id = r.incident_id, ignore_rule_id = r.ignore_rule_id,
              change_xid = case when r.renew then pg_current_xact_id() else e.change_xid end,
              change_seq = case when r.renew then nextval('feed_change_seq') else e.change_seq end
            from (
              select * from jsonb_to_recordset(${json(
                rows.map((r) => ({
                  id: r.eventId,
                  incident_id: r.incidentId,
                  ignore_rule_id: r.ignoreRuleId,
                  renew: r.renew,
                })),
              )}::text::jsonb) as x(id text, incident_id text, ignore_rule_id text, renew boolean)
              order by x.id
            ) r
            where e.id = r.id and e.org_id = ${orgId}`.pipe(Effect.asVoid, dbErrors)

    /**
     * What the member events of these incidents add up to now: their count, types, tags, the first usernames in
     * time order (at most `maxUsernames`), whether one has high confidence, their highest severity, their count by
     * type, whether one carries `baitTag`, and their first and last times.
     */
    const memberTotals = (
      orgId: OrgId,
      incidentIds: ReadonlyArray<IncidentId>,
      maxUsernames: number,
      baitTag: string,
    ) =>
      incidentIds.length === 0
        ? Effect.succeed([] as ReadonlyArray<MemberTotals>)
        : sql<MemberTotals>`
            select i.id, m.event_count, m.event_types, m.tags, m.high_confidence, m.first_seen_at, m.last_seen_at,
              (${sql.unsafe(SEVERITY_SCALE)})[m.severity_rank] as events_severity,
              coalesce((select jsonb_object_agg(c.type, c.n) from (select x.type, count(*) as n from events x
                where x.org_id = i.org_id and x.incident_id = i.id group by x.type) c), '{}') as type_counts,
              coalesce((
                select array_agg(u.username order by u.time, u.change_seq) from (
                  select * from (
                    select distinct on (n.username) n.username, n.time, n.change_seq from (
                      select coalesce(
                          nullif(case when jsonb_typeof(e.attacker_input -> 'username') = 'string'
                            then e.attacker_input ->> 'username' end, ''),
                          nullif(case when jsonb_typeof(e.attacker_input -> 'user') = 'string'
                            then e.attacker_input ->> 'user' end, ''),
                          nullif(case when jsonb_typeof(e.attacker_input -> 'login') = 'string'
                            then e.attacker_input ->> 'login' end, '')) as username,
                        e.time, e.change_seq
                      from events e where e.org_id = i.org_id and e.incident_id = i.id
                    ) n where n.username is not null
                    order by n.username, n.time, n.change_seq
                  ) d order by d.time, d.change_seq limit ${maxUsernames}
                ) u
              ), '{}') as usernames
            from incidents i
            cross join lateral (
              select count(*)::int as event_count,
                coalesce(array_agg(distinct e.type order by e.type), '{}') as event_types,
                coalesce((select array_agg(distinct t order by t) from events x, unnest(x.tags) t
                  where x.org_id = i.org_id and x.incident_id = i.id), '{}') as tags,
                coalesce(bool_or(e.confidence = 'high'), false) as high_confidence,
                coalesce(bool_or(${baitTag} = any(e.tags)), false) as bait_credential,
                max(array_position(${sql.unsafe(SEVERITY_SCALE)}, e.severity)) as severity_rank,
                min(e.time) as first_seen_at, max(e.time) as last_seen_at
              from events e where e.org_id = i.org_id and e.incident_id = i.id
            ) m
            where i.org_id = ${orgId} and i.id in ${sql.in([...incidentIds].sort())}
            order by i.id`.pipe(dbErrors)

    /** The stored events of these sessions, with their attackerInput (to set new client members on them). */
    const sessionEvents = (orgId: OrgId, sensorId: SensorId, sessions: ReadonlyArray<string>) =>
      sessions.length === 0
        ? Effect.succeed([] as ReadonlyArray<{ session: string; eventId: string; attackerInput: unknown }>)
        : sql<{ session: string; eventId: string; attackerInput: unknown }>`
            select c.session, c.event_id as "eventId", e.attacker_input as "attackerInput"
            from cowrie_session_events c join events e on e.id = c.event_id and e.org_id = c.org_id
            where c.org_id = ${orgId} and c.sensor_id = ${sensorId} and c.session in ${sql.in([...sessions])}
            order by c.event_id`.pipe(dbErrors)

    /** Writes events' attackerInput (computed and bounded by the caller). */
    const setAttackerInputs = (
      orgId: OrgId,
      rows: ReadonlyArray<{ readonly eventId: string; readonly attackerInput: Record<string, unknown> }>,
    ) =>
      rows.length === 0
        ? Effect.void
        : sql`
            update events e set attacker_input = r.attacker_input
            from jsonb_to_recordset(${json(rows.map((r) => ({ id: r.eventId, attacker_input: r.attackerInput })))}::text::jsonb)
              as r(id text, attacker_input jsonb)
            where e.id = r.id and e.org_id = ${orgId}`.pipe(Effect.asVoid, dbErrors)

    /**
     * Deletes everything remembered of sessions created before `cutoff`, of all organizations (maintenance); returns
     * how many sessions. A later line of a pruned session maps with the defaults (ssh, source port 0, the type's port).
     */
    const pruneOlderThan = Effect.fn("CowrieSessionsRepo.pruneOlderThan")(function* (cutoff: Date) {
      yield* sql`delete from cowrie_session_events where created_at < ${cutoff}`
      // Merged lines' details as versions before 0021 stored them (no longer written).
      yield* sql`delete from cowrie_session_details where created_at < ${cutoff}`
      const rows = yield* sql<{ deleted: number }>`
        with gone as (delete from cowrie_sessions where created_at < ${cutoff} returning 1)
        select count(*)::int as deleted from gone`
      return rows[0]?.deleted ?? 0
    }, dbErrors)

    return {
      load,
      save,
      linkEvents,
      complete,
      rejudge,
      memberTotals,
      sessionEvents,
      setAttackerInputs,
      pruneOlderThan,
    } as const
  }),
}) {}
