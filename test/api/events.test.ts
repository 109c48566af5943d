import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { techniquesForEventTypes } from "../../src/domain/eventTypes.ts"
import type { NewEvent } from "../../src/repos/EventsRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, SPEC_EVENT_FIELDS, seedIncident, walk } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensorA: { id: string }
let sensorB: { id: string }
type Row = {
  id: string
  time: Date
  sensorId: string
  severity: string
  type: string
  sourceIp: string
  incidentId: string
}
const all: Array<Row> = []
/** Every seeded row as written, by id: the fields the API must answer with. */
const written = new Map<string, NewEvent>()

const t0 = Date.parse("2026-11-02T00:00:00.000Z")
const at = (seconds: number) => new Date(t0 + seconds * 1000)
const newestFirst = (rows: ReadonlyArray<Row>) =>
  [...rows].sort((a, b) => b.time.getTime() - a.time.getTime() || (a.id < b.id ? 1 : -1)).map((r) => r.id)

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensorA = await createSensor(db, tenant.orgId, "sensor-a")
  sensorB = await createSensor(db, tenant.orgId, "sensor-b")
  const types = ["ssh.login_attempt", "portscan.syn", "http.request", "ssh.command"]
  const severities = ["low", "medium", "high", "critical"] as const
  const ips = ["203.0.113.10", "203.0.113.11", "2001:db8::a"]
  let n = 0
  for (const [si, sensor] of [sensorA, sensorB].entries()) {
    for (const [ii, ip] of ips.entries()) {
      const events = Array.from({ length: 9 }, (_, k) => {
        n++
        return {
          // Every third event shares its second with another, so the id tie-break matters.
          time: at(Math.floor(n / 2)),
          type: types[(k + ii) % types.length] as string,
          severity: severities[(k + si) % severities.length] as (typeof severities)[number],
        }
      })
      const seeded = await seedIncident(db, { orgId: tenant.orgId, sensorId: sensor.id, sourceIp: ip, events })
      for (const e of seeded.events) {
        all.push(e)
        written.set(e.id, e)
      }
    }
  }
})

afterAll(() => shutdown(server, db))

describe("GET /v1/events", () => {
  test("every field of an event matches the spec", async () => {
    const res = await get(server.url, "/v1/events?limit=1", tenant.key)
    expect(res.status).toBe(200)
    const [event] = res.body.data
    expect(Object.keys(event)).toEqual(SPEC_EVENT_FIELDS)
    const row = written.get(event.id) as NewEvent
    expect(event.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/)
    expect(event.time).toBe(row.time.toISOString())
    expect(event.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(event.sensor).toEqual({ id: row.sensorId, name: row.sensorId === sensorA.id ? "sensor-a" : "sensor-b" })
    expect(event.sourceIp).toBe(row.sourceIp)
    expect(event.sourcePort).toBe(row.sourcePort)
    expect(event.service).toBe(row.service)
    expect(event.port).toBe(row.port)
    expect(event.type).toBe(row.type)
    expect(event.action).toBe(row.action)
    expect(event.severity).toBe(row.severity)
    expect(event.confidence).toBe(row.confidence)
    expect(event.tags).toEqual([...row.tags])
    expect(event.summary).toBe(row.summary)
    // Technique: an event's techniques come from the fixed tables (D23), each {id, name, tactics}.
    expect(event.techniques).toEqual(
      techniquesForEventTypes([row.type]).map((t) => ({ id: t.id, name: t.name, tactics: [...t.tactics] })),
    )
    // A web request claims no technique (no scan happened); every other seeded type claims at least one.
    if (row.type !== "http.request") expect(event.techniques.length).toBeGreaterThan(0)
    expect(event.attackerInput).toEqual({
      username: "root",
      password: { masked: "******", length: 6, fingerprint: "0123456789abcdef0123456789abcdef" },
    })
    const single = await get(server.url, `/v1/events/${event.id}`, tenant.key)
    expect(single.status).toBe(200)
    expect(single.body).toEqual(event)
  })

  test("each filter and their combinations, walked page by page, return exactly the matching rows", async () => {
    const cases: Array<[string, (r: Row) => boolean]> = [
      ["", () => true],
      [`sensorId=${sensorA.id}`, (r) => r.sensorId === sensorA.id],
      ["severity=high", (r) => r.severity === "high"],
      ["type=portscan.syn", (r) => r.type === "portscan.syn"],
      ["sourceIp=203.0.113.11", (r) => r.sourceIp === "203.0.113.11"],
      // The filter takes any spelling of an address and matches its canonical form.
      ["sourceIp=2001:DB8:0::A", (r) => r.sourceIp === "2001:db8::a"],
      [`incidentId=${all[0]?.incidentId}`, (r) => r.incidentId === all[0]?.incidentId],
      [`from=${at(5).toISOString()}`, (r) => r.time >= at(5)],
      [`to=${at(5).toISOString()}`, (r) => r.time < at(5)],
      [
        `from=${encodeURIComponent("2026-11-02T02:00:03+02:00")}&to=2026-11-02T00:00:20Z`,
        (r) => r.time >= at(3) && r.time < at(20),
      ],
      [
        `sensorId=${sensorB.id}&severity=critical&type=ssh.login_attempt`,
        (r) => r.sensorId === sensorB.id && r.severity === "critical" && r.type === "ssh.login_attempt",
      ],
      [
        `sensorId=${sensorA.id}&sourceIp=2001:db8::a&from=${at(1).toISOString()}&to=${at(30).toISOString()}`,
        (r) => r.sensorId === sensorA.id && r.sourceIp === "2001:db8::a" && r.time >= at(1) && r.time < at(30),
      ],
      ["severity=low&type=http.request", (r) => r.severity === "low" && r.type === "http.request"],
      ["type=redis.command", () => false],
    ]
    for (const [query, predicate] of cases) {
      const expected = newestFirst(all.filter(predicate))
      for (const limit of [1, 4, 100]) {
        const { ids } = await walk(server.url, `/v1/events?${query}${query ? "&" : ""}limit=${limit}`, tenant.key)
        expect({ query, limit, ids }).toEqual({ query, limit, ids: expected })
      }
    }
  })

  test("from is inclusive and to exclusive, to the millisecond", async () => {
    const target = all[10] as Row
    const iso = target.time.toISOString()
    const included = await get(
      server.url,
      `/v1/events?from=${iso}&to=${new Date(target.time.getTime() + 1).toISOString()}`,
      tenant.key,
    )
    expect(included.body.data.map((e: { id: string }) => e.id)).toContain(target.id)
    const excluded = await get(server.url, `/v1/events?to=${iso}&limit=100`, tenant.key)
    expect(excluded.body.data.map((e: { id: string }) => e.id)).not.toContain(target.id)
    // A finer fraction than milliseconds rounds up: .0001 after the event's instant excludes it from `from`.
    const finer = iso.replace("Z", "1Z")
    const after = await get(server.url, `/v1/events?from=${finer}&limit=100`, tenant.key)
    expect(after.body.data.map((e: { id: string }) => e.id)).not.toContain(target.id)
    // from == to is an empty interval, not an error.
    const empty = await get(server.url, `/v1/events?from=${iso}&to=${iso}`, tenant.key)
    expect(empty.status).toBe(200)
    expect(empty.body).toEqual({ data: [], nextCursor: null })
  })

  test("unknown, malformed and other organizations' event ids answer 404", async () => {
    const other = await createTenant(db, "Other")
    const id = (all[0] as Row).id
    for (const bad of ["evt_01ARZ3NDEKTSV4RRFFQ69G5FAV", "evt_", "inc_01ARZ3NDEKTSV4RRFFQ69G5FAV", "x"]) {
      const res = await get(server.url, `/v1/events/${bad}`, tenant.key)
      expect(res.status).toBe(404)
      expect(res.body.code).toBe("not_found")
      expect(res.body.detail).toBe("No event with this id exists in your organization.")
    }
    expect((await get(server.url, `/v1/events/${id}`, other.key)).status).toBe(404)
    expect((await get(server.url, `/v1/events?incidentId=${(all[0] as Row).incidentId}`, other.key)).body.data).toEqual(
      [],
    )
  })
})
