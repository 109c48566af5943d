import type { HttpServerRequest } from "@effect/platform"
import { Clock, Duration, Effect, Either } from "effect"
import { AppConfig } from "../config.ts"
import { cowrieSessionsToLookUp, mapCowrieBatch } from "../ingest/formats/cowrie.ts"
import type { CowrieLink, CowrieMerge, MapResult, NativeEventInput } from "../ingest/formats/native.ts"
import { mapOpenCanary } from "../ingest/formats/opencanary.ts"
import { CowrieSessionsRepo } from "../repos/CowrieSessionsRepo.ts"
import type { DatabaseError } from "../repos/errors.ts"
import { decodeUtf8, MAX_BODY_BYTES, readBodyCapped } from "./body.ts"
import type { EventOutcome, SensorIdentity } from "./Ingestor.ts"
import { OrgKeys } from "./OrgKeys.ts"
import { type ValidEvent, validateEvent } from "./validate.ts"

/**
 * The steps every ingest route shares (D22, D41): reading the body (streamed, capped, strict UTF-8), mapping a
 * request's values with the mapper of their format, and validating the mapped events (D36 clock skew included).
 * Each route adds only how its body is framed and how it answers.
 */

export type BodyText =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "NotUtf8"; readonly invalidAt: number }

/**
 * The body as text: read as it streams, up to MAX_BODY_BYTES (a chunked body of any size stops there too), and
 * refused whole when it is not UTF-8 (D22: a byte is never replaced).
 */
export const readBodyText = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<BodyText> =>
  Effect.gen(function* () {
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > MAX_BODY_BYTES) return { _tag: "TooLarge" } as const
    const hasBody = (request.source as { body?: unknown }).body != null
    const bytes = hasBody
      ? yield* readBodyCapped(request.stream, MAX_BODY_BYTES).pipe(Effect.orElseSucceed(() => undefined))
      : new Uint8Array(0)
    if (bytes === undefined) return { _tag: "TooLarge" } as const
    const decoded = decodeUtf8(bytes)
    if ("invalidAt" in decoded) return { _tag: "NotUtf8", invalidAt: decoded.invalidAt } as const
    return { _tag: "Text", text: decoded.text } as const
  })

/** Maps one request's values (in order) to native events: one result per value. */
export type BatchMapper<R> = (
  sensor: SensorIdentity,
  values: ReadonlyArray<unknown>,
) => Effect.Effect<ReadonlyArray<MapResult>, DatabaseError, R>

// Native events need no mapping: validateEvent checks them as they are.
export const mapNative: BatchMapper<never> = (_sensor, values) =>
  Effect.succeed(values.map((value) => ({ _tag: "Mapped", event: value as NativeEventInput }) as const))

export const mapOpenCanaryLines: BatchMapper<OrgKeys> = (sensor, values) =>
  Effect.map(
    Effect.flatMap(OrgKeys, (keys) => keys.lineIdKey(sensor.orgId)),
    (key) => values.map((value) => mapOpenCanary(value, key)),
  )

/**
 * Cowrie: a line takes its session's protocol and ports from the session's connect line, in this request or
 * remembered from an earlier one (CowrieSessionsRepo, looked up only for sessions without a connect here). `remember`
 * stores this request's connects for the next ones; the caller runs it once it keeps the request. A session known
 * from neither keeps the defaults (ssh, source port 0, the type's default port).
 */
export const prepareCowrieLines = (sensor: SensorIdentity, values: ReadonlyArray<unknown>) =>
  Effect.gen(function* () {
    const key = yield* Effect.flatMap(OrgKeys, (keys) => keys.lineIdKey(sensor.orgId))
    const sessions = yield* CowrieSessionsRepo
    const remembered = yield* sessions.find(sensor.orgId, sensor.sensorId, cowrieSessionsToLookUp(values))
    const batch = mapCowrieBatch(values, key, remembered)
    const remember = Effect.gen(function* () {
      const now = new Date(yield* Clock.currentTimeMillis)
      yield* sessions.remember(sensor.orgId, sensor.sensorId, batch.connects, now)
    })
    return { results: batch.results, remember }
  })

export const mapCowrieLines: BatchMapper<OrgKeys | CowrieSessionsRepo> = (sensor, values) =>
  Effect.gen(function* () {
    const prepared = yield* prepareCowrieLines(sensor, values)
    yield* prepared.remember
    return prepared.results
  })

/** An item's outcome: D22's, or D42's ignored and merged lines (stored as no event of their own). */
export type ItemOutcome =
  | EventOutcome
  | { readonly index: number; readonly status: "ignored" | "merged"; readonly reason: string }

/**
 * What the checks made of one item: an event to store (with its Cowrie session link, D42), or its outcome already
 * decided (a merged line keeps its client details for the session's events).
 */
export type Checked =
  | { readonly index: number; readonly event: ValidEvent; readonly cowrie?: CowrieLink | undefined }
  | { readonly index: number; readonly outcome: ItemOutcome; readonly merge?: CowrieMerge | undefined }

/**
 * Validates mapped events (D22 fields, D36 clock skew: MAX_CLOCK_SKEW from the configuration). `results[i]` belongs
 * to the item at `indexes[i]`.
 */
export const checkMapped = (results: ReadonlyArray<MapResult>, indexes: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const maxClockSkewMs = Duration.toMillis((yield* AppConfig).maxClockSkew)
    return results.map((mapped, i): Checked => {
      const index = indexes[i] ?? i
      if (mapped._tag === "Rejected") return { index, outcome: { index, status: "rejected", reason: mapped.reason } }
      if (mapped._tag === "Ignored") return { index, outcome: { index, status: "ignored", reason: mapped.reason } }
      if (mapped._tag === "Merged") {
        return { index, outcome: { index, status: "merged", reason: mapped.reason }, merge: mapped.merge }
      }
      const checked = validateEvent(mapped.event, now, maxClockSkewMs)
      return Either.isLeft(checked)
        ? { index, outcome: { index, status: "rejected", reason: checked.left } }
        : { index, event: checked.right, cowrie: mapped.cowrie }
    })
  })

/** The events to store, in request order (with their Cowrie session links). */
export const eventsToStore = (checked: ReadonlyArray<Checked>) =>
  checked.flatMap((c) => ("event" in c ? [{ index: c.index, event: c.event, cowrie: c.cowrie }] : []))

/** The merged lines' client details, in request order (D42). */
export const mergesOf = (checked: ReadonlyArray<Checked>) =>
  checked.flatMap((c) => ("merge" in c && c.merge !== undefined ? [c.merge] : []))

/** Counts of a request's outcomes, by status. */
export const countOutcomes = (results: ReadonlyArray<ItemOutcome>) => {
  const counts: Record<string, number> = {}
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1
  return counts
}
