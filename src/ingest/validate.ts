import { Either, ParseResult, Schema } from "effect"
import { EVENT_TYPE_NAMES, eventTypeSpec } from "../domain/eventTypes.ts"
import { canonicalIp } from "../domain/ip.ts"
import { cleanExcerpt, sanitizeText } from "../domain/sanitize.ts"
import { Confidence, Severity } from "../domain/severity.ts"
import { parseTimestamp } from "../domain/time.ts"

/**
 * Validation of one native event (the item of `POST /ingest/v1/events`, or what a honeypot mapper made).
 * The reason of a refusal names the field. A time more than MAX_CLOCK_SKEW (default 5 minutes) ahead of the
 * server's clock is refused with the skew in seconds, so a sensor with a wrong clock learns it at once and no
 * incident's lastSeenAt lies in the future; times before 2000 are refused too.
 */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 5 * 60_000
const EARLIEST = Date.UTC(2000, 0, 1)

// Each check below also produces the value validateEvent keeps; these keep the check's result so it is not computed
// twice per event. Attackers' addresses repeat across events and batches: a small bounded map (cleared when full;
// only texts short enough to be addresses) serves most of them without parsing.
const ipCache = new Map<string, string | undefined>()
const IP_CACHE_MAX = 4096
const canonicalIpCached = (text: string): string | undefined => {
  if (text.length > 45) return undefined
  const hit = ipCache.get(text)
  if (hit !== undefined || ipCache.has(text)) return hit
  const ip = canonicalIp(text)
  if (ipCache.size >= IP_CACHE_MAX) ipCache.clear()
  ipCache.set(text, ip)
  return ip
}
// The last timestamp parsed (the check's), reused by validateEvent right after; a fresh Date each time.
let lastTime: { text: string; ms: number | undefined } = { text: "", ms: undefined }
const parseTimeMs = (text: string): number | undefined => {
  if (lastTime.text !== text) lastTime = { text, ms: parseTimestamp(text)?.getTime() }
  return lastTime.ms
}

const boundedText = (max: number) =>
  Schema.String.pipe(Schema.filter((s) => (s.length >= 1 && s.length <= max) || `must be 1 to ${max} characters`))
const portNumber = Schema.Number.pipe(
  Schema.filter((n) => (Number.isInteger(n) && n >= 0 && n <= 65535) || "must be an integer from 0 to 65535"),
)

export const NativeEventSchema = Schema.Struct({
  // The idempotency key is compared as sent, so it is refused rather than cleaned: two ids differing only in an
  // invisible character must not become one (and PostgreSQL text cannot hold a NUL).
  sensorEventId: boundedText(200).pipe(
    Schema.filter(
      // sanitizeText also removes lone surrogates, so an id it leaves alone is well-formed text.
      (s) => sanitizeText(s) === s || "must not contain control or invisible characters",
    ),
  ),
  time: Schema.String.pipe(
    Schema.filter((s) => parseTimeMs(s) !== undefined || "must be an RFC 3339 timestamp with a time zone"),
  ),
  sourceIp: Schema.String.pipe(
    Schema.filter((s) => canonicalIpCached(s) !== undefined || "must be an IPv4 (dotted decimal) or IPv6 address"),
  ),
  sourcePort: portNumber,
  service: Schema.optional(boundedText(64)),
  port: Schema.optional(portNumber),
  type: Schema.String.pipe(
    Schema.filter((s) => eventTypeSpec(s) !== undefined || `must be one of: ${EVENT_TYPE_NAMES.join(", ")}`),
  ),
  action: Schema.optional(boundedText(64)),
  severity: Schema.optional(Severity),
  confidence: Schema.optional(Confidence),
  tags: Schema.optional(
    Schema.Array(
      Schema.String.pipe(
        Schema.filter((s) => /^[a-z0-9][a-z0-9._-]{0,63}$/.test(s) || "must be lowercase letters, digits, . _ -"),
      ),
    ).pipe(Schema.maxItems(32)),
  ),
  attackerInput: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
})

/** A validated event, defaults applied from the one event-type table; attacker input not yet masked. */
export interface ValidEvent {
  readonly sensorEventId: string
  readonly time: Date
  readonly sourceIp: string
  readonly sourcePort: number
  readonly service: string
  readonly port: number
  readonly type: string
  readonly action: string
  readonly severity: Severity
  readonly confidence: Confidence
  readonly tags: ReadonlyArray<string>
  readonly attackerInput: Record<string, unknown>
}

const decode = Schema.decodeUnknownEither(NativeEventSchema, { errors: "first", onExcessProperty: "ignore" })

/**
 * The reason names the field and what it must be. Schema's own messages end in `, actual <the value>`: that value is
 * attacker-controlled and may be 1 MiB long, so it is cut to 64 code points and cleaned, and left out entirely
 * under attackerInput, where it may be a captured password (a reason never echoes secrets).
 */
const ACTUAL = /, actual ([\s\S]*)$/
const reasonOf = (error: ParseResult.ParseError): string => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  if (!issue) return "invalid event"
  const path = issue.path.join(".")
  const message = issue.message.replace(ACTUAL, (_, actual: string) =>
    issue.path[0] === "attackerInput" ? "" : `, actual ${cleanExcerpt(actual)}`,
  )
  return path === "" ? message : `${cleanExcerpt(path, 200)} ${message}`
}

export const validateEvent = (
  input: unknown,
  nowMs: number,
  maxClockSkewMs: number = DEFAULT_MAX_CLOCK_SKEW_MS,
): Either.Either<ValidEvent, string> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return Either.left("an event must be a JSON object")
  }
  const decoded = decode(input)
  if (Either.isLeft(decoded)) return Either.left(reasonOf(decoded.left))
  const e = decoded.right
  const time = new Date(parseTimeMs(e.time) as number)
  if (time.getTime() > nowMs + maxClockSkewMs) {
    const ahead = Math.ceil((time.getTime() - nowMs) / 1000)
    return Either.left(
      `time is ${ahead} seconds ahead of the server clock (at most ${Math.floor(maxClockSkewMs / 1000)} allowed): check the sensor's clock`,
    )
  }
  if (time.getTime() < EARLIEST) return Either.left("time is before 2000-01-01")
  const spec = eventTypeSpec(e.type)
  if (!spec) return Either.left("type is unknown")
  return Either.right({
    sensorEventId: e.sensorEventId,
    time,
    sourceIp: canonicalIpCached(e.sourceIp) as string,
    sourcePort: e.sourcePort,
    service: e.service === undefined ? spec.service : sanitizeText(e.service) || spec.service,
    port: e.port ?? spec.port,
    type: e.type,
    action: e.action === undefined ? spec.action : sanitizeText(e.action) || spec.action,
    severity: e.severity ?? spec.severity,
    confidence: e.confidence ?? spec.confidence,
    tags: [...new Set(e.tags ?? [])],
    attackerInput: e.attackerInput ?? {},
  })
}
