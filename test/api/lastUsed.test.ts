import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createTenant, get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D9 lastUsedAt, written without a write per request: at most once per key a minute, however many server processes
 * serve the key. Each process skips keys it wrote less than a minute ago (its own memory), and the UPDATE's guard on
 * the row holds the minute across processes. Two servers on one database (the embedded one is shared through its
 * socket; on PostgreSQL, DATABASE_URL).
 */

let a: RunningServer
let b: RunningServer
let db: TestDatabase
let env: Record<string, string>
let tenant: { orgId: string; key: string; keyId: string }

beforeAll(async () => {
  env = await testEnv()
  a = await startServer({ env })
  b = await startServer({ env })
  db = testDatabase(env)
  tenant = await createTenant(db)
})

afterAll(async () => {
  await shutdown(b)
  await shutdown(a, db)
})

const lastUsed = async (keyId: string): Promise<Date | null> => {
  const rows = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ lastUsedAt: Date | null }>`select last_used_at from api_keys where id = ${keyId}`,
    ),
  )
  return rows[0]?.lastUsedAt ?? null
}

/** Polls lastUsedAt for `ms`; returns it as soon as it differs from `from`, or `from` when it never did. */
const changedFrom = async (keyId: string, from: Date | null, ms: number): Promise<Date | null> => {
  const deadline = Date.now() + ms
  for (;;) {
    const now = await lastUsed(keyId)
    if (now?.getTime() !== from?.getTime() || Date.now() > deadline) return now
    await Bun.sleep(25)
  }
}

const ok = async (server: RunningServer, key: string) =>
  expect((await get(server.url, "/v1/incidents", key)).status).toBe(200)

describe("lastUsedAt: at most one write per key a minute across server processes", () => {
  test("two servers used with one key write lastUsedAt once; a minute later a server writes it again", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read")
    expect(await lastUsed(key.id)).toBeNull()

    await ok(a, key.key)
    const first = await changedFrom(key.id, null, 5_000)
    expect(first).toBeInstanceOf(Date)

    // B has never written this key, so its memory lets the write through: the row's guard must refuse it, as the
    // key was used less than a minute ago. (The old guard, `last_used_at < $at`, let every process write once.)
    await ok(b, key.key)
    await ok(b, key.key)
    expect(await changedFrom(key.id, first, 1_500)).toEqual(first)

    // A minute passes (the row is set back 61 s). A and B still skip the key from memory: no write.
    await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`update api_keys set last_used_at = last_used_at - interval '61 seconds' where id = ${key.id}`,
      ),
    )
    const setBack = await lastUsed(key.id)
    expect(setBack?.getTime()).toBe((first as Date).getTime() - 61_000)
    await ok(a, key.key)
    await ok(b, key.key)
    expect(await changedFrom(key.id, setBack, 500)).toEqual(setBack)

    // A process that has not written the key within the minute (a fresh one) writes it again.
    const c = await startServer({ env })
    try {
      const before = Date.now()
      await ok(c, key.key)
      const again = await changedFrom(key.id, setBack, 5_000)
      expect(again).toBeInstanceOf(Date)
      expect((again as Date).getTime()).toBeGreaterThanOrEqual(before - 1_000)
      expect((again as Date).getTime()).toBeGreaterThan((first as Date).getTime())
    } finally {
      await c.stop()
    }
  }, 90_000)
})
