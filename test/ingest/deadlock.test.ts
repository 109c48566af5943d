import { expect, test } from "bun:test"
import { SqlError } from "@effect/sql/SqlError"
import { isDeadlock } from "../../src/ingest/Ingestor.ts"
import { DatabaseError } from "../../src/platform/db/errors.ts"

// A deadlock (only possible with the idle close, which locks open incidents in scan order) reruns the transaction.
test("isDeadlock: PostgreSQL 40P01, bare or wrapped by a repository, and nothing else", () => {
  const pgErr = Object.assign(new Error("deadlock detected"), { code: "40P01" })
  expect(isDeadlock(new SqlError({ cause: pgErr, message: "x" }))).toBe(true)
  expect(isDeadlock(new DatabaseError({ cause: new SqlError({ cause: pgErr, message: "x" }) }))).toBe(true)
  expect(isDeadlock(new SqlError({ cause: Object.assign(new Error("x"), { code: "23505" }), message: "x" }))).toBe(
    false,
  )
  expect(isDeadlock(new Error("x"))).toBe(false)
})
