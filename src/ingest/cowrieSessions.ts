import { Effect } from "effect"
import { prepareAttackerInput } from "../domain/attackerInput.ts"
import { eventTypeSpec } from "../domain/eventTypes.ts"
import type { EventId } from "../domain/ids.ts"
import type { DatabaseError } from "../platform/db/errors.ts"
import type { EventItem, SensorIdentity } from "./batch.ts"
import { CowrieSessionsRepo, type IncompleteCowrieEvent } from "./CowrieSessionsRepo.ts"
import {
  addClientDetails,
  type CowrieClientMembers,
  clientMembersOf,
  ownMembersOf,
  readClientState,
  withClientMembers,
} from "./formats/cowrie.ts"
import type { CowrieMerge, CowrieSession } from "./formats/native.ts"
import { summaryOf } from "./summary.ts"
import type { ValidEvent } from "./validate.ts"

/**
 * How a Cowrie session's lines complete one another, inside the ingest transaction: a line that does not name its
 * protocol or ports takes them from its session's connect (when known, now or later), and every event of a session
 * carries the session's client members (the details of the lines merged into it). The Ingestor calls `complete`
 * once per request and builds each event's attacker input with `withSessionClient`; the incidents those completions
 * touch stay the Ingestor's (the `judge` step below).
 */

export type { CowrieClientMembers } from "./formats/cowrie.ts"

/** An event of an earlier request, completed by its session's connect. */
export interface CompletedCowrieEvent {
  readonly eventId: EventId
  readonly session: string
  readonly type: string
  readonly service: string
  readonly sourcePort: number
  readonly port: number
  readonly summary: string
  /** The event as it was stored, before its connect was known. */
  readonly was: IncompleteCowrieEvent
}

export interface CompletedSessions<J> {
  /** This request's events, completed by their sessions' connects where known. */
  readonly items: ReadonlyArray<EventItem>
  /** Each session's client members, for this request's events. */
  readonly clients: ReadonlyMap<string, CowrieClientMembers>
  /** What `judge` returned; undefined when the request has no Cowrie line. */
  readonly judged: J | undefined
}

/**
 * An event's attacker input with its session's client members: its own members come first and are never hidden nor
 * pushed out, and the whole stays within the attackerInput bound.
 */
export const withSessionClient = (own: Record<string, unknown>, client: CowrieClientMembers | undefined) =>
  withClientMembers(own, client)

/** The event type of a Cowrie action under the session's protocol (ssh-only actions keep their type). */
const cowrieType = (protocol: "ssh" | "telnet", action: string, current: string) =>
  eventTypeSpec(`${protocol}.${action}`) ?? eventTypeSpec(current)

/** Completes Cowrie sessions with the CowrieSessionsRepo of the Ingestor's pool. */
export const cowrieSessionCompletion = Effect.map(CowrieSessionsRepo, (cowrieSessions) => {
  /**
   * Inside the ingest transaction and under the advisory locks of the sessions' source addresses (every line of a
   * Cowrie session has the same one), so lines of one session in concurrent requests take turns:
   * - reads what is known of the request's sessions in one statement (connect, client state, and the stored events
   *   still waiting for a known or taught connect, at most 1,000 per session); a session merged before migration
   *   0021 gets its client state from its old details there (CowrieSessionsRepo.load), so `before` below already
   *   holds them;
   * - writes a session's row only when this request teaches its connect or changes its client state;
   * - completes the session's events stored before its connect was known (type, ports, summary), then hands them to
   *   `judge` (the Ingestor judges them again by the ignore rules and writes their incidents' event types and texts
   *   again);
   * - sets the session's client members on its stored events only when they changed;
   * - returns this request's events completed the same way, and each session's client members for them.
   * Whatever order a session's lines arrive in, its events end up the same.
   */
  const complete = <J, E>(
    sensor: SensorIdentity,
    key: Uint8Array,
    items: ReadonlyArray<EventItem>,
    merges: ReadonlyArray<CowrieMerge>,
    now: Date,
    judge: (completed: ReadonlyArray<CompletedCowrieEvent>) => Effect.Effect<J, E>,
  ): Effect.Effect<CompletedSessions<J>, DatabaseError | E> =>
    Effect.gen(function* () {
      const clients = new Map<string, CowrieClientMembers>()
      const sessions = [
        ...new Set([
          ...items.flatMap((i) => (i.cowrie === undefined ? [] : [i.cowrie.session])),
          ...merges.map((m) => m.session),
        ]),
      ]
      if (sessions.length === 0) return { items, clients, judged: undefined }
      const { orgId, sensorId } = sensor
      // The earliest connect of each session in this request (a session has one).
      const taught = new Map<string, { readonly at: string; readonly session: CowrieSession }>()
      for (const item of items) {
        const teaches = item.cowrie?.teaches
        if (item.cowrie === undefined || teaches === undefined) continue
        const at = `${item.event.time.toISOString()} ${item.event.sensorEventId}`
        const seen = taught.get(item.cowrie.session)
        if (seen === undefined || at < seen.at) taught.set(item.cowrie.session, { at, session: teaches })
      }
      const stored = yield* cowrieSessions.load(orgId, sensorId, sessions, [...taught.keys()])

      // Each session's connect: the one stored first, else the one this request teaches.
      const known = new Map<string, CowrieSession>()
      const writes = new Map<string, { session: string; connect?: CowrieSession; client?: unknown }>()
      for (const session of sessions) {
        const connect = stored.get(session)?.connect
        const teaches = taught.get(session)?.session
        if (connect !== undefined) known.set(session, connect)
        else if (teaches !== undefined) {
          known.set(session, teaches)
          writes.set(session, { session, connect: teaches })
        }
      }

      // Client state: this request's merged lines added; members rewritten on stored events only when they changed.
      const linesBySession = new Map<string, Array<{ at: string; details: Record<string, unknown> }>>()
      for (const m of merges) {
        const line = {
          at: `${new Date(m.time).toISOString()} ${m.lineId}`,
          details: prepareAttackerInput(m.details, key),
        }
        const list = linesBySession.get(m.session)
        if (list) list.push(line)
        else linesBySession.set(m.session, [line])
      }
      const changedClients = new Map<string, CowrieClientMembers>()
      for (const session of sessions) {
        const before = readClientState(stored.get(session)?.client)
        const lines = linesBySession.get(session)
        const after = lines === undefined ? before : addClientDetails(before, lines)
        const members = clientMembersOf(after)
        if (Object.keys(members.members).length > 0) clients.set(session, members)
        if (lines === undefined || JSON.stringify(after) === JSON.stringify(before)) continue
        writes.set(session, { ...writes.get(session), session, client: after })
        if (JSON.stringify(members) !== JSON.stringify(clientMembersOf(before))) changedClients.set(session, members)
      }
      yield* cowrieSessions.save(orgId, sensorId, [...writes.values()], now)

      // Stored events that waited for their session's connect.
      const completed = [...stored.values()].flatMap((row) => {
        const session = known.get(row.session)
        if (session === undefined) return []
        return row.waiting.map((w): CompletedCowrieEvent => {
          const spec = w.ownProtocol ? eventTypeSpec(w.type) : cowrieType(session.protocol, w.action, w.type)
          const type = spec?.type ?? w.type
          const service = spec?.service ?? session.protocol
          const port = w.ownPort ? w.port : session.port
          const sourcePort = w.ownSourcePort ? w.sourcePort : session.sourcePort
          const summary = summaryOf({ type, sourceIp: w.sourceIp, port, service }, ownMembersOf(w.attackerInput))
          return { eventId: w.eventId, session: w.session, type, service, sourcePort, port, summary, was: w }
        })
      })
      yield* cowrieSessions.complete(orgId, sensorId, completed)
      const judged = yield* judge(completed)
      if (changedClients.size > 0) {
        const rows = yield* cowrieSessions.sessionEvents(orgId, sensorId, [...changedClients.keys()])
        yield* cowrieSessions.setAttackerInputs(
          orgId,
          rows.flatMap((r) => {
            if (typeof r.attackerInput !== "object" || r.attackerInput === null || Array.isArray(r.attackerInput)) {
              return []
            }
            const own = ownMembersOf(r.attackerInput as Record<string, unknown>)
            return [{ eventId: r.eventId, attackerInput: withClientMembers(own, changedClients.get(r.session)) }]
          }),
        )
      }

      const completedItems = items.map((item): EventItem => {
        const link = item.cowrie
        const session = link === undefined ? undefined : known.get(link.session)
        if (link === undefined || session === undefined) return item
        const e = item.event
        const spec = link.ownProtocol ? undefined : cowrieType(session.protocol, link.action, e.type)
        const event: ValidEvent = {
          ...e,
          type: spec?.type ?? e.type,
          service: spec?.service ?? e.service,
          action: spec?.action ?? e.action,
          sourcePort: link.ownSourcePort ? e.sourcePort : session.sourcePort,
          port: link.ownPort ? e.port : session.port,
        }
        return { ...item, event, cowrie: { ...link, ownProtocol: true, ownSourcePort: true, ownPort: true } }
      })
      return { items: completedItems, clients, judged }
    })

  return { complete } as const
})
