import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { admin, adminJson } from "../support/cli.ts"
import { consoleUser, freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import {
  addIgnoreRule,
  closeIncident,
  createKey,
  createSensor,
  createTenant,
  get,
  seedIncident,
} from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * GET /v1/blocklist.txt: the plain-text list of external sources a firewall reads, behind the intel:read scope.
 */

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let intelKey: string
let fullKey: string
let other: { orgId: string; key: string }

const DAY = 86_400_000
const daysAgo = (days: number) => new Date(Date.now() - days * DAY)
const PASSWORD = "blocklist admin passphrase"

const blocklist = (path: string, key?: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, {
    headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...headers },
  })

const lines = async (response: Response) => {
  const text = await response.text()
  return text === "" ? [] : text.split("\n").slice(0, -1)
}

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  const tenant = await createTenant(db, "Blocklist Corp", "intel:read")
  orgId = tenant.orgId
  intelKey = tenant.key
  fullKey = (await createKey(db, orgId, "incidents:read,events:read")).key
  const sensor = await createSensor(db, orgId, "edge-01")
  // External sources, recent: IPv4 (in an order text sorting would get wrong) and IPv6.
  for (const [ip, days] of [
    ["100.64.1.1", 1],
    ["20.0.0.1", 2],
    ["2001:db8::5", 3],
    ["198.51.100.20", 29],
  ] as const) {
    await seedIncident(db, { orgId, sensorId: sensor.id, sourceIp: ip, events: [{ time: daysAgo(days) }] })
  }
  // Seen 40 days ago only: outside the default window.
  await seedIncident(db, { orgId, sensorId: sensor.id, sourceIp: "192.0.2.77", events: [{ time: daysAgo(40) }] })
  // Closed by a person as a false positive: not something to block.
  const mistaken = await seedIncident(db, {
    orgId,
    sensorId: sensor.id,
    sourceIp: "203.0.113.50",
    events: [{ time: daysAgo(1) }],
  })
  await closeIncident(db, mistaken.incident.id, "false_positive")
  // Through real ingestion: a source inside the organization's networks (the private ranges by default), and a
  // source whose every event an ignore rule ignored.
  await addIgnoreRule(db, orgId, { source: "203.0.113.200", note: "our scanner" })
  const stored = await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "10.1.2.3" }),
    nativeEvent({ sourceIp: "203.0.113.200" }),
    nativeEvent({ sourceIp: "203.0.113.200", type: "portscan.syn", attackerInput: {} }),
  ])
  expect(stored.status).toBeLessThan(300)
  // Another organization with a source of its own.
  const otherTenant = await createTenant(db, "Other Corp", "intel:read")
  other = { orgId: otherTenant.orgId, key: otherTenant.key }
  const otherSensor = await createSensor(db, other.orgId, "edge-02")
  await seedIncident(db, {
    orgId: other.orgId,
    sensorId: otherSensor.id,
    sourceIp: "198.51.100.99",
    events: [{ time: daysAgo(1) }],
  })
})

afterAll(() => shutdown(server, db))

describe("GET /v1/blocklist.txt", () => {
  test("lists the external sources of the last 30 days, sorted by address, as UTF-8 plain text", async () => {
    const response = await blocklist("/v1/blocklist.txt", intelKey)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("text/plain; charset=utf-8")
    expect(response.headers.get("cache-control")).toBe("no-cache")
    expect(response.headers.get("x-content-type-options")).toBe("nosniff")
    expect(response.headers.get("blocklist-truncated")).toBeNull()
    // Not listed: 10.1.2.3 (inside), 203.0.113.200 (all ignored), 203.0.113.50 (false positive), 192.0.2.77 (too
    // old), 198.51.100.99 (another organization's).
    expect(await lines(response)).toEqual(["20.0.0.1", "100.64.1.1", "198.51.100.20", "2001:db8::5"])
  })

  test("the internal and the ignored-only sources did reach the service: only the list leaves them out", async () => {
    const incidents = await get(server.url, "/v1/incidents?limit=100", fullKey)
    const internal = incidents.body.data.find((i: { sourceIp: string }) => i.sourceIp === "10.1.2.3")
    expect(internal?.source.scope).toBe("internal")
    const events = await get(server.url, "/v1/sources/203.0.113.200", fullKey)
    expect(events.status).toBe(200)
    expect(events.body.incidentCount).toBe(0)
    expect(events.body.ignoredBy).not.toBeNull()
  })

  test("days sets the window", async () => {
    expect(await lines(await blocklist("/v1/blocklist.txt?days=1", intelKey))).toEqual([])
    expect(await lines(await blocklist("/v1/blocklist.txt?days=2", intelKey))).toEqual(["100.64.1.1"])
    expect(await lines(await blocklist("/v1/blocklist.txt?days=3", intelKey))).toEqual(["20.0.0.1", "100.64.1.1"])
    expect(await lines(await blocklist("/v1/blocklist.txt?days=365", intelKey))).toEqual([
      "20.0.0.1",
      "100.64.1.1",
      "192.0.2.77",
      "198.51.100.20",
      "2001:db8::5",
    ])
  })

  test("a bad days is a 400 problem naming the parameter", async () => {
    for (const days of ["0", "366", "abc", "1.5", "-3", "", "1e2", "0030"]) {
      const response = await get(server.url, `/v1/blocklist.txt?days=${encodeURIComponent(days)}`, intelKey)
      expect(response.status).toBe(400)
      expect(response.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
      expect(response.body.code).toBe("invalid_request")
      expect(response.body.detail).toContain("days")
    }
    const repeated = await get(server.url, "/v1/blocklist.txt?days=3&days=4", intelKey)
    expect(repeated.status).toBe(400)
    expect(repeated.body.detail).toContain("days")
  })

  test("ETag and If-None-Match: 304 without a body while nothing changed, a new tag when the list changes", async () => {
    const first = await blocklist("/v1/blocklist.txt?days=7", intelKey)
    const etag = first.headers.get("etag") ?? ""
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/)
    const same = await blocklist("/v1/blocklist.txt?days=7", intelKey)
    expect(same.headers.get("etag")).toBe(etag)
    await same.text()

    const unchanged = await blocklist("/v1/blocklist.txt?days=7", intelKey, { "if-none-match": etag })
    expect(unchanged.status).toBe(304)
    expect(await unchanged.text()).toBe("")
    expect(unchanged.headers.get("etag")).toBe(etag)
    expect(unchanged.headers.get("cache-control")).toBe("no-cache")
    // A list of tags and a weak tag match too; another tag does not.
    const listed = await blocklist("/v1/blocklist.txt?days=7", intelKey, { "if-none-match": `"x", W/${etag}` })
    expect(listed.status).toBe(304)
    const stale = await blocklist("/v1/blocklist.txt?days=7", intelKey, { "if-none-match": '"not-the-tag"' })
    expect(stale.status).toBe(200)
    expect(await stale.text()).toBe(await first.text())

    const sensor = await createSensor(db, orgId, "edge-03")
    await seedIncident(db, { orgId, sensorId: sensor.id, sourceIp: "2001:db8:1::9", events: [{ time: daysAgo(5) }] })
    const changed = await blocklist("/v1/blocklist.txt?days=7", intelKey, { "if-none-match": etag })
    expect(changed.status).toBe(200)
    expect(changed.headers.get("etag")).not.toBe(etag)
    expect(await lines(changed)).toEqual(["20.0.0.1", "100.64.1.1", "2001:db8::5", "2001:db8:1::9"])
  })

  test("each organization reads its own sources only", async () => {
    expect(await lines(await blocklist("/v1/blocklist.txt", other.key))).toEqual(["198.51.100.99"])
  })

  test("HEAD answers the headers without the body", async () => {
    const response = await fetch(`${server.url}/v1/blocklist.txt`, {
      method: "HEAD",
      headers: { authorization: `Bearer ${intelKey}` },
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("etag")).toMatch(/^"/)
  })
})

describe("the intel:read scope", () => {
  test("no key is 401 with WWW-Authenticate; a key without intel:read is 403 insufficient_scope", async () => {
    const none = await get(server.url, "/v1/blocklist.txt")
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/)
    expect(none.body.code).toBe("unauthorized")
    const wrong = await get(server.url, "/v1/blocklist.txt", "dsk_key_01ARZ3NDEKTSV4RRFFQ69G5FAV_nope")
    expect(wrong.status).toBe(401)
    const scoped = await get(server.url, "/v1/blocklist.txt", fullKey)
    expect(scoped.status).toBe(403)
    expect(scoped.body.code).toBe("insufficient_scope")
    expect(scoped.body.detail).toContain("intel:read")
  })

  test("a key with only intel:read reads no incident, event or source", async () => {
    for (const path of ["/v1/incidents", "/v1/incidents/changes", "/v1/events", "/v1/sources/20.0.0.1"]) {
      const response = await get(server.url, path, intelKey)
      expect(response.status).toBe(403)
      expect(response.body.code).toBe("insufficient_scope")
    }
  })

  test("the CLI creates an intel:read key, and its help names the scope", async () => {
    const key = await adminJson(server.env, [
      "key",
      "create",
      "--org",
      orgId,
      "--name",
      "palo alto edl",
      "--scopes",
      "intel:read",
    ])
    expect((await blocklist("/v1/blocklist.txt", key.key)).status).toBe(200)
    expect((await get(server.url, "/v1/incidents", key.key)).status).toBe(403)
    const listed = await adminJson(server.env, ["key", "list", "--org", orgId])
    expect(listed.find((k: { id: string }) => k.id === key.id)?.scopes).toEqual(["intel:read"])
    const help = await admin(server.env, ["key", "create", "--help"])
    expect(help.stdout).toContain("intel:read")
  })

  test("an admin creates an intel:read key in the console's API settings", async () => {
    const email = `admin-${crypto.randomUUID().slice(0, 8)}@blocklist.example`
    await consoleUser(server.env, consoleUrl, { orgId, email, role: "admin", password: PASSWORD })
    const signInForm = await fetch(`${consoleUrl}/sign-in`)
    let cookie = (signInForm.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
    const signedIn = await fetch(`${consoleUrl}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
      body: new URLSearchParams({ csrf: csrfOf(await signInForm.text()), email, password: PASSWORD, next: "/" }),
    })
    expect(signedIn.status).toBe(303)
    cookie =
      signedIn.headers
        .getSetCookie()
        .find((c) => c.startsWith("__Host-session="))
        ?.split(";")[0] ?? ""
    const page = await fetch(`${consoleUrl}/settings/api`, { headers: { cookie } })
    const html = await page.text()
    expect(html).toContain('value="intel:read"')
    const created = await fetch(`${consoleUrl}/settings/api/keys`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
      body: new URLSearchParams({ csrf: csrfOf(html), name: "FortiGate feed", scope: "intel:read" }),
    })
    expect(created.status).toBe(303)
    const shown = await fetch(new URL(created.headers.get("location") ?? "/", consoleUrl), { headers: { cookie } })
    const key = /id="secret-value"[^>]*>\s*([^<\s]+)/.exec(await shown.text())?.[1] ?? ""
    expect(key).toMatch(/^dsk_/)
    expect((await blocklist("/v1/blocklist.txt", key)).status).toBe(200)
    expect((await get(server.url, "/v1/events", key)).status).toBe(403)
  })
})

describe("the OpenAPI document", () => {
  test("lists the blocklist with its scope, its text body, its ETag and its 304", async () => {
    const doc = (await get(server.url, "/openapi.json")).body
    const operation = doc.paths["/v1/blocklist.txt"]?.get
    expect(operation).toBeDefined()
    expect(operation.security).toEqual([{ bearer: ["intel:read"] }])
    expect(operation.description).toContain("intel:read")
    expect(Object.keys(operation.responses["200"].content)).toEqual(["text/plain; charset=utf-8"])
    expect(operation.responses["200"].headers.ETag).toBeDefined()
    expect(operation.responses["200"].headers.RateLimit).toBeDefined()
    expect(operation.responses["304"]).toBeDefined()
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["400", "401", "403", "429"]))
    expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(["days", "If-None-Match"])
    expect(operation.parameters[0].schema).toMatchObject({ type: "integer", minimum: 1, maximum: 365, default: 30 })
    for (const [status, response] of Object.entries<{ content?: object; headers: object }>(operation.responses)) {
      expect({ status, ratelimit: "RateLimit" in response.headers }).toEqual({ status, ratelimit: true })
      if (Number(status) >= 400) expect(Object.keys(response.content ?? {})).toEqual(["application/problem+json"])
    }
  })
})
