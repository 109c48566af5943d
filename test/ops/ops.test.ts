import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { testDatabase } from "../support/db.ts"
import { createChannel, createKey, createOrg, createSensor, withFixtures } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { prebuilt } from "../support/prebuilt.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import {
  type RunningServer,
  shutdown,
  startServer,
  startServerProcess,
  TEST_SECRET_KEY,
  testEnv,
} from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/** The operations listener (OPS_PORT): health, readiness, Prometheus metrics; logs; graceful shutdown. */

describe("operations listener", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(() => shutdown(server))

  test("/healthz and /readyz answer 200 on the ops port, and neither they nor /metrics exist on the public port", async () => {
    const health = await fetch(`${server.opsUrl}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: "ok" })
    const ready = await fetch(`${server.opsUrl}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: "ready" })
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const res = await fetch(`${server.url}${path}`)
      await res.arrayBuffer()
      expect({ path, status: res.status }).toEqual({ path, status: 404 })
    }
    expect(server.opsUrl).not.toBe(server.url)
  })

  test("/metrics is Prometheus text with requests by route and status, latency histograms, events, transitions and the queue", async () => {
    // Made by the admin services as the operator; `sensor create` without --profile makes a generic sensor.
    const sensor = await withFixtures(server.env, async (db) =>
      createSensor(db, (await createOrg(db, `Metrics ${crypto.randomUUID().slice(0, 8)}`)).id, "web-01", "generic"),
    )
    await (await fetch(`${server.url}/v1/incidents`)).arrayBuffer() // 401
    await (await fetch(`${server.url}/v1/events/evt_x`, { headers: { authorization: "Bearer nope" } })).arrayBuffer()
    const sent = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "203.0.113.90" }),
      nativeEvent({ sourceIp: "203.0.113.90", type: "no.such_type" }),
    ])
    expect(sent.body).toMatchObject({ accepted: 1, rejected: 1 })

    const res = await fetch(`${server.opsUrl}/metrics`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    const text = await res.text()
    const value = (sample: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${sample} `))
      return line === undefined ? undefined : Number(line.slice(sample.length + 1))
    }
    expect(text).toContain("# TYPE http_requests_total counter")
    expect(value('http_requests_total{route="/v1/incidents",status="401"}')).toBeGreaterThanOrEqual(1)
    expect(value('http_requests_total{route="/v1/events/:id",status="401"}')).toBeGreaterThanOrEqual(1)
    expect(text).toContain("# TYPE http_request_duration_seconds histogram")
    expect(value('http_request_duration_seconds_bucket{route="/v1/incidents",le="+Inf"}')).toBeGreaterThanOrEqual(1)
    expect(value('http_request_duration_seconds_count{route="/v1/incidents"}')).toBeGreaterThanOrEqual(1)
    expect(value('ingest_events_total{route="events",outcome="accepted"}')).toBeGreaterThanOrEqual(1)
    expect(value('ingest_events_total{route="events",outcome="rejected"}')).toBeGreaterThanOrEqual(1)
    expect(value('incident_transitions_total{kind="created"}')).toBeGreaterThanOrEqual(1)
    // The queue as the database holds it (on PostgreSQL other test files share the database and may leave
    // deliveries waiting): the gauge says the same.
    const db = testDatabase(server.env)
    const waiting = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where status in ('pending', 'failed')`,
      ),
    )
    await db.close()
    expect(value("webhook_queue_depth")).toBe(waiting[0]?.n ?? -1)
    if (waiting[0]?.n === 0) expect(value("webhook_oldest_due_age_seconds")).toBe(0)
    expect(value("ratelimit_store_errors_total")).toBe(0)
    // No raw path, key or query string ever becomes a label.
    expect(text).not.toContain("evt_x")
    expect(text).not.toContain("nope")
  })

  test("one start-up line carries the effective configuration, with secrets redacted", () => {
    const line = server.logs.find((l) => l.includes('"message":"configuration"'))
    expect(line).toBeDefined()
    const entry = JSON.parse(line ?? "{}")
    expect(entry.annotations).toMatchObject({ secretKey: "<redacted>", opsPort: 0, rateLimit: { limit: 1_000_000 } })
    expect(server.logs.join("\n")).not.toContain(TEST_SECRET_KEY)
  })
})

describe("logging settings", () => {
  test("LOG_LEVEL=warning drops the info lines (the access log among them)", async () => {
    // The listening lines are info lines too, so this server is started on ports picked here.
    const free = () => {
      const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
      const port = probe.port ?? 0
      probe.stop(true)
      return String(port)
    }
    const base = await testEnv({ LOG_LEVEL: "warning" })
    // A port picked here can be taken by another test file's server before this one binds it: the service then
    // exits at once (port in use), and it is started again on other ports.
    const start = async () => {
      for (let attempt = 1; ; attempt++) {
        const env: Record<string, string> = { ...base, PORT: free(), INGEST_PORT: free(), OPS_PORT: free() }
        // The bundle, as the other servers of the tests run: the sources took over 30 s to start on a loaded machine.
        const child = Bun.spawn(["bun", prebuilt().main], {
          cwd: join(import.meta.dir, "..", ".."),
          env,
          stdout: "pipe",
          stderr: "pipe",
        })
        const deadline = Date.now() + 60_000
        let ready = false
        while (!ready && child.exitCode === null && Date.now() < deadline) {
          ready = await fetch(`http://127.0.0.1:${env.OPS_PORT}/readyz`)
            .then((r) => r.status === 200)
            .catch(() => false)
          if (!ready) await Bun.sleep(200)
        }
        if (ready || attempt === 3 || child.exitCode === null) return { env, child, ready }
        const said = `${await new Response(child.stderr).text()}${await new Response(child.stdout).text()}`
        if (!said.includes("in use")) throw new Error(`the service exited at start: ${said.slice(0, 500)}`)
      }
    }
    const { env, child, ready } = await start()
    try {
      if (!ready) {
        child.kill("SIGKILL")
        const said = `${await new Response(child.stderr).text()}${await new Response(child.stdout).text()}`
        throw new Error(`the service was not ready in 60 s: ${said.slice(-1500)}`)
      }
      const res = await fetch(`http://127.0.0.1:${env.PORT}/v1/incidents`)
      expect(res.status).toBe(401)
      child.kill("SIGTERM")
      await child.exited
      const out = `${await new Response(child.stdout).text()}${await new Response(child.stderr).text()}`
      expect(out).not.toContain('"message":"request"')
      expect(out).not.toContain('"logLevel":"INFO"')
    } finally {
      child.kill("SIGKILL")
      if (env.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true })
    }
  }, 150_000)

  test("a bad LOG_LEVEL stops start-up with a message naming it", async () => {
    const child = Bun.spawn(["bun", "src/main.ts"], {
      cwd: join(import.meta.dir, "..", ".."),
      env: await testEnv({ LOG_LEVEL: "loud" }),
      stdout: "pipe",
      stderr: "pipe",
    })
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    expect(code).not.toBe(0)
    expect(`${out}${err}`).toContain("LOG_LEVEL")
  })
})

describe("graceful shutdown", () => {
  let receiver: Receiver
  let caFile: string
  beforeAll(async () => {
    const certs = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
    caFile = join(tmpdir(), `dsvc-ops-ca-${process.pid}-${Date.now()}.pem`)
    writeFileSync(caFile, certs.caCert)
    receiver = await startReceiver(certs)
  })
  afterAll(() => receiver?.stop())

  test("SIGTERM: /readyz turns 503 at once, the in-flight delivery finishes, the process exits 0 within 10 s", async () => {
    const server = await startServerProcess({
      env: await testEnv({
        WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
        WEBHOOK_CA_FILE: caFile,
        WEBHOOK_POLL_INTERVAL: "100 millis",
      }),
    })
    try {
      // Made by the admin services as the operator, on a connection closed before the server is stopped.
      const sensor = await withFixtures(server.env, async (db) => {
        const org = await createOrg(db, `Shutdown ${crypto.randomUUID().slice(0, 8)}`)
        const sensor = await createSensor(db, org.id, "web-01", "generic")
        await createChannel(db, org.id, `${receiver.url}/drain`)
        return sensor
      })
      receiver.setDelay(3_000)
      await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "203.0.113.91" })])
      const until = Date.now() + 10_000
      while (!receiver.requests.some((r) => r.path === "/drain") && Date.now() < until) await Bun.sleep(20)
      expect(receiver.requests.some((r) => r.path === "/drain")).toBe(true)

      const started = Date.now()
      const exited = server.stop("SIGTERM")
      await Bun.sleep(300)
      const ready = await fetch(`${server.opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) })
      expect(ready.status).toBe(503)
      expect(((await ready.json()) as { code: string }).code).toBe("not_ready")
      const code = await exited
      expect(code).toBe(0)
      expect(Date.now() - started).toBeLessThan(10_000)
      // The delivery that was in flight finished and was recorded before the exit.
      const log = server.logs.filter((l) => l.includes('"message":"webhook delivered"'))
      expect(log).toHaveLength(1)
    } finally {
      receiver.setDelay(0)
      await shutdown(server)
    }
  }, 60_000)

  /**
   * A request whose body is still arriving when SIGTERM comes: the handler already runs it (Bun called it on the
   * headers), so it is in flight. It is sent over a raw socket in two parts around the signal.
   */
  const inFlightAcrossSigterm = (base: string, head: string, body: string) => {
    const url = new URL(base)
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    const bytes = Buffer.from(body)
    const half = Math.floor(bytes.length / 2)
    let data = ""
    const answered = new Promise<{ status: number; body: string }>((resolve) => {
      socket.on("data", (chunk) => {
        data += chunk.toString("latin1")
      })
      const done = () => {
        const status = Number(data.split(" ")[1] ?? 0)
        resolve({ status, body: data.slice(data.indexOf("\r\n\r\n") + 4) })
      }
      socket.on("end", done)
      socket.on("error", done)
    })
    socket.write(`${head}\r\nhost: ${url.host}\r\ncontent-length: ${bytes.length}\r\nconnection: close\r\n\r\n`)
    socket.write(bytes.subarray(0, half))
    return { rest: () => socket.write(bytes.subarray(half)), answered }
  }

  test("SIGTERM: a request in flight on the ingest, API (/mcp) and console listeners still gets its own answer", async () => {
    const server = await startServerProcess()
    try {
      // Made by the admin services as the operator, on a connection closed before the server is stopped.
      const { sensor, key } = await withFixtures(server.env, async (db) => {
        const org = await createOrg(db, `Drain ${crypto.randomUUID().slice(0, 8)}`)
        return {
          sensor: await createSensor(db, org.id, "web-01", "generic"),
          key: await createKey(db, org.id, "incidents:read,events:read"),
        }
      })
      const event = JSON.stringify([nativeEvent({ sourceIp: "203.0.113.92" })])
      const mcp = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "drain", version: "1" } },
      })
      const requests = [
        inFlightAcrossSigterm(
          server.ingestUrl,
          `POST /ingest/v1/events HTTP/1.1\r\ncontent-type: application/json\r\nauthorization: Bearer ${sensor.token}`,
          event,
        ),
        inFlightAcrossSigterm(
          server.url,
          `POST /mcp HTTP/1.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nauthorization: Bearer ${key.key}`,
          mcp,
        ),
        inFlightAcrossSigterm(
          server.consoleUrl,
          "POST /sign-in HTTP/1.1\r\ncontent-type: application/x-www-form-urlencoded",
          "email=nobody%40example.com&password=wrong",
        ),
      ]
      // Each request's head and half its body reach the server before SIGTERM: on a machine loaded by other test
      // files 300 ms was sometimes not enough, and the ingest request arrived after the listener had closed.
      await Bun.sleep(1500)
      const exited = server.stop("SIGTERM")
      await Bun.sleep(500)
      for (const request of requests) request.rest()
      const [ingested, initialized, signIn] = await Promise.all(requests.map((r) => r.answered))
      expect(await exited).toBe(0)
      expect(ingested?.status).toBe(200)
      expect(JSON.parse(ingested?.body ?? "{}")).toMatchObject({ accepted: 1 })
      expect(initialized?.status).toBe(200)
      expect(initialized?.body).toContain('"protocolVersion"')
      // The console's own refusal of a form without its CSRF token, never a bare 404 or a 500.
      expect(signIn?.status).toBe(403)
      expect(server.logs.some((l) => l.includes('"message":"waiting for requests in flight"'))).toBe(true)
    } finally {
      await shutdown(server)
    }
  }, 60_000)
})
