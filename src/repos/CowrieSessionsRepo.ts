import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { CowrieSession } from "../ingest/formats/native.ts"
import { dbErrors } from "./errors.ts"

/** An event stored from a session's line, and what that line named itself (cowrie_session_events). */
export interface CowrieSessionEvent {
  readonly session: string
  readonly eventId: string
  readonly action: string
  readonly ownProtocol: boolean
  readonly ownSourcePort: boolean
  readonly ownPort: boolean
  readonly complete: boolean
}

/** A stored event of a session still waiting for its connect, with the columns its completion rewrites. */
export interface IncompleteCowrieEvent extends CowrieSessionEvent {
  readonly incidentId: string
  readonly sourceIp: string
  readonly sourcePort: number
  readonly port: number
  readonly type: string
  readonly attackerInput: Record<string, unknown>
}

/** One merged line's details (already cleaned and masked). */
export interface CowrieDetailRow {
  readonly session: string
  readonly lineId: string
  readonly time: Date
  readonly details: Record<string, unknown>
}

const protocolOf = (v: unknown): "ssh" | "telnet" | undefined => (v === "ssh" || v === "telnet" ? v : undefined)

const isPort = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 65535

// A lone UTF-16 surrogate would make jsonb refuse the statement.
const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "string" ? x.toWellFormed() : x))

/**
 * D22/D42: what the service knows of Cowrie sessions, by (sensor, session): the connect's protocol and ports
 * (`cowrie_sessions`), the events stored from the session's lines (`cowrie_session_events`) and the details of the
 * lines merged into them (`cowrie_session_details`). The Ingestor calls these inside its transaction, under the
 * advisory lock of the session's source address. Every query but the prune takes the organization and filters on it.
 */
export class CowrieSessionsRepo extends Effect.Service<CowrieSessionsRepo>()("CowrieSessionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The sessions among `sessions` of this sensor whose connect is known, by session id. */
    const find = (orgId: string, sensorId: string, sessions: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const found = new Map<string, CowrieSession>()
        if (sessions.length === 0) return found
        const rows = yield* sql<{ session: string; protocol: unknown; sourcePort: unknown; port: unknown }>`
          select session, protocol, source_port as "sourcePort", port from cowrie_sessions
          where org_id = ${orgId} and sensor_id = ${sensorId} and session in ${sql.in([...sessions])}
            and protocol is not null`
        for (const row of rows) {
          const protocol = protocolOf(row.protocol)
          if (protocol === undefined || !isPort(row.sourcePort) || !isPort(row.port)) continue
          found.set(row.session, { protocol, sourcePort: row.sourcePort, port: row.port })
        }
        return found
      }).pipe(dbErrors)

    /**
     * Remembers these sessions' connects; a session whose connect is already known keeps its first record. Rows go in
     * session order, so two concurrent requests with the same sessions wait for each other instead of deadlocking.
     */
    const remember = (
      orgId: string,
      sensorId: string,
      connects: ReadonlyMap<string, CowrieSession>,
      createdAt: Date,
    ) => {
      const rows = [...connects]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([session, c]) => ({ session, protocol: c.protocol, source_port: c.sourcePort, port: c.port }))
      if (rows.length === 0) return Effect.void
      return sql`
        insert into cowrie_sessions (org_id, sensor_id, session, protocol, source_port, port, created_at)
        select ${orgId}, ${sensorId}, session, protocol, source_port, port, ${createdAt}
        from jsonb_to_recordset(${json(rows)}::jsonb) as r(session text, protocol text, source_port integer, port integer)
        on conflict (sensor_id, session) do update
          set protocol = excluded.protocol, source_port = excluded.source_port, port = excluded.port
          where cowrie_sessions.protocol is null`.pipe(Effect.asVoid, dbErrors)
    }

    /** Stores merged lines' details (a line already stored is kept); returns the sessions that got a new line. */
    const addDetails = (orgId: string, sensorId: string, rows: ReadonlyArray<CowrieDetailRow>, createdAt: Date) =>
      rows.length === 0
        ? Effect.succeed(new Set<string>())
        : sql<{ session: string }>`
            insert into cowrie_session_details (org_id, sensor_id, session, line_id, time, details, created_at)
            select ${orgId}, ${sensorId}, session, line_id, time, details, ${createdAt}
            from jsonb_to_recordset(${json(
              [...rows]
                .sort((a, b) => (a.lineId < b.lineId ? -1 : a.lineId > b.lineId ? 1 : 0))
                .map((r) => ({ session: r.session, line_id: r.lineId, time: r.time, details: r.details })),
            )}::jsonb) as r(session text, line_id text, time timestamptz, details jsonb)
            on conflict (sensor_id, session, line_id) do nothing
            returning session`.pipe(
            Effect.map((inserted) => new Set(inserted.map((r) => r.session))),
            dbErrors,
          )

    /** Every merged line of these sessions, earliest first (ties by line id). */
    const details = (orgId: string, sensorId: string, sessions: ReadonlyArray<string>) =>
      sessions.length === 0
        ? Effect.succeed([] as ReadonlyArray<CowrieDetailRow>)
        : sql<CowrieDetailRow>`
            select session, line_id as "lineId", time, details from cowrie_session_details
            where org_id = ${orgId} and sensor_id = ${sensorId} and session in ${sql.in([...sessions])}
            order by session, time, line_id`.pipe(dbErrors)

    /** Records the events stored from sessions' lines. */
    const linkEvents = (orgId: string, sensorId: string, rows: ReadonlyArray<CowrieSessionEvent>, createdAt: Date) =>
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
            )}::jsonb) as r(session text, event_id text, action text, own_protocol boolean, own_source_port boolean,
              own_port boolean, complete boolean)
            on conflict do nothing`.pipe(Effect.asVoid, dbErrors)

    /** The stored events of these sessions that still wait for their session's connect. */
    const incomplete = (orgId: string, sensorId: string, sessions: ReadonlyArray<string>) =>
      sessions.length === 0
        ? Effect.succeed([] as ReadonlyArray<IncompleteCowrieEvent>)
        : sql<IncompleteCowrieEvent>`
            select c.session, c.event_id as "eventId", c.action, c.own_protocol as "ownProtocol",
              c.own_source_port as "ownSourcePort", c.own_port as "ownPort", c.complete,
              e.incident_id as "incidentId", e.source_ip as "sourceIp", e.source_port as "sourcePort", e.port, e.type,
              e.attacker_input as "attackerInput"
            from cowrie_session_events c join events e on e.id = c.event_id and e.org_id = c.org_id
            where c.org_id = ${orgId} and c.sensor_id = ${sensorId} and c.session in ${sql.in([...sessions])}
              and not c.complete
            order by c.event_id`.pipe(dbErrors)

    /** Writes the completed columns of stored events and marks them complete. */
    const complete = (
      orgId: string,
      sensorId: string,
      rows: ReadonlyArray<{
        readonly eventId: string
        readonly session: string
        readonly type: string
        readonly service: string
        readonly sourcePort: number
        readonly port: number
        readonly summary: string
      }>,
    ) =>
      rows.length === 0
        ? Effect.void
        : Effect.gen(function* () {
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
              update events e set type = r.type, service = r.service, source_port = r.source_port, port = r.port,
                summary = r.summary
              from jsonb_to_recordset(${payload}::jsonb)
                as r(id text, session text, type text, service text, source_port integer, port integer, summary text)
              where e.id = r.id and e.org_id = ${orgId}`
            yield* sql`
              update cowrie_session_events c set complete = true
              from jsonb_to_recordset(${payload}::jsonb) as r(id text, session text)
              where c.sensor_id = ${sensorId} and c.session = r.session and c.event_id = r.id`
          }).pipe(dbErrors)

    /** Sets the session's client members on every stored event of the session (they never hide an own member). */
    const addClientMembers = (
      orgId: string,
      sensorId: string,
      clients: ReadonlyMap<string, Record<string, unknown>>,
    ) =>
      clients.size === 0
        ? Effect.void
        : sql`
            update events e set attacker_input = e.attacker_input || r.client
            from jsonb_to_recordset(${json([...clients].map(([session, client]) => ({ session, client })))}::jsonb)
              as r(session text, client jsonb),
              cowrie_session_events c
            where c.org_id = ${orgId} and c.sensor_id = ${sensorId} and c.session = r.session
              and e.id = c.event_id and e.org_id = ${orgId}`.pipe(Effect.asVoid, dbErrors)

    /**
     * Deletes everything remembered of sessions created before `cutoff`, of all organizations (maintenance); returns
     * how many sessions. A later line of a pruned session maps with the defaults (ssh, source port 0, the type's port).
     */
    const pruneOlderThan = (cutoff: Date) =>
      Effect.gen(function* () {
        yield* sql`delete from cowrie_session_events where created_at < ${cutoff}`
        yield* sql`delete from cowrie_session_details where created_at < ${cutoff}`
        const rows = yield* sql<{ deleted: number }>`
          with gone as (delete from cowrie_sessions where created_at < ${cutoff} returning 1)
          select count(*)::int as deleted from gone`
        return rows[0]?.deleted ?? 0
      }).pipe(dbErrors)

    return {
      find,
      remember,
      addDetails,
      details,
      linkEvents,
      incomplete,
      complete,
      addClientMembers,
      pruneOlderThan,
    } as const
  }),
}) {}
