import { describe, expect, test } from "bun:test"
import { Schema } from "effect"
import {
  ALERT_MESSAGE_MAX_BYTES,
  ALERT_TYPES,
  AlertMessage,
  alertIncident,
  sampleIncident,
  serializeAlertMessage,
} from "../../src/domain/alertMessage.ts"
import { maskSecret } from "../../src/domain/attackerInput.ts"
import { StoredId } from "../../src/domain/ids.ts"
import { CUT_MEMBER } from "../../src/domain/sanitize.ts"
import { signatureHeader } from "../../src/domain/webhookSignature.ts"
import type { EventRow } from "../../src/repos/EventsRepo.ts"
import type { IncidentRow } from "../../src/repos/IncidentsRepo.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"

/**
 * Issue "Hardening 2" item 4: every webhook body stays under 256 KiB whatever was stored (D20: attacker input is
 * shortened in webhooks), and stays valid and signed. The worst shapes are built as stored rows, including rows
 * written before ingestion bounded attackerInput (nothing here goes through ingestion's bounds).
 */

const KIB_256 = 256 * 1024
const key = new Uint8Array(32).fill(7)
const masked = maskSecret("1", key)

const deep = (levels: number): unknown => {
  const at = (level: number): unknown =>
    level === 0
      ? "x".repeat(100)
      : { [`level${level}`.repeat(40)]: at(level - 1), list: Array.from({ length: 3 }, () => at(level - 1)) }
  return at(levels)
}

/** Stored attackerInput shapes, each as large as a row can hold (older rows had no size bound at all). */
const WORST_INPUTS: Record<string, () => Record<string, unknown>> = {
  "many masked members (the issue's post as stored before)": () => {
    const out: Record<string, unknown> = { username: "root" }
    for (let k = 0; k < 60; k++) {
      out[`k${k}`] = Array.from({ length: 24 }, () => Array.from({ length: 60 }, () => ({ pwd: masked })))
    }
    return out
  },
  "deep nesting": () => ({ deep: deep(7) }),
  "many members": () => Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`member-${i}`, `value ${i}`])),
  "long strings": () =>
    Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`${"ключ".repeat(300)}${i}`, "😀".repeat(4096)])),
  "long arrays": () => ({ items: Array.from({ length: 20_000 }, (_, i) => [i, `item ${i}`, { password: masked }]) }),
  "escapes everywhere": () => ({ quotes: Array.from({ length: 300 }, () => '"\\'.repeat(1000)) }),
}

const eventRow = (i: number, attackerInput: Record<string, unknown>): EventRow => ({
  id: StoredId.EventId.make(`evt_01JD2Q7R4Y8K3M5N6P7Q8R9S${String(i).padStart(2, "0")}`),
  orgId: StoredId.OrgId.make("org_x"),
  incidentId: StoredId.IncidentId.make("inc_x"),
  sensorId: StoredId.SensorId.make("sen_x"),
  sensorName: "web-01",
  sensorEventId: `s-${i}`,
  time: new Date(Date.UTC(2026, 10, 21, 15, 0, i)),
  sourceIp: "203.0.113.7",
  sourcePort: 51000,
  service: "s".repeat(64),
  port: 22,
  type: "ssh.login_attempt",
  action: "a".repeat(64),
  severity: "high",
  confidence: "normal",
  tags: Array.from({ length: 32 }, (_, t) => `${"t".repeat(60)}-${t}`),
  summary: `SSH login attempt as "${"u".repeat(64)}" from 203.0.113.7`,
  attackerInput,
})

const incidentRow = (overrides: Partial<IncidentRow> = {}): IncidentRow => ({
  id: StoredId.IncidentId.make("inc_01JD2Q7QZX3V5B7N9M1K3J5H7G"),
  orgId: StoredId.OrgId.make("org_x"),
  sensorId: StoredId.SensorId.make("sen_x"),
  sensorName: "web-01",
  sourceIp: "203.0.113.7",
  status: "open",
  severity: "high",
  title: "SSH brute force on web-01 from 203.0.113.7",
  narrative: "203.0.113.7 tried many passwords.",
  recommendedAction: "Block 203.0.113.7.",
  eventCount: 5000,
  eventTypes: ["ssh.login_attempt"],
  tags: [],
  usernames: [],
  highConfidence: false,
  firstSeenAt: new Date(Date.UTC(2026, 10, 21, 15, 0, 0)),
  lastSeenAt: new Date(Date.UTC(2026, 10, 21, 15, 0, 59)),
  resolvedAt: null,
  typeCounts: { "ssh.login_attempt": 5000 },
  eventsSeverity: "high",
  baitCredential: false,
  sourceScope: "external",
  sourceNetwork: null,
  linked: false,
  ...overrides,
})

const decode = Schema.decodeUnknownSync(AlertMessage)
const secret = "whsec_test_0123456789abcdefghijklmnopqrstuv"

/** Asserts the body's size, that it is a valid webhook body, and that it is signed and verifies. */
const checkBody = (text: string) => {
  const size = Buffer.byteLength(text)
  expect(size).toBeLessThan(KIB_256)
  expect(size).toBeLessThanOrEqual(ALERT_MESSAGE_MAX_BYTES)
  const body = decode(JSON.parse(text))
  const t = Math.floor(Date.now() / 1000)
  const result = verifyWebhook(text, signatureHeader([secret], t, text), secret)
  expect(result.ok).toBe(true)
  return body
}

describe("Hardening 2 item 4: webhook bodies under 256 KiB whatever the shape", () => {
  for (const [name, make] of Object.entries(WORST_INPUTS)) {
    test(`${name}: every webhook type's body, with 20 such events, is under 256 KiB, valid, signed and says it was cut`, () => {
      const input = make()
      expect(Buffer.byteLength(JSON.stringify(input))).toBeGreaterThan(300_000)
      const events = Array.from({ length: 25 }, (_, i) => eventRow(i, input))
      const incident = alertIncident(incidentRow(), "linux-server", events, "https://console.test")
      for (const type of ALERT_TYPES) {
        const text = serializeAlertMessage({ id: "whd_1", type, createdAt: new Date(), incident })
        const body = checkBody(text)
        expect(body.type).toBe(type)
        expect(body.incident.events).toHaveLength(20)
        expect(body.truncated).toBe(true)
        for (const event of body.incident.events) expect(Object.hasOwn(event.attackerInput, CUT_MEMBER)).toBe(true)
      }
    })
  }

  test("whatever the incident row holds, the body fits: oldest events left out first, then texts shortened", () => {
    const input = WORST_INPUTS["long strings"]?.() ?? {}
    const events = Array.from({ length: 20 }, (_, i) => eventRow(i, input))
    // Incident texts are written by the service and short; a row that is not still gives a deliverable body.
    const huge = incidentRow({
      title: "T".repeat(200_000),
      narrative: "N".repeat(200_000),
      sensorName: "S".repeat(100_000),
    })
    const body = checkBody(
      serializeAlertMessage({
        id: "whd_2",
        type: "incident.created",
        createdAt: new Date(),
        incident: alertIncident(huge, "linux-server", events, "https://console.test"),
      }),
    )
    expect(body.truncated).toBe(true)
    expect(body.incident.events).toHaveLength(0)
    expect(body.incident.eventsLeftOut).toBe(20)
    expect([...body.incident.title].length).toBeLessThanOrEqual(1024)

    // Only events beyond what fits are left out, the oldest first.
    const big = incidentRow({ narrative: "N".repeat(150_000) })
    const some = checkBody(
      serializeAlertMessage({
        id: "whd_3",
        type: "incident.escalated",
        createdAt: new Date(),
        incident: alertIncident(big, "linux-server", events, "https://console.test"),
      }),
    )
    expect(some.incident.events.length).toBeGreaterThan(0)
    expect(some.incident.events.length + (some.incident.eventsLeftOut ?? 0)).toBe(20)
    expect(some.incident.events.at(-1)?.id).toBe(events.at(-1)?.id)
    expect(some.incident.narrative).toBe("N".repeat(150_000))
  })

  test("an ordinary body is unchanged: no truncated member, no eventsLeftOut", () => {
    const text = serializeAlertMessage({
      id: "whd_4",
      type: "webhook.test",
      createdAt: new Date(),
      incident: sampleIncident(new Date(), "https://console.test"),
    })
    const body = checkBody(text)
    expect(text).not.toContain("truncated")
    expect(text).not.toContain("eventsLeftOut")
    expect(body.incident.events[0]?.attackerInput).toEqual({
      username: "root",
      password: { masked: "********", length: 8, fingerprint: "0".repeat(32) },
    })
  })
})
