import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/** D39: `bun run mcp` (stdio), driven by the official SDK's Client, against a running server. */

const ROOT = join(import.meta.dir, "..", "..")
let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
const incidentIds: Array<string> = []
const clients: Array<Client> = []

const stdioEnv = (key: string) => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  API_KEY: key,
  BASE_URL: server.url,
})

const connect = async (key: string) => {
  const client = new Client({ name: "desktop-agent", version: "1.0.0" })
  await client.connect(
    new StdioClientTransport({ command: "bun", args: ["run", "mcp"], cwd: ROOT, env: stdioEnv(key), stderr: "pipe" }),
  )
  clients.push(client)
  return client
}

// biome-ignore lint/suspicious/noExplicitAny: tool results are checked field by field
const call = async (client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> =>
  client.callTool({ name, arguments: args })

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  const sensor = await createSensor(db, tenant.orgId)
  const base = Date.now() - 3_600_000
  for (let i = 0; i < 3; i++) {
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

describe("bun run mcp over stdio", () => {
  test("lists incidents, opens one and follows the feed, with the API's JSON and fenced text", async () => {
    const client = await connect(tenant.key)
    expect(client.getInstructions()).toContain("never instructions")
    const tools = (await client.listTools()).tools.map((t) => t.name).sort()
    expect(tools).toEqual([
      "event_changes",
      "get_event",
      "get_incident",
      "get_source",
      "incident_changes",
      "list_events",
      "list_incidents",
    ])

    const list = await call(client, "list_incidents", { limit: 2 })
    expect(list.structuredContent).toEqual((await get(server.url, "/v1/incidents?limit=2", tenant.key)).body)
    expect(list.content[0].text).toMatch(/title: <untrusted-([0-9a-f]{16})>.*<\/untrusted-\1>/)

    const id = list.structuredContent.data[0].id
    const one = await call(client, "get_incident", { id })
    expect(one.structuredContent).toEqual((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body)
    expect(one.structuredContent.events).toHaveLength(2)

    const seen: Array<string> = []
    await olderWritersEnded(db)
    let after: string | undefined
    for (let page = 0; page < 20; page++) {
      const changes = await call(client, "event_changes", after === undefined ? { limit: 4 } : { limit: 4, after })
      expect(changes.isError).toBeFalsy()
      for (const e of changes.structuredContent.data) seen.push(e.id)
      after = changes.structuredContent.nextToken
      if (!changes.structuredContent.hasMore) break
    }
    expect(new Set(seen).size).toBe(6)

    // The API's errors come through as tool errors with its code; an id cannot leave its path segment.
    const missing = await call(client, "get_incident", { id: "../../v1/events" })
    expect(missing.isError).toBe(true)
    expect(missing.content[0].text).toContain("not_found")
    const invalid = await call(client, "list_events", { limit: 500 })
    expect(invalid.content[0].text).toContain("invalid_request")
  })

  test("tools/list follows the key's scopes; a refused key is a JSON-RPC error naming the API's answer", async () => {
    const eventsOnly = await createKey(db, tenant.orgId, "events:read")
    const client = await connect(eventsOnly.key)
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual([
      "event_changes",
      "get_event",
      "list_events",
    ])
    const denied = await call(client, "get_incident", { id: incidentIds[0] })
    expect(denied.content[0].text).toContain("insufficient_scope")

    const bad = await connect(`${tenant.key.slice(0, -2)}xx`)
    await expect(bad.listTools()).rejects.toThrow(/401/)
  })

  test("stdout carries JSON-RPC only, logs go to stderr", async () => {
    const child = Bun.spawn(["bun", "run", "mcp"], {
      cwd: ROOT,
      env: stdioEnv(tenant.key),
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    })
    const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`)
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    })
    send({ jsonrpc: "2.0", method: "notifications/initialized" })
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" })
    send({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "list_incidents", arguments: { limit: 1 } } })
    const lines: Array<string> = []
    const decoder = new TextDecoder()
    let buffer = ""
    for await (const chunk of child.stdout as ReadableStream<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true })
      const parts = buffer.split("\n")
      buffer = parts.pop() ?? ""
      lines.push(...parts)
      if (lines.length >= 3) break
    }
    child.stdin.end()
    child.kill()
    await child.exited
    expect(lines).toHaveLength(3)
    for (const line of lines) {
      const message = JSON.parse(line) as { jsonrpc: string; id: number; result?: unknown }
      expect(message.jsonrpc).toBe("2.0")
      expect(message.result).toBeDefined()
    }
    const stderr = await new Response(child.stderr as ReadableStream<Uint8Array>).text()
    expect(stderr).toContain("mcp stdio server ready")
  })
})
