import type { SqlError } from "@effect/sql/SqlError"
import { Data, Effect } from "effect"
import type { ParseError } from "effect/ParseResult"

/** A query failed (database unreachable, constraint, or a row that did not match its schema). */
export class DatabaseError extends Data.TaggedError("DatabaseError")<{ readonly cause: SqlError | ParseError }> {}

export const dbErrors = <A, R>(effect: Effect.Effect<A, SqlError | ParseError, R>) =>
  Effect.mapError(effect, (cause) => new DatabaseError({ cause }))
