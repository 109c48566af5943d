import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Either, Option } from "effect"
import { isRecord, tryParse } from "../domain/json.ts"
import type { MapResult } from "../ingest/formats/native.ts"
import type { DatabaseError } from "../platform/db/errors.ts"
import { MAX_BODY_BYTES, MAX_EVENTS } from "../platform/http/body.ts"
import { databaseFailureKind } from "../platform/http/problems.ts"
import type { SensorIdentity } from "./batch.ts"
import { IngestAdmission } from "./IngestAdmission.ts"
import { Ingestor } from "./Ingestor.ts"
import {
  type BodyEncoding,
  bodyEncodingOf,
  type Checked,
  checkMapped,
  countOutcomes,
  eventsToStore,
  mapCowrieLines,
  mapNative,
  mapOpenCanaryLines,
  mergesOf,
  readEncodedBodyText,
} from "./pipeline.ts"
import { noteOutcomes, noteSensor } from "./requestLog.ts"
import { SensorAuth } from "./SensorAuth.ts"

/**
 * The Splunk HTTP Event Collector protocol on the ingest listener, so a honeypot or a log shipper reports
 * with nothing but its own configuration (Cowrie's `output_splunk`, Vector's `splunk_hec_logs`, Fluent Bit's
 * `splunk`, Logstash, the OpenTelemetry Collector's `splunk_hec`).
 *
 * - `POST /services/collector/event`, `/services/collector`, `/services/collector/event/1.0`. The sensor token in
 *   `Authorization: Splunk <token>` (or `Bearer <token>`). HEC's `?token=` form is refused (400, code 16): a token
 *   never travels in a URL, where proxies and access logs keep it.
 * - Body: HEC event objects (`{"event": …, "time": …, "host": …, …}`) concatenated with or without whitespace, or a
 *   JSON array of them. Each `event` (an object, or a JSON text of one) is routed by its shape: `eventid` starting
 *   `cowrie.` → the Cowrie mapping (sessions completed inside the ingest transaction), `logtype` → the OpenCanary mapping,
 *   anything else → a native event. HEC's `time` (epoch seconds) is used only when the event has no time of its own.
 * - Same limits, UTF-8 rule, clock-skew rule, idempotency and single transaction as the native routes.
 * - `Content-Encoding: gzip` (the OpenTelemetry Collector's default) and `deflate` (zlib) are inflated as they stream,
 *   with the same 1 MiB bound on the inflated size (413 past it, however small the compressed body).
 * - Framing errors refuse the request (nothing stored): a piece that is not a JSON object, an `event` missing, blank
 *   or not a JSON object (or a JSON text of one), an unreadable HEC `time`: 400 code 6 (12/13 for a missing/blank
 *   `event`) with `invalid-event-number` (counting from 0). An event that its mapping or validation rejects (e.g.
 *   for clock skew) does not (one bad event never rejects the batch): the others are stored, the answer is
 *   Success with `rejected` (their count) and `reason` (the first one's), and the rejected ones are counted in the
 *   request's log line and metrics. HEC senders do not retry a 400, so refusing the batch would lose its good events.
 *   When every event is rejected, nothing is lost by saying so: 400 code 6 with the first one's
 *   `invalid-event-number` and `reason`, so a sensor with a wrong clock sees an error. A resent batch stores nothing
 *   twice (sensor event ids).
 * - A missing or malformed token is a 401 with `WWW-Authenticate: Splunk`, as Splunk answers (not the API's Bearer).
 * - Answers are HEC's (`{"text", "code"}`), never RFC 9457 problems: HEC clients read `code`.
 */

export interface HecBody {
  readonly text: string
  readonly code: number
  readonly "invalid-event-number"?: number
  /** Why an event was refused (cleaned and bounded like every ingest reason); not part of Splunk's answer. */
  readonly reason?: string
  /** On a Success: how many events mapping or validation rejected (none stored); not part of Splunk's answer. */
  readonly rejected?: number
}

export interface HecAnswer {
  readonly status: number
  readonly body: HecBody
}

const answer = (status: number, text: string, code: number, extra: Partial<HecBody> = {}): HecAnswer => ({
  status,
  body: { text, code, ...extra },
})

export const HEC_SUCCESS = answer(200, "Success", 0)
export const HEC_TOKEN_REQUIRED = answer(401, "Token is required", 2)
export const HEC_INVALID_AUTHORIZATION = answer(401, "Invalid authorization", 3)
export const HEC_INVALID_TOKEN = answer(403, "Invalid token", 4)
export const HEC_NO_DATA = answer(400, "No data", 5)
export const hecInvalidData = (index: number, reason?: string) =>
  answer(400, "Invalid data format", 6, {
    "invalid-event-number": index,
    ...(reason === undefined ? {} : { reason }),
  })
export const HEC_INTERNAL = answer(500, "Internal server error", 8)
export const HEC_BUSY = answer(503, "Server is busy", 9)
export const hecEventRequired = (index: number) =>
  answer(400, "Event field is required", 12, { "invalid-event-number": index })
export const hecEventBlank = (index: number) =>
  answer(400, "Event field cannot be blank", 13, { "invalid-event-number": index })
export const HEC_QUERY_STRING_AUTH = answer(400, "Query string authorization is not enabled", 16, {
  reason: "Send the sensor token in the Authorization header (Splunk <token>); a token in a URL is refused.",
})
export const HEC_HEALTHY = answer(200, "HEC is healthy", 17)
export const HEC_UNHEALTHY = answer(503, "HEC is unhealthy, queues are full", 18, {
  reason: "The database cannot be reached.",
})
// HEC has no code of its own for this; like its 404, the code is the HTTP status.
export const HEC_TOO_LARGE = answer(
  413,
  `Content too large (maximum is ${MAX_BODY_BYTES} bytes and ${MAX_EVENTS} events per request)`,
  413,
)
export const HEC_NOT_FOUND = answer(404, "The requested URL was not found on this server.", 404)
// Like its 404 and 413, the code is the HTTP status: HEC has none for a refused path.
export const hecPathParameters = (path: string) =>
  answer(400, "Path parameters are not accepted", 400, {
    reason: `Path parameters (;…) are refused on the ingest routes: send the request to ${path} without them. Nothing was stored.`,
  })

/** The `WWW-Authenticate` of a HEC 401: Splunk's scheme. */
export const HEC_WWW_AUTHENTICATE = "Splunk"

/** The longest `reason` of a rejected event in a HEC answer. */
export const MAX_HEC_REASON_CHARS = 200

/**
 * A rejection's reason as a HEC answer carries it: the rule it broke, never the sender's text. Schema's
 * `, actual <value>` tail and the quoted excerpts of the mappers' `missing or invalid x: "<value>"` are left out,
 * as is a Cowrie eventid (any text after `cowrie.`); at most MAX_HEC_REASON_CHARS characters.
 */
export const hecReason = (reason: string): string => {
  const safe = reason
    .replace(/, actual [\s\S]*$/, "")
    .replace(/^cowrie eventid [\s\S]* maps to no event type$/, "the cowrie eventid maps to no event type")
    .replace(/"(?:[^"\\]|\\[\s\S])*"?/g, "(value left out)")
  const chars = Array.from(safe)
  return chars.length <= MAX_HEC_REASON_CHARS ? safe : `${chars.slice(0, MAX_HEC_REASON_CHARS - 1).join("")}…`
}

export const hecResponse = (a: HecAnswer, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(a.body, { status: a.status, headers })

// ---------------------------------------------------------------------------------------------------------------
// The body (pure)

export type HecKind = "cowrie" | "opencanary" | "native"

export interface HecEvent {
  readonly kind: HecKind
  /** The event, HEC's time added where it had none. */
  readonly event: unknown
}

export type HecParsed =
  | { readonly _tag: "Events"; readonly events: ReadonlyArray<HecEvent> }
  | { readonly _tag: "Refused"; readonly answer: HecAnswer }

const isWhitespace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d

/**
 * The objects of a concatenated body (`{…}{…}`, `{…}\n{…}`), in order, up to MAX_EVENTS + 1. A piece that is not a
 * JSON object ends the walk: its position is `invalidAt`.
 */
const splitConcatenated = (text: string): { values: Array<unknown>; invalidAt?: number } => {
  const values: Array<unknown> = []
  const n = text.length
  let i = 0
  while (values.length <= MAX_EVENTS) {
    while (i < n && isWhitespace(text.charCodeAt(i))) i++
    if (i >= n) return { values }
    if (text.charCodeAt(i) !== 0x7b) return { values, invalidAt: values.length }
    let depth = 0
    let inString = false
    let end = -1
    for (let j = i; j < n; j++) {
      const c = text.charCodeAt(j)
      if (inString) {
        if (c === 0x5c) j++
        else if (c === 0x22) inString = false
      } else if (c === 0x22) inString = true
      else if (c === 0x7b || c === 0x5b) depth++
      else if (c === 0x7d || c === 0x5d) {
        depth--
        if (depth === 0) {
          end = j + 1
          break
        }
      }
    }
    if (end < 0) return { values, invalidAt: values.length }
    const parsed = tryParse(text.slice(i, end))
    if (!parsed.ok) return { values, invalidAt: values.length }
    values.push(parsed.value)
    i = end
  }
  return { values }
}

/** HEC's `time`: epoch seconds (a number or a numeric string), 0 < t < year 10000; undefined when absent. */
const hecTime = (v: unknown): number | "invalid" | undefined => {
  if (v === undefined || v === null) return undefined
  const t =
    typeof v === "number" ? v : typeof v === "string" && /^\d{1,12}(\.\d{1,9})?$/.test(v) ? Number(v) : Number.NaN
  return Number.isFinite(t) && t > 0 && t < 253402300800 ? t : "invalid"
}

export const hecKindOf = (event: unknown): HecKind => {
  if (!isRecord(event)) return "native"
  if (typeof event.eventid === "string" && event.eventid.startsWith("cowrie.")) return "cowrie"
  if ("logtype" in event) return "opencanary"
  return "native"
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0")

/** OpenCanary's `utc_time` form (`2026-11-21 15:57:42.053123`) of an epoch time in seconds. */
const openCanaryTime = (seconds: number) => {
  const d = new Date(Math.floor(seconds * 1000))
  const micros = Math.floor((seconds * 1_000_000) % 1_000_000)
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(micros, 6)}`
}

/** The event with HEC's time added when it has none of its own (each format's own time member). */
const withHecTime = (kind: HecKind, event: Record<string, unknown>, time: number | undefined) => {
  if (time === undefined) return event
  switch (kind) {
    case "cowrie":
      return event.timestamp === undefined && event.time === undefined ? { ...event, time } : event
    case "opencanary":
      return event.utc_time === undefined ? { ...event, utc_time: openCanaryTime(time) } : event
    case "native":
      return event.time === undefined ? { ...event, time: new Date(Math.floor(time * 1000)).toISOString() } : event
  }
}

const NOT_AN_EVENT =
  "event must be a Cowrie event, an OpenCanary line or a native event: a JSON object, or a JSON text of one"

/** Reads a HEC body (already UTF-8 text). Pure. */
export const parseHecBody = (text: string): HecParsed => {
  const trimmed = text.trim()
  if (trimmed === "") return { _tag: "Refused", answer: HEC_NO_DATA }
  let envelopes: ReadonlyArray<unknown>
  let invalidAt: number | undefined
  if (trimmed.startsWith("[")) {
    const whole = tryParse(trimmed)
    if (!whole.ok || !Array.isArray(whole.value)) {
      return { _tag: "Refused", answer: hecInvalidData(0, "the body is not a JSON array of HEC event objects") }
    }
    envelopes = whole.value
    if (envelopes.length === 0) return { _tag: "Refused", answer: HEC_NO_DATA }
  } else {
    const split = splitConcatenated(trimmed)
    envelopes = split.values
    invalidAt = split.invalidAt
  }
  if (envelopes.length > MAX_EVENTS) return { _tag: "Refused", answer: HEC_TOO_LARGE }
  const events: Array<HecEvent> = []
  for (const [index, envelope] of envelopes.entries()) {
    if (!isRecord(envelope)) {
      return { _tag: "Refused", answer: hecInvalidData(index, "each item must be a HEC event object") }
    }
    if (!("event" in envelope)) return { _tag: "Refused", answer: hecEventRequired(index) }
    let event = envelope.event
    if (event === null || event === "" || (isRecord(event) && Object.keys(event).length === 0)) {
      return { _tag: "Refused", answer: hecEventBlank(index) }
    }
    if (typeof event === "string") {
      const parsed = tryParse(event)
      event = parsed.ok ? parsed.value : undefined
    }
    if (!isRecord(event)) return { _tag: "Refused", answer: hecInvalidData(index, NOT_AN_EVENT) }
    const time = hecTime(envelope.time)
    if (time === "invalid") {
      return { _tag: "Refused", answer: hecInvalidData(index, "time must be epoch seconds (a number)") }
    }
    const kind = hecKindOf(event)
    events.push({ kind, event: withHecTime(kind, event, time) })
  }
  if (invalidAt !== undefined) {
    return { _tag: "Refused", answer: hecInvalidData(invalidAt, "not a JSON object (HEC event objects, concatenated)") }
  }
  return { _tag: "Events", events }
}

/** The token of an `Authorization: Splunk <token>` or `Bearer <token>` header; undefined for any other form. */
export const hecToken = (authorization: string): string | undefined =>
  /^(?:Splunk|Bearer) +([^\s]+) *$/i.exec(authorization)?.[1]

/** Whether the URL's query carries HEC's `token` parameter (any case). */
export const hasQueryToken = (url: string): boolean => {
  const q = url.indexOf("?")
  if (q < 0) return false
  for (const pair of url.slice(q + 1).split("&")) {
    const name = pair.split("=")[0] ?? ""
    let decoded = name
    try {
      decoded = decodeURIComponent(name.replace(/\+/g, " "))
    } catch {}
    if (decoded.trim().toLowerCase() === "token") return true
  }
  return false
}

// ---------------------------------------------------------------------------------------------------------------
// The routes

const databaseAnswer = (error: DatabaseError) => {
  const kind = databaseFailureKind(error)
  const log =
    kind === "busy"
      ? Effect.logWarning("database busy", error.cause)
      : Effect.logError(kind === "unreachable" ? "database unreachable" : "database error", error.cause)
  return Effect.as(log, kind === "internal" ? HEC_INTERNAL : HEC_BUSY)
}

const CONTENT_ENCODING_REFUSED = answer(400, "Invalid data format", 6, {
  reason: "Content-Encoding is not supported: send the body uncompressed, gzip or deflate.",
})
const BAD_ENCODING = answer(400, "Invalid data format", 6, {
  reason: "The body could not be inflated as its Content-Encoding says. Nothing was stored.",
})

const handleEvents = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (hasQueryToken(request.url)) return HEC_QUERY_STRING_AUTH
  const authorization = request.headers.authorization
  if (authorization === undefined || authorization.trim() === "") return HEC_TOKEN_REQUIRED
  const token = hecToken(authorization)
  if (token === undefined) return HEC_INVALID_AUTHORIZATION
  const auth = yield* SensorAuth
  // Unknown, wrong and revoked tokens are all HEC's "Invalid token" (a revoked token is refused at once).
  const authenticated = yield* Effect.either(auth.verifyToken(token))
  if (Either.isLeft(authenticated)) {
    const error = authenticated.left
    return error._tag === "DatabaseError" ? yield* databaseAnswer(error) : HEC_INVALID_TOKEN
  }
  const sensor = authenticated.right
  noteSensor(request, sensor.sensorId)
  const encoding = bodyEncodingOf(request.headers["content-encoding"])
  if (encoding === undefined) return CONTENT_ENCODING_REFUSED
  const admission = yield* IngestAdmission
  const admitted = yield* admission.admit(request, takeIn(request, sensor, encoding))
  // No room in time: HEC's own "Server is busy"; a HEC client resends.
  return Option.getOrElse(admitted, () => HEC_BUSY)
})

/** Reads, maps and stores one authenticated HEC request's events (once IngestAdmission has let it in). */
const takeIn = (request: HttpServerRequest.HttpServerRequest, sensor: SensorIdentity, encoding: BodyEncoding) =>
  Effect.gen(function* () {
    const body = yield* readEncodedBodyText(request, encoding)
    if (body._tag === "TooLarge") return HEC_TOO_LARGE
    if (body._tag === "BadEncoding") return BAD_ENCODING
    if (body._tag === "NotUtf8") {
      return answer(400, "Invalid data format", 6, {
        reason: `The body is not valid UTF-8: the sequence starting at byte ${body.invalidAt} (counting from 0) is not well-formed UTF-8. Nothing was stored.`,
      })
    }
    const parsed = parseHecBody(body.text)
    if (parsed._tag === "Refused") return parsed.answer
    const { events } = parsed

    // Each format's mapper over its events (in request order), then the results put back in request order.
    const indexesOf = (kind: HecEvent["kind"]) => events.flatMap((e, i) => (e.kind === kind ? [i] : []))
    const valuesAt = (indexes: ReadonlyArray<number>) => indexes.map((i) => events[i]?.event)
    const nativeAt = indexesOf("native")
    const canaryAt = indexesOf("opencanary")
    const cowrieAt = indexesOf("cowrie")
    const groups: Array<readonly [ReadonlyArray<number>, ReadonlyArray<MapResult>]> = [
      [nativeAt, yield* mapNative(sensor, valuesAt(nativeAt))],
      [canaryAt, yield* mapOpenCanaryLines(sensor, valuesAt(canaryAt))],
      [cowrieAt, yield* mapCowrieLines(sensor, valuesAt(cowrieAt))],
    ]
    const checked: Array<Checked> = []
    for (const [indexes, results] of groups) checked.push(...(yield* checkMapped(results, indexes)))
    checked.sort((a, b) => a.index - b.index)

    // The events that mapping or validation rejected are left out (counted below); the others are stored.
    const ingestor = yield* Ingestor
    const stored = yield* ingestor.ingest(sensor, eventsToStore(checked), mergesOf(checked))
    const outcomes = [...checked.flatMap((c) => ("outcome" in c ? [c.outcome] : [])), ...stored]
    noteOutcomes(request, countOutcomes(outcomes))
    const rejected = outcomes.filter((o) => o.status === "rejected").sort((a, b) => a.index - b.index)
    const first = rejected[0]
    if (first === undefined || !("reason" in first)) return HEC_SUCCESS
    const reason = hecReason(first.reason)
    // Every event rejected: nothing was stored, so an error loses nothing and tells the sensor.
    if (rejected.length === events.length) return hecInvalidData(first.index, reason)
    return answer(200, "Success", 0, { rejected: rejected.length, reason })
  })

/** `POST /services/collector/event` (and its aliases). */
export const hecEventsRoute = handleEvents.pipe(
  Effect.catchTag("DatabaseError", databaseAnswer),
  Effect.map((a) => hecResponse(a)),
)

/** `GET /services/collector/health`: 200 code 17 while the database answers within 2 s, else 503 code 18. */
export const hecHealthRoute = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const ok = yield* sql`select 1`.pipe(
    Effect.timeout(Duration.seconds(2)),
    Effect.as(true),
    Effect.orElseSucceed(() => false),
  )
  return hecResponse(ok ? HEC_HEALTHY : HEC_UNHEALTHY)
})
