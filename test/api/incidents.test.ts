import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, seedIncident, walk } from "../support/fixtures.ts"
import { APP_URL, type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let key: string
let orgId: string
let sensor: { id: string }

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const t0 = Date.parse("2026-11-01T10:00:00.000Z")
const at = (minutes: number, ms = 0) => new Date(t0 + minutes * 60_000 + ms)

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  ;({ key, orgId } = await createTenant(db))
  sensor = await createSensor(db, orgId, "web-01")
})

afterAll(() => shutdown(server, db))

describe("GET /v1/incidents", () => {
  test("an organization without incidents gets an empty first page", async () => {
    const fresh = await createTenant(db, "Empty Inc")
    const res = await get(server.url, "/v1/incidents", fresh.key)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: [], nextCursor: null })
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8")
  })

  test("every field of a listed incident matches the spec, without events", async () => {
    const { incident } = await seedIncident(db, {
      orgId,
      sensorId: sensor.id,
      sourceIp: "203.0.113.7",
      events: [
        { time: at(0, 53), type: "portscan.syn" },
        { time: at(1), type: "ssh.login_attempt", tags: ["default-credentials"] },
        { time: at(2, 7), type: "ssh.login_success", confidence: "high" },
      ],
    })
    const res = await get(server.url, "/v1/incidents?limit=100", key)
    expect(res.status).toBe(200)
    const item = res.body.data.find((i: { id: string }) => i.id === incident.id)
    expect(Object.keys(item)).toEqual([
      "id",
      "title",
      "severity",
      "status",
      "narrative",
      "recommendedAction",
      "sensor",
      "sourceIp",
      "source",
      "eventCount",
      "eventTypes",
      "highConfidence",
      "baitCredentialUsed",
      "otherSensors",
      "firstSeenAt",
      "lastSeenAt",
      "resolvedAt",
      "closeReason",
      "assignee",
      "acknowledgedAt",
      "url",
      "techniques",
    ])
    expect(item.id).toMatch(/^inc_[0-9A-HJKMNP-TV-Z]{26}$/)
    expect(item.severity).toBe("high")
    expect(item.status).toBe("open")
    expect(item.sensor).toEqual({ id: sensor.id, name: "web-01" })
    expect(item.sourceIp).toBe("203.0.113.7")
    expect(item.eventCount).toBe(3)
    expect(item.eventTypes).toEqual(["portscan.syn", "ssh.login_attempt", "ssh.login_success"])
    expect(item.highConfidence).toBe(true)
    expect(item.firstSeenAt).toBe("2026-11-01T10:00:00.053Z")
    expect(item.lastSeenAt).toBe("2026-11-01T10:02:00.007Z")
    expect(item.firstSeenAt).toMatch(ISO_MS)
    expect(item.resolvedAt).toBeNull()
    expect(item.url).toBe(`${APP_URL}/incidents/${incident.id}`)
    expect(item.events).toBeUndefined()
    // Spec "Technique": in a list, techniques come from event types only (the tag's T1078.001 is absent).
    const ids = item.techniques.map((t: { id: string }) => t.id)
    expect(ids).toContain("T1110.001")
    expect(ids).toContain("T1046")
    expect(ids).not.toContain("T1078.001")
    for (const t of item.techniques) {
      expect(Object.keys(t)).toEqual(["id", "name", "tactics"])
      expect(t.tactics.length).toBeGreaterThan(0)
    }
  })

  test("resolvedAt is a millisecond timestamp on a closed incident; status filter open/closed/all", async () => {
    const tenant = await createTenant(db, "Status Co")
    const s = await createSensor(db, tenant.orgId)
    const open = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: s.id,
      sourceIp: "198.51.100.1",
      events: [{ time: at(10) }],
    })
    const closed = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: s.id,
      sourceIp: "198.51.100.2",
      events: [{ time: at(5) }],
      status: "closed",
      resolvedAt: at(600, 120),
    })
    const all = await get(server.url, "/v1/incidents", tenant.key)
    expect(all.body.data.map((i: { id: string }) => i.id)).toEqual([open.incident.id, closed.incident.id])
    expect(all.body.data[1].resolvedAt).toBe("2026-11-01T20:00:00.120Z")
    expect((await get(server.url, "/v1/incidents?status=all", tenant.key)).body.data).toHaveLength(2)
    const onlyOpen = await get(server.url, "/v1/incidents?status=open", tenant.key)
    expect(onlyOpen.body.data.map((i: { id: string }) => i.id)).toEqual([open.incident.id])
    const onlyClosed = await get(server.url, "/v1/incidents?status=closed", tenant.key)
    expect(onlyClosed.body.data.map((i: { id: string }) => i.id)).toEqual([closed.incident.id])
  })

  test("ordered by lastSeenAt desc then id desc; page walks return every row exactly once", async () => {
    const tenant = await createTenant(db, "Paging Co")
    const s = await createSensor(db, tenant.orgId)
    const created: Array<{ id: string; last: number; status: string }> = []
    for (let i = 0; i < 23; i++) {
      // Groups of three share a lastSeenAt, so the id tie-break is exercised on page boundaries.
      const time = at(100 + Math.floor(i / 3))
      const status = i % 4 === 0 ? "closed" : "open"
      const { incident } = await seedIncident(db, {
        orgId: tenant.orgId,
        sensorId: s.id,
        sourceIp: `192.0.2.${i + 1}`,
        events: [{ time }],
        status: status as "open" | "closed",
        resolvedAt: status === "closed" ? at(900) : null,
      })
      created.push({ id: incident.id, last: time.getTime(), status })
    }
    const expected = (filter?: string) =>
      created
        .filter((c) => filter === undefined || c.status === filter)
        .sort((a, b) => b.last - a.last || (a.id < b.id ? 1 : -1))
        .map((c) => c.id)
    for (const [query, filter] of [
      ["", undefined],
      ["status=open", "open"],
      ["status=closed", "closed"],
      ["status=all", undefined],
    ] as const) {
      for (const limit of [1, 2, 3, 7, 50, 100]) {
        const path = `/v1/incidents?${query}${query ? "&" : ""}limit=${limit}`
        const { ids, pages } = await walk(server.url, path, tenant.key)
        expect(ids).toEqual(expected(filter))
        expect(new Set(ids).size).toBe(ids.length)
        expect(pages).toBe(Math.max(1, Math.ceil(ids.length / limit)))
      }
    }
  })

  test("limit defaults to 50 and nextCursor is null on the last page", async () => {
    const tenant = await createTenant(db, "Many Co")
    const s = await createSensor(db, tenant.orgId)
    for (let i = 0; i < 51; i++) {
      await seedIncident(db, {
        orgId: tenant.orgId,
        sensorId: s.id,
        sourceIp: `10.9.0.${i}`,
        events: [{ time: at(i) }],
      })
    }
    const first = await get(server.url, "/v1/incidents", tenant.key)
    expect(first.body.data).toHaveLength(50)
    expect(typeof first.body.nextCursor).toBe("string")
    const second = await get(server.url, `/v1/incidents?cursor=${first.body.nextCursor}`, tenant.key)
    expect(second.body.data).toHaveLength(1)
    expect(second.body.nextCursor).toBeNull()
    const exact = await get(server.url, "/v1/incidents?limit=51", tenant.key)
    expect(exact.body.data).toHaveLength(51)
    expect(exact.body.nextCursor).toBeNull()
  })
})

describe("GET /v1/incidents/{id}", () => {
  test("at most 200 member events, oldest first, techniques include payload tags", async () => {
    const events = Array.from({ length: 205 }, (_, i) => ({
      time: at(0, 205 - i), // inserted newest first: the endpoint must sort
      type: i === 0 ? "http.request" : "ssh.login_attempt",
      tags: i === 204 ? ["sqli"] : [],
    }))
    const { incident, events: rows } = await seedIncident(db, {
      orgId,
      sensorId: sensor.id,
      sourceIp: "2001:db8::5",
      events,
    })
    const res = await get(server.url, `/v1/incidents/${incident.id}`, key)
    expect(res.status).toBe(200)
    expect(Object.keys(res.body).at(-1)).toBe("events")
    expect(res.body.eventCount).toBe(205)
    expect(res.body.events).toHaveLength(200)
    const expectedOrder = [...rows]
      .sort((a, b) => a.time.getTime() - b.time.getTime() || (a.id < b.id ? -1 : 1))
      .slice(0, 200)
      .map((r) => r.id)
    expect(res.body.events.map((e: { id: string }) => e.id)).toEqual(expectedOrder)
    // The sqli tag belongs to the oldest event: T1190 appears only on the single incident.
    expect(res.body.techniques.map((t: { id: string }) => t.id)).toContain("T1190")
    const listed = await get(server.url, "/v1/incidents?limit=100", key)
    const summary = listed.body.data.find((i: { id: string }) => i.id === incident.id)
    expect(summary.techniques.map((t: { id: string }) => t.id)).not.toContain("T1190")
    // The rest is reachable through the events list (D8).
    const { ids } = await walk(server.url, `/v1/events?incidentId=${incident.id}&limit=100`, key)
    expect(new Set(ids)).toEqual(new Set(rows.map((r) => r.id)))
  })

  test("unknown, malformed and other organizations' ids answer 404 problems", async () => {
    const other = await createTenant(db, "Other Org")
    const otherSensor = await createSensor(db, other.orgId)
    const { incident } = await seedIncident(db, {
      orgId: other.orgId,
      sensorId: otherSensor.id,
      sourceIp: "192.0.2.200",
      events: [{ time: at(1) }],
    })
    for (const id of [
      incident.id,
      "inc_01ARZ3NDEKTSV4RRFFQ69G5FAV",
      "inc_x",
      "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV",
      "'%20or%201=1--",
      "%00",
      "a".repeat(300),
    ]) {
      const res = await get(server.url, `/v1/incidents/${id}`, key)
      expect(res.status).toBe(404)
      expect(res.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
      expect(res.body).toMatchObject({ type: "about:blank", title: "Not Found", status: 404, code: "not_found" })
      // Path segments over 100 characters are not routed at all; they get the unknown-path 404.
      if (id.length <= 100) expect(res.body.detail).toBe("No incident with this id exists in your organization.")
    }
    expect((await get(server.url, `/v1/incidents/${incident.id}`, other.key)).status).toBe(200)
  })
})
