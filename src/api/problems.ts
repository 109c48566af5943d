import { Effect } from "effect"
import {
  Forbidden,
  Gone,
  type InternalError,
  InvalidRequest,
  NotFound,
  type ServiceUnavailable,
  Unauthorized,
} from "../domain/problem.ts"
import { DatabaseError } from "../platform/db/errors.ts"
import { databaseProblem } from "../platform/http/problems.ts"
import type { KeyAuthError } from "../repos/KeyAuth.ts"
import type { LookupError, SourceNotFound, TokenExpired } from "./errors.ts"
import type { QueryError } from "./params.ts"

/**
 * The API edge's mapping of what went wrong (tagged errors of KeyAuth, params and the handlers) to the problem
 * documents of domain/problem.ts. Only here does a failure get an HTTP status, a code and a detail text; the
 * auth middleware (api/auth.ts) and each handler (api/handlers.ts) apply it at their edge.
 */

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

/** A 400 whose detail names the parameter and what it accepts. */
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

/** A record that does not exist, or not in the caller's organization, is 404: the two are one answer. */
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
/** The edge of a change feed: its query errors, a token the retention purge expired (410) and database errors. */
export const feedFailures = atEdge((error: QueryError | TokenExpired): InvalidRequest | Gone =>
  error._tag === "TokenExpired" ? Gone.tokenExpired() : queryProblem(error),
)
/** The edge of a single-record handler: not found and database errors. */
export const lookupFailures = atEdge(lookupProblem)
const SOURCE_NOT_FOUND = NotFound.of("Your organization has no incident and no event from this address.")
/** The edge of the source profile: a malformed address (400), an address never seen (404), database errors. */
export const sourceFailures = atEdge((error: QueryError | SourceNotFound): InvalidRequest | NotFound =>
  error._tag === "SourceNotFound" ? SOURCE_NOT_FOUND : queryProblem(error),
)
