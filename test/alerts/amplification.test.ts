import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { maskSecret } from "../../src/domain/attackerInput.ts"
import { CUT_MEMBER } from "../../src/domain/sanitize.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { testDatabase } from "../support/db.ts"
import { createChannel, createKey, createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * Issue "Hardening 2" item 4, end to end: a 1,044,633-byte post of short password-like members ({"pwd":"1"},
 * 1,440 per member) through the real ingest route used to store 7.8 M characters (masking makes each member about
 * 7 times larger), send a 7.2 MB incident.created and a 28.7 MB escalation, and answer 28.7 MB for the incident.
 * Now the stored attackerInput is bounded with a visible cut, every webhook is under 256 KiB and delivered to the
 * real local HTTPS receiver, and the API's answers are bounded; rows stored before the bound read back bounded too.
 */

const ISSUE_BODY_BYTES = 1_044_633
const KIB_256 = 256 * 1024

/** The issue's post: one event whose attackerInput holds 60 members of 24 × 60 `{"pwd":"1"}`, padded to its size. */
const issueBody = (overrides: Record<string, unknown>): string => {
  const attackerInput: Record<string, unknown> = { username: "root" }
  for (let k = 0; k < 60; k++) {
    attackerInput[`k${k}`] = Array.from({ length: 24 }, () => Array.from({ length: 60 }, () => ({ pwd: "1" })))
  }
  attackerInput.pad = ""
  const event = nativeEvent({ sourceIp: "203.0.113.77", severity: "medium", attackerInput, ...overrides })
  const text = JSON.stringify([event])
  const pad = ISSUE_BODY_BYTES - Buffer.byteLength(text)
  expect(pad).toBeGreaterThanOrEqual(0)
  attackerInput.pad = "x".repeat(pad)
  const body = JSON.stringify([event])
  expect(Buffer.byteLength(body)).toBe(ISSUE_BODY_BYTES)
  return body
}

const countMasked = (value: unknown): number => {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + countMasked(v), 0)
  if (typeof value !== "object" || value === null) return 0
  if (Object.keys(value).join() === "masked,length,fingerprint") return 1
  return Object.values(value).reduce((n: number, v) => n + countMasked(v), 0)
}

const eventually = async (what: string, check: () => boolean, ms = 60_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(100)
  }
}

let receiver: Receiver
let caFile: string
let server: RunningServer

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"] })
  caFile = join(tmpdir(), `dsvc-ca-amp-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  server = await startServer({
    env: await testEnv({
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8,::1/128",
      WEBHOOK_CA_FILE: caFile,
      WEBHOOK_RETRY_SCHEDULE: "300ms,600ms",
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
})
afterAll(async () => {
  await shutdown(server)
  receiver?.stop()
})

const api = async (path: string, key: string) => {
  const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
  const text = await response.text()
  expect(response.status).toBe(200)
  // biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
  return { bytes: Buffer.byteLength(text), body: JSON.parse(text) as any }
}

describe("Hardening 2 item 4: masking no longer amplifies what a sensor sends", () => {
  test("the 1,044,633-byte post stores a bounded attackerInput with a visible cut; its webhooks are each under 256 KiB, signed and delivered; the API's answers are bounded, also for rows stored before", async () => {
    // The fixtures, made by the admin services as the operator.
    const setup = testDatabase(server.env)
    const { sensor, key, hook } = await (async () => {
      try {
        const org = await createOrg(setup, `Amplified ${crypto.randomUUID().slice(0, 8)}`)
        return {
          sensor: await createSensor(setup, org.id, "web-01"),
          key: await createKey(setup, org.id, "incidents:read,events:read"),
          hook: await createChannel(setup, org.id, `${receiver.url}/amplified`, "low"),
        }
      } finally {
        await setup.close()
      }
    })()

    // 19 posts make the incident (incident.created), the 20th raises it to high (incident.escalated with 20 events).
    const eventIds: Array<string> = []
    let incidentId = ""
    for (let i = 0; i < 20; i++) {
      const res = await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        issueBody(i === 19 ? { severity: "high" } : {}),
        true,
      )
      expect(res.status).toBe(200)
      expect(res.body.accepted).toBe(1)
      eventIds.push(res.body.results[0].id)
      incidentId = res.body.results[0].incidentId
    }

    // Stored (read back as stored through the API): at most 16 KiB, at most 64 masked members, the cut mark.
    const event = await api(`/v1/events/${eventIds[0]}`, key.key)
    const input = event.body.attackerInput
    expect(Buffer.byteLength(JSON.stringify(input))).toBeLessThanOrEqual(16 * 1024)
    expect(countMasked(input)).toBeGreaterThan(0)
    expect(countMasked(input)).toBeLessThanOrEqual(64)
    expect(input.username).toBe("root")
    expect(input[CUT_MEMBER]).toMatch(/^cut: \d+ more members, \d+ bytes$/)
    expect(event.bytes).toBeLessThan(20 * 1024)

    // Webhooks: created and escalated, each under 256 KiB, signed with the channel's secret, delivered (202).
    const delivered = () => receiver.requests.filter((r) => r.path === "/amplified")
    await eventually("both webhooks", () => delivered().length >= 2)
    await Bun.sleep(1000)
    const requests = delivered()
    expect(requests.map((r) => JSON.parse(r.body).type).sort()).toEqual(["incident.created", "incident.escalated"])
    for (const request of requests) {
      expect(Buffer.byteLength(request.body)).toBeLessThan(KIB_256)
      expect(verifyWebhook(request.body, request.headers["x-service-signature"], hook.secret).ok).toBe(true)
      const body = JSON.parse(request.body)
      expect(body.truncated).toBe(true)
      for (const e of body.incident.events) {
        expect(e.attackerInput[CUT_MEMBER]).toMatch(/^cut: /)
        expect(countMasked(e.attackerInput)).toBeLessThanOrEqual(16)
      }
    }
    const escalated = requests.find((r) => JSON.parse(r.body).type === "incident.escalated")
    expect(JSON.parse(escalated?.body ?? "{}").incident.events).toHaveLength(20)
    // Delivered at the first attempt: no retry followed.
    expect(requests.every((r) => r.headers["x-service-delivery-attempt"] === "1")).toBe(true)

    // The API: the single incident and the event pages are bounded.
    const incident = await api(`/v1/incidents/${incidentId}`, key.key)
    expect(incident.body.events).toHaveLength(20)
    expect(incident.bytes).toBeLessThan(20 * 20 * 1024)
    const page = await api(`/v1/events?incidentId=${incidentId}&limit=100`, key.key)
    expect(page.body.data).toHaveLength(20)
    expect(page.bytes).toBeLessThan(20 * 20 * 1024)

    // A row stored before the bound (what the old code wrote for this post: 7.8 M characters) reads back bounded.
    const masked = maskSecret("1", new Uint8Array(32))
    const old: Record<string, unknown> = { username: "root" }
    for (let k = 0; k < 60; k++) {
      old[`k${k}`] = Array.from({ length: 24 }, () => Array.from({ length: 60 }, () => ({ pwd: masked })))
    }
    const oldJson = JSON.stringify(old)
    expect(oldJson.length).toBeGreaterThan(7_000_000)
    const db = testDatabase(server.env)
    try {
      await db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`update events set attacker_input = ${oldJson}::text::jsonb where id in ${sql.in(eventIds)}`,
        ),
      )
    } finally {
      await db.close()
    }
    const oldEvent = await api(`/v1/events/${eventIds[0]}`, key.key)
    expect(Buffer.byteLength(JSON.stringify(oldEvent.body.attackerInput))).toBeLessThanOrEqual(16 * 1024)
    expect(oldEvent.body.attackerInput[CUT_MEMBER]).toMatch(/^cut: /)
    const oldIncident = await api(`/v1/incidents/${incidentId}`, key.key)
    expect(oldIncident.body.events).toHaveLength(20)
    expect(oldIncident.bytes).toBeLessThan(20 * 20 * 1024)
    const oldPage = await api(`/v1/events?incidentId=${incidentId}&limit=100`, key.key)
    expect(oldPage.bytes).toBeLessThan(20 * 20 * 1024)
  })
})
