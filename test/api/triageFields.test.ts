import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AdminActor, asOperator, orgUser } from "../../src/admin/actor.ts"
import { IncidentAdmin } from "../../src/admin/IncidentAdmin.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { closeIncident, createSensor, createTenant, createUser, disableUser, get, idOf } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * The API's triage fields: closeReason, assignee and acknowledgedAt are read-only, changed only by a person's
 * acknowledge, assign and close (and the idle-close sweep, which leaves no reason); each change shows in
 * GET /v1/incidents/{id} and once in the incident feed, and a change that changes nothing writes no feed change.
 */

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }
let analyst: { id: string; email: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db, "Triage fields")
  sensor = await createSensor(db, tenant.orgId, "web-01")
  const made = await createUser(db, tenant.orgId, "owner@triage-fields.example", "analyst")
  analyst = { id: made.id, email: made.email }
}, 60_000)
afterAll(() => shutdown(server, db))

const newIncident = async (sourceIp: string): Promise<string> => {
  const res = await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp }))
  expect(res.status).toBe(200)
  return res.body.results[0].incidentId
}

/** Every change of the feed after `token`, and the token to follow on from. */
const drain = async (token: string | undefined) => {
  await olderWritersEnded(db)
  const items: Array<Json> = []
  let after = token
  for (;;) {
    const query = after === undefined ? "?limit=100" : `?limit=100&after=${encodeURIComponent(after)}`
    const res = await get(server.url, `/v1/incidents/changes${query}`, tenant.key)
    expect(res.status).toBe(200)
    items.push(...res.body.data)
    after = res.body.nextToken
    if (!res.body.hasMore) return { items, token: after as string }
  }
}

test("acknowledge and assign show in the incident and once each in the feed; repeating them writes no change", async () => {
  const id = await newIncident("198.51.100.40")
  const before = (await get(server.url, `/v1/incidents/${id}`, tenant.key)).body
  expect(before).toMatchObject({ closeReason: null, assignee: null, acknowledgedAt: null })
  let feed = await drain(undefined)

  const admin = (f: (a: IncidentAdmin) => Effect.Effect<unknown, unknown, AdminActor>) =>
    db.run(asOperator(Effect.flatMap(IncidentAdmin, f)))

  await admin((a) => a.acknowledge(tenant.orgId, [id]))
  const acknowledged = (await get(server.url, `/v1/incidents/${id}`, tenant.key)).body
  expect(typeof acknowledged.acknowledgedAt).toBe("string")
  expect(Math.abs(Date.parse(acknowledged.acknowledgedAt) - Date.now())).toBeLessThan(60_000)
  feed = await drain(feed.token).then((next) => {
    expect(next.items.map((c: Json) => c.id)).toEqual([id])
    expect(next.items[0].acknowledgedAt).toBe(acknowledged.acknowledgedAt)
    return next
  })

  // The first acknowledgement stands: a second writes nothing, and the feed has no change.
  await admin((a) => a.acknowledge(tenant.orgId, [id]))
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.acknowledgedAt).toBe(
    acknowledged.acknowledgedAt,
  )
  feed = await drain(feed.token).then((next) => {
    expect(next.items).toEqual([])
    return next
  })

  await admin((a) => a.assign(tenant.orgId, [id], analyst.id))
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.assignee).toBe(analyst.email)
  feed = await drain(feed.token).then((next) => {
    expect(next.items.map((c: Json) => [c.id, c.assignee, c.acknowledgedAt])).toEqual([
      [id, analyst.email, acknowledged.acknowledgedAt],
    ])
    return next
  })
  await admin((a) => a.assign(tenant.orgId, [id], analyst.id))
  feed = await drain(feed.token).then((next) => {
    expect(next.items).toEqual([])
    return next
  })
  await admin((a) => a.assign(tenant.orgId, [id], null))
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.assignee).toBeNull()
  feed = await drain(feed.token).then((next) => {
    expect(next.items.map((c: Json) => [c.id, c.assignee])).toEqual([[id, null]])
    return next
  })

  // A close with a reason: closeReason while closed, in the incident and its feed change.
  await closeIncident(db, id, "false_positive")
  const closed = (await get(server.url, `/v1/incidents/${id}`, tenant.key)).body
  expect(closed).toMatchObject({ status: "closed", closeReason: "false_positive" })
  const closedFeed = await drain(feed.token)
  expect(closedFeed.items.map((c: Json) => [c.id, c.status, c.closeReason])).toEqual([[id, "closed", "false_positive"]])
  // Re-opened by new activity: no reason shown while open.
  expect(await newIncident("198.51.100.40")).toBe(id)
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body).toMatchObject({
    status: "open",
    closeReason: null,
  })
})

test("an unknown id, another organization's, or a disabled assignee: refused and nothing written", async () => {
  const id = await newIncident("198.51.100.41")
  const other = await createTenant(db, "Triage fields other")
  const otherSensor = await createSensor(db, other.orgId, "other-01")
  const foreign = (await ingest(server.ingestUrl, "events", otherSensor.token, nativeEvent({ sourceIp: "192.0.2.9" })))
    .body.results[0].incidentId as string
  const run = (f: (a: IncidentAdmin) => Effect.Effect<unknown, unknown, AdminActor>) =>
    db.run(Effect.either(asOperator(Effect.flatMap(IncidentAdmin, f))))
  const triageRows = () =>
    db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ n: number }>`select count(*)::int as n from incident_triage where incident_id in (${id}, ${foreign})`,
      ),
    )
  // A foreign id beside one of the organization's: the whole change is refused, the organization's incident untouched.
  const mixed: Json = await run((a) => a.acknowledge(tenant.orgId, [id, foreign]))
  expect(mixed._tag).toBe("Left")
  expect(mixed.left).toMatchObject({ _tag: "NotFound", field: "incident", id: foreign })
  const unknown: Json = await run((a) => a.assign(tenant.orgId, [id, "inc_01JZZZZZZZZZZZZZZZZZZZZZZZ"], analyst.id))
  expect(unknown.left).toMatchObject({ _tag: "NotFound", field: "incident" })
  const tooMany: Json = await run((a) =>
    a.acknowledge(
      tenant.orgId,
      Array.from({ length: 101 }, (_, i) => `inc_01JZZZZZZZZZZZZZZZZZZZZ${String(i).padStart(3, "0")}`),
    ),
  )
  expect(tooMany.left).toMatchObject({ _tag: "Invalid", reason: "malformed" })
  const otherUser = await createUser(db, other.orgId, "stranger@triage-fields.example", "analyst")
  const foreignUser: Json = await run((a) => a.assign(tenant.orgId, [id], otherUser.id))
  expect(foreignUser.left).toMatchObject({ _tag: "Invalid", field: "assignee" })
  const off = await createUser(db, tenant.orgId, "gone@triage-fields.example", "analyst")
  await disableUser(db, off.id)
  const disabled: Json = await run((a) => a.assign(tenant.orgId, [id], off.id))
  expect(disabled.left).toMatchObject({ _tag: "Invalid", field: "assignee" })
  expect((await triageRows())[0]?.n).toBe(0)
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body).toMatchObject({
    assignee: null,
    acknowledgedAt: null,
  })
  // A console user of the organization cannot reach another organization's incident at all.
  const user = orgUser({
    id: idOf("consoleUser", analyst.id),
    ip: null,
    orgId: idOf("organization", tenant.orgId),
    role: "analyst",
  })
  const asUser: Json = await db.run(
    Effect.either(
      Effect.provideService(
        Effect.flatMap(IncidentAdmin, (a) => a.acknowledge(undefined, [foreign])),
        AdminActor,
        user,
      ),
    ),
  )
  expect(asUser.left).toMatchObject({ _tag: "NotFound", field: "incident" })
})

test("the idle-close sweep closes with no reason: a re-opened incident's earlier reason is not shown again", async () => {
  const id = await newIncident("198.51.100.42")
  await closeIncident(db, id, "authorized_test")
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.closeReason).toBe("authorized_test")
  // New activity re-opens it; then a server whose sweep closes after a second of quiet (last in this file: it
  // closes every open incident of this database that is quiet by then).
  expect(await newIncident("198.51.100.42")).toBe(id)
  const sweeper = await startServer({
    env: { ...server.env, INCIDENT_IDLE_CLOSE: "1 seconds", INCIDENT_IDLE_CLOSE_EVERY: "250 millis" },
  })
  try {
    let body = (await get(server.url, `/v1/incidents/${id}`, tenant.key)).body
    for (let i = 0; i < 40 && body.status !== "closed"; i++) {
      await Bun.sleep(250)
      body = (await get(server.url, `/v1/incidents/${id}`, tenant.key)).body
    }
    expect(body).toMatchObject({ status: "closed", closeReason: null })
    const stored = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ closeReason: string | null }>`select close_reason from incidents where id = ${id}`,
      ),
    )
    expect(stored).toEqual([{ closeReason: null }])
  } finally {
    await shutdown(sweeper)
  }
})
