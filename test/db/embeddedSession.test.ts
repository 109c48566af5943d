import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant, get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, usingPostgres } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let key: string

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  key = (await createTenant(db)).key
})

afterAll(() => shutdown(server, db))

/**
 * The embedded database is one PGlite session shared by every client. pg_dump starts with
 * `set_config('search_path', '', false)`; before this was handled, the service's unqualified table names stopped
 * resolving (42P01, a 500 on every request) until it restarted. A client's session settings now end when it leaves,
 * as with a real server (where this test holds trivially: every connection has its own session). While such a client
 * is still connected, the service shares its settings: the README says to dump a stopped server's DATA_DIR instead.
 */
test(`a client that changes its session's settings and leaves does not change the service's session (${
  usingPostgres() ? "PostgreSQL" : "embedded"
})`, async () => {
  const readSettings = () =>
    db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ searchPath: string; statementTimeout: string }>`
          select current_setting('search_path') as search_path, current_setting('statement_timeout') as statement_timeout`
      }),
    )
  const before = await readSettings()
  expect(before[0]?.searchPath).toContain("public")
  const visitor = testDatabase(server.env)
  const path = await visitor.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`select pg_catalog.set_config('search_path', '', false)`
      yield* sql`set statement_timeout = 1`
      return yield* sql<{ searchPath: string }>`select current_setting('search_path') as search_path`
    }),
  )
  expect(path[0]?.searchPath).toBe("")
  await visitor.close()
  // The host hears of the disconnect a moment after close() resolves: the service recovers then (before the fix it
  // answered 500 until restarted).
  let after = await get(server.url, "/v1/incidents", key)
  for (let i = 0; i < 50 && after.status !== 200; i++) {
    await Bun.sleep(100)
    after = await get(server.url, "/v1/incidents", key)
  }
  expect(after.status).toBe(200)
  expect(after.body).toEqual({ data: [], nextCursor: null })
  expect(await readSettings()).toEqual(before)
})
