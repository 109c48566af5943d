import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Clock, Duration, Effect } from "effect"
import { AppConfig } from "../config.ts"
import { prepareAttackerInput } from "../domain/attackerInput.ts"
import { eventTypeSpec } from "../domain/eventTypes.ts"
import { newId } from "../domain/ids.ts"
import { sanitizeText } from "../domain/sanitize.ts"
import { EventsRepo, type NewEvent } from "../repos/EventsRepo.ts"
import { DatabaseError, transactionErrors } from "../repos/errors.ts"
import { type IncidentRow, IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { WebhookOutbox } from "../webhooks/Outbox.ts"
import { OrgKeys } from "./OrgKeys.ts"
import { type CurrentIncident, decide, merge, textsFor, transitionsOf } from "./rules.ts"
import type { ValidEvent } from "./validate.ts"

/** The sensor a request authenticated as: the sensor, and so the organization, never come from the body. */
export interface SensorIdentity {
  readonly sensorId: string
  readonly orgId: string
  readonly name: string
  readonly profile: string
}

export type EventOutcome =
  | { readonly index: number; readonly status: "accepted"; readonly id: string; readonly incidentId: string }
  | { readonly index: number; readonly status: "duplicate"; readonly id: string | null }
  | { readonly index: number; readonly status: "rejected"; readonly reason: string }

interface Prepared {
  readonly index: number
  readonly row: NewEvent
  readonly username: string | undefined
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

const firstString = (input: Record<string, unknown>, keys: ReadonlyArray<string>) => {
  for (const key of keys) {
    const value = input[key]
    if (typeof value === "string" && value !== "") return value
  }
  return undefined
}

/**
 * Records events and groups them into incidents (D12–D14, D19, D20, D22). The events of one request are written in
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
    const outbox = yield* WebhookOutbox
    const config = yield* AppConfig
    const reopenWindowMs = Duration.toMillis(config.reopenWindow)
    const DETAIL_KEYS = ["command", "path", "url", "fileName", "query", "userAgent", "remoteVersion"] as const
    const prepare = (sensor: SensorIdentity, key: Uint8Array, index: number, e: ValidEvent): Prepared => {
      const attackerInput = prepareAttackerInput(e.attackerInput, key)
      const username = firstString(attackerInput, ["username", "user", "login"])
      const spec = eventTypeSpec(e.type)
      const summary = sanitizeText(
        spec?.summary({
          sourceIp: e.sourceIp,
          port: e.port,
          service: e.service,
          username,
          // The member the type's detailNoun names, under the mappers' names (OpenCanary FILENAME → fileName,
          // REMOTEVERSION → remoteVersion).
          detail: firstString(attackerInput, DETAIL_KEYS),
        }) ?? `${e.type} from ${e.sourceIp}`,
      )
      return {
        index,
        username,
        row: {
          id: newId("event", e.time.getTime()),
          orgId: sensor.orgId,
          incidentId: "",
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
     * All events of one request (one sensor), in one transaction: the grouping keys' advisory locks are taken in
     * one statement in hash order (so two requests with overlapping keys never deadlock), then each step is one
     * statement for the whole batch: the duplicate check, the keys' newest incidents (locked), the incident
     * upsert, the event insert, the transitions and the outbox. About 8 round trips per request instead of about
     * 8 per grouping key.
     */
    const ingestBatch = (sensor: SensorIdentity, prepared: ReadonlyArray<Prepared>) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const now = new Date(yield* Clock.currentTimeMillis)
          const sourceIps = [...new Set(prepared.map((p) => p.row.sourceIp))]
          const lockKeys = sourceIps.map((ip) => `${sensor.orgId}|${sensor.sensorId}|${ip}`)
          // The same lock ids as one key per transaction took before (hashtextextended of org|sensor|ip), so
          // processes of both versions exclude each other during a rolling deploy.
          yield* sql`
            select pg_advisory_xact_lock(l.h) from (
              select distinct hashtextextended(k, 0) as h from jsonb_array_elements_text(${JSON.stringify(lockKeys)}::jsonb) as t(k)
              order by h
            ) l`
          const outcomes: Array<EventOutcome> = []
          const stored = new Map(
            (yield* events.existingSensorEventIds(
              sensor.sensorId,
              prepared.map((p) => p.row.sensorEventId),
            )).map((r) => [r.sensorEventId, r.id]),
          )
          // D22: a sensor event id seen before, or earlier in this batch (whatever its sourceIp), is a duplicate.
          const inBatch = new Map<string, string>()
          const groups = new Map<string, Array<Prepared>>()
          for (const p of prepared) {
            const known = stored.get(p.row.sensorEventId) ?? inBatch.get(p.row.sensorEventId)
            if (known !== undefined) {
              outcomes.push({ index: p.index, status: "duplicate", id: known })
              continue
            }
            inBatch.set(p.row.sensorEventId, p.row.id)
            const group = groups.get(p.row.sourceIp)
            if (group) group.push(p)
            else groups.set(p.row.sourceIp, [p])
          }
          if (groups.size === 0) return outcomes

          const newest = new Map(
            (yield* incidents.newestForKeys(sensor.orgId, sensor.sensorId, [...groups.keys()])).map((r) => [
              r.sourceIp,
              r,
            ]),
          )
          const plans = [...groups].map(([sourceIp, group]) => {
            const current: CurrentIncident | undefined = newest.get(sourceIp)
            const decision = decide(current, now.getTime(), reopenWindowMs)
            const aggregate = merge(
              decision.kind === "create" ? undefined : decision.incident,
              group.map((p) => ({
                time: p.row.time,
                type: p.row.type,
                severity: p.row.severity,
                confidence: p.row.confidence,
                tags: p.row.tags,
                username: p.username,
              })),
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
              ...textsFor(aggregate, sensor.name, sourceIp),
            }
            return { group, decision, aggregate, incident }
          })
          // created_at is only written for new incidents (the upsert leaves it on known ones).
          yield* incidents.upsertMany(plans.map((p) => ({ ...p.incident, createdAt: now, updatedAt: now })))
          const written = yield* events.insertMany(
            plans.flatMap((plan) => plan.group.map((p) => ({ ...p.row, incidentId: plan.incident.id }))),
            now,
          )
          const writtenIds = new Set(written.map((w) => w.sensorEventId))
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
          // D15/D17: the webhook deliveries of these transitions commit with them (the outbox).
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
          return outcomes
        }),
      )

    /** Ingests validated events of one sensor; returns one outcome per event, in input order. */
    const ingest = (
      sensor: SensorIdentity,
      items: ReadonlyArray<{ readonly index: number; readonly event: ValidEvent }>,
    ) =>
      Effect.gen(function* () {
        if (items.length === 0) return []
        // D19: the organization's fingerprint key, unsealed once per process.
        const key = yield* orgKeys.fingerprintKey(sensor.orgId)
        const prepared = items.map((item) => prepare(sensor, key, item.index, item.event))
        const outcomes = yield* ingestBatch(sensor, prepared).pipe(
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
