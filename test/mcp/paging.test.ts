import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D40 with D7/D32 over real HTTP: an agent that pages by what a result's text says sees every event, even when one
 * event's text is far larger than MCP_MAX_RESULT_CHARS. One large event is stored first (and is the newest), then an
 * attack's ten small steps; following event_changes' tokens and list_events' cursors, as written in
 * the text, must show steps 0…9, and each result's structuredContent is the API's answer for the page its text shows.
 */

/** The result bound of this server: the large event's text is about five times as long. */
const MAX_CHARS = 20_000

let server: RunningServer
let db: TestDatabase
let key: string
let bigId: string

/** A raw JSON-RPC POST /mcp (stateless: no initialize needed for tools/call). */
let rpcId = 0
// biome-ignore lint/suspicious/noExplicitAny: tool results are checked field by field
const callTool = async (name: string, args: Record<string, unknown>): Promise<any> => {
  const res = await fetch(`${server.url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "tools/call", params: { name, arguments: args } }),
  })
  expect(res.status).toBe(200)
  const body = (await res.json()) as { result?: unknown }
  expect(body.result).toBeDefined()
  return body.result
}

/** The value of a paging line (`nextCursor: …`, `nextToken: …`, `hasMore: …`) as the text shows it. */
const pagingValue = (text: string, field: string): string => {
  const line = text.split("\n").find((l) => l.startsWith(`${field}: `))
  if (line === undefined) throw new Error(`no ${field} line in the text`)
  return line.slice(field.length + 2)
}

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ MCP_MAX_RESULT_CHARS: String(MAX_CHARS) }) })
  db = testDatabase(server.env)
  const tenant = await createTenant(db)
  key = tenant.key
  const sensor = await createSensor(db, tenant.orgId, "decoy-paging")
  const now = Date.now()
  // Many short strings of "<" (each written \u003c in a fence): about 100,000 characters of text at the read bound of
  // attackerInput (16 KB), five times the result bound, and no per-string cut can make it smaller.
  const bulky: Record<string, Array<string>> = {}
  for (let k = 0; k < 64; k++) bulky[`field${k}`] = Array.from({ length: 3 }, () => "<".repeat(100))
  // Stored in this order (the feed's order): the large event (also the newest), then steps 0…9.
  await seedIncident(db, {
    orgId: tenant.orgId,
    sensorId: sensor.id,
    sourceIp: "203.0.113.50",
    events: [
      { time: new Date(now - 1000), type: "http.request", attackerInput: bulky },
      ...Array.from({ length: 10 }, (_, i) => ({
        time: new Date(now - 60_000 + i * 1000),
        type: "ssh.command",
        attackerInput: { username: "root", command: `attack-step-${i} ; id` },
      })),
    ],
  })
  const listed = await get(server.url, "/v1/events?limit=1", key)
  bigId = listed.body.data[0].id
  expect(JSON.stringify(listed.body.data[0]).length).toBeGreaterThan(15_000)
})

afterAll(() => shutdown(server, db))

const expectAllSteps = (texts: ReadonlyArray<string>) => {
  const all = texts.join("\n")
  const missing = Array.from({ length: 10 }, (_, i) => `attack-step-${i} `).filter((s) => !all.includes(s))
  expect(missing).toEqual([])
  expect(all).toContain(`id: ${bigId}`)
}

describe("MCP paging never moves past an event whose text was not shown", () => {
  test("following event_changes by the nextToken in its text shows steps 0…9 and the large event", async () => {
    await olderWritersEnded(db)
    const texts: Array<string> = []
    let after: string | undefined
    for (let calls = 0; ; calls++) {
      if (calls > 30) throw new Error("the feed did not end")
      const result = await callTool("event_changes", after === undefined ? {} : { after })
      expect(result.isError).toBeFalsy()
      const text: string = result.content[0].text
      expect(text.length).toBeLessThanOrEqual(MAX_CHARS)
      texts.push(text)
      const page = result.structuredContent
      // The text shows the page structuredContent holds: each of its events, and its own token.
      for (const event of page.data) expect(text).toContain(`id: ${event.id}`)
      // structuredContent is the API's answer for the page shown (the same size, from the same position).
      const from = after === undefined ? "" : `&after=${encodeURIComponent(after)}`
      const rest = await get(server.url, `/v1/events/changes?limit=${Math.max(1, page.data.length)}${from}`, key)
      expect(rest.body.data).toEqual(page.data)
      after = pagingValue(text, "nextToken")
      expect(after).toBe(page.nextToken)
      if (pagingValue(text, "hasMore") !== "true") break
    }
    expectAllSteps(texts)
  })

  test("following list_events by the nextCursor in its text shows steps 0…9 and the large event", async () => {
    const texts: Array<string> = []
    let cursor: string | undefined
    for (let calls = 0; ; calls++) {
      if (calls > 30) throw new Error("the list did not end")
      const result = await callTool("list_events", cursor === undefined ? {} : { cursor })
      expect(result.isError).toBeFalsy()
      const text: string = result.content[0].text
      expect(text.length).toBeLessThanOrEqual(MAX_CHARS)
      texts.push(text)
      const page = result.structuredContent
      for (const event of page.data) expect(text).toContain(`id: ${event.id}`)
      const shown = pagingValue(text, "nextCursor")
      expect(shown).toBe(page.nextCursor ?? "null")
      const rest = await get(
        server.url,
        `/v1/events?limit=${page.data.length}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
        key,
      )
      expect(rest.body).toEqual(page)
      if (shown === "null") break
      cursor = shown
    }
    expectAllSteps(texts)
  })
})
