import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { randomBytes } from "node:crypto"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { eventually } from "../support/eventually.ts"
import { createKey, createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D10/D11 through the real server: 120 requests in any rolling window per key and, separately, per client IP;
 * 401s count against the IP, 429s count nowhere; RateLimit headers on every response.
 * Each test speaks for its own client address through X-Forwarded-For (the test runner is a trusted proxy), so
 * tests never share an IP bucket.
 */

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const PROXY = { TRUST_PROXY: "127.0.0.1/32,::1/128" }

/**
 * A client address no other test of this run uses (a counter), nor, most likely, another run on the shared Redis (a
 * random start in a 2^24 space). Random addresses could repeat one a test had just exhausted: CI saw a 429 in the
 * first 120 requests of a per-key test whose fresh addresses met the address the previous test used up.
 */
let fresh = randomBytes(3).readUIntBE(0, 3)
const newClientIp = () => {
  fresh = (fresh + 1) % 2 ** 24
  return `10.${fresh >> 16}.${(fresh >> 8) & 255}.${fresh & 255}`
}

const call = (
  server: RunningServer,
  path: string,
  options: { ip: string; key?: string | undefined; method?: string } = { ip: "203.0.113.1" },
) =>
  fetch(`${server.url}${path}`, {
    method: options.method ?? "GET",
    headers: {
      "x-forwarded-for": options.ip,
      ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
    },
  })

/** `"default";r=<remaining>;t=<reset>` → numbers. */
const parseRateLimit = (value: string | null) => {
  const match = /^"default";r=(\d+);t=(\d+)$/.exec(value ?? "")
  if (!match) throw new Error(`malformed RateLimit header: ${value}`)
  return { remaining: Number(match[1]), reset: Number(match[2]) }
}

const many = async (count: number, make: (i: number) => Promise<Response>) => {
  const out: Array<Response> = []
  // Batches of 20 keep the 2-core test machine from queueing everything at once.
  for (let i = 0; i < count; i += 20) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => make(i + j)))))
  }
  await Promise.all(out.map((r) => r.arrayBuffer()))
  return out
}

describe("with the default policy (120 per 60 s)", () => {
  let server: RunningServer
  let db: TestDatabase
  let tenant: { orgId: string; key: string; keyId: string }

  beforeAll(async () => {
    server = await startServer({ env: await testEnv({ ...PROXY, RATE_LIMIT: "120" }) })
    db = testDatabase(server.env)
    tenant = await createTenant(db)
  })
  afterAll(() => shutdown(server, db))

  test("every response carries RateLimit-Policy and RateLimit: 200, 400, 401, 403, 404, 405, 414 and the docs", async () => {
    const ip = newClientIp()
    const limited = await createKey(db, tenant.orgId, "events:read")
    const cases: Array<[string, { key?: string; method?: string }, number]> = [
      ["/v1/incidents", { key: tenant.key }, 200],
      ["/v1/incidents?limit=0", { key: tenant.key }, 400],
      ["/v1/incidents", {}, 401],
      ["/v1/incidents", { key: limited.key }, 403],
      ["/v1/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV", { key: tenant.key }, 404],
      ["/nowhere", {}, 404],
      ["/v1/incidents", { method: "DELETE" }, 405],
      [`/v1/incidents?x=${"a".repeat(9000)}`, {}, 414],
      ["/openapi.json", {}, 200],
    ]
    let previous = 120
    for (const [path, options, status] of cases) {
      const res = await call(server, path, { ip, ...options })
      await res.arrayBuffer()
      expect({ path, status: res.status }).toEqual({ path, status })
      expect(res.headers.get("ratelimit-policy")).toBe('"default";q=120;w=60')
      const { remaining, reset } = parseRateLimit(res.headers.get("ratelimit"))
      // Each request counts against this address: the remaining quota goes down by one every time.
      expect(remaining).toBe(previous - 1)
      expect(reset).toBeGreaterThanOrEqual(59)
      expect(reset).toBeLessThanOrEqual(60)
      expect(res.headers.get("retry-after")).toBeNull()
      expect(res.headers.get("x-content-type-options")).toBe("nosniff")
      previous = remaining
    }
  })

  test("per-IP: many keys (and 401s) from one address share its 120; the 121st is refused whatever the key", async () => {
    const ip = newClientIp()
    const keys = [tenant.key]
    for (let i = 0; i < 3; i++) keys.push((await createKey(db, tenant.orgId, "incidents:read,events:read")).key)
    // 100 authenticated requests over four keys plus 20 with a wrong key (401 counts against the IP).
    const wrong = `${tenant.key.slice(0, -4)}AAAA`
    const first = await many(120, (i) =>
      call(server, "/v1/incidents", { ip, key: i < 100 ? keys[i % keys.length] : wrong }),
    )
    expect(first.filter((r) => r.status === 200)).toHaveLength(100)
    expect(first.filter((r) => r.status === 401)).toHaveLength(20)

    const fresh = await createKey(db, tenant.orgId, "incidents:read")
    for (const key of [fresh.key, undefined]) {
      const refused = await call(server, "/v1/incidents", { ip, ...(key ? { key } : {}) })
      expect(refused.status).toBe(429)
      const body = (await refused.json()) as { code: string; status: number; detail: string }
      expect(body).toMatchObject({ status: 429, code: "rate_limited" })
      expect(body.detail).toMatch(/address/)
      expect(refused.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
      const retryAfter = Number(refused.headers.get("retry-after"))
      expect(Number.isInteger(retryAfter)).toBe(true)
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(parseRateLimit(refused.headers.get("ratelimit")).remaining).toBe(0)
      expect(refused.headers.get("ratelimit-policy")).toBe('"default";q=120;w=60')
    }
    // D10: the IP limit comes first, so the refused requests never reached key auth: the fresh key is unused.
    const other = await call(server, "/v1/incidents", { ip: newClientIp(), key: fresh.key })
    await other.arrayBuffer()
    expect(parseRateLimit(other.headers.get("ratelimit")).remaining).toBe(119)
  })

  test("per-key: one key from 120 addresses is refused on the 121st; that 429 does not count against its address", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read,events:read")
    const first = await many(120, () => call(server, "/v1/events", { ip: newClientIp(), key: key.key }))
    expect(first.map((r) => r.status)).toEqual(Array(120).fill(200))
    const remaining = first.map((r) => parseRateLimit(r.headers.get("ratelimit")).remaining).sort((a, b) => a - b)
    expect(remaining).toEqual(Array.from({ length: 120 }, (_, i) => i))

    const ip = newClientIp()
    const refused = await call(server, "/v1/events", { ip, key: key.key })
    expect(refused.status).toBe(429)
    const body = (await refused.json()) as { code: string; detail: string }
    expect(body.code).toBe("rate_limited")
    expect(body.detail).toMatch(/API key/)
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect(parseRateLimit(refused.headers.get("ratelimit")).remaining).toBe(0)

    // "Rejected (429) requests do not count": the refused request left no trace on the address's count.
    const other = await createKey(db, tenant.orgId, "events:read")
    const next = await call(server, "/v1/events", { ip, key: other.key })
    await next.arrayBuffer()
    expect(next.status).toBe(200)
    expect(parseRateLimit(next.headers.get("ratelimit")).remaining).toBe(119)
  })

  test("without TRUST_PROXY a forged X-Forwarded-For changes nothing: the socket peer is the client", async () => {
    const plain = await startServer({ env: await testEnv({ RATE_LIMIT: "120" }) })
    try {
      const a = await call(plain, "/v1/incidents", { ip: newClientIp() })
      const b = await call(plain, "/v1/incidents", { ip: newClientIp() })
      await Promise.all([a.arrayBuffer(), b.arrayBuffer()])
      expect(parseRateLimit(a.headers.get("ratelimit")).remaining).toBe(119)
      expect(parseRateLimit(b.headers.get("ratelimit")).remaining).toBe(118)
    } finally {
      await shutdown(plain)
    }
  })
})

describe("rolling window (short test window)", () => {
  let server: RunningServer
  let db: TestDatabase
  let tenant: { orgId: string; key: string; keyId: string }
  const WINDOW_S = 8

  beforeAll(async () => {
    server = await startServer({
      env: await testEnv({ ...PROXY, RATE_LIMIT: "120", RATE_LIMIT_WINDOW: `${WINDOW_S} seconds` }),
    })
    db = testDatabase(server.env)
    tenant = await createTenant(db)
  })
  afterAll(() => shutdown(server, db))

  test("120 pass, the 121st gets 429 with Retry-After = the real wait; after sleeping that long it passes", async () => {
    const ip = newClientIp()
    const started = Date.now()
    // The first request alone: the oldest entry of the address's and of the key's count is then the same request.
    const opening = await call(server, "/v1/incidents", { ip, key: tenant.key })
    const first = [opening, ...(await many(119, () => call(server, "/v1/incidents", { ip, key: tenant.key })))]
    await opening.arrayBuffer()
    expect(first.map((r) => r.status)).toEqual(Array(120).fill(200))
    expect(first[0]?.headers.get("ratelimit-policy")).toBe(`"default";q=120;w=${WINDOW_S}`)

    const refused = await call(server, "/v1/incidents", { ip, key: tenant.key })
    const refusedAt = Date.now()
    // Only meaningful if the 120 fitted in the window (they take well under a second here).
    expect(refusedAt - started).toBeLessThan(WINDOW_S * 1000)
    expect(refused.status).toBe(429)
    expect(((await refused.json()) as { code: string }).code).toBe("rate_limited")
    const retryAfter = Number(refused.headers.get("retry-after"))
    // The oldest request leaves the window WINDOW_S after it was counted: Retry-After is the ceiling of that wait.
    const expected = Math.ceil((started + WINDOW_S * 1000 - refusedAt) / 1000)
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, expected - 1))
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_S)

    // Still refused just before, and no 429 counted: the client that waits Retry-After gets through.
    await Bun.sleep(retryAfter * 1000)
    const after = await call(server, "/v1/incidents", { ip, key: tenant.key })
    await after.arrayBuffer()
    expect(after.status).toBe(200)
    expect(after.headers.get("retry-after")).toBeNull()
  }, 60_000)
})

describe("REDIS_URL: several server processes share one count", () => {
  let a: RunningServer
  let b: RunningServer
  let db: TestDatabase
  let tenant: { orgId: string; key: string; keyId: string }

  beforeAll(async () => {
    const env = await testEnv({ ...PROXY, RATE_LIMIT: "120", REDIS_URL })
    // Both processes use the same database (the embedded one is shared through its socket) and the same Redis.
    a = await startServer({ env })
    b = await startServer({ env })
    db = testDatabase(a.env)
    tenant = await createTenant(db)
  })
  afterAll(async () => {
    await shutdown(b)
    await shutdown(a, db)
  })

  test("60 requests on each of two servers, then the 121st is refused by either one", async () => {
    const ip = newClientIp()
    const first = await many(120, (i) => call(i % 2 === 0 ? a : b, "/v1/incidents", { ip }))
    expect(first.map((r) => r.status)).toEqual(Array(120).fill(401))
    for (const server of [a, b]) {
      const refused = await call(server, "/v1/incidents", { ip })
      expect(refused.status).toBe(429)
      expect(((await refused.json()) as { code: string }).code).toBe("rate_limited")
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    }
  })

  test("the per-key count is shared too: 120 over both servers from many addresses, then 429 on both", async () => {
    const key = await createKey(db, tenant.orgId, "incidents:read")
    const first = await many(120, (i) =>
      call(i % 2 === 0 ? a : b, "/v1/incidents", { ip: newClientIp(), key: key.key }),
    )
    expect(first.map((r) => r.status)).toEqual(Array(120).fill(200))
    for (const server of [a, b]) {
      const refused = await call(server, "/v1/incidents", { ip: newClientIp(), key: key.key })
      expect(refused.status).toBe(429)
      await refused.arrayBuffer()
    }
  })
})

describe("fail-open when Redis is unreachable", () => {
  test("requests are served, and the store failure is logged once a minute, not per request", async () => {
    const server = await startServer({ env: await testEnv({ RATE_LIMIT: "120", REDIS_URL: "redis://127.0.0.1:1" }) })
    try {
      const responses = await many(10, () => call(server, "/v1/incidents", { ip: "203.0.113.9" }))
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(401))
      // Full quota reported (nothing could be counted) and the policy still announced.
      expect(responses[0]?.headers.get("ratelimit-policy")).toBe('"default";q=120;w=60')
      await eventually("the store failure's warning", () =>
        server.logs.some((line) => line.includes("rate limit store failed")),
      )
      const warnings = server.logs.filter((line) => line.includes("rate limit store failed"))
      expect(warnings).toHaveLength(1)
      expect(server.logs.join("\n")).not.toContain("redis://")
    } finally {
      await shutdown(server)
    }
  })
})
