import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { INGEST_ROUTE_TABLE, type IngestHandlerKind } from "../../src/ingest/routes.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant } from "../support/fixtures.ts"
import { nativeEvent } from "../support/ingest.ts"
import { type RawResponse, sendRaw } from "../support/rawHttp.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * Every ingest request is counted where it landed: a path written another way (path parameters `;x`, `%3B`, a
 * trailing `/`, `//`, dot segments, another case, escaped letters, a fragment) is either refused with the route
 * family's own error shape and nothing stored, or stored and then logged and counted on the route that stored it,
 * never stored while the log says `unmatched` and `ingest_events_total` counts nothing. Requests go byte for byte
 * over a raw socket, so no client rewrites the path first.
 */

let server: RunningServer
let db: TestDatabase
let token: string
let orgId: string

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  const tenant = await createTenant(db, "Path forms")
  orgId = tenant.orgId
  token = (await createSensor(db, orgId, "paths-01")).token
})

afterAll(() => shutdown(server, db))

type Family = "native" | "hec"

interface Route {
  readonly path: string
  readonly label: string
  readonly family: Family
  readonly method: "POST" | "GET"
  /** A body storing one event from this address (none for the heartbeat and the health check). */
  readonly body: (ip: string) => string
}

const ocTime = () => new Date().toISOString().replace("T", " ").replace("Z", "000")

/** A body for each kind of route. */
const BODIES: Record<IngestHandlerKind, (ip: string) => string> = {
  native: (ip) => JSON.stringify(nativeEvent({ sourceIp: ip })),
  opencanary: (ip) =>
    JSON.stringify({
      dst_host: "10.0.0.5",
      dst_port: 21,
      local_time: ocTime(),
      logdata: { USERNAME: "root", PASSWORD: "x" },
      logtype: 2000,
      node_id: "opencanary-1",
      src_host: ip,
      src_port: 51234,
      utc_time: ocTime(),
    }),
  cowrie: (ip) =>
    JSON.stringify({
      eventid: "cowrie.login.failed",
      session: `p${Math.random().toString(16).slice(2, 12)}`,
      protocol: "ssh",
      src_ip: ip,
      src_port: 40000,
      dst_port: 22,
      username: "root",
      password: "x",
      timestamp: new Date().toISOString(),
    }),
  heartbeat: () => "",
  hecEvents: (ip) => JSON.stringify({ event: nativeEvent({ sourceIp: ip }) }),
  hecHealth: () => "",
}

/** Every route of the listener's table. */
const ROUTES: ReadonlyArray<Route> = INGEST_ROUTE_TABLE.map((route) => ({
  path: route.path,
  label: route.label,
  family: route.hec ? "hec" : "native",
  method: route.method,
  body: BODIES[route.handler],
}))

/** The ways of writing a route's path that a client or a scanner may send. */
const FORMS: ReadonlyArray<readonly [string, (path: string) => string]> = [
  ["as it is", (p) => p],
  ["a path parameter", (p) => `${p};x`],
  ["a path parameter naming a token", (p) => `${p};token=abc`],
  ["an empty path parameter", (p) => `${p};`],
  ["a path parameter after a trailing slash", (p) => `${p}/;x`],
  ["a path parameter before a trailing slash", (p) => `${p};x/`],
  ["a path parameter on an inner segment", (p) => p.replace(/\/([^/]+)$/, ";x/$1")],
  ["a path parameter before the query", (p) => `${p};x?a=1`],
  ["an escaped semicolon", (p) => `${p}%3Bx`],
  ["an escaped semicolon, lowercase", (p) => `${p}%3bx`],
  ["a trailing slash", (p) => `${p}/`],
  ["a doubled slash", (p) => p.replace(/\/([^/]+)$/, "//$1")],
  ["a leading doubled slash", (p) => `/${p}`],
  ["a dot segment", (p) => p.replace(/\/([^/]+)$/, "/./$1")],
  ["a dot-dot segment", (p) => p.replace(/\/([^/]+)$/, "/zz/../$1")],
  ["upper case", (p) => p.toUpperCase()],
  [
    "an escaped letter",
    (p) => p.replace(/([a-z])([^/]*)$/, (_m, c: string, rest: string) => `%${c.charCodeAt(0).toString(16)}${rest}`),
  ],
  ["an escaped slash", (p) => p.replace(/\/([^/]+)$/, "%2F$1")],
  ["a fragment", (p) => `${p}#x`],
  ["a query", (p) => `${p}?a=1`],
]

const post = async (method: string, target: string, body: string): Promise<RawResponse> => {
  const head = [
    `${method} ${target} HTTP/1.1`,
    "Host: 127.0.0.1",
    `Authorization: ${target.toLowerCase().includes("collector") ? "Splunk" : "Bearer"} ${token}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "Connection: close",
  ].join("\r\n")
  const bytes = Buffer.from(`${head}\r\n\r\n${body}`)
  // A connection the server ended before any answer was read (the raw socket's race) is tried again.
  for (let attempt = 0; ; attempt++) {
    try {
      return await sendRaw(server.ingestUrl, bytes)
    } catch (error) {
      if (attempt >= 2) throw error
    }
  }
}

const metrics = async () => {
  const text = await (await fetch(`${server.opsUrl}/metrics`)).text()
  return (sample: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${sample} `))
    return line === undefined ? 0 : Number(line.slice(sample.length + 1))
  }
}

// biome-ignore lint/suspicious/noExplicitAny: log entries
const requestLines = (): Array<any> =>
  server.logs
    .filter((l) => l.includes('"ingest request"'))
    .map((l) => JSON.parse(l))
    .filter((e) => e.message === "ingest request")

const storedFrom = async (ip: string) =>
  (
    await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ n: number }>`select count(*)::int as n from events where org_id = ${orgId} and source_ip = ${ip}`,
      ),
    )
  )[0]?.n ?? 0

let serial = 0

describe("every ingest request is counted where it landed", () => {
  for (const route of ROUTES) {
    test(`${route.method} ${route.path}, however its path is written, is refused or logged and counted on its route`, async () => {
      const seen: Array<string> = []
      for (const [form, write] of FORMS) {
        const target = write(route.path)
        serial++
        const ip = `198.51.100.${serial % 250}`
        const before = await metrics()
        const linesBefore = requestLines().length
        const res = await post(route.method, target, route.body(ip))
        const deadline = Date.now() + 5000
        while (requestLines().length === linesBefore && Date.now() < deadline) await Bun.sleep(20)
        const lines = requestLines().slice(linesBefore)
        const after = await metrics()
        const stored = await storedFrom(ip)
        const line = lines[0]?.annotations ?? {}
        const what = { form, target, status: res.status, route: line.route, stored }
        seen.push(`${res.status} ${line.route} ${stored} ${form}`)
        // One log line, counted once under its route label.
        expect({ ...what, lines: lines.length }).toEqual({ ...what, lines: 1 })
        const label = line.route as string
        const result = (sample: string) =>
          after(`ingest_requests_total{route="${label}",result="${sample}"}`) -
          before(`ingest_requests_total{route="${label}",result="${sample}"}`)
        const results = ["ok", "bad_request", "unauthorized", "too_large", "unavailable", "error"].map(result)
        expect({ ...what, counted: results.reduce((a, b) => a + b, 0) }).toEqual({ ...what, counted: 1 })

        if (res.status < 300) {
          // Served: on its own route, and its events counted there.
          expect(what).toEqual({ ...what, route: route.label })
          if (route.label !== "heartbeat" && route.label !== "hec_health") {
            expect(what).toEqual({ ...what, stored: 1 })
            const accepted =
              after(`ingest_events_total{route="${route.label}",outcome="accepted"}`) -
              before(`ingest_events_total{route="${route.label}",outcome="accepted"}`)
            expect({ ...what, accepted }).toEqual({ ...what, accepted: 1 })
          }
        } else {
          // Refused: nothing stored, with the family's own error shape.
          expect(what).toEqual({ ...what, stored: 0 })
          expect([400, 404, 405]).toContain(res.status)
          const body = JSON.parse(res.body)
          if (route.family === "hec" && line.route !== "unmatched") {
            expect(typeof body.text).toBe("string")
            expect(typeof body.code).toBe("number")
          } else if (route.family === "native") {
            expect(res.headers["content-type"]).toContain("application/problem+json")
            expect(typeof body.detail).toBe("string")
          }
          // A path parameter is named as such, on the route it was sent to.
          if (target.split("?")[0]?.includes(";")) {
            expect({ ...what, why: route.family === "hec" ? body.reason : body.detail }).toEqual({
              ...what,
              why: expect.stringContaining("Path parameters"),
            })
            expect(what).toEqual({ ...what, status: 400, route: route.label })
          }
        }
      }
      // What each form gave, for the record of a failing run.
      expect(seen.length).toBe(FORMS.length)
    })
  }
})
