import { createGunzip, createInflate, createInflateRaw } from "node:zlib"
import type { HttpServerRequest } from "@effect/platform"
import { Clock, Duration, Effect, Either } from "effect"
import { mapCowrieBatch } from "../ingest/formats/cowrie.ts"
import type { CowrieLink, CowrieMerge, MapResult, NativeEventInput } from "../ingest/formats/native.ts"
import { mapOpenCanary } from "../ingest/formats/opencanary.ts"
import { AppConfig } from "../platform/config.ts"
import type { DatabaseError } from "../platform/db/errors.ts"
import { decodeUtf8, MAX_BODY_BYTES, readBodyCapped } from "../platform/http/body.ts"
import type { EventOutcome, SensorIdentity } from "./batch.ts"
import { OrgKeys } from "./OrgKeys.ts"
import { type ValidEvent, validateEvent } from "./validate.ts"

/**
 * The steps every ingest route shares: reading the body (streamed, capped, strict UTF-8), mapping a
 * request's values with the mapper of their format, and validating the mapped events (clock skew included).
 * Each route adds only how its body is framed and how it answers.
 */

export type BodyText =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "NotUtf8"; readonly invalidAt: number }

/** A compressed body's `Content-Encoding` (HEC senders: gzip by default for the OpenTelemetry Collector). */
export type BodyEncoding = "identity" | "gzip" | "deflate"

/** The encoding a `Content-Encoding` header names; undefined for one this service does not take. */
export const bodyEncodingOf = (header: string | undefined): BodyEncoding | undefined => {
  const value = (header ?? "").trim().toLowerCase()
  if (value === "" || value === "identity") return "identity"
  if (value === "gzip" || value === "x-gzip") return "gzip"
  if (value === "deflate") return "deflate"
  return undefined
}

/**
 * Inflates `bytes` as they stream through zlib and stops as soon as the output passes `max` bytes: a small body that
 * would inflate to gigabytes (a zip bomb) costs at most `max` bytes and is TooLarge. `deflate` is HTTP's: the zlib
 * format (RFC 1950), or raw DEFLATE (RFC 1951) as some senders write it. Never fails: a body that is not of its encoding is BadEncoding.
 */
export const inflateCapped = (
  bytes: Uint8Array,
  encoding: "gzip" | "deflate",
  max: number,
): Promise<Uint8Array | "TooLarge" | "BadEncoding"> =>
  new Promise((resolve) => {
    let settled = false
    const settle = (result: Uint8Array | "TooLarge" | "BadEncoding") => {
      if (settled) return
      settled = true
      resolve(result)
    }
    // HTTP's deflate is the zlib format; some senders write raw DEFLATE under that name (as browsers, take both).
    const zlibHeader =
      bytes.length >= 2 && ((bytes[0] ?? 0) & 0x0f) === 8 && ((bytes[0] ?? 0) * 256 + (bytes[1] ?? 0)) % 31 === 0
    const inflater = encoding === "gzip" ? createGunzip() : zlibHeader ? createInflate() : createInflateRaw()
    const chunks: Array<Uint8Array> = []
    let size = 0
    inflater.on("data", (chunk: Uint8Array) => {
      size += chunk.byteLength
      if (size > max) {
        settle("TooLarge")
        inflater.destroy()
        return
      }
      chunks.push(chunk)
    })
    inflater.on("error", () => settle("BadEncoding"))
    inflater.on("end", () => {
      const out = new Uint8Array(size)
      let offset = 0
      for (const chunk of chunks) {
        out.set(chunk, offset)
        offset += chunk.byteLength
      }
      settle(out)
    })
    inflater.end(bytes)
  })

/**
 * The body as text: read as it streams, up to MAX_BODY_BYTES (a chunked body of any size stops there too), inflated
 * when it is compressed (`encoding`; the same MAX_BODY_BYTES bound applies to what it inflates to), and refused whole
 * when it is not UTF-8 (a replaced byte could merge two ids). BadEncoding: not a body of the encoding it declared.
 */
export const readEncodedBodyText = (
  request: HttpServerRequest.HttpServerRequest,
  encoding: BodyEncoding,
): Effect.Effect<BodyText | { readonly _tag: "BadEncoding" }> =>
  Effect.gen(function* () {
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > MAX_BODY_BYTES) return { _tag: "TooLarge" } as const
    const hasBody = (request.source as { body?: unknown }).body != null
    const read = hasBody
      ? yield* readBodyCapped(request.stream, MAX_BODY_BYTES).pipe(Effect.orElseSucceed(() => undefined))
      : new Uint8Array(0)
    if (read === undefined) return { _tag: "TooLarge" } as const
    const bytes =
      encoding === "identity" || read.byteLength === 0
        ? read
        : yield* Effect.promise(() => inflateCapped(read, encoding, MAX_BODY_BYTES))
    if (bytes === "TooLarge") return { _tag: "TooLarge" } as const
    if (bytes === "BadEncoding") return { _tag: "BadEncoding" } as const
    const decoded = decodeUtf8(bytes)
    if ("invalidAt" in decoded) return { _tag: "NotUtf8", invalidAt: decoded.invalidAt } as const
    return { _tag: "Text", text: decoded.text } as const
  })

/** readEncodedBodyText for a body sent uncompressed (the native routes). */
export const readBodyText = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<BodyText> =>
  Effect.map(readEncodedBodyText(request, "identity"), (body) =>
    body._tag === "BadEncoding" ? ({ _tag: "TooLarge" } as const) : body,
  )

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
 * Cowrie: a line takes its session's protocol and ports from the session's connect line in this request. What earlier
 * requests taught (the remembered connects, CowrieSessionsRepo) is applied by the Ingestor inside its transaction,
 * under the session's lock, and a connect is remembered there too, only once its line was accepted: nothing of a
 * session is read or written outside the transaction that stores its events.
 */
export const mapCowrieLines: BatchMapper<OrgKeys> = (sensor, values) =>
  Effect.map(
    Effect.flatMap(OrgKeys, (keys) => keys.lineIdKey(sensor.orgId)),
    (key) => mapCowrieBatch(values, key, new Map()).results,
  )

/** An item's outcome: accepted, duplicate, rejected, or a honeypot's ignored and merged lines (stored as no event). */
export type ItemOutcome =
  | EventOutcome
  | { readonly index: number; readonly status: "ignored" | "merged"; readonly reason: string }

/**
 * What the checks made of one item: an event to store (with its Cowrie session link), or its outcome already
 * decided (a merged line keeps its client details for the session's events).
 */
export type Checked =
  | { readonly index: number; readonly event: ValidEvent; readonly cowrie?: CowrieLink | undefined }
  | { readonly index: number; readonly outcome: ItemOutcome; readonly merge?: CowrieMerge | undefined }

/**
 * Validates mapped events (fields, clock skew: MAX_CLOCK_SKEW from the configuration). `results[i]` belongs
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

/** The merged lines' client details, in request order. */
export const mergesOf = (checked: ReadonlyArray<Checked>) =>
  checked.flatMap((c) => ("merge" in c && c.merge !== undefined ? [c.merge] : []))

/** Counts of a request's outcomes, by status. */
export const countOutcomes = (results: ReadonlyArray<ItemOutcome>) => {
  const counts: Record<string, number> = {}
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1
  return counts
}
