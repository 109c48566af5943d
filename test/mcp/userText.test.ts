import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * The text that API users and agents read (the OpenAPI document behind /docs, the MCP tools' descriptions and
 * schemas) speaks in its own words: no internal decision numbers, no paths outside the repository, no issue
 * numbers.
 */

const FORBIDDEN: ReadonlyArray<RegExp> = [/\bD\d{1,2}\b/, /\.\.\/shared/, /issue #/i]

let server: RunningServer
let db: TestDatabase
let key: string
let client: Client | undefined

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  key = (await createTenant(db)).key
})

afterAll(async () => {
  await client?.close().catch(() => {})
  await shutdown(server, db)
})

/** Every `description`, `summary` and `title` string anywhere in `value`, with its JSON path. */
const texts = (value: unknown, path = "$"): Array<{ path: string; text: string }> => {
  if (Array.isArray(value)) return value.flatMap((v, i) => texts(v, `${path}[${i}]`))
  if (value === null || typeof value !== "object") return []
  return Object.entries(value).flatMap(([k, v]) =>
    typeof v === "string" && (k === "description" || k === "summary" || k === "title")
      ? [{ path: `${path}.${k}`, text: v }]
      : texts(v, `${path}.${k}`),
  )
}

const offending = (found: Array<{ path: string; text: string }>) =>
  found.filter(({ text }) => FORBIDDEN.some((re) => re.test(text)))

describe("user-facing text names no internal references", () => {
  test("/openapi.json: no description, summary or title cites a decision number, ../shared or an issue", async () => {
    const res = await fetch(`${server.url}/openapi.json`)
    expect(res.status).toBe(200)
    const found = texts(await res.json())
    expect(found.length).toBeGreaterThan(50)
    expect(offending(found)).toEqual([])
  })

  test("/openapi.json: the problem `detail` is described per status, a parameter only on 400", async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      components: {
        schemas: Record<string, { properties?: { status?: { enum?: number[] }; detail?: { description?: string } } }>
      }
    }
    const details = Object.values(doc.components.schemas).flatMap((s) =>
      s.properties?.detail?.description === undefined
        ? []
        : [{ status: s.properties.status?.enum?.[0], text: s.properties.detail.description }],
    )
    expect(details.length).toBeGreaterThan(3)
    for (const { status, text } of details) {
      expect({ status, parameter: text.includes("parameter") }).toEqual({ status, parameter: status === 400 })
    }
  })

  test("MCP tools/list: no tool description or input/output schema description cites one", async () => {
    client = new Client({ name: "user-text-test", version: "1.0.0" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    )
    const { tools } = await client.listTools()
    expect(tools.length).toBe(7)
    const found = texts(tools)
    expect(found.length).toBeGreaterThan(tools.length * 2)
    expect(offending(found)).toEqual([])
    expect(offending([{ path: "instructions", text: client.getInstructions() ?? "" }])).toEqual([])
  })
})
