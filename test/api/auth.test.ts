import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createTenant, get, revokeKey, setDeception } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string; keyId: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
})

afterAll(() => shutdown(server, db))

const ENDPOINTS = ["/v1/incidents", "/v1/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV", "/v1/events", "/v1/events/evt_x"]

const expectProblem = async (
  path: string,
  headers: Record<string, string>,
  status: number,
  code: string,
  detail?: RegExp,
) => {
  const res = await get(server.url, path, undefined, headers)
  expect({ path, headers, status: res.status, code: res.body.code }).toEqual({ path, headers, status, code })
  expect(res.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
  if (detail) expect(res.body.detail).toMatch(detail)
  return res
}

describe("spec 'API keys' 7: 401 for a missing, malformed, wrong, revoked or expired key", () => {
  test("missing, empty and malformed Authorization headers", async () => {
    const forged = tenant.key.replace(/.$/, (c) => (c === "A" ? "B" : "A"))
    for (const path of ENDPOINTS) {
      const res = await expectProblem(path, {}, 401, "unauthorized", /missing/)
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="incident-api"')
      for (const authorization of [
        "",
        "Bearer",
        "Bearer ",
        `Basic ${btoa(`user:${tenant.key}`)}`,
        tenant.key,
        `Token ${tenant.key}`,
        `Bearer ${tenant.key} extra`,
        `Bearer  `,
        "Bearer dsk_nope",
        `Bearer ${forged}`,
        `Bearer ${tenant.key.replace("dsk_", "dst_")}`,
        `Bearer ${tenant.key}${"A".repeat(5000)}`,
      ]) {
        await expectProblem(path, { authorization }, 401, "unauthorized")
      }
    }
  })

  test("a malformed key, an unknown key id and a wrong secret get one and the same 401, byte for byte", async () => {
    const wrongSecret = tenant.key.replace(/.$/, (c) => (c === "A" ? "B" : "A"))
    const unknownId = tenant.key.replace(tenant.keyId, "key_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    const answers = []
    for (const key of ["dsk_nope", `${tenant.key}A`, unknownId, wrongSecret]) {
      const res = await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${key}` } })
      answers.push({
        status: res.status,
        contentType: res.headers.get("content-type"),
        wwwAuthenticate: res.headers.get("www-authenticate"),
        body: await res.text(),
      })
    }
    expect(answers[0]).toEqual({
      status: 401,
      contentType: "application/problem+json; charset=utf-8",
      wwwAuthenticate: 'Bearer realm="incident-api"',
      body: '{"type":"about:blank","title":"Unauthorized","status":401,"detail":"The API key is not valid. Send Authorization: Bearer <API_KEY>.","code":"unauthorized"}',
    })
    for (const answer of answers) expect(answer).toEqual(answers[0] as (typeof answers)[number])
  })

  test("the bearer scheme is case-insensitive (RFC 7235)", async () => {
    expect((await get(server.url, "/v1/incidents", undefined, { authorization: `bearer ${tenant.key}` })).status).toBe(
      200,
    )
    expect((await get(server.url, "/v1/incidents", undefined, { authorization: `BEARER ${tenant.key}` })).status).toBe(
      200,
    )
  })

  test("revocation takes effect on the next request", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read,events:read")
    expect((await get(server.url, "/v1/incidents", key.key)).status).toBe(200)
    await revokeKey(db, key.id)
    const res = await get(server.url, "/v1/incidents", key.key)
    expect(res.status).toBe(401)
    expect(res.body.detail).toBe("The API key has been revoked.")
  })

  test("an expired key gets 401; a key before its expiry works", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read", new Date(Date.now() + 1500).toISOString())
    expect((await get(server.url, "/v1/incidents", key.key)).status).toBe(200)
    await Bun.sleep(1600)
    const res = await get(server.url, "/v1/incidents", key.key)
    expect(res.status).toBe(401)
    expect(res.body.detail).toBe("The API key has expired.")
  })
})

describe("spec 'API keys' 7-8, D10: 403 after authentication", () => {
  test("a key without the endpoint's scope gets 403 insufficient_scope", async () => {
    const incidentsOnly = await createKey(db, tenant.orgId, "incidents:read")
    const eventsOnly = await createKey(db, tenant.orgId, "events:read")
    for (const path of ["/v1/events", "/v1/events/evt_x"]) {
      const res = await get(server.url, path, incidentsOnly.key)
      expect(res.status).toBe(403)
      expect(res.body).toEqual({
        type: "about:blank",
        title: "Forbidden",
        status: 403,
        detail: "This endpoint requires a key with the scope events:read.",
        code: "insufficient_scope",
      })
    }
    for (const path of ["/v1/incidents", "/v1/incidents/inc_x"]) {
      const res = await get(server.url, path, eventsOnly.key)
      expect(res.status).toBe(403)
      expect(res.body.code).toBe("insufficient_scope")
    }
    expect((await get(server.url, "/v1/incidents", incidentsOnly.key)).status).toBe(200)
    expect((await get(server.url, "/v1/events", eventsOnly.key)).status).toBe(200)
  })

  test("Deception off gives 403 feature_disabled, checked before scope; on again restores access", async () => {
    const org = await createTenant(db, "Paused Inc", "incidents:read")
    await setDeception(db, org.orgId, "off")
    for (const path of ENDPOINTS) {
      const res = await get(server.url, path, org.key)
      expect(res.status).toBe(403)
      expect(res.body.code).toBe("feature_disabled")
    }
    // A wrong key is still 401 first (D10: key before feature).
    expect((await get(server.url, "/v1/incidents", "dsk_wrong")).status).toBe(401)
    await setDeception(db, org.orgId, "on")
    expect((await get(server.url, "/v1/incidents", org.key)).status).toBe(200)
  })

  test("404 comes only after authentication and scope", async () => {
    expect((await get(server.url, "/v1/incidents/inc_x")).status).toBe(401)
    expect((await get(server.url, "/v1/incidents/inc_x", tenant.key)).status).toBe(404)
  })
})

describe("keys at rest and lastUsedAt", () => {
  test("only a SHA-256 hash of the secret is stored; the key never appears in the database", async () => {
    const rows = await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select * from api_keys where id = ${tenant.keyId}`),
    )
    const dump = JSON.stringify(rows, (_k, v) => (v?.type === "Buffer" ? Buffer.from(v.data).toString("hex") : v))
    const secret = tenant.key.slice(`dsk_${tenant.keyId}_`.length)
    expect(dump).not.toContain(secret)
    expect(dump).not.toContain(Buffer.from(secret).toString("hex"))
    expect((rows[0] as { secretHash: Uint8Array }).secretHash.length).toBe(32)
    expect(tenant.key).toMatch(/^dsk_key_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]{43}$/)
  })

  test("lastUsedAt is recorded, at most once a minute", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read")
    const lastUsed = () =>
      db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ lastUsedAt: Date | null }>`select last_used_at from api_keys where id = ${key.id}`,
        ),
      )
    expect((await lastUsed())[0]?.lastUsedAt).toBeNull()
    await get(server.url, "/v1/incidents", key.key)
    let first: Date | null | undefined
    for (let i = 0; i < 50 && !first; i++) {
      await Bun.sleep(20)
      first = (await lastUsed())[0]?.lastUsedAt
    }
    expect(first).toBeInstanceOf(Date)
    for (let i = 0; i < 5; i++) await get(server.url, "/v1/incidents", key.key)
    await Bun.sleep(200)
    expect((await lastUsed())[0]?.lastUsedAt?.getTime()).toBe(first?.getTime())
  })
})
