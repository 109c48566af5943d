import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { makeSealer } from "../../src/domain/sealing.ts"
import { decodeSecretKey } from "../../src/platform/config.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import {
  channelDeliveries,
  closeIncident,
  createChannel,
  createOrg,
  createSensor,
  rotateChannel,
  setChannelEnabled,
} from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, TEST_SECRET_KEY, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D15–D18 end to end: the real server, its outbox and dispatcher, and a real local HTTPS receiver whose
 * certificate is made at test time and trusted through WEBHOOK_CA_FILE. Test servers may deliver to 127.0.0.1
 * only because WEBHOOK_ALLOW_PRIVATE says so (D18's test-only setting).
 */

const SCHEDULE_MS = [300, 600, 900]

let receiver: Receiver
let caFile: string
const webhookEnv = () => ({
  WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8,::1/128",
  WEBHOOK_CA_FILE: caFile,
  WEBHOOK_RETRY_SCHEDULE: SCHEDULE_MS.map((ms) => `${ms}ms`).join(","),
  WEBHOOK_POLL_INTERVAL: "200 millis",
})

interface Tenant {
  orgId: string
  sensorId: string
  token: string
}

/**
 * Each server's own connection to its database, through which the fixtures are made by the admin services as the
 * operator (in the test process, not by spawning the admin CLI); closed with the server's describe block.
 */
const databases = new Map<RunningServer, TestDatabase>()
const dbOf = (server: RunningServer) => {
  const found = databases.get(server)
  if (found) return found
  const db = testDatabase(server.env)
  databases.set(server, db)
  return db
}
const closeDb = async (server: RunningServer) => {
  await databases.get(server)?.close()
  databases.delete(server)
}

const tenant = async (server: RunningServer): Promise<Tenant> => {
  const org = await createOrg(dbOf(server), `Hooks ${crypto.randomUUID().slice(0, 8)}`)
  const sensor = await createSensor(dbOf(server), org.id, "web-01")
  return { orgId: org.id, sensorId: sensor.id, token: sensor.token }
}

const channel = async (server: RunningServer, orgId: string, path: string, minSeverity = "low", base?: string) =>
  createChannel(dbOf(server), orgId, `${base ?? receiver.url}${path}`, minSeverity)

/** The delivery log of a channel, as `webhook deliveries --json` shows it, read through the admin service. */
// biome-ignore lint/suspicious/noExplicitAny: read field by field, as the CLI's JSON was
const deliveriesOf = async (server: RunningServer, channelId: string, status?: string): Promise<any> =>
  channelDeliveries(dbOf(server), channelId, status)

const send = async (server: RunningServer, t: Tenant, events: ReadonlyArray<Record<string, unknown>>) => {
  const res = await ingest(
    server.ingestUrl,
    "events",
    t.token,
    events.map((e) => nativeEvent(e)),
  )
  expect(res.status).toBe(200)
  return res.body
}

/** Waits until `check` holds (deliveries are asynchronous), failing with `what` after `ms`. */
const eventually = async (what: string, check: () => boolean, ms = 20_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

const bodiesAt = (path: string) => receiver.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body))

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"] })
  caFile = join(tmpdir(), `dsvc-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
})
afterAll(() => receiver?.stop())

describe("webhook delivery: signed, retried, redelivered", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({ env: await testEnv(webhookEnv()) })
  })
  afterAll(async () => {
    await closeDb(server)
    await shutdown(server)
  })

  test("created, escalated and reopened arrive once per matching channel, signed, in the spec's shape; a channel below the minimum gets nothing until an escalation reaches it", async () => {
    const t = await tenant(server)
    const all = await channel(server, t.orgId, "/all", "low")
    const high = await channel(server, t.orgId, "/high", "high")
    const ip = "203.0.113.10"

    const created = await send(server, t, [
      { sourceIp: ip, severity: "medium" },
      { sourceIp: ip, severity: "medium" },
    ])
    const incidentId = created.results[0].incidentId as string
    await eventually("incident.created on /all", () => bodiesAt("/all").length === 1)
    await Bun.sleep(500)
    expect(bodiesAt("/high")).toHaveLength(0)

    await send(server, t, [{ sourceIp: ip, severity: "high", type: "ssh.login_success" }])
    await eventually(
      "incident.escalated on both",
      () => bodiesAt("/all").length === 2 && bodiesAt("/high").length === 1,
    )

    await closeIncident(dbOf(server), incidentId)
    await send(server, t, [{ sourceIp: ip, severity: "low", type: "portscan.syn", port: 22 }])
    await eventually("incident.reopened on both", () => bodiesAt("/all").length === 3 && bodiesAt("/high").length === 2)
    await Bun.sleep(500) // nothing more comes (the close itself is not announced)

    expect(bodiesAt("/all").map((b) => b.type)).toEqual(["incident.created", "incident.escalated", "incident.reopened"])
    expect(bodiesAt("/high").map((b) => b.type)).toEqual(["incident.escalated", "incident.reopened"])

    for (const [path, secret] of [
      ["/all", all.secret],
      ["/high", high.secret],
    ] as const) {
      for (const request of receiver.requests.filter((r) => r.path === path)) {
        // The spec's verification steps, on the raw bytes as received.
        const verified = verifyWebhook(request.body, request.headers["x-service-signature"] ?? "", secret)
        expect(verified.ok).toBe(true)
        expect(request.method).toBe("POST")
        expect(request.headers["content-type"]).toBe("application/json")
        expect(request.headers["x-service-delivery-attempt"]).toBe("1")
        expect(request.headers["user-agent"]).toMatch(/^DecoyIncidentService-Webhooks\//)
        const body = JSON.parse(request.body)
        expect(request.headers["x-service-webhook-id"]).toBe(body.id)
        expect(Object.keys(body)).toEqual(["id", "type", "createdAt", "incident"])
        expect(body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(body.incident.id).toBe(incidentId)
        expect(body.incident.sensor).toEqual({ id: t.sensorId, name: "web-01", profile: "linux-server" })
        expect(body.incident.firstSeenAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
        expect(body.incident).not.toHaveProperty("status")
        expect(body.incident).not.toHaveProperty("eventTypes")
        expect(body.incident).not.toHaveProperty("highConfidence")
        expect(body.incident).not.toHaveProperty("resolvedAt")
        for (const event of body.incident.events) {
          expect(event).not.toHaveProperty("sensor")
          expect(event).not.toHaveProperty("sourceIp")
        }
      }
    }
    const [first, escalated, reopened] = bodiesAt("/all")
    expect(first.incident.severity).toBe("medium")
    expect(first.incident.eventCount).toBe(2)
    expect(escalated.incident.severity).toBe("high")
    expect(escalated.incident.eventCount).toBe(3)
    expect(reopened.incident.eventCount).toBe(4)
    // Every delivery has its own id; a channel's copy of one transition is not another channel's.
    const ids = [...bodiesAt("/all"), ...bodiesAt("/high")].map((b) => b.id)
    expect(new Set(ids).size).toBe(ids.length)
  })

  test("a defect in one delivery is recorded as a failed attempt and never stops the pool", async () => {
    const t = await tenant(server)
    const healthy = await channel(server, t.orgId, "/healthy")
    const broken = await channel(server, t.orgId, "/broken")
    // An empty signing secret makes the signer throw: a real defect inside the send, reached without mocks.
    const db = testDatabase(server.env)
    try {
      const sealer = makeSealer(decodeSecretKey(TEST_SECRET_KEY) ?? new Uint8Array())
      await db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql`update webhook_channels set secret_enc = ${sealer.seal(new Uint8Array())} where id = ${broken.id}`,
        ),
      )
    } finally {
      await db.close()
    }
    await send(server, t, [{ sourceIp: "203.0.113.20" }])
    await eventually("the healthy channel's delivery", () => bodiesAt("/healthy").length === 1)
    let log: Array<{ status: string; log: Array<{ error: string | null }> }> = []
    const until = Date.now() + 10_000
    while (Date.now() < until) {
      log = await deliveriesOf(server, broken.id)
      if ((log[0]?.log.length ?? 0) >= 1) break
      await Bun.sleep(200)
    }
    expect(log[0]?.log[0]?.error).toBe("internal error while sending")
    expect(receiver.requests.filter((r) => r.path === "/broken")).toHaveLength(0)
    // The pool goes on: later deliveries still arrive.
    await send(server, t, [{ sourceIp: "203.0.113.21" }])
    await eventually("the next delivery", () => bodiesAt("/healthy").length === 2)
    expect(
      verifyWebhook(
        receiver.requests.filter((r) => r.path === "/healthy")[1]?.body ?? "",
        receiver.requests.filter((r) => r.path === "/healthy")[1]?.headers["x-service-signature"] ?? "",
        healthy.secret,
      ).ok,
    ).toBe(true)
  })

  test("webhook incident events: the 20 most recent, oldest first, with eventCount the total", async () => {
    const t = await tenant(server)
    await channel(server, t.orgId, "/many")
    const ip = "203.0.113.11"
    const base = Date.now() - 60_000
    await send(
      server,
      t,
      Array.from({ length: 30 }, (_, i) => ({
        sourceIp: ip,
        time: new Date(base + i * 1000).toISOString(),
        sourcePort: 1000 + i,
      })),
    )
    await eventually("incident.created on /many", () => bodiesAt("/many").length === 1)
    const [body] = bodiesAt("/many")
    expect(body.incident.eventCount).toBe(30)
    expect(body.incident.events.map((e: { sourcePort: number }) => e.sourcePort)).toEqual(
      Array.from({ length: 20 }, (_, i) => 1010 + i),
    )
  })

  test("a receiver answering 500 is retried on the schedule, then dead-lettered; redeliver sends it again", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/status/500")
    await send(server, t, [{ sourceIp: "203.0.113.12" }])
    const attempts = SCHEDULE_MS.length + 1
    await eventually(
      "all attempts",
      () => receiver.requests.filter((r) => r.path === "/status/500").length === attempts,
    )
    const seen = receiver.requests.filter((r) => r.path === "/status/500")
    expect(seen.map((r) => r.headers["x-service-delivery-attempt"])).toEqual(["1", "2", "3", "4"])
    // The same delivery every time: same id, same bytes; a fresh signature per attempt.
    expect(new Set(seen.map((r) => r.headers["x-service-webhook-id"])).size).toBe(1)
    expect(new Set(seen.map((r) => r.body)).size).toBe(1)
    for (let i = 1; i < seen.length; i++) {
      const gap = (seen[i]?.at ?? 0) - (seen[i - 1]?.at ?? 0)
      expect(gap).toBeGreaterThanOrEqual((SCHEDULE_MS[i - 1] ?? 0) - 20)
    }
    await Bun.sleep(300) // the last attempt's outcome is written after the receiver answered
    const log: Array<{
      id: string
      status: string
      attempts: number
      lastStatus: number
      log: Array<{ status: number }>
    }> = await deliveriesOf(server, ch.id, "dead")
    expect(log).toHaveLength(1)
    expect(log[0]).toMatchObject({ status: "dead", attempts: 4, lastStatus: 500 })
    expect(log[0]?.log.map((a) => a.status)).toEqual([500, 500, 500, 500])

    // The receiver is fixed; an admin re-drives the dead delivery.
    receiver.setStatus("/status/500", 200)
    const deliveryId = log[0]?.id ?? ""
    const redriven = await adminJson(server.env, ["webhook", "redeliver", deliveryId])
    expect(redriven).toEqual({ id: deliveryId, status: "pending" })
    await eventually("the redelivery", () => receiver.requests.filter((r) => r.path === "/status/500").length === 5)
    const last = receiver.requests.filter((r) => r.path === "/status/500").at(-1)
    expect(last?.headers["x-service-webhook-id"]).toBe(deliveryId)
    expect(last?.headers["x-service-delivery-attempt"]).toBe("5")
    expect(verifyWebhook(last?.body ?? "", last?.headers["x-service-signature"] ?? "", ch.secret).ok).toBe(true)
    await Bun.sleep(300)
    const after = await deliveriesOf(server, ch.id)
    expect(after[0]).toMatchObject({ id: deliveryId, status: "succeeded", attempts: 5 })
  })

  test("a 410 stops retries at once", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/status/410")
    await send(server, t, [{ sourceIp: "203.0.113.13" }])
    await eventually("the 410", () => receiver.requests.some((r) => r.path === "/status/410"))
    await Bun.sleep(SCHEDULE_MS.reduce((a, b) => a + b, 0) + 500)
    expect(receiver.requests.filter((r) => r.path === "/status/410")).toHaveLength(1)
    const log = await deliveriesOf(server, ch.id)
    expect(log[0]).toMatchObject({ status: "dead", attempts: 1, lastStatus: 410 })
  })

  test("a redirect is a failure and is not followed; a closed connection is a failure; both are retried", async () => {
    const t = await tenant(server)
    const redirect = await channel(server, t.orgId, "/redirect")
    const closing = await channel(server, t.orgId, "/close", "low", receiver.closeUrl)
    await send(server, t, [{ sourceIp: "203.0.113.14" }])
    const attempts = SCHEDULE_MS.length + 1
    await eventually(
      "all redirect attempts",
      () => receiver.requests.filter((r) => r.path === "/redirect").length === attempts,
    )
    await eventually("all attempts on the closing receiver", () => receiver.closed("/close") === attempts)
    await Bun.sleep(300)
    expect(receiver.requests.filter((r) => r.path === "/redirect-target")).toHaveLength(0)
    const redirectLog = await deliveriesOf(server, redirect.id)
    expect(redirectLog[0]).toMatchObject({ status: "dead", attempts, lastStatus: 302 })
    const closeLog = await deliveriesOf(server, closing.id)
    expect(closeLog[0]).toMatchObject({ status: "dead", attempts, lastStatus: null })
    expect(closeLog[0].lastError).toBeTruthy()
  })

  test("rotation with a grace period: the new secret signs first, the old one second; both verify", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/rotate")
    const rotated = await rotateChannel(dbOf(server), ch.id, "1h")
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)
    expect(rotated.secret).not.toBe(ch.secret)
    await send(server, t, [{ sourceIp: "203.0.113.15" }])
    await eventually("the delivery", () => receiver.requests.some((r) => r.path === "/rotate"))
    const request = receiver.requests.find((r) => r.path === "/rotate")
    const header = request?.headers["x-service-signature"] ?? ""
    expect(header.match(/v1=/g)).toHaveLength(2)
    expect(verifyWebhook(request?.body ?? "", header, rotated.secret).ok).toBe(true)
    expect(verifyWebhook(request?.body ?? "", header, ch.secret).ok).toBe(true)

    // Without a grace period only the new secret signs.
    const again = await rotateChannel(dbOf(server), ch.id)
    await send(server, t, [{ sourceIp: "203.0.113.16" }])
    await eventually("the second delivery", () => receiver.requests.filter((r) => r.path === "/rotate").length === 2)
    const second = receiver.requests.filter((r) => r.path === "/rotate")[1]
    expect(second?.headers["x-service-signature"]?.match(/v1=/g)).toHaveLength(1)
    expect(verifyWebhook(second?.body ?? "", second?.headers["x-service-signature"] ?? "", again.secret).ok).toBe(true)
    expect(verifyWebhook(second?.body ?? "", second?.headers["x-service-signature"] ?? "", rotated.secret).ok).toBe(
      false,
    )
  })

  test("a disabled channel gets nothing; enabled again it gets what comes next; list never shows a secret", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/toggle")
    await setChannelEnabled(dbOf(server), ch.id, false)
    await send(server, t, [{ sourceIp: "203.0.113.17" }])
    await Bun.sleep(1000)
    expect(receiver.requests.filter((r) => r.path === "/toggle")).toHaveLength(0)
    await setChannelEnabled(dbOf(server), ch.id, true)
    await send(server, t, [{ sourceIp: "203.0.113.18" }])
    await eventually("the delivery after enabling", () => receiver.requests.some((r) => r.path === "/toggle"))
    const listed = await admin(server.env, ["webhook", "list", "--org", t.orgId, "--json"])
    expect(listed.code).toBe(0)
    expect(listed.stdout).not.toContain(ch.secret)
    expect(listed.stdout).not.toContain("whsec_")
    expect(JSON.parse(listed.stdout)[0]).toMatchObject({ id: ch.id, minSeverity: "low", enabled: true })
  })

  test("disabling a channel parks its waiting deliveries (no claim walks past them, none is sent); enabling sends them", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/parked")
    receiver.setStatus("/parked", 503)
    await send(server, t, [{ sourceIp: "203.0.113.19" }])
    await eventually("a first, failed attempt", () => receiver.requests.some((r) => r.path === "/parked"))
    await setChannelEnabled(dbOf(server), ch.id, false)
    const db = testDatabase(server.env)
    const waiting = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ channelEnabled: boolean }>`
          select channel_enabled from webhook_deliveries
          where channel_id = ${ch.id} and status in ('pending', 'failed')`,
      ),
    )
    await db.close()
    expect(waiting.map((d) => d.channelEnabled)).toEqual([false])
    await Bun.sleep(300)
    const attemptsWhenDisabled = receiver.requests.filter((r) => r.path === "/parked").length
    receiver.setStatus("/parked", 202)
    // Past the whole retry schedule: a claimable delivery would have been retried by now.
    await Bun.sleep(SCHEDULE_MS.reduce((a, b) => a + b, 0) + 600)
    expect(receiver.requests.filter((r) => r.path === "/parked")).toHaveLength(attemptsWhenDisabled)
    await setChannelEnabled(dbOf(server), ch.id, true)
    await eventually(
      "the parked delivery, sent once enabled",
      () => receiver.requests.filter((r) => r.path === "/parked").length > attemptsWhenDisabled,
    )
    const deliveries = await deliveriesOf(server, ch.id)
    expect(JSON.stringify(deliveries)).toContain("succeeded")
  })

  test("`webhook test` sends webhook.test at once through the same sender and prints the receiver's status", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/test")
    const result = await adminJson(server.env, ["webhook", "test", ch.id])
    expect(result).toMatchObject({ ok: true, status: 202, error: null })
    expect(result.durationMs).toBeGreaterThanOrEqual(0)
    const request = receiver.requests.find((r) => r.path === "/test")
    const body = JSON.parse(request?.body ?? "{}")
    expect(body.type).toBe("webhook.test")
    expect(body.id).toBe(result.deliveryId)
    expect(verifyWebhook(request?.body ?? "", request?.headers["x-service-signature"] ?? "", ch.secret).ok).toBe(true)

    const failing = await channel(server, t.orgId, "/status/503")
    const refused = await admin(server.env, ["webhook", "test", failing.id])
    expect(refused.code).toBe(1)
    expect(refused.stdout).toMatch(/failed: HTTP 503/)
  })

  test("`webhook create` refuses http://, credentials and non-public addresses with the reason", async () => {
    const t = await tenant(server)
    const plain = { ...server.env, WEBHOOK_ALLOW_PRIVATE: "" }
    for (const url of [
      "http://example.com/hook",
      "https://user:pass@example.com/hook",
      "https://127.0.0.1/hook",
      "https://10.0.0.1/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://100.64.0.1/hook",
      "https://0x7f000001/hook",
      "https://localhost/hook",
    ]) {
      const result = await admin(plain, ["webhook", "create", "--org", t.orgId, "--url", url])
      expect({ url, code: result.code }).toEqual({ url, code: 1 })
      expect(result.stderr).toMatch(/webhook URL refused: .+/)
    }
    const badSeverity = await admin(server.env, [
      "webhook",
      "create",
      "--org",
      t.orgId,
      "--url",
      `${receiver.url}/x`,
      "--min-severity",
      "urgent",
    ])
    expect(badSeverity.code).toBe(1)
    expect(badSeverity.stderr).toMatch(/--min-severity/)
  })
})

describe("time-out (the real 5 s)", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({ env: await testEnv({ ...webhookEnv(), WEBHOOK_RETRY_SCHEDULE: "100ms" }) })
  })
  afterAll(async () => {
    await closeDb(server)
    await shutdown(server)
  })

  test("a receiver slower than 5 s fails at 5 s and is retried, then dead", async () => {
    const t = await tenant(server)
    const ch = await channel(server, t.orgId, "/slow")
    await send(server, t, [{ sourceIp: "203.0.113.19" }])
    const deadline = Date.now() + 30_000
    let log: Array<{ status: string; attempts: number; log: Array<{ durationMs: number; error: string | null }> }> = []
    while (Date.now() < deadline) {
      log = await deliveriesOf(server, ch.id)
      if (log[0]?.status === "dead") break
      await Bun.sleep(500)
    }
    expect(log[0]).toMatchObject({ status: "dead", attempts: 2 })
    for (const attempt of log[0]?.log ?? []) {
      expect(attempt.durationMs).toBeGreaterThanOrEqual(4900)
      expect(attempt.durationMs).toBeLessThan(6500)
      expect(attempt.error).toMatch(/timed out/)
    }
  }, 60_000)
})
