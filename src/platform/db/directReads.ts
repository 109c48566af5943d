import * as Client from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

/**
 * One-step reads: a client that can run a statement whose text is final without @effect/sql's per-statement effects
 * registers its way of doing it here (bunPg.ts does, on Bun's client). This module imports no driver, so the
 * repositories, and the bench's Node.js peer that reuses their statements, do not depend on one.
 */
export type DirectRead = <A>(text: string, params: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>, SqlError>

const directReads = new WeakMap<object, DirectRead>()

export const registerDirectRead = (client: Client.SqlClient, read: DirectRead): void => {
  directReads.set(client, read)
}

/**
 * The rows of a statement whose text is already final (no fragments to compile, no name transforms), as
 * `sql.unsafe(text, params).withoutTransform` gives them. On a client that registered a one-step read and outside a
 * transaction it runs in that one step: the hot reads of the API and the key and sensor lookups. Inside a
 * transaction, or on another client (`DATABASE_DRIVER=pg`), it is that same statement.
 */
export const readRows = <A extends object>(
  sql: Client.SqlClient,
  text: string,
  params: ReadonlyArray<unknown>,
): Effect.Effect<ReadonlyArray<A>, SqlError> => {
  const direct = directReads.get(sql)
  if (direct === undefined) return sql.unsafe<A>(text, params).withoutTransform
  return Effect.flatMap(Effect.serviceOption(Client.TransactionConnection), (transaction) =>
    transaction._tag === "Some" ? sql.unsafe<A>(text, params).withoutTransform : direct<A>(text, params),
  )
}
