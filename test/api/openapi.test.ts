import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant, get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let key: string

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  ;({ key } = await createTenant(db))
})

afterAll(() => shutdown(server, db))

describe("OpenAPI and docs", () => {
  test("GET /openapi.json needs no key and describes every endpoint, parameter, bound and error", async () => {
    const res = await get(server.url, "/openapi.json")
    expect(res.status).toBe(200)
    const doc = res.body
    expect(doc.openapi).toBe("3.1.0")
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/v1/events",
      "/v1/events/{id}",
      "/v1/incidents",
      "/v1/incidents/{id}",
    ])
    const list = doc.paths["/v1/incidents"].get
    const param = (op: { parameters: Array<{ name: string; schema: unknown }> }, name: string) =>
      op.parameters.find((p) => p.name === name)?.schema as Record<string, unknown>
    expect(param(list, "limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 })
    expect(param(list, "status")).toMatchObject({ enum: ["open", "closed", "all"], default: "all" })
    const events = doc.paths["/v1/events"].get
    for (const name of ["sensorId", "severity", "type", "sourceIp", "incidentId", "from", "to", "limit", "cursor"]) {
      expect(param(events, name)).toBeDefined()
    }
    expect(param(events, "severity")).toMatchObject({ enum: ["low", "medium", "high", "critical"] })
    expect(param(events, "from")).toMatchObject({ type: "string", format: "date-time" })
    expect(Object.values(doc.components.securitySchemes)).toContainEqual({ type: "http", scheme: "bearer" })
    for (const [path, codes] of [
      ["/v1/incidents", ["200", "400", "401", "403", "429", "500", "503"]],
      ["/v1/incidents/{id}", ["200", "401", "403", "404", "429", "500"]],
      ["/v1/events", ["200", "400", "401", "403", "429"]],
      ["/v1/events/{id}", ["200", "404"]],
    ] as const) {
      const op = doc.paths[path].get
      for (const code of codes) expect({ path, code, has: code in op.responses }).toEqual({ path, code, has: true })
      expect(op.security.length).toBeGreaterThan(0)
    }
    const schemas = JSON.stringify(doc.components.schemas)
    for (const field of ["recommendedAction", "highConfidence", "resolvedAt", "attackerInput", "fingerprint"]) {
      expect(schemas).toContain(field)
    }
  })

  test("GET /docs serves a readable reference without a key", async () => {
    const res = await fetch(`${server.url}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/html")
    expect(await res.text()).toContain("openapi")
  })
})

describe("D21: security headers on every response", () => {
  test("successes, errors, unknown paths, read-only 405s and docs all carry them", async () => {
    const cases: Array<[string, RequestInit, number]> = [
      ["/v1/incidents", { headers: { authorization: `Bearer ${key}` } }, 200],
      ["/v1/incidents", {}, 401],
      ["/v1/events?limit=0", { headers: { authorization: `Bearer ${key}` } }, 400],
      ["/v1/events/evt_x", { headers: { authorization: `Bearer ${key}` } }, 404],
      ["/nope", {}, 404],
      ["/v1/incidents", { method: "POST", body: "{}" }, 405],
      ["/v1/incidents/inc_x", { method: "DELETE" }, 405],
      ["/openapi.json", {}, 200],
    ]
    for (const [path, init, status] of cases) {
      const res = await fetch(`${server.url}${path}`, init)
      expect({ path, status: res.status }).toEqual({ path, status })
      expect(res.headers.get("x-content-type-options")).toBe("nosniff")
      expect(res.headers.get("cache-control")).toBe("no-store")
      expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'")
      expect(res.headers.get("content-type")).toBe(
        status >= 400 ? "application/problem+json; charset=utf-8" : "application/json; charset=utf-8",
      )
      if (status >= 400) {
        const body = (await res.json()) as Record<string, unknown>
        expect(body.status).toBe(status)
        expect(typeof body.code).toBe("string")
      }
    }
    const docs = await fetch(`${server.url}/docs`)
    expect(docs.headers.get("x-content-type-options")).toBe("nosniff")
    expect(docs.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
  })

  test("405 answers carry Allow: GET, HEAD and change nothing", async () => {
    const res = await fetch(`${server.url}/v1/events`, { method: "PUT", body: "{}" })
    expect(res.status).toBe(405)
    expect(res.headers.get("allow")).toBe("GET, HEAD")
    expect(((await res.json()) as { code: string }).code).toBe("method_not_allowed")
  })
})

describe("issue 3: oversized requests never crash the server", () => {
  test("a URL over 8 KiB gets a 414 problem; an oversized header Bun's 431; the server keeps serving", async () => {
    const long = await fetch(`${server.url}/v1/incidents?x=${"a".repeat(9000)}`, {
      headers: { authorization: `Bearer ${key}` },
    })
    expect(long.status).toBe(414)
    expect(long.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
    expect(long.headers.get("x-content-type-options")).toBe("nosniff")
    expect(((await long.json()) as { code: string }).code).toBe("uri_too_long")
    const huge = await fetch(`${server.url}/v1/incidents`, { headers: { "x-big": "b".repeat(200_000) } }).catch(
      () => undefined,
    )
    if (huge) expect(huge.status).toBe(431)
    expect((await get(server.url, "/v1/incidents", key)).status).toBe(200)
  })
})
