import { afterAll, beforeAll, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, seedIncident, walk } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
type EventFacts = { readonly id: string; readonly sourceIp: string; readonly time: Date; readonly incidentId: string }
const orgs: Array<{
  orgId: string
  key: string
  incidents: Set<string>
  events: Set<string>
  eventRows: Array<EventFacts>
  sensorId: string
}> = []

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  for (const name of ["Org A", "Org B"]) {
    const tenant = await createTenant(db, name)
    const sensor = await createSensor(db, tenant.orgId, "shared-name")
    orgs.push({ ...tenant, incidents: new Set(), events: new Set(), eventRows: [], sensorId: sensor.id })
  }
  // Interleaved: the same source addresses, the same times, alternating organizations.
  for (let i = 0; i < 12; i++) {
    for (const org of orgs) {
      const seeded = await seedIncident(db, {
        orgId: org.orgId,
        sensorId: org.sensorId,
        sourceIp: `203.0.113.${i % 4}`,
        events: [{ time: new Date(Date.UTC(2026, 10, 4, 0, i)) }, { time: new Date(Date.UTC(2026, 10, 4, 0, i, 30)) }],
        status: i % 3 === 0 ? "closed" : "open",
        resolvedAt: i % 3 === 0 ? new Date(Date.UTC(2026, 10, 5)) : null,
      })
      org.incidents.add(seeded.incident.id)
      for (const e of seeded.events) {
        org.events.add(e.id)
        org.eventRows.push(e)
      }
    }
  }
})

afterAll(() => shutdown(server, db))

test("no endpoint, filter or cursor of one organization returns another's rows", async () => {
  const [a, b] = orgs as [(typeof orgs)[0], (typeof orgs)[0]]
  for (const [me, them] of [
    [a, b],
    [b, a],
  ] as const) {
    for (const path of [
      "/v1/incidents?limit=5",
      "/v1/incidents?status=open&limit=3",
      "/v1/incidents?status=closed&limit=1",
    ]) {
      const { ids } = await walk(server.url, path, me.key)
      expect(ids.length).toBeGreaterThan(0)
      for (const id of ids) expect(me.incidents.has(id)).toBe(true)
    }
    // Each walk returns exactly my matching events (non-empty), or none for the other organization's sensor and
    // incident ids.
    const mine = (match: (e: EventFacts) => boolean) => new Set(me.eventRows.filter(match).map((e) => e.id))
    const from = Date.UTC(2026, 10, 4, 0, 0)
    const to = Date.UTC(2026, 10, 4, 0, 5)
    for (const [path, expected] of [
      ["/v1/events?limit=7", mine(() => true)],
      ["/v1/events?sourceIp=203.0.113.1&limit=2", mine((e) => e.sourceIp === "203.0.113.1")],
      [`/v1/events?sensorId=${me.sensorId}&limit=9`, mine(() => true)],
      [`/v1/events?incidentId=${[...me.incidents][1]}`, mine((e) => e.incidentId === [...me.incidents][1])],
      [
        "/v1/events?from=2026-11-04T00:00:00Z&to=2026-11-04T00:05:00Z&limit=3",
        mine((e) => e.time.getTime() >= from && e.time.getTime() < to),
      ],
      [`/v1/events?sensorId=${them.sensorId}`, new Set<string>()],
      [`/v1/events?incidentId=${[...them.incidents][0]}`, new Set<string>()],
    ] as const) {
      const { ids } = await walk(server.url, path, me.key)
      expect({ path, ids: new Set(ids), count: ids.length }).toEqual({ path, ids: expected, count: expected.size })
    }
    expect(mine(() => true).size).toBe(24)
    for (const id of them.incidents) expect((await get(server.url, `/v1/incidents/${id}`, me.key)).status).toBe(404)
    for (const id of [...them.events].slice(0, 6)) {
      expect((await get(server.url, `/v1/events/${id}`, me.key)).status).toBe(404)
    }
    // Their cursor, replayed with my key: refused, never their rows.
    const theirs = await get(server.url, "/v1/events?limit=2", them.key)
    const replay = await get(server.url, `/v1/events?limit=2&cursor=${theirs.body.nextCursor}`, me.key)
    expect(replay.status).toBe(400)
  }
  const all = await walk(server.url, "/v1/incidents?limit=100", a.key)
  expect(new Set(all.ids)).toEqual(a.incidents)
})
