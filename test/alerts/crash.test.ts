import { afterAll, beforeAll, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { cleanup, type RunningServerProcess, startServerProcess, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D17 "deliveries are stored before they are sent (nothing is lost on crash or restart) and a crash mid-send leads
 * to a resend, never a loss": SIGKILL the server while 200 deliveries are in flight, start it again, and every
 * delivery arrives at least once.
 */

const DELIVERIES = 200
let receiver: Receiver
let env: Record<string, string>
let first: RunningServerProcess | undefined
let second: RunningServerProcess | undefined
let db: TestDatabase | undefined

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  const caFile = join(tmpdir(), `dsvc-ca-crash-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  // Slow answers keep many sends in flight when the process dies.
  receiver.setDelay(150)
  env = await testEnv({
    WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
    WEBHOOK_CA_FILE: caFile,
    WEBHOOK_RETRY_SCHEDULE: "200ms,400ms,800ms",
    WEBHOOK_POLL_INTERVAL: "200 millis",
    WEBHOOK_LEASE: "3 seconds",
    WEBHOOK_CHANNEL_CONCURRENCY: "16",
  })
})

afterAll(async () => {
  await db?.close()
  await second?.stop()
  await first?.stop("SIGKILL")
  if (second) cleanup(second)
  receiver?.stop()
})

test("SIGKILL with 200 deliveries in flight: after a restart every one arrives (at least once), none is lost", async () => {
  first = await startServerProcess({ env })
  // The fixtures, made by the admin services as the operator; that connection is closed before the server dies.
  const setup = testDatabase(env)
  const { org, sensor, channel } = await (async () => {
    try {
      const org = await createOrg(setup, `Crash ${crypto.randomUUID().slice(0, 8)}`)
      return {
        org,
        sensor: await createSensor(setup, org.id, "web-01"),
        channel: await createChannel(setup, org.id, `${receiver.url}/crash`),
      }
    } finally {
      await setup.close()
    }
  })()

  // 200 source addresses: 200 incidents, 200 incident.created deliveries, all committed with their events.
  const events = Array.from({ length: DELIVERIES }, (_, i) =>
    nativeEvent({ sourceIp: `198.51.100.${i}`, sensorEventId: `crash-${i}` }),
  )
  const accepted = await ingest(first.ingestUrl, "events", sensor.token, events)
  expect(accepted.status).toBe(200)

  const deadline = Date.now() + 20_000
  while (receiver.requests.length < 20 && Date.now() < deadline) await Bun.sleep(10)
  expect(receiver.requests.length).toBeGreaterThanOrEqual(20)
  expect(receiver.requests.length).toBeLessThan(DELIVERIES)
  await first.stop("SIGKILL")
  const beforeRestart = receiver.requests.length

  second = await startServerProcess({ env })
  db = testDatabase(env)
  const database = db
  const rows = () =>
    database.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ id: string; status: string }>`select id, status from webhook_deliveries where org_id = ${org.id}`,
      ),
    )
  const stored = await rows()
  expect(stored).toHaveLength(DELIVERIES)

  const received = () => new Set(receiver.requests.map((r) => r.headers["x-service-webhook-id"]))
  const until = Date.now() + 60_000
  while (stored.some((row) => !received().has(row.id)) && Date.now() < until) await Bun.sleep(100)
  const missing = stored.filter((row) => !received().has(row.id))
  expect(missing).toEqual([])
  expect(receiver.requests.length).toBeGreaterThan(beforeRestart)

  // Every copy that arrived is genuine, and the outbox ends with all 200 delivered.
  for (const request of receiver.requests) {
    expect(verifyWebhook(request.body, request.headers["x-service-signature"] ?? "", channel.secret).ok).toBe(true)
  }
  let statuses: ReadonlyArray<{ status: string }> = []
  const settle = Date.now() + 10_000
  do {
    statuses = await rows()
    if (statuses.every((row) => row.status === "succeeded")) break
    await Bun.sleep(200)
  } while (Date.now() < settle)
  expect(statuses.filter((row) => row.status !== "succeeded")).toEqual([])
}, 120_000)
