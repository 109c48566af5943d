import { afterAll, beforeAll, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { eventually } from "../support/eventually.ts"
import { createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string; keyId: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  const sensor = await createSensor(db, tenant.orgId)
  for (let i = 0; i < 3; i++) {
    await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: `192.0.2.${i}`,
      events: [{ time: new Date(Date.UTC(2026, 10, 1, i)) }],
    })
  }
})

afterAll(() => shutdown(server, db))

test("one JSON access-log line per request; never the key, the Authorization header or a cursor", async () => {
  const first = await get(server.url, "/v1/incidents?limit=1", tenant.key)
  const cursor = first.body.nextCursor as string
  await get(server.url, `/v1/incidents?limit=1&cursor=${cursor}`, tenant.key)
  await get(server.url, "/v1/incidents", `${tenant.key}x`)
  await get(server.url, "/v1/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV?token=abc", tenant.key)
  await fetch(`${server.url}/v1/events`, { method: "DELETE", headers: { authorization: `Bearer ${tenant.key}` } })
  // A request's line is written as its answer ends: wait for the fifth, not for a guessed time.
  await eventually("five request lines", () => server.logs.filter((l) => l.includes('"message":"request"')).length >= 5)
  const lines = server.logs.map(
    (l) => JSON.parse(l) as { message: string; timestamp: string; annotations: Record<string, unknown> },
  )
  const requests: Array<Record<string, unknown>> = lines
    .filter((l) => l.message === "request")
    .map((l) => ({ ...l.annotations, timestamp: l.timestamp }))
  expect(requests).toHaveLength(5)
  expect(requests[0]).toMatchObject({
    method: "GET",
    route: "/v1/incidents",
    status: 200,
    orgId: tenant.orgId,
    keyId: tenant.keyId,
    clientIp: "127.0.0.1",
  })
  expect(typeof requests[0]?.durationMs).toBe("number")
  expect(requests[0]?.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T/)
  expect(requests[2]).toMatchObject({ route: "/v1/incidents", status: 401, orgId: null, keyId: null })
  expect(requests[3]).toMatchObject({ route: "/v1/incidents/:id", status: 404, orgId: tenant.orgId })
  expect(requests[4]).toMatchObject({ method: "DELETE", route: "/v1/events", status: 405 })
  const all = server.logs.join("\n")
  const secret = tenant.key.slice(`dsk_${tenant.keyId}_`.length)
  for (const forbidden of [
    tenant.key,
    secret,
    cursor,
    cursor.split(".")[0] as string,
    "authorization",
    "Bearer",
    "token=abc",
  ]) {
    expect({ forbidden, found: all.includes(forbidden) }).toEqual({ forbidden, found: false })
  }
})

test("unknown paths and methods on both listeners answer problem bodies and log no ERROR line (they are not defects)", async () => {
  const before = server.logs.length
  expect((await fetch(`${server.url}/nope`)).status).toBe(404)
  expect((await fetch(`${server.ingestUrl}/nope`, { method: "POST" })).status).toBe(404)
  expect((await fetch(`${server.ingestUrl}/ingest/v1/events`)).status).toBe(405)
  expect((await fetch(`${server.url}/v1/incidents`, { method: "POST" })).status).toBe(405)
  await Bun.sleep(200)
  const errors = server.logs.slice(before).filter((l) => (JSON.parse(l) as { logLevel: string }).logLevel === "ERROR")
  expect(errors).toEqual([])
})
