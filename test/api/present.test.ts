import { expect, test } from "bun:test"
import { Schema } from "effect"
import fc from "fast-check"
import { EventId, IncidentId, OrgId, SensorId, StoredId } from "../../src/domain/ids.ts"
import { EventPage, Incident, IncidentPage } from "../../src/domain/models.ts"
import type { EventRow } from "../../src/repos/EventsRepo.ts"
import type { IncidentRow } from "../../src/repos/IncidentsRepo.ts"
import {
  encodeEvent,
  encodeIncident,
  encodeIncidentSummary,
  presentEvent,
  presentIncident,
  presentIncidentSummary,
  serializedAnswer,
} from "../../src/repos/present.ts"

/**
 * The handlers answer JSON.stringify(encode…(row)) without the HttpApi's Schema encode: the objects must be exactly
 * the schemas' encoding of the present…(row) shapes the console uses, and the bytes exactly those the schemas of
 * domain/models.ts would have produced (field order, timestamp format, attackerInput's username and password first
 * and password reduced to its three members).
 */

const date = fc.date({
  min: new Date("2000-01-01T00:00:00Z"),
  max: new Date("2100-01-01T00:00:00Z"),
  noInvalidDate: true,
})
const masked = fc.record({ masked: fc.string(), length: fc.nat(), fingerprint: fc.string() })
const attackerInput = fc
  .record(
    {
      username: fc.string(),
      password: fc.oneof(
        masked,
        fc.record({ masked: fc.string(), length: fc.nat(), fingerprint: fc.string(), extra: fc.string() }),
      ),
      command: fc.string(),
      nested: fc.dictionary(fc.string(), fc.jsonValue()),
    },
    { requiredKeys: [] },
  )
  .chain((known) =>
    fc.dictionary(fc.string(), fc.jsonValue()).map((extra) => {
      // Stored order varies: known members before, after or between the others.
      const entries = [...Object.entries(extra).filter(([k]) => !(k in known)), ...Object.entries(known)]
      return Object.fromEntries(entries.reverse())
    }),
  )

const eventRow = fc.record({
  id: fc.constant(EventId.make("evt_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  orgId: fc.constant(OrgId.make("org_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  incidentId: fc.constant(IncidentId.make("inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  sensorId: fc.constant(SensorId.make("sen_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  sensorName: fc.string(),
  sensorEventId: fc.string(),
  time: date,
  sourceIp: fc.constantFrom("192.0.2.1", "2001:db8::1"),
  sourcePort: fc.integer({ min: 0, max: 65535 }),
  service: fc.string(),
  port: fc.integer({ min: 0, max: 65535 }),
  type: fc.constantFrom("ssh.login_attempt", "http.request", "portscan.syn", "unknown.type"),
  action: fc.string(),
  severity: fc.constantFrom("low", "medium", "high", "critical"),
  confidence: fc.constantFrom("low", "normal", "high"),
  tags: fc.array(fc.constantFrom("sqli", "path-traversal", "command-injection", "default-credentials", "x")),
  summary: fc.string(),
  attackerInput,
}) as fc.Arbitrary<EventRow>

const incidentRow = fc.record({
  id: fc.constant(IncidentId.make("inc_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  orgId: fc.constant(OrgId.make("org_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  sensorId: fc.constant(SensorId.make("sen_01ARZ3NDEKTSV4RRFFQ69G5FAV")),
  sensorName: fc.string(),
  sourceIp: fc.constant("192.0.2.1"),
  status: fc.constantFrom("open", "closed"),
  severity: fc.constantFrom("low", "medium", "high", "critical"),
  title: fc.string(),
  narrative: fc.string(),
  recommendedAction: fc.string(),
  eventCount: fc.nat(),
  eventTypes: fc.array(fc.constantFrom("ssh.login_attempt", "ssh.session", "http.request", "portscan.syn")),
  tags: fc.array(fc.constantFrom("sqli", "malware-download", "x")),
  usernames: fc.array(fc.string()),
  highConfidence: fc.boolean(),
  firstSeenAt: date,
  lastSeenAt: date,
  resolvedAt: fc.option(date, { nil: null }),
  typeCounts: fc.constant({}),
  eventsSeverity: fc.constantFrom("low", "medium", "high", "critical"),
  baitCredential: fc.boolean(),
  sourceScope: fc.constantFrom("internal", "external"),
  sourceNetwork: fc.option(fc.record({ cidr: fc.constant("10.0.0.0/8"), label: fc.string() }), { nil: null }),
  linked: fc.boolean(),
  // The source address's enrichment, as joined in (null: nothing known), control characters and all.
  sourceReverseDns: fc.option(fc.string(), { nil: null }),
  sourceAsn: fc.option(fc.integer({ min: 0, max: 4_294_967_295 }), { nil: null }),
  sourceAsOrganization: fc.option(fc.string(), { nil: null }),
  sourceCountry: fc.option(fc.constantFrom("US", "DE", "zz", "X1"), { nil: null }),
}) as fc.Arbitrary<IncidentRow>

const APP_URL = "https://console.test"

test("encode* shapes are the API schemas' encoding of the present* shapes, to the byte (incident and event pages, one incident)", () => {
  fc.assert(
    fc.property(fc.array(eventRow, { maxLength: 5 }), fc.option(fc.string(), { nil: null }), (rows, nextCursor) => {
      const encoded = Schema.encodeSync(EventPage)({ data: rows.map(presentEvent), nextCursor })
      const page = { data: rows.map(encodeEvent), nextCursor }
      expect(page as unknown).toEqual(encoded)
      expect(JSON.stringify(page)).toBe(JSON.stringify(encoded))
    }),
    { numRuns: 300 },
  )
  fc.assert(
    fc.property(fc.array(incidentRow, { maxLength: 5 }), (rows) => {
      const encoded = Schema.encodeSync(IncidentPage)({
        data: rows.map((r) => presentIncidentSummary(r, APP_URL)),
        nextCursor: null,
      })
      const page = { data: rows.map((r) => encodeIncidentSummary(r, APP_URL)), nextCursor: null }
      expect(page as unknown).toEqual(encoded)
      expect(JSON.stringify(page)).toBe(JSON.stringify(encoded))
    }),
    { numRuns: 200 },
  )
  fc.assert(
    fc.property(incidentRow, fc.array(eventRow, { maxLength: 3 }), (row, events) => {
      const encoded = Schema.encodeSync(Incident)(presentIncident(row, events, APP_URL))
      const incident = encodeIncident(row, events, APP_URL)
      expect(incident).toEqual(encoded)
      // The text the API sends is the one remembered while the events were bounded.
      expect(serializedAnswer(incident)).toBe(JSON.stringify(encoded))
    }),
    { numRuns: 200 },
  )
})

test("the console's incident shows the events the API's answer shows when the byte bound stops them", () => {
  fc.assert(
    fc.property(incidentRow, fc.array(eventRow, { minLength: 2, maxLength: 6 }), (row, events) => {
      const oneEvent = JSON.stringify(encodeEvent(events[0] as EventRow)).length
      const head = JSON.stringify(encodeIncidentSummary(row, APP_URL)).length
      const bound = head + oneEvent + 2000
      const api = encodeIncident(row, events, APP_URL, bound)
      const page = presentIncident(row, events, APP_URL, bound)
      expect(page.events.map((e) => e.id)).toEqual(api.events.map((e) => e.id))
      expect(page.events.length).toBeGreaterThanOrEqual(1)
    }),
    { numRuns: 100 },
  )
})

test("a stored attackerInput the schema would refuse reads back in the attackerInput shape, never a failure", () => {
  const row = (attackerInput: Record<string, unknown>) =>
    ({
      id: EventId.make("evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"),
      orgId: StoredId.OrgId.make("o"),
      incidentId: StoredId.IncidentId.make("i"),
      sensorId: StoredId.SensorId.make("s"),
      sensorName: "n",
      sensorEventId: "x",
      time: new Date(0),
      sourceIp: "192.0.2.1",
      sourcePort: 1,
      service: "ssh",
      port: 22,
      type: "ssh.login_attempt",
      action: "a",
      severity: "low",
      confidence: "low",
      tags: [],
      summary: "s",
      attackerInput,
    }) as EventRow
  expect(presentEvent(row({ password: "plain" })).attackerInput).toEqual({
    password: { masked: "*****", length: 5, fingerprint: "" },
  })
  expect(presentEvent(row({ username: 7 })).attackerInput).toEqual({ username: "7" })
  expect(presentEvent(row({ username: null, password: null })).attackerInput).toEqual({})
})
