import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { connect } from "node:net"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { eventually } from "../support/eventually.ts"
import { createSensor, createTenant } from "../support/fixtures.ts"
import { nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Issue #17 item 7, the edge through the real server: long ids are routed (401 first, then 404, D10); paths the
 * router serves under another spelling are logged and counted under their route; every oversized body gets our own
 * 413 problem, never Bun's bare one (D4, D22); an IPv6 client counts per /64 (D11).
 */

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
const PROXY = { TRUST_PROXY: "127.0.0.1/32,::1/128" }

const accessLines = (server: RunningServer) =>
  server.logs.flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { message?: string; annotations?: Record<string, unknown> }
      return entry.message === "request" ? [entry.annotations ?? {}] : []
    } catch {
      return []
    }
  })

describe("the edge", () => {
  let server: RunningServer
  let db: TestDatabase
  let tenant: { orgId: string; key: string }
  let token: string

  beforeAll(async () => {
    server = await startServer({ env: await testEnv() })
    db = testDatabase(server.env)
    tenant = await createTenant(db)
    token = (await createSensor(db, tenant.orgId)).token
  })
  afterAll(() => shutdown(server, db))

  test("an id longer than 100 characters gets 401 without a key, then 404 with one (never 404 first)", async () => {
    for (const length of [101, 500, 8000]) {
      const id = `inc_${"A".repeat(length)}`
      const anonymous = await fetch(`${server.url}/v1/incidents/${id}`)
      expect({ length, status: anonymous.status }).toEqual({ length, status: 401 })
      expect(((await anonymous.json()) as { code: string }).code).toBe("unauthorized")
      const keyed = await fetch(`${server.url}/v1/events/${id}`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      })
      expect({ length, status: keyed.status }).toEqual({ length, status: 404 })
      expect(((await keyed.json()) as { code: string }).code).toBe("not_found")
    }
  })

  test("/v1//incidents and /v1/%69ncidents are served and logged and counted as /v1/incidents, not unmatched", async () => {
    const before = accessLines(server).length
    for (const path of ["/v1//incidents", "/v1/%69ncidents", "//v1/events", "/v1/incidents/inc_x//"]) {
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${tenant.key}` } })
      await res.arrayBuffer()
      expect(res.status).toBeLessThan(405)
    }
    const nowhere = await fetch(`${server.url}/v1/%zz`)
    expect(nowhere.status).toBe(404)
    await eventually("five request lines", () => accessLines(server).length >= before + 5)
    const routes = accessLines(server)
      .slice(before)
      .map((line) => line.route)
    expect(routes).toEqual(["/v1/incidents", "/v1/incidents", "/v1/events", "/v1/incidents/:id", "unmatched"])
    const metrics = await (await fetch(`${server.opsUrl}/metrics`)).text()
    expect(metrics).toMatch(/http_requests_total\{[^}]*route="\/v1\/incidents"[^}]*status="200"/)
  })

  test("a body over 1 MiB gets the 413 problem whatever its size, with Content-Length or chunked", async () => {
    const oneEvent = JSON.stringify(nativeEvent())
    for (const size of [1024 * 1024 + 1, 3 * 1024 * 1024, 64 * 1024 * 1024]) {
      const body = oneEvent + " ".repeat(size - oneEvent.length)
      const res = await fetch(`${server.ingestUrl}/ingest/v1/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body,
      })
      expect({ size, status: res.status }).toEqual({ size, status: 413 })
      expect(res.headers.get("content-type")).toContain("application/problem+json")
      expect(((await res.json()) as { code: string }).code).toBe("payload_too_large")
    }
    // Chunked (no Content-Length): 5 MiB streamed; the server stops reading after 1 MiB and answers the problem.
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024))
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 5 * 1024 * 1024) return controller.close()
        sent += chunk.byteLength
        controller.enqueue(chunk)
      },
    })
    const chunked = await fetch(`${server.ingestUrl}/ingest/v1/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: stream,
    })
    expect(chunked.status).toBe(413)
    expect(((await chunked.json()) as { code: string }).code).toBe("payload_too_large")
    // A body at the limit is still read and answered.
    const ok = await fetch(`${server.ingestUrl}/ingest/v1/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: oneEvent + " ".repeat(1024 * 1024 - oneEvent.length),
    })
    expect(ok.status).toBe(200)
    expect(((await ok.json()) as { accepted: number }).accepted).toBe(1)
  })

  test("a 200 MiB POST to the API gets the 405 problem, not Bun's bare 413", async () => {
    // Only the head is sent: the answer must not depend on reading the body.
    const status = await new Promise<string>((resolve, reject) => {
      const url = new URL(server.url)
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `POST /v1/incidents HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${200 * 1024 * 1024}\r\n\r\n{`,
        )
      })
      let text = ""
      socket.on("data", (data) => {
        text += data.toString()
        if (text.includes("\r\n\r\n") && text.includes("}")) {
          socket.destroy()
          resolve(text)
        }
      })
      socket.on("error", reject)
      setTimeout(() => {
        socket.destroy()
        resolve(text)
      }, 10_000)
    })
    expect(status.split("\r\n")[0]).toBe("HTTP/1.1 405 Method Not Allowed")
    expect(status).toContain('"code":"method_not_allowed"')
  })
})

/** D11 per /64 through the real server, with each store. The test runner is a trusted proxy (X-Forwarded-For). */
for (const store of ["memory", "redis"] as const) {
  describe(`an IPv6 client counts per /64 (${store} store)`, () => {
    let server: RunningServer
    beforeAll(async () => {
      server = await startServer({
        env: await testEnv({ ...PROXY, RATE_LIMIT: "5", ...(store === "redis" ? { REDIS_URL } : {}) }),
      })
    })
    afterAll(() => shutdown(server))

    test("addresses rotated within one /64 share its 5; another /64 has its own", async () => {
      // A /64 no other run uses (random 32 bits in the third and fourth groups).
      const a = Math.floor(Math.random() * 0xffff).toString(16)
      const b = Math.floor(Math.random() * 0xffff).toString(16)
      const statuses: Array<number> = []
      for (let i = 1; i <= 6; i++) {
        const res = await fetch(`${server.url}/v1/incidents`, {
          headers: { "x-forwarded-for": `2001:db8:${a}:${b}:${i.toString(16)}:${i}::${i}` },
        })
        await res.arrayBuffer()
        statuses.push(res.status)
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429])
      const neighbour = await fetch(`${server.url}/v1/incidents`, {
        headers: { "x-forwarded-for": `2001:db8:${a}:${(Number.parseInt(b, 16) ^ 1).toString(16)}::1` },
      })
      expect(neighbour.status).toBe(401)
    })
  })
}
