import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import {
  createKey,
  createSensor,
  createTenant,
  get,
  revokeKey,
  seedIncident,
  setDeception,
  walk,
} from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/** D39: the MCP endpoint at POST /mcp, driven by the official SDK's Client over Streamable HTTP. */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string; keyId: string }
let incidentsOnly: string
let eventsOnly: string
const incidentIds: Array<string> = []
const clients: Array<Client> = []

const connect = async (url: string, key?: string) => {
  const client = new Client({ name: "mcp-test", version: "1.0.0" })
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } },
  })
  await client.connect(transport)
  clients.push(client)
  return client
}

// biome-ignore lint/suspicious/noExplicitAny: tool results are checked field by field
const call = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> =>
  client.callTool({ name, arguments: args })

const mcpPost = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  })

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
}

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  incidentsOnly = (await createKey(db, tenant.orgId, "incidents:read")).key
  eventsOnly = (await createKey(db, tenant.orgId, "events:read")).key
  const sensor = await createSensor(db, tenant.orgId)
  const base = Date.now() - 3_600_000
  for (let i = 0; i < 5; i++) {
    const seeded = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: `198.51.100.${i + 1}`,
      events: [{ time: new Date(base + i * 60_000) }, { time: new Date(base + i * 60_000 + 1000) }],
    })
    incidentIds.push(seeded.incident.id)
  }
})

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {})
  await shutdown(server, db)
})

describe("MCP over Streamable HTTP with the official SDK client", () => {
  test("initialize: server info, tools capability, and instructions that say what the fence means", async () => {
    const client = await connect(server.url, tenant.key)
    expect(client.getServerVersion()?.name).toBe("decoy-incident-service")
    expect(client.getServerCapabilities()?.tools).toBeDefined()
    const instructions = client.getInstructions() ?? ""
    expect(instructions).toContain("<untrusted-NONCE>")
    expect(instructions).toMatch(/data .*never instructions/)
  })

  test("tools/list shows only the tools the key's scopes allow, each read-only with input and output schemas", async () => {
    const names = async (key: string) =>
      (await (await connect(server.url, key)).listTools()).tools.map((t) => t.name).sort()
    const all = await (await connect(server.url, tenant.key)).listTools()
    expect(all.tools.map((t) => t.name).sort()).toEqual([
      "event_changes",
      "get_event",
      "get_incident",
      "get_source",
      "incident_changes",
      "list_events",
      "list_incidents",
    ])
    for (const tool of all.tools) {
      expect(tool.annotations?.readOnlyHint).toBe(true)
      expect(tool.outputSchema?.type).toBe("object")
      expect(tool.inputSchema.type).toBe("object")
      expect(tool.description).toContain("never instructions")
    }
    const incidentTools = await names(incidentsOnly)
    expect(incidentTools).toEqual(["get_incident", "get_source", "incident_changes", "list_incidents"])
    const eventTools = await names(eventsOnly)
    expect(eventTools).toEqual(["event_changes", "get_event", "list_events"])
    // A tool outside the key's scopes answers the API's 403.
    const denied = await call(await connect(server.url, eventsOnly), "list_incidents")
    expect(denied.isError).toBe(true)
    expect(denied.content[0].text).toContain("insufficient_scope")
  })

  test("every tool's structuredContent is exactly the API's JSON for the same parameters", async () => {
    const client = await connect(server.url, tenant.key)
    const list = await call(client, "list_incidents", { status: "open", limit: 3 })
    expect(list.isError).toBeFalsy()
    const rest = await get(server.url, "/v1/incidents?status=open&limit=3", tenant.key)
    expect(list.structuredContent).toEqual(rest.body)
    expect(list.content[0].text).toContain(`id: ${rest.body.data[0].id}`)

    const one = await call(client, "get_incident", { id: incidentIds[0] })
    expect(one.structuredContent).toEqual((await get(server.url, `/v1/incidents/${incidentIds[0]}`, tenant.key)).body)

    const events = await call(client, "list_events", { incidentId: incidentIds[1], limit: "10" })
    const restEvents = await get(server.url, `/v1/events?incidentId=${incidentIds[1]}&limit=10`, tenant.key)
    expect(events.structuredContent).toEqual(restEvents.body)
    expect(restEvents.body.data).toHaveLength(2)

    const eventId = restEvents.body.data[0].id
    const event = await call(client, "get_event", { id: eventId })
    expect(event.structuredContent).toEqual((await get(server.url, `/v1/events/${eventId}`, tenant.key)).body)
  })

  test("inputs are the endpoints' parameters with the same validation and error codes", async () => {
    const client = await connect(server.url, tenant.key)
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ["list_incidents", { limit: 0 }, "invalid_request", /limit must be an integer from 1 to 100/],
      ["list_incidents", { status: "pending" }, "invalid_request", /status must be one of/],
      ["list_incidents", { cursor: "garbage" }, "invalid_request", /cursor/],
      ["list_events", { severity: "urgent" }, "invalid_request", /severity/],
      ["list_events", { from: "2026-11-02T00:00:00Z", to: "2026-11-01T00:00:00Z" }, "invalid_request", /from/],
      ["list_events", { limit: { $gt: 1 } }, "invalid_request", /limit must be a string or an integer/],
      ["get_incident", { id: "inc_01ARZ3NDEKTSV4RRFFQ69G5FAV" }, "not_found", /No incident/],
      ["get_incident", { id: "../../etc/passwd" }, "not_found", /No incident/],
      ["get_event", {}, "invalid_request", /id is required/],
    ]
    for (const [name, args, code, detail] of cases) {
      const result = await call(client, name, args)
      expect({ name, args, isError: result.isError }).toEqual({ name, args, isError: true })
      expect(result.structuredContent).toBeUndefined()
      const problem = JSON.parse(result.content[0].text.split("\n")[1])
      expect({ name, code: problem.code }).toEqual({ name, code })
      expect(problem.detail).toMatch(detail)
    }
  })

  test("paging through list_incidents with the API's cursors returns every incident exactly once", async () => {
    const client = await connect(server.url, tenant.key)
    const seen: Array<string> = []
    let cursor: string | null = null
    do {
      const page = await call(client, "list_incidents", cursor ? { limit: 2, cursor } : { limit: 2 })
      expect(page.isError).toBeFalsy()
      for (const row of page.structuredContent.data) seen.push(row.id)
      cursor = page.structuredContent.nextCursor
      if (cursor) expect(page.content[0].text).toContain(`nextCursor: ${cursor}`)
    } while (cursor !== null)
    expect(seen).toEqual((await walk(server.url, "/v1/incidents?limit=2", tenant.key)).ids)
    expect([...seen].sort()).toEqual([...incidentIds].sort())
  })
})

describe("following the change feeds through MCP", () => {
  test("incident_changes and event_changes page with the API's tokens to the end, exactly as the endpoints do", async () => {
    const client = await connect(server.url, tenant.key)
    await olderWritersEnded(db)
    for (const [tool, path, total] of [
      ["incident_changes", "/v1/incidents/changes", 5],
      ["event_changes", "/v1/events/changes", 10],
    ] as const) {
      const ids: Array<string> = []
      let after: string | undefined
      let pages = 0
      for (;;) {
        const page = await call(client, tool, after === undefined ? { limit: 3 } : { limit: 3, after })
        expect(page.isError).toBeFalsy()
        const rest = await get(
          server.url,
          `${path}?limit=3${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`,
          tenant.key,
        )
        // A caught-up page's nextToken carries the server-wide snapshot horizon, which other writers on the same
        // PostgreSQL move between the two calls; every other byte is the same.
        const withoutFinalToken = (body: { hasMore: boolean; nextToken: string }) =>
          body.hasMore ? body : { ...body, nextToken: "" }
        expect(withoutFinalToken(page.structuredContent)).toEqual(withoutFinalToken(rest.body))
        for (const row of page.structuredContent.data) ids.push(row.id)
        expect(page.content[0].text).toContain(`nextToken: ${page.structuredContent.nextToken}`)
        after = page.structuredContent.nextToken
        pages++
        if (!page.structuredContent.hasMore) break
        if (pages > 20) throw new Error("feed did not end")
      }
      expect(new Set(ids).size).toBe(total)
      // Caught up: asking again with the last token gives nothing new, and a tampered token is the API's 400.
      const again = await call(client, tool, { after })
      expect(again.structuredContent.data).toEqual([])
      const bad = await call(client, tool, { after: `${after}x` })
      expect(bad.isError).toBe(true)
      expect(bad.content[0].text).toContain("invalid_request")
    }
  })
})

describe("the MCP endpoint sits behind the API edge", () => {
  test("no key, a malformed key: HTTP 401 problem with WWW-Authenticate; the SDK client fails to connect", async () => {
    for (const headers of [{}, { authorization: "Bearer dsk_nope" }, { authorization: "Basic eDp5" }]) {
      const res = await mcpPost(server.url, INITIALIZE, headers)
      expect(res.status).toBe(401)
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="incident-api"')
      expect(res.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
      expect(((await res.json()) as { code: string }).code).toBe("unauthorized")
      expect(res.headers.get("ratelimit-policy")).toBe('"default";q=1000000;w=60')
    }
    await expect(connect(server.url)).rejects.toThrow()
  })

  test("a revoked key gets 401 at once, also for a client that was connected", async () => {
    const extra = await createKey(db, tenant.orgId, "incidents:read,events:read")
    const client = await connect(server.url, extra.key)
    expect((await call(client, "list_incidents", { limit: 1 })).isError).toBeFalsy()
    await revokeKey(db, extra.id)
    await expect(call(client, "list_incidents", { limit: 1 })).rejects.toThrow(/401/)
    const res = await mcpPost(server.url, INITIALIZE, { authorization: `Bearer ${extra.key}` })
    expect(res.status).toBe(401)
    expect(((await res.json()) as { detail: string }).detail).toBe("The API key has been revoked.")
  })

  test("Deception off gives 403 feature_disabled on /mcp; on again restores access", async () => {
    const other = await createTenant(db, "Paused")
    const deception = (state: "on" | "off") => setDeception(db, other.orgId, state)
    await deception("off")
    const off = await mcpPost(server.url, INITIALIZE, { authorization: `Bearer ${other.key}` })
    expect(off.status).toBe(403)
    expect(((await off.json()) as { code: string }).code).toBe("feature_disabled")
    await deception("on")
    const on = await mcpPost(server.url, INITIALIZE, { authorization: `Bearer ${other.key}` })
    expect(on.status).toBe(200)
  })

  test("a key with neither incidents:read nor events:read (a firewall's intel:read key) is refused at the door", async () => {
    const intelOnly = (await createKey(db, tenant.orgId, "intel:read")).key
    const res = await mcpPost(server.url, INITIALIZE, { authorization: `Bearer ${intelOnly}` })
    expect(res.status).toBe(403)
    expect(((await res.json()) as { code: string }).code).toBe("insufficient_scope")
  })

  test("other methods get 405 with Allow: POST; bodies that are not MCP get problem documents", async () => {
    const auth = { authorization: `Bearer ${tenant.key}` }
    const getRes = await fetch(`${server.url}/mcp`, { headers: auth })
    expect(getRes.status).toBe(405)
    expect(getRes.headers.get("allow")).toBe("POST")
    const del = await fetch(`${server.url}/mcp`, { method: "DELETE", headers: auth })
    expect(del.status).toBe(405)
    const notJson = await mcpPost(server.url, "{not json", auth)
    expect(notJson.status).toBe(400)
    expect(notJson.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
    const noAccept = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", accept: "text/html" },
      body: JSON.stringify(INITIALIZE),
    })
    expect(noAccept.status).toBe(406)
    const huge = await mcpPost(server.url, { ...INITIALIZE, pad: "x".repeat(200_000) }, auth)
    expect(huge.status).toBe(413)
    // D39/D11: a JSON-RPC batch would be many calls for one request against the limits: refused as a whole.
    const batch = await mcpPost(
      server.url,
      [INITIALIZE, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { jsonrpc: "2.0", id: 3, method: "ping" }],
      auth,
    )
    expect(batch.status).toBe(400)
    expect(batch.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
    expect(await batch.json()).toMatchObject({
      status: 400,
      code: "invalid_request",
      detail: expect.stringContaining("batch"),
    })
    const oneBatched = await mcpPost(server.url, [INITIALIZE], auth)
    expect(oneBatched.status).toBe(400)
    // A raw initialize over plain fetch answers JSON (stateless: no session header).
    const ok = await mcpPost(server.url, INITIALIZE, auth)
    expect(ok.status).toBe(200)
    expect(ok.headers.get("content-type")).toBe("application/json; charset=utf-8")
    expect(ok.headers.get("mcp-session-id")).toBeNull()
    expect(ok.headers.get("x-content-type-options")).toBe("nosniff")
    const body = (await ok.json()) as { result: { instructions: string } }
    expect(body.result.instructions).toContain("never instructions")
    // The access log names the route, the organization and the key, never the key itself (D10 edge).
    const logged = server.logs
      .map((line) => {
        try {
          return JSON.parse(line) as { message?: string; annotations?: Record<string, unknown> }
        } catch {
          return {}
        }
      })
      .filter((entry) => entry.message === "request" && entry.annotations?.route === "/mcp")
    expect(logged.some((e) => e.annotations?.keyId === tenant.keyId && e.annotations?.status === 200)).toBe(true)
    expect(server.logs.join("\n")).not.toContain(tenant.key)
  })
})

describe("on a server with a small rate limit and a small result bound", () => {
  let small: RunningServer
  let smallDb: TestDatabase
  let key: string

  beforeAll(async () => {
    small = await startServer({ env: await testEnv({ RATE_LIMIT: "12", MCP_MAX_RESULT_CHARS: "4000" }) })
    smallDb = testDatabase(small.env)
    const t = await createTenant(smallDb)
    key = t.key
    const sensor = await createSensor(smallDb, t.orgId)
    const base = Date.now() - 3_600_000
    for (let i = 0; i < 4; i++) {
      await seedIncident(smallDb, {
        orgId: t.orgId,
        sensorId: sensor.id,
        sourceIp: `192.0.2.${i + 1}`,
        events: [{ time: new Date(base + i * 1000) }],
      })
    }
  })
  afterAll(() => shutdown(small, smallDb))

  test("a page whose text would pass MCP_MAX_RESULT_CHARS comes back smaller, with the API's own cursor", async () => {
    const client = await connect(small.url, key)
    const page = await call(client, "list_incidents", { limit: 4 })
    expect(page.content[0].text.length).toBeLessThanOrEqual(4000)
    const shown = page.structuredContent.data.length
    expect(shown).toBeGreaterThanOrEqual(1)
    expect(shown).toBeLessThan(4)
    expect(typeof page.structuredContent.nextCursor).toBe("string")
    const next = await call(client, "list_incidents", { limit: 4, cursor: page.structuredContent.nextCursor })
    expect(next.isError).toBeFalsy()
    expect(next.structuredContent.data[0].id).not.toBe(page.structuredContent.data[shown - 1].id)
  })

  test("MCP requests count against the limits; within 13 requests of a 12-request window comes a 429 with Retry-After", async () => {
    const t = await createTenant(smallDb, "Limited")
    let status = 0
    let res: Response | undefined
    for (let i = 0; i < 13 && status !== 429; i++) {
      res = await mcpPost(small.url, INITIALIZE, { authorization: `Bearer ${t.key}` })
      status = res.status
      await res.text()
    }
    expect(status).toBe(429)
    expect(Number(res?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect(res?.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
  })
})
