import { SqlError } from "@effect/sql/SqlError"
import { Data, Effect, Option } from "effect"
import type { ParseError } from "effect/ParseResult"

/** A query failed (database unreachable, constraint, or a row that did not match its schema). */
export class DatabaseError extends Data.TaggedError("DatabaseError")<{ readonly cause: SqlError | ParseError }> {}

export const dbErrors = <A, R>(effect: Effect.Effect<A, SqlError | ParseError, R>) =>
  Effect.mapError(effect, (cause) => new DatabaseError({ cause }))

/**
 * `@effect/sql` runs COMMIT and ROLLBACK under `orDie`: a connection lost mid-transaction surfaces as a defect, not a
 * failure. Wrap a transaction with this so that case is a SqlError like any other (503 at the edge, not 500).
 */
export const transactionErrors = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchSomeDefect(effect, (defect) =>
    defect instanceof SqlError ? Option.some(Effect.fail(defect)) : Option.none(),
  )
