import { Effect } from "effect"
import type { KeyAuthError } from "../auth/KeyAuth.ts"
import {
  Forbidden,
  InternalError,
  InvalidRequest,
  NotFound,
  ServiceUnavailable,
  Unauthorized,
} from "../domain/problem.ts"
import { DatabaseError } from "../repos/errors.ts"
import type { LookupError } from "./handlers.ts"
import type { QueryError } from "./params.ts"

/**
 * The API edge's mapping of what went wrong (tagged errors of KeyAuth, params and the handlers) to the problem
 * documents of domain/problem.ts (D4). Only here does a failure get an HTTP status, a code and a detail text; the
 * auth middleware (api/auth.ts) and each handler (api/handlers.ts) apply it at their edge.
 */

const CONNECTION_FAILURE = /ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EPIPE|Connection terminated|connect|timeout/i
/**
 * D37 "busy": pg-pool found no free connection within its wait (`timeout exceeded when trying to connect`), the pg
 * driver's query time-out fired (`Query read timeout`), or PostgreSQL cancelled a statement (57014) or has no
 * connection slot left (53300). Checked before CONNECTION_FAILURE, whose "timeout" would match them too.
 */
const BUSY = /timeout exceeded when trying to connect|Query read timeout/
const BUSY_SQLSTATES = new Set(["57014", "53300"])

/** Why a query failed, as far as the 503/500 answer goes. */
export const databaseFailureKind = (error: DatabaseError): "busy" | "unreachable" | "internal" => {
  const cause = error.cause
  if (cause._tag !== "SqlError") return "internal"
  const inner = cause.cause as { code?: unknown } | undefined
  const text = `${cause.message} ${String(cause.cause)}`
  if (BUSY.test(text) || (typeof inner?.code === "string" && BUSY_SQLSTATES.has(inner.code))) return "busy"
  return CONNECTION_FAILURE.test(text) ? "unreachable" : "internal"
}

/**
 * The edge's answer to a failed query (API and ingest): 503 when the database cannot be reached or is busy (D37: the
 * detail says which; Retry-After is added by api/edge.ts), 500 otherwise. The cause is logged; neither SQL nor a stack
 * reaches the client (D4).
 */
export const databaseProblem = (error: DatabaseError) => {
  const kind = databaseFailureKind(error)
  const problem =
    kind === "busy" ? ServiceUnavailable.busy() : kind === "unreachable" ? ServiceUnavailable.of() : InternalError.of()
  const log =
    kind === "busy"
      ? Effect.logWarning("database busy", error.cause)
      : Effect.logError(kind === "unreachable" ? "database unreachable" : "database error", error.cause)
  // The driver's own words (an Error object logs as {}): which wait ran out, or which connection failed.
  const reason = kind === "internal" ? undefined : String(error.cause.cause)
  return log.pipe(
    reason === undefined ? (self) => self : Effect.annotateLogs({ reason }),
    Effect.zipRight(Effect.fail(problem)),
  )
}

// The problems that never vary, built once.
const KEY_MISSING = Unauthorized.of("The Authorization header is missing. Send Authorization: Bearer <API_KEY>.")
const NOT_BEARER = Unauthorized.of("The Authorization header must be Bearer <API_KEY>.")
const KEY_INVALID = Unauthorized.of("The API key is not valid. Send Authorization: Bearer <API_KEY>.")
const KEY_REVOKED = Unauthorized.of("The API key has been revoked.")
const KEY_EXPIRED = Unauthorized.of("The API key has expired.")
const FEATURE_DISABLED = Forbidden.featureDisabled()
const INCIDENT_NOT_FOUND = NotFound.of("No incident with this id exists in your organization.")
const EVENT_NOT_FOUND = NotFound.of("No event with this id exists in your organization.")

/**
 * Spec "API keys" 7-8: every key failure is a 401 (WWW-Authenticate is added to every 401 by api/edge.ts). A key
 * that does not parse, does not exist, or has another secret gets one and the same answer, so a client cannot tell
 * which (nor whether a key id exists); revoked and expired keys are named, as they were valid keys.
 */
export const authProblem = (error: KeyAuthError): Unauthorized | Forbidden => {
  switch (error._tag) {
    case "KeyMissing":
      return KEY_MISSING
    case "AuthorizationMalformed":
      return NOT_BEARER
    case "KeyMalformed":
    case "KeyUnknown":
    case "KeyMismatch":
      return KEY_INVALID
    case "KeyRevoked":
      return KEY_REVOKED
    case "KeyExpired":
      return KEY_EXPIRED
    case "DeceptionDisabled":
      return FEATURE_DISABLED
    case "ScopeMissing":
      return Forbidden.insufficientScope(error.scope)
  }
}

/** D5/D7: a 400 whose detail names the parameter and what it accepts. */
export const queryProblem = (error: QueryError): InvalidRequest => {
  switch (error._tag) {
    case "QueryParameterRepeated":
      return InvalidRequest.of(`The query parameter ${error.parameter} was given more than once.`)
    case "InvalidQuery":
      return InvalidRequest.of(`${error.parameter} must be ${error.allowed}.`)
    case "TimeRangeInverted":
      return InvalidRequest.of("from must not be later than to.")
    case "CursorInvalid":
      return InvalidRequest.of(
        error.problem === "malformed"
          ? "cursor is malformed or was tampered with; use the nextCursor value of a previous response."
          : "cursor was issued for another endpoint, other filters or another organization; start again from the first page.",
      )
  }
}

/** D10: a record that does not exist, or not in the caller's organization, is 404 (the two are one answer). */
export const lookupProblem = (error: LookupError): NotFound =>
  error._tag === "IncidentNotFound" ? INCIDENT_NOT_FOUND : EVENT_NOT_FOUND

/**
 * The edge of a handler or middleware: its tagged errors become their problems, a DatabaseError a 503 or 500.
 */
const atEdge =
  <E, P>(toProblem: (error: E) => P) =>
  <A, R>(effect: Effect.Effect<A, E | DatabaseError, R>): Effect.Effect<A, P | InternalError | ServiceUnavailable, R> =>
    Effect.catchAll(
      effect,
      (error): Effect.Effect<never, P | InternalError | ServiceUnavailable> =>
        error instanceof DatabaseError ? databaseProblem(error) : Effect.fail(toProblem(error)),
    )

/** The auth middleware's edge (api/auth.ts). */
export const authFailures = atEdge(authProblem)
/** The edge of a list handler: its query errors and database errors. */
export const listFailures = atEdge(queryProblem)
/** The edge of a single-record handler: not found and database errors. */
export const lookupFailures = atEdge(lookupProblem)
