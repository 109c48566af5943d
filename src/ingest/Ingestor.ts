import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Option } from "effect"
import { AppConfig, sealerOf } from "../config.ts"
import { prepareAttackerInput } from "../domain/attackerInput.ts"
import { eventTypeSpec } from "../domain/eventTypes.ts"
import { newId } from "../domain/ids.ts"
import { sanitizeText } from "../domain/sanitize.ts"
import { EventsRepo, type NewEvent } from "../repos/EventsRepo.ts"
import { DatabaseError, transactionErrors } from "../repos/errors.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { WebhookOutbox } from "../webhooks/Outbox.ts"
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

const firstString = (input: Record<string, unknown>, keys: ReadonlyArray<string>) => {
  for (const key of keys) {
    const value = input[key]
    if (typeof value === "string" && value !== "") return value
  }
  return undefined
}

/**
 * Records events and groups them into incidents (D12–D14, D19, D20, D22). Events of one grouping key
 * (organization, sensor, sourceIp) are written in one transaction under an advisory lock on that key: the
 * events, the incident change, its transition and its webhook deliveries commit together, concurrent requests (also from other server
 * processes) never create two incidents for one key, and no count is lost.
 */
export class Ingestor extends Effect.Service<Ingestor>()("Ingestor", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const orgs = yield* OrgsRepo
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const transitions = yield* TransitionsRepo
    const outbox = yield* WebhookOutbox
    const config = yield* AppConfig
    const sealer = sealerOf(config)
    const reopenWindowMs = Duration.toMillis(config.reopenWindow)
    const fingerprintKeys = new Map<string, Uint8Array>()

    // D19: the organization's fingerprint key, unsealed once per process.
    const fingerprintKey = (orgId: string) =>
      Effect.gen(function* () {
        const cached = fingerprintKeys.get(orgId)
        if (cached) return cached
        const org = yield* orgs.findById(orgId)
        const key = Option.isSome(org) ? sealer.open(org.value.fingerprintKey) : undefined
        if (key === undefined) return yield* Effect.dieMessage(`fingerprint key of ${orgId} cannot be opened`)
        fingerprintKeys.set(orgId, key)
        return key
      })

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
          detail: firstString(attackerInput, ["command", "path", "url", "filename", "query", "userAgent"]),
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

    /** One grouping key's events, in one transaction. */
    const ingestGroup = (sensor: SensorIdentity, sourceIp: string, group: ReadonlyArray<Prepared>) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const now = new Date(yield* Clock.currentTimeMillis)
            yield* sql`select pg_advisory_xact_lock(hashtextextended(${`${sensor.orgId}|${sensor.sensorId}|${sourceIp}`}, 0))`
            const outcomes: Array<EventOutcome> = []
            const stored = new Map(
              (yield* events.existingSensorEventIds(
                sensor.sensorId,
                group.map((p) => p.row.sensorEventId),
              )).map((r) => [r.sensorEventId, r.id]),
            )
            const fresh: Array<Prepared> = []
            const inBatch = new Map<string, string>()
            for (const p of group) {
              const known = stored.get(p.row.sensorEventId) ?? inBatch.get(p.row.sensorEventId)
              if (known !== undefined) outcomes.push({ index: p.index, status: "duplicate", id: known })
              else {
                inBatch.set(p.row.sensorEventId, p.row.id)
                fresh.push(p)
              }
            }
            if (fresh.length === 0) return outcomes

            const newest = yield* incidents.newestForKey(sensor.orgId, sensor.sensorId, sourceIp)
            const current: CurrentIncident | undefined = Option.getOrUndefined(newest)
            const decision = decide(current, now.getTime(), reopenWindowMs)
            const contributions = fresh.map((p) => ({
              time: p.row.time,
              type: p.row.type,
              severity: p.row.severity,
              confidence: p.row.confidence,
              tags: p.row.tags,
              username: p.username,
            }))
            const aggregate = merge(decision.kind === "create" ? undefined : decision.incident, contributions)
            const texts = textsFor(aggregate, sensor.name, sourceIp)
            const incidentId =
              decision.kind === "create" ? newId("incident", aggregate.firstSeenAt.getTime()) : decision.incident.id
            const fields = { ...aggregate, ...texts }
            if (decision.kind === "create") {
              yield* incidents.insert({
                id: incidentId,
                orgId: sensor.orgId,
                sensorId: sensor.sensorId,
                sourceIp,
                ...fields,
                createdAt: now,
              })
            } else {
              yield* incidents.update(incidentId, fields, now)
            }
            const written = yield* events.insertMany(
              fresh.map((p) => ({ ...p.row, incidentId })),
              now,
            )
            const writtenIds = new Set(written.map((w) => w.sensorEventId))
            if (written.length < fresh.length) yield* incidents.recount(incidentId)
            for (const p of fresh) {
              outcomes.push(
                writtenIds.has(p.row.sensorEventId)
                  ? { index: p.index, status: "accepted", id: p.row.id, incidentId }
                  : { index: p.index, status: "duplicate", id: null },
              )
            }
            const changes = transitionsOf(decision, aggregate).map((t) => ({
              ...t,
              orgId: sensor.orgId,
              incidentId,
              at: now,
            }))
            const ids = yield* transitions.insert(changes)
            // D15/D17: the webhook deliveries of these transitions commit with them (the outbox).
            yield* outbox.enqueue({
              orgId: sensor.orgId,
              incidentId,
              sensorProfile: sensor.profile,
              transitions: changes.map((t, i) => ({ ...t, id: ids[i] ?? "" })),
            })
            return outcomes
          }),
        )
        .pipe(
          transactionErrors,
          Effect.catchTag("SqlError", (cause) => Effect.fail(new DatabaseError({ cause }))),
        )

    /** Ingests validated events of one sensor; returns one outcome per event, in input order. */
    const ingest = (
      sensor: SensorIdentity,
      items: ReadonlyArray<{ readonly index: number; readonly event: ValidEvent }>,
    ) =>
      Effect.gen(function* () {
        if (items.length === 0) return []
        const key = yield* fingerprintKey(sensor.orgId)
        const groups = new Map<string, Array<Prepared>>()
        for (const item of items) {
          const prepared = prepare(sensor, key, item.index, item.event)
          const list = groups.get(item.event.sourceIp)
          if (list) list.push(prepared)
          else groups.set(item.event.sourceIp, [prepared])
        }
        const results = yield* Effect.forEach([...groups], ([ip, group]) => ingestGroup(sensor, ip, group), {
          concurrency: 4,
        })
        return results.flat().sort((a, b) => a.index - b.index)
      })

    return { ingest } as const
  }),
}) {}
