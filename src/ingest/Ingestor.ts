import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Clock, Duration, Effect } from "effect"
import { prepareAttackerInput } from "../domain/attackerInput.ts"
import { type EventId, type IncidentId, newId } from "../domain/ids.ts"
import { classifySource, type OwnNetwork } from "../domain/networks.ts"
import { BAIT_CREDENTIAL_TAG } from "../domain/significance.ts"
import { AppConfig } from "../platform/config.ts"
import { DatabaseError, transactionErrors } from "../platform/db/errors.ts"
import { AlertOutbox } from "../repos/AlertOutbox.ts"
import { BaitCredentialsRepo } from "../repos/BaitCredentialsRepo.ts"
import { EventsRepo, type NewEvent } from "../repos/EventsRepo.ts"
import { IgnoreRulesRepo } from "../repos/IgnoreRulesRepo.ts"
import { type IncidentRow, IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { NetworksRepo } from "../repos/NetworksRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"
import type { EventItem, EventOutcome, SensorIdentity } from "./batch.ts"
import { CowrieSessionsRepo } from "./CowrieSessionsRepo.ts"
import {
  type CompletedCowrieEvent,
  type CowrieClientMembers,
  cowrieSessionCompletion,
  withSessionClient,
} from "./cowrieSessions.ts"
import type { CowrieLink, CowrieMerge } from "./formats/native.ts"
import { OrgKeys } from "./OrgKeys.ts"
import {
  type CurrentIncident,
  decide,
  type IncidentAggregate,
  type IncidentContext,
  MAX_USERNAMES,
  merge,
  severityInContext,
  textsFor,
  transitionsOf,
} from "./rules.ts"
import { firstString, summaryOf } from "./summary.ts"
import type { ValidEvent } from "./validate.ts"

interface Prepared {
  readonly index: number
  readonly row: NewEvent
  readonly username: string | undefined
  readonly cowrie?: CowrieLink | undefined
  /**
   * An event stored by an earlier request, which an ignore rule no longer ignores now that its session's connect
   * completed it: it joins its key's incident as a fresh event would, and is not part of this request's answer.
   */
  readonly stored?: true
}

/**
 * PostgreSQL's deadlock_detected: the transaction was rolled back and may simply run again. The repositories wrap
 * their SqlError in a DatabaseError; the Ingestor's own statements fail with the SqlError itself.
 */
export const isDeadlock = (error: unknown): boolean => {
  const sqlError = error instanceof DatabaseError ? error.cause : error
  if (!(sqlError instanceof SqlError)) return false
  const cause: unknown = sqlError.cause
  return typeof cause === "object" && cause !== null && (cause as { code?: unknown }).code === "40P01"
}

/** The members a login's password is captured under (the mappers' names), masked with its fingerprint by then. */
const PASSWORD_KEYS = ["password", "passwd", "pass"] as const

/** The fingerprint of the password a prepared attackerInput captured, if it captured one. */
const passwordFingerprintOf = (input: Record<string, unknown>): string | undefined => {
  for (const key of PASSWORD_KEYS) {
    const value = input[key]
    if (typeof value !== "object" || value === null) continue
    const fingerprint = (value as { fingerprint?: unknown }).fingerprint
    if (typeof fingerprint === "string" && fingerprint !== "") return fingerprint
  }
  return undefined
}

/** How long a source stays linked across sensors: seen by another sensor this recently, it is one story. */
const LINK_WINDOW_MS = 7 * 24 * 60 * 60 * 1000

/**
 * Records events and groups them into incidents. The events of one request are written in
 * one transaction under an advisory lock per grouping key (organization, sensor, sourceIp): the events, the incident
 * changes, their transitions and their webhook deliveries commit together, concurrent requests (also from other
 * server processes) never create two incidents for one key, and no count is lost.
 */
export class Ingestor extends Effect.Service<Ingestor>()("Ingestor", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const orgKeys = yield* OrgKeys
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const transitions = yield* TransitionsRepo
    const outbox = yield* AlertOutbox
    const cowrieSessions = yield* CowrieSessionsRepo
    const cowrie = yield* cowrieSessionCompletion
    const ignoreRules = yield* IgnoreRulesRepo
    const networksRepo = yield* NetworksRepo
    const baitCredentials = yield* BaitCredentialsRepo
    const config = yield* AppConfig
    const reopenWindowMs = Duration.toMillis(config.reopenWindow)
    const prepare = (
      sensor: SensorIdentity,
      key: Uint8Array,
      index: number,
      e: ValidEvent,
      cowrie: CowrieLink | undefined,
      client: CowrieClientMembers | undefined,
    ): Prepared => {
      const own = prepareAttackerInput(e.attackerInput, key)
      const username = firstString(own, ["username", "user", "login"])
      const summary = summaryOf(e, own)
      // The session's client members (already prepared and bounded) join the event's own, which come first and
      // are never hidden nor pushed out: the whole stays within the attackerInput bound.
      const attackerInput = withSessionClient(own, client)
      return {
        index,
        username,
        cowrie,
        row: {
          id: newId("event", e.time.getTime()),
          orgId: sensor.orgId,
          // Set when the event joins its incident (null stays only when an ignore rule holds it).
          incidentId: null,
          sensorId: sensor.sensorId,
          sensorEventId: e.sensorEventId,
          time: e.time,
          sourceIp: e.sourceIp,
          sourcePort: e.sourcePort,
          service: e.service,
          port: e.port,
          type: e.type,
          action: e.action,
          severity: e.severity,
          confidence: e.confidence,
          tags: e.tags,
          summary,
          attackerInput,
        },
      }
    }

    /**
     * Writes again the event types and service-written texts of incidents whose events changed type (a Cowrie session's
     * events completed by a connect that arrived after them).
     */
    const refreshIncidents = (sensor: SensorIdentity, incidentIds: ReadonlyArray<IncidentId>) =>
      Effect.gen(function* () {
        if (incidentIds.length === 0) return
        const rows = yield* sql<{
          id: string
          sourceIp: string
          eventCount: number
          usernames: ReadonlyArray<string>
          status: "open" | "closed"
          severity: IncidentAggregate["severity"]
          tags: ReadonlyArray<string>
          highConfidence: boolean
          firstSeenAt: Date
          lastSeenAt: Date
          resolvedAt: Date | null
          types: ReadonlyArray<string> | null
          typeCounts: Record<string, number> | null
          eventsSeverity: IncidentAggregate["severity"]
          baitCredential: boolean
          sourceNetwork: OwnNetwork | null
          linked: boolean
          otherSensors: number
        }>`
          select i.id, i.source_ip as "sourceIp", i.event_count as "eventCount", i.usernames, i.status, i.severity,
            i.tags, i.high_confidence as "highConfidence", i.first_seen_at as "firstSeenAt",
            i.last_seen_at as "lastSeenAt", i.resolved_at as "resolvedAt",
            (select array_agg(distinct e.type order by e.type) from events e
              where e.incident_id = i.id and e.org_id = i.org_id) as types,
            (select jsonb_object_agg(t.type, t.n) from (select e.type, count(*) as n from events e
              where e.incident_id = i.id and e.org_id = i.org_id group by e.type) t) as "typeCounts",
            coalesce(i.events_severity, i.severity) as "eventsSeverity", i.bait_credential as "baitCredential",
            case when i.source_scope = 'internal' then i.source_network end as "sourceNetwork", i.linked,
            i.other_sensors as "otherSensors"
          from incidents i where i.org_id = ${sensor.orgId} and i.id in ${sql.in([...incidentIds].sort())}
          order by i.id for update`
        const updates = rows.map((r) => {
          const typeCounts = r.typeCounts ?? {}
          const aggregate: IncidentAggregate = { ...r, eventTypes: r.types ?? [], typeCounts }
          const context = { insideNetwork: r.sourceNetwork, linked: r.linked, otherSensors: r.otherSensors }
          return {
            id: r.id,
            event_types: aggregate.eventTypes,
            type_counts: typeCounts,
            ...textsFor(aggregate, sensor.name, r.sourceIp, context),
          }
        })
        if (updates.length === 0) return
        yield* sql`
          update incidents i set event_types = r.event_types, type_counts = r.type_counts, title = r.title,
            narrative = r.narrative, recommended_action = r."recommendedAction"
          from jsonb_to_recordset(${JSON.stringify(updates)}::text::jsonb)
            as r(id text, event_types text[], type_counts jsonb, title text, narrative text, "recommendedAction" text)
          where i.id = r.id and i.org_id = ${sensor.orgId}`
      })

    /**
     * Writes again what the member events of these incidents add up to, after some of them left (an ignore rule now
     * ignores them), as if those had never joined: count, types, tags, usernames, confidence, the events' severity,
     * bait, times, the judged severity (in the incident's kept context: inside or not, linked) and the texts. So a
     * session's lines group the same whatever order they arrive in, and the incidents feed shows the new
     * state. The severity may fall here, the one place it does: what raised it was never the incident's activity.
     * No transition is recorded: an ignored event never records one, and no transition (nor webhook) says a
     * severity fell. Nor is it activity: `last_activity_at` stays. An incident left with no event keeps its first
     * and last times (merge reads none from an incident of no event) and is closed like any other once idle.
     */
    const recountIncidents = (sensor: SensorIdentity, incidentIds: ReadonlyArray<IncidentId>, now: Date) =>
      Effect.gen(function* () {
        if (incidentIds.length === 0) return
        const rows = yield* sql<{
          id: string
          sourceIp: string
          status: "open" | "closed"
          firstSeenAt: Date
          lastSeenAt: Date
          resolvedAt: Date | null
          sourceNetwork: OwnNetwork | null
          linked: boolean
          otherSensors: number
        }>`
          select i.id, i.source_ip as "sourceIp", i.status, i.first_seen_at as "firstSeenAt",
            i.last_seen_at as "lastSeenAt", i.resolved_at as "resolvedAt",
            case when i.source_scope = 'internal' then i.source_network end as "sourceNetwork", i.linked,
            i.other_sensors as "otherSensors"
          from incidents i where i.org_id = ${sensor.orgId} and i.id in ${sql.in([...incidentIds].sort())}
          order by i.id for update`
        const totals = new Map(
          (yield* cowrieSessions.memberTotals(sensor.orgId, incidentIds, MAX_USERNAMES, BAIT_CREDENTIAL_TAG)).map(
            (t) => [t.id, t],
          ),
        )
        const updates = rows.map((r) => {
          const t = totals.get(r.id)
          const context: IncidentContext = {
            insideNetwork: r.sourceNetwork,
            linked: r.linked,
            otherSensors: r.otherSensors,
          }
          const members = {
            eventsSeverity: t?.eventsSeverity ?? "low",
            typeCounts: t?.typeCounts ?? {},
            baitCredential: t?.baitCredential ?? false,
          }
          const aggregate: IncidentAggregate = {
            ...members,
            status: r.status,
            severity: severityInContext(members, context),
            resolvedAt: r.resolvedAt,
            eventCount: t?.eventCount ?? 0,
            eventTypes: t?.eventTypes ?? [],
            tags: t?.tags ?? [],
            usernames: t?.usernames ?? [],
            highConfidence: t?.highConfidence ?? false,
            firstSeenAt: t?.firstSeenAt ?? r.firstSeenAt,
            lastSeenAt: t?.lastSeenAt ?? r.lastSeenAt,
          }
          return {
            id: r.id,
            severity: aggregate.severity,
            events_severity: aggregate.eventsSeverity,
            type_counts: aggregate.typeCounts,
            bait_credential: aggregate.baitCredential,
            event_count: aggregate.eventCount,
            event_types: aggregate.eventTypes,
            tags: aggregate.tags,
            usernames: aggregate.usernames.map((u) => u.toWellFormed()),
            high_confidence: aggregate.highConfidence,
            first_seen_at: aggregate.firstSeenAt.toJSON(),
            last_seen_at: aggregate.lastSeenAt.toJSON(),
            ...textsFor(aggregate, sensor.name, r.sourceIp, context),
          }
        })
        if (updates.length === 0) return
        yield* sql`
          update incidents i set severity = r.severity, events_severity = r.events_severity,
            type_counts = r.type_counts, bait_credential = r.bait_credential, event_count = r.event_count,
            event_types = r.event_types, tags = r.tags, usernames = r.usernames, high_confidence = r.high_confidence,
            first_seen_at = r.first_seen_at, last_seen_at = r.last_seen_at, title = r.title, narrative = r.narrative,
            recommended_action = r."recommendedAction", updated_at = ${now}
          from jsonb_to_recordset(${JSON.stringify(updates)}::text::jsonb)
            as r(id text, severity text, events_severity text, type_counts jsonb, bait_credential boolean,
              event_count integer, event_types text[], tags text[], usernames text[], high_confidence boolean,
              first_seen_at timestamptz, last_seen_at timestamptz, title text, narrative text,
              "recommendedAction" text)
          where i.id = r.id and i.org_id = ${sensor.orgId}`
      })

    /**
     * Ignore rules on the finished event: a stored event whose decoy port or type its session's connect just completed is
     * judged again by the organization's active rules, in the transaction that completes it (a Cowrie 2.x line
     * carries no protocol or ports, and was judged on the defaults, ssh and 22, when it was stored). The outcome is
     * the one the event would have had, had it come complete:
     * - now ignored (it was not): it leaves its incident as an ignored event never joined one: the incident is
     *   written again from the events left (recountIncidents), with no transition; the events feed, which never
     *   shows an ignored event, leaves it out from then on (a follower that read it keeps it: the feeds never take a
     *   change back, and an ignored event is never a change);
     * - no longer ignored: returned, to join its key's incident in this request exactly as a fresh event does
     *   (joined, re-opened or created, with its transition and webhooks), at a new position in the events feed;
     * - ignored by another rule: it names that rule.
     * Each rule's hit count follows the events it ignores (returned as deltas, written with the request's own hits,
     * the transaction's last write).
     */
    const rejudgeCompleted = (sensor: SensorIdentity, completed: ReadonlyArray<CompletedCowrieEvent>, now: Date) =>
      Effect.gen(function* () {
        const hits = new Map<string, number>()
        const rejoin: Array<Prepared> = []
        const left = new Set<IncidentId>()
        const changed = completed.filter((c) => c.type !== c.was.type || c.port !== c.was.port)
        if (changed.length === 0) return { hits, rejoin, left }
        const matched = new Map(
          (yield* ignoreRules.match(
            sensor.orgId,
            sensor.sensorId,
            changed.map((c, key) => ({ key, sourceIp: c.was.sourceIp, port: c.port, type: c.type })),
            now,
          )).map((m) => [m.key, m.ruleId]),
        )
        const marks: Array<{ eventId: EventId; incidentId: null; ignoreRuleId: string; renew: false }> = []
        for (const [key, c] of changed.entries()) {
          const rule = matched.get(key) ?? null
          const was = c.was.ignoreRuleId ?? null
          if (rule === was) continue
          if (was !== null) hits.set(was, (hits.get(was) ?? 0) - 1)
          if (rule !== null) {
            hits.set(rule, (hits.get(rule) ?? 0) + 1)
            marks.push({ eventId: c.eventId, incidentId: null, ignoreRuleId: rule, renew: false })
            if (c.was.incidentId !== null) left.add(c.was.incidentId)
            continue
          }
          const w = c.was
          rejoin.push({
            index: -1,
            stored: true,
            username: firstString(w.attackerInput, ["username", "user", "login"]),
            row: {
              id: c.eventId,
              orgId: sensor.orgId,
              incidentId: null,
              sensorId: sensor.sensorId,
              sensorEventId: w.sensorEventId,
              time: new Date(w.time),
              sourceIp: w.sourceIp,
              sourcePort: c.sourcePort,
              service: c.service,
              port: c.port,
              type: c.type,
              action: w.eventAction,
              severity: w.severity,
              confidence: w.confidence,
              tags: w.tags,
              summary: c.summary,
              attackerInput: w.attackerInput,
            },
          })
        }
        yield* cowrieSessions.rejudge(sensor.orgId, marks)
        yield* recountIncidents(sensor, [...left], now)
        return { hits, rejoin, left }
      })

    /**
     * The request's Cowrie sessions completed (cowrieSessions.ts); the stored events they complete are judged again by
     * the ignore rules here, and their incidents' event types and texts written again.
     */
    const completeCowrieSessions = (
      sensor: SensorIdentity,
      key: Uint8Array,
      items: ReadonlyArray<EventItem>,
      merges: ReadonlyArray<CowrieMerge>,
      now: Date,
    ) =>
      Effect.gen(function* () {
        const done = yield* cowrie.complete(sensor, key, items, merges, now, (completed) =>
          Effect.gen(function* () {
            const judged = yield* rejudgeCompleted(sensor, completed, now)
            yield* refreshIncidents(sensor, [
              ...new Set(
                completed
                  .filter((c) => c.type !== c.was.type)
                  // An event an ignore rule ignored has no incident to refresh; one its events left was recounted.
                  .flatMap((c) =>
                    c.was.incidentId === null || judged.left.has(c.was.incidentId) ? [] : [c.was.incidentId],
                  ),
              ),
            ])
            return judged
          }),
        )
        return {
          items: done.items,
          clients: done.clients,
          rejoin: done.judged?.rejoin ?? ([] as ReadonlyArray<Prepared>),
          hits: done.judged?.hits ?? new Map<string, number>(),
        }
      })

    /**
     * A login with a credential the organization planted: OpenCanary's `honeycred` flag, or a username and password
     * an admin registered as bait (matched by the password's keyed fingerprint). Someone read the credential where it
     * was planted: the event is critical, high confidence, and tagged so its incident leads with it (T1078).
     */
    const markBait = (sensor: SensorIdentity, prepared: ReadonlyArray<Prepared>) =>
      Effect.gen(function* () {
        // Each event's captured credential (its username and its password's fingerprint), read once.
        const credentials = prepared.map((p) => {
          const fingerprint = passwordFingerprintOf(p.row.attackerInput as Record<string, unknown>)
          return fingerprint === undefined || p.username === undefined
            ? undefined
            : { fingerprint, key: `${p.username}\u0000${fingerprint}` }
        })
        const planted = new Set(
          (yield* baitCredentials.matching(
            sensor.orgId,
            credentials.flatMap((c) => (c === undefined ? [] : [c.fingerprint])),
          )).map((b) => `${b.username}\u0000${b.passwordFingerprint}`),
        )
        return prepared.map((p, i): Prepared => {
          const credential = credentials[i]
          const bait =
            (p.row.attackerInput as Record<string, unknown>).honeycred === true ||
            p.row.tags.includes(BAIT_CREDENTIAL_TAG) ||
            (credential !== undefined && planted.has(credential.key))
          if (!bait) return p
          return {
            ...p,
            row: {
              ...p.row,
              severity: "critical",
              confidence: "high",
              tags: p.row.tags.includes(BAIT_CREDENTIAL_TAG) ? p.row.tags : [...p.row.tags, BAIT_CREDENTIAL_TAG],
            },
          }
        })
      })

    /**
     * The ignore rule that matches each event, by the event's index: one lookup per distinct (source, decoy port, type)
     * of the request, all in one statement.
     */
    const matchIgnoreRules = (sensor: SensorIdentity, fresh: ReadonlyArray<Prepared>, now: Date) =>
      Effect.gen(function* () {
        const byIndex = new Map<number, string>()
        if (fresh.length === 0) return byIndex
        const probes = new Map<string, { key: number; sourceIp: string; port: number; type: string }>()
        const probeOf = (p: Prepared) => `${p.row.sourceIp} ${p.row.port} ${p.row.type}`
        for (const p of fresh) {
          const k = probeOf(p)
          if (!probes.has(k)) {
            probes.set(k, { key: probes.size, sourceIp: p.row.sourceIp, port: p.row.port, type: p.row.type })
          }
        }
        const matched = new Map(
          (yield* ignoreRules.match(sensor.orgId, sensor.sensorId, [...probes.values()], now)).map((m) => [
            m.key,
            m.ruleId,
          ]),
        )
        for (const p of fresh) {
          const ruleId = matched.get(probes.get(probeOf(p))?.key ?? -1)
          if (ruleId !== undefined) byIndex.set(p.index, ruleId)
        }
        return byIndex
      })

    /**
     * All events of one request (one sensor), in one transaction: the grouping keys' advisory locks are taken in
     * one statement in hash order (so two requests with overlapping keys never deadlock), then each step is one
     * statement for the whole batch: the duplicate check, the keys' newest incidents (locked), the incident
     * upsert, the event insert, the transitions and the outbox. About 8 round trips per request instead of about
     * 8 per grouping key; Cowrie lines add two (their sessions read in one statement, the events' session links),
     * and a write only when a request teaches a session's connect or changes its client members.
     */
    const ingestBatch = (
      sensor: SensorIdentity,
      key: Uint8Array,
      items: ReadonlyArray<EventItem>,
      merges: ReadonlyArray<CowrieMerge>,
    ) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const now = new Date(yield* Clock.currentTimeMillis)
          const sourceIps = [...new Set([...items.map((i) => i.event.sourceIp), ...merges.map((m) => m.sourceIp)])]
          const lockKeys = sourceIps.map((ip) => `${sensor.orgId}|${sensor.sensorId}|${ip}`)
          // The same lock ids as one key per transaction took before (hashtextextended of org|sensor|ip), so
          // processes of both versions exclude each other during a rolling deploy.
          yield* sql`
            select pg_advisory_xact_lock(l.h) from (
              select distinct hashtextextended(k, 0) as h from jsonb_array_elements_text(${JSON.stringify(lockKeys)}::text::jsonb) as t(k)
              order by h
            ) l`
          const outcomes: Array<EventOutcome> = []
          // Cowrie sessions first (under the locks just taken), so that the newest incidents read below already
          // hold the event types of any stored event this request completes.
          const cowrie = yield* completeCowrieSessions(sensor, key, items, merges, now)
          const unmarked = cowrie.items.map((item) =>
            prepare(
              sensor,
              key,
              item.index,
              item.event,
              item.cowrie,
              item.cowrie === undefined ? undefined : cowrie.clients.get(item.cowrie.session),
            ),
          )
          const prepared = yield* markBait(sensor, unmarked)
          const stored = new Map(
            (yield* events.existingSensorEventIds(
              sensor.sensorId,
              prepared.map((p) => p.row.sensorEventId),
            )).map((r) => [r.sensorEventId, r.id]),
          )
          // A sensor event id seen before, or earlier in this batch (any sourceIp), is a duplicate: resending is safe.
          const inBatch = new Map<string, EventId>()
          const fresh: Array<Prepared> = []
          for (const p of prepared) {
            const known = stored.get(p.row.sensorEventId) ?? inBatch.get(p.row.sensorEventId)
            if (known !== undefined) {
              outcomes.push({ index: p.index, status: "duplicate", id: known })
              continue
            }
            inBatch.set(p.row.sensorEventId, p.row.id)
            fresh.push(p)
          }
          // An event an active ignore rule matches is still stored (the record is kept), marked, and joins no group.
          const ignoredBy = yield* matchIgnoreRules(sensor, fresh, now)
          const ignored: Array<Prepared> = []
          const groups = new Map<string, Array<Prepared>>()
          for (const p of [...fresh, ...cowrie.rejoin]) {
            const ruleId = ignoredBy.get(p.index)
            if (ruleId !== undefined) {
              ignored.push({ ...p, row: { ...p.row, incidentId: null, ignoreRuleId: ruleId } })
              continue
            }
            const group = groups.get(p.row.sourceIp)
            if (group) group.push(p)
            else groups.set(p.row.sourceIp, [p])
          }
          if (groups.size === 0 && ignored.length === 0 && cowrie.hits.size === 0) return outcomes

          const newest = new Map(
            (yield* incidents.newestForKeys(sensor.orgId, sensor.sensorId, [...groups.keys()])).map((r) => [
              r.sourceIp,
              r,
            ]),
          )
          const decisions = new Map(
            [...groups.keys()].map((ip) => [ip, decide(newest.get(ip), now.getTime(), reopenWindowMs)] as const),
          )
          // A new incident's source is judged inside or outside against the organization's networks, read under a
          // share lock so that a change of the list (which re-judges every incident) waits for this commit.
          const networks = [...decisions.values()].some((d) => d.kind === "create")
            ? (yield* networksRepo.get(sensor.orgId, true)).networks
            : []
          // Whether the source is on other sensors is asked only when an incident begins (created or re-opened): an
          // incident that goes on keeps its count, which a sibling beginning elsewhere writes again (below).
          const linkSince = new Date(now.getTime() - LINK_WINDOW_MS)
          const beginning = [...decisions].filter(([, d]) => d.kind !== "join").map(([ip]) => ip)
          const elsewhere = yield* incidents.seenOnOtherSensors(sensor.orgId, sensor.sensorId, beginning, linkSince)
          const plans = [...groups].map(([sourceIp, group]) => {
            const current: CurrentIncident | undefined = newest.get(sourceIp)
            const decision = decisions.get(sourceIp) ?? decide(current, now.getTime(), reopenWindowMs)
            const base = decision.kind === "create" ? undefined : decision.incident
            const firstSeen = Math.min(
              ...group.map((p) => p.row.time.getTime()),
              base?.firstSeenAt.getTime() ?? Number.POSITIVE_INFINITY,
            )
            const other = elsewhere.get(sourceIp)
            const context: IncidentContext = {
              insideNetwork:
                base === undefined
                  ? classifySource(sourceIp, networks).network
                  : base.sourceScope === "internal"
                    ? base.sourceNetwork
                    : null,
              // Later incidents of a source already on another decoy step up; the first one does not.
              linked: (base?.linked ?? false) || (other !== undefined && other.earliestFirstSeen.getTime() < firstSeen),
              otherSensors: decision.kind === "join" ? (base?.otherSensors ?? 0) : (other?.sensors ?? 0),
            }
            const aggregate = merge(
              base,
              group.map((p) => ({
                time: p.row.time,
                type: p.row.type,
                severity: p.row.severity,
                confidence: p.row.confidence,
                tags: p.row.tags,
                username: p.username,
              })),
              context,
            )
            const incidentId =
              decision.kind === "create" ? newId("incident", aggregate.firstSeenAt.getTime()) : decision.incident.id
            const incident: IncidentRow = {
              id: incidentId,
              orgId: sensor.orgId,
              sensorId: sensor.sensorId,
              sensorName: sensor.name,
              sourceIp,
              ...aggregate,
              sourceScope: context.insideNetwork === null ? "external" : "internal",
              sourceNetwork: context.insideNetwork,
              linked: context.linked,
              otherSensors: context.otherSensors,
              ...textsFor(aggregate, sensor.name, sourceIp, context),
            }
            return { group, decision, aggregate, incident }
          })
          // created_at is only written for new incidents (the upsert leaves it on known ones).
          yield* incidents.upsertMany(plans.map((p) => ({ ...p.incident, createdAt: now, updatedAt: now })))
          // Each sibling elsewhere of an incident that began here has one more sensor to show.
          yield* incidents.recountOtherSensors(
            sensor.orgId,
            sensor.sensorId,
            beginning.filter((ip) => (elsewhere.get(ip)?.sensors ?? 0) > 0),
            linkSince,
          )
          const written = yield* events.insertMany(
            [
              ...plans.flatMap((plan) =>
                plan.group.flatMap((p) => (p.stored ? [] : [{ ...p.row, incidentId: plan.incident.id }])),
              ),
              ...ignored.map((p) => p.row),
            ],
            now,
          )
          // Stored events no rule ignores any longer join their incident here (rejudgeCompleted).
          const rejoined = plans.flatMap((plan) =>
            plan.group.flatMap((p) =>
              p.stored ? [{ eventId: p.row.id, incidentId: plan.incident.id, ignoreRuleId: null, renew: true }] : [],
            ),
          )
          yield* cowrieSessions.rejudge(sensor.orgId, rejoined)
          const writtenIds = new Set([
            ...written.map((w) => w.sensorEventId),
            ...plans.flatMap((plan) => plan.group.flatMap((p) => (p.stored ? [p.row.sensorEventId] : []))),
          ])
          yield* cowrieSessions.linkEvents(
            sensor.orgId,
            sensor.sensorId,
            [...plans.map((plan) => plan.group), ignored].flatMap((group) =>
              group.flatMap((p) =>
                p.cowrie === undefined || p.stored || !writtenIds.has(p.row.sensorEventId)
                  ? []
                  : [
                      {
                        session: p.cowrie.session,
                        eventId: p.row.id,
                        action: p.cowrie.action,
                        ownProtocol: p.cowrie.ownProtocol,
                        ownSourcePort: p.cowrie.ownSourcePort,
                        ownPort: p.cowrie.ownPort,
                        complete: p.cowrie.ownProtocol && p.cowrie.ownSourcePort && p.cowrie.ownPort,
                      },
                    ],
              ),
            ),
            now,
          )
          // A concurrent request with another sourceIp (so another lock) may have stored one of these sensor event
          // ids since the check: it is a duplicate here, and its incident is recounted.
          const short = plans.filter((plan) => plan.group.some((p) => !writtenIds.has(p.row.sensorEventId)))
          if (short.length > 0) {
            const counts = new Map(
              (yield* incidents.recount(
                sensor.orgId,
                short.map((plan) => plan.incident.id),
              )).map((r) => [r.id, r.eventCount]),
            )
            for (const plan of short) {
              plan.incident = { ...plan.incident, eventCount: counts.get(plan.incident.id) ?? plan.incident.eventCount }
            }
          }
          for (const plan of plans) {
            for (const p of plan.group) {
              if (p.stored) continue
              outcomes.push(
                writtenIds.has(p.row.sensorEventId)
                  ? { index: p.index, status: "accepted", id: p.row.id, incidentId: plan.incident.id }
                  : { index: p.index, status: "duplicate", id: null },
              )
            }
          }
          const changes = plans.map((plan) =>
            transitionsOf(plan.decision, plan.aggregate).map((t) => ({
              ...t,
              orgId: sensor.orgId,
              incidentId: plan.incident.id,
              at: now,
            })),
          )
          const ids = yield* transitions.insert(changes.flat())
          // The webhook deliveries of these transitions commit with them (the outbox: nothing lost, nothing invented).
          let next = 0
          yield* outbox.enqueueAll(
            plans.map((plan, i) => ({
              orgId: sensor.orgId,
              incidentId: plan.incident.id,
              sensorProfile: sensor.profile,
              incident: plan.incident,
              transitions: (changes[i] ?? []).map((t) => ({ ...t, id: ids[next++] ?? "" })),
            })),
          )
          // Ignore-rule hits: the ignored events stored here (a concurrent duplicate is not a hit), as the last write,
          // so the rules' rows stay locked only until the commit.
          const hits = new Map(cowrie.hits)
          for (const p of ignored) {
            if (!writtenIds.has(p.row.sensorEventId)) {
              outcomes.push({ index: p.index, status: "duplicate", id: null })
              continue
            }
            outcomes.push({ index: p.index, status: "accepted", id: p.row.id, incidentId: null })
            const ruleId = p.row.ignoreRuleId ?? ""
            hits.set(ruleId, (hits.get(ruleId) ?? 0) + 1)
          }
          yield* ignoreRules.recordHits(
            sensor.orgId,
            [...hits].flatMap(([id, n]) => (n === 0 ? [] : [{ id, n }])),
            now,
          )
          return outcomes
        }),
      )

    /**
     * Ingests validated events of one sensor, and the client details of Cowrie lines merged into their sessions'
     * events; returns one outcome per event, in input order (a merged line's outcome is the route's).
     */
    const ingest: (
      sensor: SensorIdentity,
      events: ReadonlyArray<EventItem>,
      merges?: ReadonlyArray<CowrieMerge>,
    ) => Effect.Effect<Array<EventOutcome>, DatabaseError> = Effect.fn("Ingestor.ingest")(function* (
      sensor: SensorIdentity,
      events: ReadonlyArray<EventItem>,
      merges: ReadonlyArray<CowrieMerge> = [],
    ) {
      if (events.length === 0 && merges.length === 0) return []
      // The organization's fingerprint key (for masked secrets), unsealed once per process.
      const key = yield* orgKeys.fingerprintKey(sensor.orgId)
      const outcomes = yield* ingestBatch(sensor, key, events, merges).pipe(
        transactionErrors,
        // The advisory locks and the incidents are locked in one order by every request; a deadlock can still
        // involve the idle close (it locks open incidents in scan order): the transaction is simply run again.
        Effect.retry({ times: 3, while: isDeadlock }),
        Effect.catchTag("SqlError", (cause) => Effect.fail(new DatabaseError({ cause }))),
      )
      return outcomes.sort((a, b) => a.index - b.index)
    })

    return { ingest } as const
  }),
}) {}
