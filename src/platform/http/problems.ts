import { Effect } from "effect"
import { InternalError, ServiceUnavailable } from "../../domain/problem.ts"
import type { DatabaseError } from "../db/errors.ts"

/**
 * A failed query as every listener answers it (API, MCP, ingest): 503 when the database cannot be reached or is busy,
 * 500 otherwise, with the cause logged and neither SQL nor a stack in the answer.
 */

const CONNECTION_FAILURE = /ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EPIPE|Connection terminated|connect|timeout/i
/**
 * "Busy" (the 503's detail tells it from unreachable): pg-pool found no free connection within its wait (`timeout
 * exceeded when trying to connect`), the pg driver's query time-out fired (`Query read timeout`), or PostgreSQL
 * cancelled a statement (57014) or has no connection slot left (53300). Checked before CONNECTION_FAILURE, whose
 * "timeout" would match them too.
 */
const BUSY = /timeout exceeded when trying to connect|Query read timeout/
const BUSY_SQLSTATES = new Set(["57014", "53300"])

/**
 * PostgreSQL's own words for "not reachable now": connection exceptions (class 08) and the server shutting down,
 * crashed or starting up (57P01–57P03), whatever the client's message says.
 */
const UNREACHABLE_SQLSTATE = /^08|^57P0[123]$/

/** Why a query failed, as far as the 503/500 answer goes. */
export const databaseFailureKind = (error: DatabaseError): "busy" | "unreachable" | "internal" => {
  const cause = error.cause
  if (cause._tag !== "SqlError") return "internal"
  const inner = cause.cause as { code?: unknown } | undefined
  const code = typeof inner?.code === "string" ? inner.code : ""
  const text = `${cause.message} ${String(cause.cause)}`
  if (BUSY.test(text) || BUSY_SQLSTATES.has(code)) return "busy"
  return CONNECTION_FAILURE.test(text) || UNREACHABLE_SQLSTATE.test(code) ? "unreachable" : "internal"
}

/**
 * The edge's answer to a failed query (API and ingest): 503 when the database cannot be reached or is busy (the
 * detail says which; Retry-After is added by the listener's secure() in platform/http/responses.ts), 500 otherwise. The cause is logged; neither SQL nor a stack
 * reaches the client.
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
