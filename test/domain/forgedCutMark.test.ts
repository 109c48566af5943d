import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { alertIncident, serializeAlertMessage } from "../../src/domain/alertMessage.ts"
import {
  ATTACKER_INPUT_MAX_KEYS,
  prepareAttackerInput,
  SENT_CUT_MEMBER,
  webhookAttackerInput,
} from "../../src/domain/attackerInput.ts"
import { StoredId } from "../../src/domain/ids.ts"
import { CUT_MEMBER } from "../../src/domain/sanitize.ts"
import type { EventRow } from "../../src/repos/EventsRepo.ts"
import type { IncidentRow } from "../../src/repos/IncidentsRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D20: the cut mark (root member "…") says that this service cut an attackerInput. A sensor cannot write it: a root
 * member it named "…" is stored as "… (sent)", counts toward the member limit like any other, and a webhook's
 * `truncated` comes from its own walk, never from a member being there.
 */

const key = new Uint8Array(32).fill(3)
const FORGED = "cut: 12 more members, 9000 bytes"

describe("a sensor-sent cut mark is renamed at ingestion", () => {
  test('a root member named "…" (also behind an invisible character) is stored as "… (sent)", nothing cut', () => {
    for (const name of [CUT_MEMBER, `${CUT_MEMBER}\u200b`, `\u200b${CUT_MEMBER}\u2060`]) {
      const out = prepareAttackerInput({ username: "root", [name]: FORGED }, key)
      expect(out).toEqual({ username: "root", [SENT_CUT_MEMBER]: FORGED })
      expect(Object.hasOwn(out, CUT_MEMBER)).toBe(false)
    }
    // Deeper members, and values, are not the mark: kept as sent.
    expect(prepareAttackerInput({ nested: { [CUT_MEMBER]: "x" }, note: CUT_MEMBER }, key)).toEqual({
      nested: { [CUT_MEMBER]: "x" },
      note: CUT_MEMBER,
    })
  })

  test("the renamed member counts toward the 64-member limit; the service's own mark then says what was cut", () => {
    const input: Record<string, unknown> = { [CUT_MEMBER]: FORGED }
    for (let i = 0; i < ATTACKER_INPUT_MAX_KEYS; i++) input[`m${i}`] = i
    const out = prepareAttackerInput(input, key)
    const members = Object.keys(out).filter((k) => k !== CUT_MEMBER)
    expect(members).toHaveLength(ATTACKER_INPUT_MAX_KEYS)
    expect(members[0]).toBe(SENT_CUT_MEMBER)
    expect(out[CUT_MEMBER]).toBe("cut: 1 more member, 2 bytes")
  })

  test('when the name "… (sent)" is taken too, the next free "… (sent N)" is used; nothing is lost', () => {
    const out = prepareAttackerInput(
      { [SENT_CUT_MEMBER]: "first", [CUT_MEMBER]: FORGED, [`${CUT_MEMBER}\u200b`]: "again", "… (sent 2)": "x" },
      key,
    )
    expect(out).toEqual({ [SENT_CUT_MEMBER]: "first", "… (sent 3)": FORGED, "… (sent 4)": "again", "… (sent 2)": "x" })
  })
})

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
  service: "ssh",
  port: 22,
  type: "ssh.login_attempt",
  action: "login_attempt",
  severity: "high",
  confidence: "normal",
  tags: [],
  summary: "SSH login attempt",
  attackerInput,
})

const incidentRow = {
  id: "inc_01JD2Q7QZX3V5B7N9M1K3J5H7G",
  orgId: "org_x",
  sensorId: "sen_x",
  sensorName: "web-01",
  sourceIp: "203.0.113.7",
  status: "open",
  severity: "high",
  title: "SSH brute force on web-01 from 203.0.113.7",
  narrative: "203.0.113.7 tried many passwords.",
  recommendedAction: "Block 203.0.113.7.",
  eventCount: 1,
  eventTypes: ["ssh.login_attempt"],
  tags: [],
  usernames: [],
  highConfidence: false,
  firstSeenAt: new Date(Date.UTC(2026, 10, 21, 15, 0, 0)),
  lastSeenAt: new Date(Date.UTC(2026, 10, 21, 15, 0, 59)),
  resolvedAt: null,
} as unknown as IncidentRow

const body = (inputs: ReadonlyArray<Record<string, unknown>>) =>
  JSON.parse(
    serializeAlertMessage({
      id: "whd_1",
      type: "incident.created",
      createdAt: new Date(0),
      incident: alertIncident(
        incidentRow,
        "linux-server",
        inputs.map((input, i) => eventRow(i, input)),
        "https://console.test",
      ),
    }),
  )

describe("a webhook's truncated comes from its own cut", () => {
  test('a stored "…" member alone (a row written before the rename) does not make a webhook truncated', () => {
    const sent = body([{ username: "root", [CUT_MEMBER]: FORGED }])
    expect(sent.truncated).toBeUndefined()
    expect(sent.incident.events[0].attackerInput[CUT_MEMBER]).toBe(FORGED)
  })

  test("an attackerInput the webhook walk cuts makes it truncated", () => {
    const big = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`m${i}`, i]))
    expect(Object.hasOwn(webhookAttackerInput(big), CUT_MEMBER)).toBe(true)
    expect(body([{ username: "root" }, big]).truncated).toBe(true)
    expect(body([{ username: "root" }]).truncated).toBeUndefined()
  })
})

describe("end to end, ingest then the API", () => {
  let server: RunningServer
  let db: TestDatabase
  beforeAll(async () => {
    server = await startServer({ env: await testEnv() })
    db = testDatabase(server.env)
  })
  afterAll(() => shutdown(server, db))

  test('a sensor-sent "…" member reads back as "… (sent)"; the event carries no cut mark', async () => {
    const tenant = await createTenant(db, "Forgers")
    const sensor = await createSensor(db, tenant.orgId)
    const event = nativeEvent({ attackerInput: { username: "root", [CUT_MEMBER]: FORGED } })
    expect((await ingest(server.ingestUrl, "events", sensor.token, event)).status).toBe(200)
    const listed = await get(server.url, "/v1/events?limit=1", tenant.key)
    expect(listed.status).toBe(200)
    expect(listed.body.data[0].attackerInput).toEqual({ username: "root", [SENT_CUT_MEMBER]: FORGED })
  })
})
