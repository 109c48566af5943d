import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let other: { orgId: string; key: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  other = await createTenant(db, "Other")
  for (const t of [tenant, other]) {
    const sensor = await createSensor(db, t.orgId)
    for (let i = 0; i < 5; i++) {
      await seedIncident(db, {
        orgId: t.orgId,
        sensorId: sensor.id,
        sourceIp: `192.0.2.${i}`,
        events: [{ time: new Date(Date.UTC(2026, 10, 3, 0, i)) }, { time: new Date(Date.UTC(2026, 10, 3, 1, i)) }],
      })
    }
  }
})

afterAll(() => shutdown(server, db))

const expectInvalid = async (path: string, detail: RegExp) => {
  const res = await get(server.url, path, tenant.key)
  expect({ path, status: res.status }).toEqual({ path, status: 400 })
  expect(res.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
  expect(Object.keys(res.body).sort()).toEqual(["code", "detail", "status", "title", "type"])
  expect(res.body).toMatchObject({ type: "about:blank", title: "Bad Request", status: 400, code: "invalid_request" })
  expect(res.body.detail).toMatch(detail)
}

describe("query validation answers 400 invalid_request naming the parameter", () => {
  test("limit outside its bounds or not an integer", async () => {
    for (const endpoint of ["/v1/incidents", "/v1/events"]) {
      for (const value of ["0", "101", "-1", "1.5", "abc", "", "1e2", "%20%201", "99999999999999999999", "0x10"]) {
        await expectInvalid(`${endpoint}?limit=${value}`, /^limit must be an integer from 1 to 100 \(default 50\)\.$/)
      }
      await expectInvalid(`${endpoint}?limit=5&limit=6`, /limit was given more than once/)
    }
    expect((await get(server.url, "/v1/incidents?limit=100", tenant.key)).status).toBe(200)
    expect((await get(server.url, "/v1/events?limit=1", tenant.key)).status).toBe(200)
  })

  test("unknown status, severity and type values list the allowed values", async () => {
    for (const value of ["OPEN", "resolved", "", "open,closed"]) {
      await expectInvalid(
        `/v1/incidents?status=${value}`,
        /^status must be one of: open, closed, all \(default all\)\.$/,
      )
    }
    for (const value of ["HIGH", "severe", ""]) {
      await expectInvalid(`/v1/events?severity=${value}`, /^severity must be one of: low, medium, high, critical\.$/)
    }
    await expectInvalid("/v1/events?type=ssh.nope", /^type must be one of: .*ssh\.login_attempt/)
  })

  test("unparseable from/to, and from later than to", async () => {
    for (const value of [
      "yesterday",
      "2026-11-21",
      "2026-11-21T10:00:00",
      "2026-13-01T00:00:00Z",
      "2026-02-30T00:00:00Z",
      "2026-11-21T24:00:00Z",
      "2026-11-21T10:00:00+25:00",
      "1700000000",
      "",
    ]) {
      await expectInvalid(`/v1/events?from=${encodeURIComponent(value)}`, /^from must be an RFC 3339 timestamp/)
      await expectInvalid(`/v1/events?to=${encodeURIComponent(value)}`, /^to must be an RFC 3339 timestamp/)
    }
    await expectInvalid(
      "/v1/events?from=2026-11-21T10:00:00Z&to=2026-11-21T09:59:59.999Z",
      /^from must not be later than to\.$/,
    )
  })

  test("malformed sensorId, incidentId and sourceIp", async () => {
    await expectInvalid("/v1/events?sensorId=web-01", /^sensorId must be a sensor identifier/)
    await expectInvalid("/v1/events?incidentId=inc_1", /^incidentId must be an incident identifier/)
    for (const ip of ["1.2.3", "010.0.0.1", "example.com", "fe80::1%25eth0", ""]) {
      await expectInvalid(`/v1/events?sourceIp=${ip}`, /^sourceIp must be an IPv4 address/)
    }
  })

  test("unknown query parameters are ignored", async () => {
    expect((await get(server.url, "/v1/incidents?foo=bar&Limit=1000", tenant.key)).status).toBe(200)
    expect((await get(server.url, "/v1/events?sort=asc", tenant.key)).status).toBe(200)
  })
})

describe("cursors are opaque and bound to endpoint, filters and organization", () => {
  const firstCursor = async (path: string, key = tenant.key) => {
    const res = await get(server.url, path, key)
    expect(typeof res.body.nextCursor).toBe("string")
    return res.body.nextCursor as string
  }

  test("a malformed or tampered cursor is refused", async () => {
    const cursor = await firstCursor("/v1/incidents?limit=2")
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    const [body = "", mac = ""] = cursor.split(".")
    const flipped = `${body.slice(0, -2)}${body.at(-2) === "A" ? "B" : "A"}${body.at(-1)}.${mac}`
    for (const bad of ["x", "abc.def", `${body}.`, `${body}.${mac.slice(1)}A`, flipped, "", `${cursor}x`, "%00"]) {
      await expectInvalid(`/v1/incidents?limit=2&cursor=${bad}`, /^cursor (is malformed|must be)/)
    }
  })

  test("a cursor replayed with other filters or on another endpoint is refused", async () => {
    const incidentCursor = await firstCursor("/v1/incidents?limit=2&status=open")
    await expectInvalid(`/v1/incidents?limit=2&cursor=${incidentCursor}`, /issued for another endpoint, other filters/)
    await expectInvalid(`/v1/incidents?status=closed&cursor=${incidentCursor}`, /issued for another endpoint/)
    await expectInvalid(`/v1/events?cursor=${incidentCursor}`, /issued for another endpoint/)
    const eventCursor = await firstCursor("/v1/events?limit=2&severity=medium")
    await expectInvalid(`/v1/events?severity=high&cursor=${eventCursor}`, /issued for another endpoint/)
    await expectInvalid(`/v1/events?cursor=${eventCursor}`, /issued for another endpoint/)
    // Changing only the page size keeps the cursor valid.
    expect((await get(server.url, `/v1/events?limit=3&severity=medium&cursor=${eventCursor}`, tenant.key)).status).toBe(
      200,
    )
  })

  test("a cursor of organization A replayed with organization B's key is refused, never showing A's rows", async () => {
    const cursor = await firstCursor("/v1/incidents?limit=1")
    const res = await get(server.url, `/v1/incidents?limit=1&cursor=${cursor}`, other.key)
    expect(res.status).toBe(400)
    expect(res.body.code).toBe("invalid_request")
  })
})
