import { Data, Effect, Either, Schema } from "effect"
import { type CursorPosition, type CursorProblem, type CursorScope, decodeCursor } from "../domain/cursor.ts"
import { EVENT_TYPE_NAMES } from "../domain/eventTypes.ts"
import { isId } from "../domain/ids.ts"
import { canonicalIp } from "../domain/ip.ts"
import { INCIDENT_STATUS_FILTERS, IncidentStatus } from "../domain/models.ts"
import { SEVERITIES, type Severity } from "../domain/severity.ts"
import { parseTimestamp } from "../domain/time.ts"
import type { EventFilters } from "../repos/EventsRepo.ts"

/**
 * Hand-written validation of query parameters, so every 400 can name the parameter. A parameter given twice is refused
 * rather than guessed at; unknown parameters are ignored. Failures are the tagged errors below, which say what was
 * wrong; the API edge (api/problems.ts queryProblem) answers them with a 400 whose detail names the parameter and its
 * allowed values.
 */

/** A query parameter was given more than once. */
export class QueryParameterRepeated extends Data.TaggedError("QueryParameterRepeated")<{
  readonly parameter: string
}> {}
/** A query parameter's value is not one it accepts. */
export class InvalidQuery extends Data.TaggedError("InvalidQuery")<{
  readonly parameter: string
  /** What it accepts, in the words the client is told: "one of: open, closed, all (default all)". */
  readonly allowed: string
}> {}
/** `from` is later than `to`. */
export class TimeRangeInverted extends Data.TaggedError("TimeRangeInverted") {}
/** The cursor is not one this service issued ("malformed", or tampered with) or not for this query ("mismatch"). */
export class CursorInvalid extends Data.TaggedError("CursorInvalid")<{ readonly problem: CursorProblem }> {}

export type QueryError = QueryParameterRepeated | InvalidQuery | TimeRangeInverted | CursorInvalid

export type RawParam = string | ReadonlyArray<string> | undefined
type Parsed<A> = Either.Either<A, QueryError>

const fail = (parameter: string, allowed: string) => Either.left(new InvalidQuery({ parameter, allowed }))

/** The one value of a parameter given at most once (QueryParameterRepeated otherwise); every parameter goes through it. */
export const singleParam = (name: string, raw: RawParam): Parsed<string | undefined> => {
  if (raw === undefined || typeof raw === "string") return Either.right(raw)
  return raw.length === 1 ? Either.right(raw[0]) : Either.left(new QueryParameterRepeated({ parameter: name }))
}

export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 100

export const parseLimit = (raw: RawParam): Parsed<number> =>
  Either.flatMap(singleParam("limit", raw), (text) => {
    if (text === undefined) return Either.right(DEFAULT_LIMIT)
    const n = /^[0-9]{1,4}$/.test(text) ? Number(text) : Number.NaN
    return Number.isInteger(n) && n >= 1 && n <= MAX_LIMIT
      ? Either.right(n)
      : fail("limit", `an integer from 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`)
  })

/** The `status` filter's values (spec: open, closed, all; default all): also the OpenAPI enum. */

export const parseStatus = (raw: RawParam): Parsed<IncidentStatus | undefined> =>
  Either.flatMap(singleParam("status", raw), (text) => {
    if (text === undefined || text === "all") return Either.right(undefined)
    if (Schema.is(IncidentStatus)(text)) return Either.right(text)
    return fail("status", `one of: ${INCIDENT_STATUS_FILTERS.join(", ")} (default all)`)
  })

export const parseCursor = (raw: RawParam): Parsed<string | undefined> =>
  Either.flatMap(singleParam("cursor", raw), (text) =>
    text === "" ? fail("cursor", "the nextCursor value of a previous response") : Either.right(text),
  )

const timestampParam = (name: string, raw: RawParam): Parsed<Date | undefined> =>
  Either.flatMap(singleParam(name, raw), (text) => {
    if (text === undefined) return Either.right(undefined)
    const date = parseTimestamp(text)
    return date === undefined
      ? fail(name, "an RFC 3339 timestamp with a time zone, for example 2026-11-21T15:57:42.053Z")
      : Either.right(date)
  })

const idParam = <K extends "sensor" | "incident">(name: string, kind: K, example: string, raw: RawParam) =>
  Either.flatMap(singleParam(name, raw), (text) =>
    text === undefined || isId(kind, text)
      ? Either.right(text)
      : fail(name, `${kind === "sensor" ? "a sensor" : "an incident"} identifier (${example})`),
  )

export interface EventListInput {
  readonly filters: EventFilters
  readonly limit: number
  readonly cursor: string | undefined
}

export const parseEventListParams = (p: {
  readonly sensorId?: RawParam
  readonly severity?: RawParam
  readonly type?: RawParam
  readonly sourceIp?: RawParam
  readonly incidentId?: RawParam
  readonly from?: RawParam
  readonly to?: RawParam
  readonly limit?: RawParam
  readonly cursor?: RawParam
}): Parsed<EventListInput> =>
  Either.gen(function* () {
    const sensorId = yield* idParam("sensorId", "sensor", "sen_…", p.sensorId)
    const incidentId = yield* idParam("incidentId", "incident", "inc_…", p.incidentId)
    const severityText = yield* singleParam("severity", p.severity)
    if (severityText !== undefined && !(SEVERITIES as ReadonlyArray<string>).includes(severityText)) {
      return yield* fail("severity", `one of: ${SEVERITIES.join(", ")}`)
    }
    const type = yield* singleParam("type", p.type)
    if (type !== undefined && !EVENT_TYPE_NAMES.includes(type)) {
      return yield* fail("type", `one of: ${EVENT_TYPE_NAMES.join(", ")}`)
    }
    const sourceIpText = yield* singleParam("sourceIp", p.sourceIp)
    const sourceIp = sourceIpText === undefined ? undefined : canonicalIp(sourceIpText)
    if (sourceIpText !== undefined && sourceIp === undefined) {
      return yield* fail("sourceIp", "an IPv4 address (dotted decimal) or an IPv6 address")
    }
    const from = yield* timestampParam("from", p.from)
    const to = yield* timestampParam("to", p.to)
    if (from !== undefined && to !== undefined && from.getTime() > to.getTime()) {
      return yield* Either.left(new TimeRangeInverted())
    }
    const limit = yield* parseLimit(p.limit)
    const cursor = yield* parseCursor(p.cursor)
    return {
      filters: { sensorId, incidentId, severity: severityText as Severity | undefined, type, sourceIp, from, to },
      limit,
      cursor,
    }
  })

/** The filters as the cursor digest sees them (a cursor is bound to exactly these, never another query). */
export const eventFilterDigestInput = (f: EventFilters): Record<string, string | undefined> => ({
  sensorId: f.sensorId,
  incidentId: f.incidentId,
  severity: f.severity,
  type: f.type,
  sourceIp: f.sourceIp,
  from: f.from?.toISOString(),
  to: f.to?.toISOString(),
})

/** The position after which to read, from an optional cursor: only a cursor issued for this very query. */
export const readCursor = (
  key: Uint8Array,
  scope: CursorScope,
  cursor: string | undefined,
): Effect.Effect<CursorPosition | undefined, CursorInvalid> => {
  if (cursor === undefined) return Effect.succeed(undefined)
  const decoded = decodeCursor(key, scope, cursor)
  return decoded.ok ? Effect.succeed(decoded.position) : Effect.fail(new CursorInvalid({ problem: decoded.problem }))
}
