import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { IDLE_TIMEOUT_MS } from "../../src/platform/http/nodeServer.ts"
import { createKey, createOrg, withFixtures } from "../support/fixtures.ts"
import { type RunningServerProcess, shutdown, startServerProcess } from "../support/server.ts"

/**
 * The API listener runs on Bun's node:http (src/platform/http/nodeServer.ts) for one socket write per response. What
 * Bun.serve did by itself must still hold, over real sockets to the service in a process of its own: Content-Length
 * framing (HEAD included), pipelined requests, a body of any size read and dropped rather than held, idle connections
 * closed after the idle limit and at shutdown.
 */

interface Response {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** A raw HTTP/1.1 connection: sends bytes, parses the Content-Length-framed responses it gets back. */
const open = (base: string) => {
  const url = new URL(base)
  const socket = connect({ host: url.hostname, port: Number(url.port) })
  let buffer = ""
  const waiting: Array<() => void> = []
  let closed = false
  const closedAt = new Promise<number>((resolve) => socket.on("close", () => resolve(performance.now())))
  socket.on("data", (chunk) => {
    buffer += chunk.toString("latin1")
    for (const wake of waiting.splice(0)) wake()
  })
  socket.on("error", () => undefined)
  socket.on("close", () => {
    closed = true
    for (const wake of waiting.splice(0)) wake()
  })
  /** The next response; `head` for an answer to HEAD (no body whatever Content-Length says). */
  const next = async (head = false): Promise<Response> => {
    for (;;) {
      const end = buffer.indexOf("\r\n\r\n")
      if (end >= 0) {
        const lines = buffer.slice(0, end).split("\r\n")
        const headers: Record<string, string> = {}
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(":")
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
        }
        const length = head ? 0 : Number(headers["content-length"] ?? Number.NaN)
        if (Number.isNaN(length)) throw new Error(`a response without Content-Length:\n${buffer.slice(0, end)}`)
        if (buffer.length >= end + 4 + length) {
          const body = buffer.slice(end + 4, end + 4 + length)
          buffer = buffer.slice(end + 4 + length)
          return { status: Number(lines[0]?.split(" ")[1]), headers, body }
        }
      }
      if (closed) throw new Error(`connection closed; received:\n${buffer.slice(0, 400)}`)
      await new Promise<void>((resolve) => waiting.push(resolve))
    }
  }
  return { socket, next, closedAt, host: url.host, isClosed: () => closed }
}

const rssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024
}

/**
 * Sends `head` and then `size` bytes of body as fast as the connection takes them (or until the server closes it),
 * sampling the server's resident memory. The first response and the largest growth over the start.
 */
const postHuge = async (server: RunningServerProcess, head: string, size: number, chunked = false) => {
  const connection = open(server.url)
  const pid = server.process.pid
  const start = rssMiB(pid)
  const began = performance.now()
  let peak = start
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid))
  }, 20)
  const answered = connection.next()
  answered.catch(() => undefined)
  const bytes = Buffer.alloc(1024 * 1024, 0x20)
  // Without a declared length the server must read the body to learn its size.
  const chunk = chunked
    ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from("\r\n")])
    : bytes
  const socket: Socket = connection.socket
  socket.write(head)
  let sent = 0
  while (sent < size && !connection.isClosed()) {
    if (!socket.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off("drain", done)
          socket.off("close", done)
          resolve()
        }
        socket.on("drain", done)
        socket.on("close", done)
      })
    }
    sent += bytes.length
  }
  const response = await answered
  const tookMs = performance.now() - began
  clearInterval(sampler)
  peak = Math.max(peak, rssMiB(pid))
  socket.destroy()
  return { response, sent, tookMs, growthMiB: peak - start }
}

describe("the API listener on node:http", () => {
  let server: RunningServerProcess
  let key: string

  beforeAll(async () => {
    server = await startServerProcess()
    key = await withFixtures(server.env, async (db) => {
      const org = await createOrg(db, `Node ${crypto.randomUUID().slice(0, 8)}`)
      return (await createKey(db, org.id, "incidents:read,events:read")).key
    })
  })
  afterAll(() => shutdown(server))

  test("every answer is framed by Content-Length, never chunked; HEAD says the length GET sends", async () => {
    const c = open(server.url)
    const auth = `authorization: Bearer ${key}\r\n`
    const notification = JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
    const cases: Array<[string, number]> = [
      [`GET /v1/incidents HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`, 200],
      [`GET /v1/incidents HTTP/1.1\r\nhost: ${c.host}\r\n\r\n`, 401],
      [`GET /v1/incidents/inc_missing HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`, 404],
      [`GET /v1/incidents?limit=0 HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`, 400],
      [`GET /v1/incidents?x=${"a".repeat(9000)} HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`, 414],
      [`GET /openapi.json HTTP/1.1\r\nhost: ${c.host}\r\n\r\n`, 200],
      // Empty answers: the redirect of /docs/ and the MCP door's 202 to a notification.
      [`GET /docs/ HTTP/1.1\r\nhost: ${c.host}\r\n\r\n`, 308],
      [
        `POST /mcp HTTP/1.1\r\nhost: ${c.host}\r\n${auth}content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${notification.length}\r\n\r\n${notification}`,
        202,
      ],
    ]
    for (const [request, status] of cases) {
      c.socket.write(request)
      const response = await c.next()
      expect({ request: request.slice(0, 40), status: response.status }).toEqual({
        request: request.slice(0, 40),
        status,
      })
      expect(response.headers["transfer-encoding"]).toBeUndefined()
      expect(Number(response.headers["content-length"])).toBe(Buffer.byteLength(response.body, "latin1"))
      expect(response.headers["x-content-type-options"]).toBe("nosniff")
      expect(response.headers["cache-control"]).toBe("no-store")
      expect(response.headers.ratelimit).toBeDefined()
    }
    c.socket.write(`GET /v1/events HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`)
    const get = await c.next()
    c.socket.write(`HEAD /v1/events HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`)
    const head = await c.next(true)
    expect(head.status).toBe(200)
    expect(head.headers["transfer-encoding"]).toBeUndefined()
    expect(head.headers["content-length"]).toBe(get.headers["content-length"])
    expect(head.headers["content-type"]).toBe(get.headers["content-type"])
    c.socket.destroy()
  })

  test("pipelined requests on one connection are all answered, in order", async () => {
    const c = open(server.url)
    const auth = `authorization: Bearer ${key}\r\n`
    c.socket.write(
      [
        `GET /v1/incidents?limit=1 HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`,
        `GET /v1/nothing-here HTTP/1.1\r\nhost: ${c.host}\r\n${auth}\r\n`,
        `GET /v1/events?limit=1 HTTP/1.1\r\nhost: ${c.host}\r\n\r\n`,
      ].join(""),
    )
    const statuses = [(await c.next()).status, (await c.next()).status, (await c.next()).status]
    expect(statuses).toEqual([200, 404, 401])
    c.socket.destroy()
  })

  test("a 384 MiB body is answered (405 on the read API, 413 on /mcp, declared or chunked) and never held; /mcp's sender is not left stalled", async () => {
    const size = 384 * 1024 * 1024
    const api = await postHuge(
      server,
      `POST /v1/incidents HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`,
      size,
    )
    expect(api.response.status).toBe(405)
    expect(api.response.body).toContain('"code":"method_not_allowed"')
    expect(api.growthMiB).toBeLessThan(128)
    const mcp = await postHuge(
      server,
      `POST /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${size}\r\n\r\n`,
      size,
    )
    expect(mcp.response.status).toBe(413)
    expect(mcp.response.body).toContain('"code":"payload_too_large"')
    expect(mcp.growthMiB).toBeLessThan(128)
    // The rest of that body is not read: the answer ends the connection rather than leave the sender stalled until
    // the idle limit.
    expect(mcp.response.headers.connection).toBe("close")
    expect(mcp.tookMs).toBeLessThan(IDLE_TIMEOUT_MS / 2)
    const chunked = await postHuge(
      server,
      `POST /mcp HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n`,
      size,
      true,
    )
    expect(chunked.response.status).toBe(413)
    expect(chunked.growthMiB).toBeLessThan(128)
    expect(chunked.response.headers.connection).toBe("close")
    expect(chunked.tookMs).toBeLessThan(IDLE_TIMEOUT_MS / 2)
    // The listener still answers afterwards.
    const after = await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${key}` } })
    expect(after.status).toBe(200)
  }, 60_000)

  test("a connection silent for the idle limit is closed, between requests or inside a request's headers", async () => {
    const idle = open(server.url)
    idle.socket.write(`GET /v1/incidents HTTP/1.1\r\nhost: ${idle.host}\r\n\r\n`)
    expect((await idle.next()).status).toBe(401)
    // Each connection's silence is timed from its own last byte. Bun's socket time-outs tick in steps of about 4 s,
    // so a 10 s limit ends between 8 and 12 s (8.07 s seen for the stalled one on a loaded machine); the bound
    // below still tells the limit from node:http's own 5 s.
    const idleSince = performance.now()
    const stalled = open(server.url)
    stalled.socket.write(`GET /v1/incidents HTTP/1.1\r\nhost: ${stalled.host}\r\n`)
    const stalledSince = performance.now()
    const [idleClosed, stalledClosed] = await Promise.all([idle.closedAt, stalled.closedAt])
    for (const silent of [idleClosed - idleSince, stalledClosed - stalledSince]) {
      expect(silent).toBeGreaterThan(IDLE_TIMEOUT_MS - 4_000)
      expect(silent).toBeLessThan(IDLE_TIMEOUT_MS + 6_000)
    }
  }, 30_000)
})

describe("the API listener at shutdown", () => {
  test("SIGTERM closes an idle keep-alive connection at once and the process exits 0 within the drain", async () => {
    const server = await startServerProcess()
    try {
      const c = open(server.url)
      c.socket.write(`GET /v1/incidents HTTP/1.1\r\nhost: ${c.host}\r\n\r\n`)
      const answer = await c.next()
      expect(answer.status).toBe(401)
      const signalled = performance.now()
      const exited = server.stop("SIGTERM")
      const closedAt = await c.closedAt
      expect(await exited).toBe(0)
      // Well within the idle limit: the connection was closed by the shutdown, not by its idleness.
      expect(closedAt - signalled).toBeLessThan(IDLE_TIMEOUT_MS / 2)
    } finally {
      await shutdown(server)
    }
  }, 60_000)
})
