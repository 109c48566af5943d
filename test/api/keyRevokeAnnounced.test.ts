import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createTenant, get, revokeKey as revokeAsOperator } from "../support/fixtures.ts"
import { type OwnDatabase, postgresForFile } from "../support/postgres.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D9: `key revoke` (the CLI and the console, through ApiKeyAdmin) sends the key caches' NOTIFY in the same
 * transaction as the revocation and its audit row, and sends it again when the key is already revoked: a revocation
 * whose announcement was lost is repaired by running the command again. The cache exists only on PostgreSQL: on
 * DATABASE_URL, otherwise on a fresh database of the machine's PostgreSQL (as test/api/keyCache.test.ts).
 */

let ownDatabase: OwnDatabase | undefined

/** DATABASE_URL for this file's servers: the suite's PostgreSQL, or a fresh database of the machine's one. */
const postgresUrl = async (): Promise<string> => {
  const target = await postgresForFile("revoke")
  ownDatabase = target.own
  return target.url
}

let server: RunningServer
let second: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string; keyId: string }

const cacheOn = (s: RunningServer) => s.logs.some((l) => l.includes('"api key cache on"'))

beforeAll(async () => {
  const env = await testEnv({ DATABASE_URL: await postgresUrl() })
  server = await startServer({ env })
  second = await startServer({ env })
  db = testDatabase(env)
  tenant = await createTenant(db)
  const deadline = Date.now() + 15_000
  while (!(cacheOn(server) && cacheOn(second))) {
    if (Date.now() > deadline) throw new Error("key caches not on")
    await Bun.sleep(50)
  }
})

afterAll(async () => {
  await second?.stop()
  await shutdown(server, db)
  await ownDatabase?.drop()
})

const revokeKey = (keyId: string) => revokeAsOperator(db, keyId)

const auditRows = async (keyId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ n: number }>`select count(*)::int as n from audit_log where action = 'key.revoke' and target = ${keyId}`,
    ),
  )

/** Requests that put the key in both processes' caches. */
const warm = async (key: string) => {
  for (const s of [server, second]) {
    for (let i = 0; i < 3; i++) expect((await get(s.url, "/v1/incidents?limit=1", key)).status).toBe(200)
  }
}

describe("key revoke always reaches every key cache", () => {
  test("a second server process that cached the key refuses it right after `key revoke`; one audit row", async () => {
    for (let round = 0; round < 3; round++) {
      const key = await createKey(db, tenant.orgId, "incidents:read")
      await warm(key.key)
      await revokeKey(key.id)
      for (const s of [second, server]) {
        const res = await get(s.url, "/v1/incidents?limit=1", key.key)
        expect({ round, status: res.status, detail: res.body.detail }).toEqual({
          round,
          status: 401,
          detail: "The API key has been revoked.",
        })
      }
      expect((await auditRows(key.id))[0]?.n).toBe(1)
    }
  })

  test("re-running `key revoke` on a key already revoked (its announcement lost) still tells every cache; no second audit row", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read")
    await warm(key.key)
    // A revocation committed without its NOTIFY (as when the process died between the two steps): the caches
    // still hold the key and accept it.
    await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update api_keys set revoked_at = now() where id = ${key.id}`),
    )
    expect((await get(second.url, "/v1/incidents?limit=1", key.key)).status).toBe(200)
    await revokeKey(key.id)
    for (const s of [second, server]) {
      const res = await get(s.url, "/v1/incidents?limit=1", key.key)
      expect(res.status).toBe(401)
      expect(res.body.detail).toBe("The API key has been revoked.")
    }
    expect((await auditRows(key.id))[0]?.n).toBe(0)
    // And once more: still nothing recorded, still answered.
    await revokeKey(key.id)
    expect((await auditRows(key.id))[0]?.n).toBe(0)
  })
})
