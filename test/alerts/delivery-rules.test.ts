import { describe, expect, test } from "bun:test"
import {
  alertIncident,
  alertTypeOf,
  MESSAGE_EVENTS,
  sampleIncident,
  serializeAlertMessage,
} from "../../src/domain/alertMessage.ts"
import { JITTER, nextState } from "../../src/domain/deliveryRetry.ts"
import { StoredId } from "../../src/domain/ids.ts"
import type { EventRow } from "../../src/repos/EventsRepo.ts"
import type { IncidentRow } from "../../src/repos/IncidentsRepo.ts"

const incidentRow: IncidentRow = {
  id: StoredId.IncidentId.make("inc_01JDEMO0000000000000000000"),
  orgId: StoredId.OrgId.make("org_01JDEMO0000000000000000000"),
  sensorId: StoredId.SensorId.make("sen_01JDEMO0000000000000000000"),
  sensorName: "fin-db-01",
  sourceIp: "203.0.113.66",
  status: "open",
  severity: "high",
  title: "SSH brute force",
  narrative: "n",
  recommendedAction: "r",
  eventCount: 42,
  eventTypes: ["ssh.login_attempt"],
  tags: ["default-credentials"],
  typeCounts: { "ssh.login_attempt": 42 },
  eventsSeverity: "high",
  baitCredential: false,
  sourceScope: "external",
  sourceNetwork: null,
  linked: false,
  usernames: ["root"],
  highConfidence: true,
  firstSeenAt: new Date("2026-11-21T10:00:00.123Z"),
  lastSeenAt: new Date("2026-11-21T10:05:09.987Z"),
  resolvedAt: null,
}

const eventRow = (i: number): EventRow => ({
  id: StoredId.EventId.make(`evt_${String(i).padStart(26, "0")}`),
  orgId: incidentRow.orgId,
  incidentId: incidentRow.id,
  sensorId: incidentRow.sensorId,
  sensorName: "fin-db-01",
  sensorEventId: `s-${i}`,
  time: new Date(Date.parse("2026-11-21T10:00:00.000Z") + i * 1000),
  sourceIp: "203.0.113.66",
  sourcePort: 40000 + i,
  service: "ssh",
  port: 22,
  type: "ssh.login_attempt",
  action: "login_attempt",
  severity: "medium",
  confidence: "normal",
  tags: [],
  summary: `attempt ${i}`,
  attackerInput: { username: "x".repeat(300), nested: { deep: "y".repeat(1000) } },
})

describe("webhook payload (spec 'Webhook incident', D15, D20)", () => {
  const events = Array.from({ length: 25 }, (_, i) => eventRow(i)).reverse()
  const incident = alertIncident(incidentRow, "linux-database-server", events, "https://console.test")
  const body = JSON.parse(
    serializeAlertMessage({
      id: "whd_01JDEMO0000000000000000000",
      type: "incident.created",
      createdAt: new Date("2026-11-21T10:05:10.001Z"),
      incident,
    }),
  )

  test("the body is {id, type, createdAt, incident}, compact, in that order", () => {
    expect(Object.keys(body)).toEqual(["id", "type", "createdAt", "incident"])
    expect(body.createdAt).toBe("2026-11-21T10:05:10.001Z")
    const text = serializeAlertMessage({ id: "a", type: "webhook.test", createdAt: new Date(0), incident })
    expect(text).not.toMatch(/\n|": /)
  })

  test("the webhook incident has exactly the spec's fields, in order; no status, eventTypes, highConfidence, resolvedAt", () => {
    expect(Object.keys(body.incident)).toEqual([
      "id",
      "title",
      "severity",
      "narrative",
      "recommendedAction",
      "sensor",
      "sourceIp",
      "source",
      "baitCredentialUsed",
      "otherSensors",
      "eventCount",
      "firstSeenAt",
      "lastSeenAt",
      "url",
      "techniques",
      "events",
    ])
    expect(body.incident.sensor).toEqual({
      id: incidentRow.sensorId,
      name: "fin-db-01",
      profile: "linux-database-server",
    })
    expect(body.incident.eventCount).toBe(42)
    expect(body.incident.url).toBe(`https://console.test/incidents/${incidentRow.id}`)
  })

  test("firstSeenAt and lastSeenAt are in whole seconds ending in Z; event times keep milliseconds", () => {
    expect(body.incident.firstSeenAt).toBe("2026-11-21T10:00:00Z")
    expect(body.incident.lastSeenAt).toBe("2026-11-21T10:05:09Z")
    expect(body.incident.events[0].time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

  test("events: the 20 most recent, oldest first, each without sensor and sourceIp", () => {
    expect(body.incident.events).toHaveLength(MESSAGE_EVENTS)
    expect(body.incident.events.map((e: { sourcePort: number }) => e.sourcePort - 40000)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 5),
    )
    expect(Object.keys(body.incident.events[0])).toEqual([
      "id",
      "time",
      "type",
      "action",
      "service",
      "port",
      "sourcePort",
      "severity",
      "confidence",
      "tags",
      "summary",
      "attackerInput",
    ])
  })

  test("every attackerInput string is cut to 256 code points ending in …, nested ones too", () => {
    const input = body.incident.events[0].attackerInput
    expect([...input.username]).toHaveLength(256)
    expect(input.username.endsWith("…")).toBe(true)
    expect([...input.nested.deep]).toHaveLength(256)
  })

  test("techniques follow the single-incident rule: event types and payload tags", () => {
    expect(body.incident.techniques.map((t: { id: string }) => t.id)).toContain("T1110.001")
    expect(body.incident.techniques.map((t: { id: string }) => t.id)).toContain("T1078.001")
  })

  test("transitions map to body types; a close is not announced", () => {
    expect(alertTypeOf("created")).toBe("incident.created")
    expect(alertTypeOf("escalated")).toBe("incident.escalated")
    expect(alertTypeOf("reopened")).toBe("incident.reopened")
    expect(alertTypeOf("closed")).toBeUndefined()
  })

  test("webhook.test carries a sample incident of the real shape", () => {
    const sample = JSON.parse(
      serializeAlertMessage({
        id: "whd_x",
        type: "webhook.test",
        createdAt: new Date(),
        incident: sampleIncident(new Date(), "https://console.test"),
      }),
    )
    expect(Object.keys(sample.incident)).toEqual(Object.keys(body.incident))
    expect(sample.incident.firstSeenAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
  })
})

describe("delivery state after an attempt", () => {
  const schedule = [5_000, 30_000, 120_000]
  const now = new Date("2026-11-21T10:00:00.000Z")

  test("a 2xx succeeds", () => {
    expect(nextState({ ok: true, status: 204 }, 1, schedule, now)).toEqual({
      status: "succeeded",
      retryIndex: 1,
      nextAttemptAt: now,
      deliveredAt: now,
    })
  })

  test("a failure waits the next step of the schedule, plus at most 10 % jitter, never less", () => {
    for (const [index, random] of [
      [0, 0],
      [1, 0.5],
      [2, 1],
    ] as const) {
      const next = nextState({ ok: false, status: 500 }, index, schedule, now, random)
      const wait = next.nextAttemptAt.getTime() - now.getTime()
      expect(next.status).toBe("failed")
      expect(next.retryIndex).toBe(index + 1)
      expect(wait).toBe(Math.round((schedule[index] ?? 0) * (1 + JITTER * random)))
    }
  })

  test("after the last step the delivery is dead; time-outs and connection errors count as failures", () => {
    expect(nextState({ ok: false, status: null }, 3, schedule, now).status).toBe("dead")
    expect(nextState({ ok: false, status: null }, 2, schedule, now).status).toBe("failed")
    expect(nextState({ ok: false, status: 302 }, 0, schedule, now).status).toBe("failed")
  })

  test("a 410 stops retries at once", () => {
    expect(nextState({ ok: false, status: 410 }, 0, schedule, now).status).toBe("dead")
  })
})
