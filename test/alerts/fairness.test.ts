import { afterAll, beforeAll, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import type { Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, testEnv, usingPostgres } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D17 and the webhook latency target: a channel whose receiver accepts TLS and never answers holds only its own
 * slots (WEBHOOK_CHANNEL_CONCURRENCY, 4) while a backlog of its due deliveries waits; a healthy channel's new
 * deliveries keep arriving promptly, including right after the dead channel's sends time out and its backlog is
 * claimed again. The poll is a minute on PostgreSQL, so only the NOTIFY wake-up and the claim rounds count.
 */

let receiver: Receiver
let dead: TlsServer
let deadPort = 0
let accepted = 0
let open = 0
let maxOpen = 0
const sockets = new Set<Socket>()
let server: RunningServer
let db: TestDatabase
let caFile: string

beforeAll(async () => {
  const certs = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
  caFile = join(tmpdir(), `dsvc-fair-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  dead = createTlsServer({ cert: certs.cert, key: certs.key }, (socket) => {
    accepted++
    open++
    maxOpen = Math.max(maxOpen, open)
    sockets.add(socket)
    socket.on("data", () => {})
    socket.on("error", () => {})
    socket.on("close", () => {
      open--
      sockets.delete(socket)
    })
  })
  await new Promise<void>((resolve) => dead.listen(0, "127.0.0.1", resolve))
  const address = dead.address()
  deadPort = typeof address === "object" && address !== null ? address.port : 0
  server = await startServer({
    env: await testEnv({
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      WEBHOOK_CA_FILE: caFile,
      WEBHOOK_TIMEOUT: "2 seconds",
      // A failed attempt is not due again during the test: the dead channel's backlog is what was queued.
      WEBHOOK_RETRY_SCHEDULE: "1h",
      // The embedded database may not notify; there the poll stands in for NOTIFY.
      WEBHOOK_POLL_INTERVAL: usingPostgres() ? "60 seconds" : "200 millis",
    }),
  })
  db = testDatabase(server.env)
})

afterAll(async () => {
  await db?.close()
  await shutdown(server)
  receiver?.stop()
  for (const s of sockets) s.destroy()
  dead?.close()
})

/** An organization with a sensor and a webhook channel, made by the admin services as the operator. */
const tenant = async (name: string, url: string) => {
  const org = await createOrg(db, `${name} ${crypto.randomUUID().slice(0, 8)}`)
  const sensor = await createSensor(db, org.id, "s")
  await createChannel(db, org.id, url)
  return sensor.token as string
}

test("a receiver that never answers holds only its channel's slots; the healthy channel stays prompt", async () => {
  const deadToken = await tenant("Dead", `https://127.0.0.1:${deadPort}/never`)
  const liveToken = await tenant("Live", `${receiver.url}/fair-live`)

  // 12 new incidents: 12 deliveries to the dead channel, 4 sent at a time, 8 due and waiting.
  const backlog = await ingest(
    server.ingestUrl,
    "events",
    deadToken,
    Array.from({ length: 12 }, (_, i) => nativeEvent({ sourceIp: `198.51.100.${i + 1}` })),
  )
  expect(backlog.status).toBe(200)

  // Healthy deliveries every 250 ms for 5 s: across two rounds of the dead channel's 2 s time-outs.
  const latencies: Array<number> = []
  const started = Date.now()
  for (let i = 0; i < 20; i++) {
    const before = receiver.requests.filter((r) => r.path === "/fair-live").length
    const res = await ingest(server.ingestUrl, "events", liveToken, [nativeEvent({ sourceIp: `192.0.2.${i + 1}` })])
    expect(res.status).toBe(200)
    const answered = Date.now()
    const deadline = answered + 3_000
    let arrived: number | undefined
    while (arrived === undefined && Date.now() < deadline) {
      const live = receiver.requests.filter((r) => r.path === "/fair-live")
      if (live.length > before) arrived = live[before]?.at
      else await Bun.sleep(10)
    }
    latencies.push(arrived === undefined ? Number.POSITIVE_INFINITY : arrived - answered)
    await Bun.sleep(Math.max(0, started + (i + 1) * 250 - Date.now()))
  }

  expect(latencies.every(Number.isFinite)).toBe(true)
  // Generous for a loaded 2-core machine; without NOTIFY and a prompt claim round this is the poll (a minute).
  expect(Math.max(...latencies)).toBeLessThan(usingPostgres() ? 1_000 : 1_500)
  // Never more than the channel's bound at once, and its backlog was being worked through (a second round).
  expect(maxOpen).toBeLessThanOrEqual(4)
  expect(accepted).toBeGreaterThan(4)
}, 60_000)
