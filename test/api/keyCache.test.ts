import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { KEY_CACHE_APPLICATION_NAME } from "../../src/repos/ApiKeysRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createTenant, get, revokeKey, setDeception } from "../support/fixtures.ts"
import { type OwnDatabase, postgresForFile } from "../support/postgres.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The API key cache (KeyAuth, performance issue #6) never delays a revocation or a Deception switch: the change
 * NOTIFYs in its own transaction and every server process drops the key before the next request.
 *
 * The cache exists only on PostgreSQL, so these tests always run there: on DATABASE_URL when the suite runs on
 * PostgreSQL, otherwise on a fresh database of the machine's PostgreSQL (TEST_POSTGRES_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres), created and dropped here. Without a PostgreSQL they fail; they are
 * never skipped. The embedded database's side (no cache, same guarantees through per-request reads) is tested below.
 */

let ownDatabase: OwnDatabase | undefined

/** DATABASE_URL for this file's servers: the suite's PostgreSQL, or a fresh database of the machine's one. */
const postgresUrl = async (): Promise<string> => {
  const target = await postgresForFile("keycache")
  ownDatabase = target.own
  return target.url
}

let server: RunningServer
let second: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string; keyId: string }

const cacheOnLines = (s: RunningServer) => s.logs.filter((l) => l.includes('"api key cache on"')).length

const waitFor = async (what: string, check: () => boolean | Promise<boolean>, ms = 15_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

beforeAll(async () => {
  const env = await testEnv({ DATABASE_URL: await postgresUrl() })
  server = await startServer({ env })
  // A second process on the same database.
  second = await startServer({ env })
  db = testDatabase(env)
  tenant = await createTenant(db)
  await waitFor("both key caches on", () => cacheOnLines(server) >= 1 && cacheOnLines(second) >= 1)
})

afterAll(async () => {
  await second?.stop()
  await shutdown(server, db)
  await ownDatabase?.drop()
})

const revoke = (keyId: string, on: TestDatabase = db) => revokeKey(on, keyId)
const deception = (orgId: string, state: "on" | "off") => setDeception(db, orgId, state)

/** Requests that put the key in each process's cache. */
const warm = async (key: string) => {
  for (const s of [server, second]) {
    for (let i = 0; i < 3; i++) expect((await get(s.url, "/v1/incidents?limit=1", key)).status).toBe(200)
  }
}

describe("the key cache never outlives a change", () => {
  test("the cache is on with PostgreSQL, in both processes", () => {
    expect(cacheOnLines(server)).toBeGreaterThanOrEqual(1)
    expect(cacheOnLines(second)).toBeGreaterThanOrEqual(1)
  })

  test("revocation is effective on the very next request, on both server processes", async () => {
    for (let round = 0; round < 10; round++) {
      const key = await createKey(db, tenant.orgId, "incidents:read,events:read")
      await warm(key.key)
      await revoke(key.id)
      // Right after the command returns: the other process first, then the one whose cache was warmed last.
      for (const s of [round % 2 === 0 ? server : second, round % 2 === 0 ? second : server]) {
        const res = await get(s.url, "/v1/incidents?limit=1", key.key)
        expect({ round, status: res.status, detail: res.body.detail }).toEqual({
          round,
          status: 401,
          detail: "The API key has been revoked.",
        })
      }
    }
  })

  test("Deception off is effective on the very next request on both processes; on again restores access", async () => {
    const org = await createTenant(db, "Cached Inc")
    for (let round = 0; round < 5; round++) {
      await warm(org.key)
      await deception(org.orgId, "off")
      for (const s of [second, server]) {
        const res = await get(s.url, "/v1/events?limit=1", org.key)
        expect({ round, status: res.status, code: res.body.code }).toEqual({
          round,
          status: 403,
          code: "feature_disabled",
        })
      }
      await deception(org.orgId, "on")
      for (const s of [server, second]) expect((await get(s.url, "/v1/events?limit=1", org.key)).status).toBe(200)
    }
  })

  test("a cached key stops working at its expiry (the clock is read on every request)", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read", new Date(Date.now() + 2000).toISOString())
    await warm(key.key)
    await Bun.sleep(2100)
    for (const s of [server, second]) {
      const res = await get(s.url, "/v1/incidents?limit=1", key.key)
      expect(res.status).toBe(401)
      expect(res.body.detail).toBe("The API key has expired.")
    }
  })

  test("a wrong secret for a cached key id is still 401 (the hash is compared on every request)", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read")
    await warm(key.key)
    const forged = key.key.replace(/.$/, (c) => (c === "A" ? "B" : "A"))
    const res = await get(server.url, "/v1/incidents?limit=1", forged)
    expect(res.status).toBe(401)
    expect(res.body.detail).toBe("The API key is not valid. Send Authorization: Bearer <API_KEY>.")
  })

  test("with the LISTEN connection lost the cache is emptied and bypassed; a revocation made meanwhile holds", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read")
    await warm(key.key)
    const before = cacheOnLines(server) + cacheOnLines(second)
    // Cut every key-cache LISTEN connection of this database: a revocation now sends a NOTIFY nobody hears.
    await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql`select pg_terminate_backend(pid) from pg_stat_activity
                where datname = current_database() and application_name = ${KEY_CACHE_APPLICATION_NAME}`,
      ),
    )
    await waitFor("both caches off", () =>
      [server, second].every((s) => s.logs.some((l) => l.includes("api key cache off: LISTEN connection lost"))),
    )
    await revoke(key.id)
    for (const s of [server, second]) {
      const res = await get(s.url, "/v1/incidents?limit=1", key.key)
      expect(res.status).toBe(401)
      expect(res.body.detail).toBe("The API key has been revoked.")
    }
    // Both reconnect, hear their probe and use the cache again; a revocation is again seen at once.
    await waitFor("both caches on again", () => cacheOnLines(server) + cacheOnLines(second) >= before + 2)
    const next = await createKey(db, tenant.orgId, "incidents:read")
    await warm(next.key)
    await revoke(next.id)
    for (const s of [second, server]) expect((await get(s.url, "/v1/incidents?limit=1", next.key)).status).toBe(401)
  })
})

describe("the embedded database has no key cache", () => {
  test("an empty DATABASE_URL means embedded; no cache is turned on, and a revocation holds on the very next request through per-request reads", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dsvc-"))
    // DATABASE_URL set but empty means "unset" (as in `DATABASE_URL= bun run start`): the embedded database.
    const env = await testEnv({ DATABASE_URL: "", DATA_DIR: dataDir })
    const embedded = await startServer({ env })
    const embeddedDb = testDatabase(env)
    try {
      const own = await createTenant(embeddedDb)
      expect((await get(embedded.url, "/v1/incidents?limit=1", own.key)).status).toBe(200)
      await revoke(own.keyId, embeddedDb)
      const res = await get(embedded.url, "/v1/incidents?limit=1", own.key)
      expect(res.status).toBe(401)
      expect(res.body.detail).toBe("The API key has been revoked.")
      expect(cacheOnLines(embedded)).toBe(0)
    } finally {
      await shutdown(embedded, embeddedDb)
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
