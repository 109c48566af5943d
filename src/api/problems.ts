import { Effect } from "effect"
import { InternalError, ServiceUnavailable } from "../domain/problem.ts"
import type { DatabaseError } from "../repos/errors.ts"

const CONNECTION_FAILURE = /ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EPIPE|Connection terminated|connect|timeout/i

/**
 * The API edge's answer to a failed query: 503 when the database cannot be reached (retry later), 500 otherwise.
 * The cause is logged; neither SQL nor a stack reaches the client (D4).
 */
export const databaseProblem = (error: DatabaseError) => {
  const cause = error.cause
  const unreachable = cause._tag === "SqlError" && CONNECTION_FAILURE.test(`${cause.message} ${String(cause.cause)}`)
  return Effect.logError("database error", cause).pipe(
    Effect.zipRight(Effect.fail(unreachable ? ServiceUnavailable.of() : InternalError.of())),
  )
}
