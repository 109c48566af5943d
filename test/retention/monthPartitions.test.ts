import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId } from "../../src/domain/ids.ts"
import { purgeOnce } from "../../src/jobs/retention.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Events live in month partitions (sql/0044): retention drops a month whose every event is past its organization's
 * window in one statement, keeps a month that still holds a kept event, and ingestion goes on while a month goes.
 * A sensor's event id stays stored once whatever time a resend carries, and an event is found by its id whichever
 * month holds it. Real PostgreSQL, the real purge, the real server.
 */

const DAY = 86_400_000
let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  // The server's own purge never judges these rows (its windows are as long as allowed); the tests' purge uses 365.
  const env = await testEnv({ RETENTION_DAYS: "100000", FEED_RETENTION_DAYS: "100000" })
  server = await startServer({ env })
  db = testDatabase({ ...env, RETENTION_DAYS: "365", FEED_RETENTION_DAYS: "30" })
}, 60_000)

afterAll(async () => {
  await shutdown(server, db)
})

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, SqlClient.SqlClient>)

const one = <A>(query: string, ...params: Array<unknown>) =>
  sqlRun((sql) => Effect.map(sql.unsafe<{ v: A }>(query, params), (rows) => rows[0]?.v))

/** The month partition name of a time (UTC), as sql/0044 names them. */
const monthName = (at: Date) => `events_${at.toISOString().slice(0, 7).replace("-", "_")}`

/** Makes the month partitions from `fromDays` to `toDays` days ago (as the migration does for a new database). */
const ensureMonths = (fromDays: number, toDays: number) =>
  one<number>(
    "select month_partitions_ensure($1::timestamptz, $2::timestamptz) as v",
    new Date(Date.now() - fromDays * DAY),
    new Date(Date.now() - toDays * DAY),
  )

const partitionOf = (eventId: string) =>
  one<string>("select tableoid::regclass::text as v from events where id = $1", eventId)

/** Moves an incident's events (stored and happened) and the incident itself to `at`. */
const ageTo = (incidentId: string, at: Date) =>
  sqlRun((sql) =>
    Effect.gen(function* () {
      yield* sql`update events set received_at = ${at}, time = ${at} where incident_id = ${incidentId}`
      yield* sql`update event_keys set received_at = ${at}
        where event_id in (select id from events where incident_id = ${incidentId})`
      yield* sql`update incidents set first_seen_at = ${at}, last_seen_at = ${at} where id = ${incidentId}`
    }),
  )

describe("month partitions of events", () => {
  test("a month whose every event is past its organization's window is dropped whole, with its keys, its empty incidents and a feed mark past its changes", async () => {
    const tenant = await createTenant(db, "Months A")
    const sensor = await createSensor(db, tenant.orgId)
    const key = await createKey(db, tenant.orgId, "events:read")
    // Each test uses its own month (more than 31 days from the others'). 430 days ago is outside the 365-day window.
    await ensureMonths(440, 420)
    const at = new Date(Date.now() - 430 * DAY)
    const old = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "198.51.100.10",
      events: [{ time: new Date() }, { time: new Date() }, { time: new Date() }],
    })
    await ageTo(old.incident.id, at)
    expect(await partitionOf(old.events[0]?.id ?? "")).toBe(monthName(at))
    // A token from before the month's changes: after the drop it must be told they are gone (410), not skip them.
    await olderWritersEnded(db)
    const before = await get(server.url, "/v1/events/changes?from=2000-01-01T00:00:00Z&limit=1", key.key)
    expect(before.status).toBe(200)

    const counts = await db.run(purgeOnce)
    expect(counts.months).toBeGreaterThanOrEqual(1)
    expect(counts.events).toBeGreaterThanOrEqual(3)
    expect(await one<string | null>("select to_regclass($1)::text as v", monthName(at))).toBeNull()
    expect(await one<number>("select count(*)::int as v from incidents where id = $1", old.incident.id)).toBe(0)
    expect(
      await one<number>(
        "select count(*)::int as v from event_keys where event_id = any($1::text[])",
        old.events.map((e) => e.id),
      ),
    ).toBe(0)
    const after = await get(
      server.url,
      `/v1/events/changes?after=${encodeURIComponent(before.body.nextToken)}&limit=10`,
      key.key,
    )
    expect(after.status).toBe(410)
    expect(after.body.code).toBe("token_expired")
  })

  test("a month that still holds one event inside its window stays; its expired events go by batches", async () => {
    const tenant = await createTenant(db, "Months B")
    const sensor = await createSensor(db, tenant.orgId)
    await ensureMonths(405, 385)
    const at = new Date(Date.now() - 395 * DAY)
    const old = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "198.51.100.20",
      events: [{ time: new Date() }, { time: new Date() }],
    })
    await ageTo(old.incident.id, at)
    // One of them arrived late: its time is in the old month, but it was stored yesterday.
    const late = old.events[1]?.id ?? ""
    await sqlRun((sql) => sql`update events set received_at = ${new Date(Date.now() - DAY)} where id = ${late}`)

    await db.run(purgeOnce)
    expect(await one<string | null>("select to_regclass($1)::text as v", monthName(at))).toBe(monthName(at))
    expect(await one<number>("select count(*)::int as v from events where id = $1", old.events[0]?.id)).toBe(0)
    expect(await one<number>("select count(*)::int as v from events where id = $1", late)).toBe(1)
  })

  test("an organization with a longer window keeps the month for its events", async () => {
    const tenant = await createTenant(db, "Months C")
    const sensor = await createSensor(db, tenant.orgId)
    await sqlRun((sql) => sql`update organizations set retention_days = 1000 where id = ${tenant.orgId}`)
    await ensureMonths(570, 550)
    const at = new Date(Date.now() - 560 * DAY)
    const kept = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "198.51.100.30",
      events: [{ time: new Date() }],
    })
    await ageTo(kept.incident.id, at)
    await db.run(purgeOnce)
    expect(await partitionOf(kept.events[0]?.id ?? "")).toBe(monthName(at))
  })

  test("ingestion through the real server goes on while a month is dropped: every event accepted is stored", async () => {
    const tenant = await createTenant(db, "Months D")
    const sensor = await createSensor(db, tenant.orgId)
    await ensureMonths(510, 490)
    const at = new Date(Date.now() - 500 * DAY)
    const old = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "198.51.100.40",
      events: Array.from({ length: 50 }, () => ({ time: new Date() })),
    })
    await ageTo(old.incident.id, at)
    const sending = Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        ingest(server.ingestUrl, "events", sensor.token, [
          nativeEvent({ sourceIp: `203.0.113.${i + 1}`, sensorEventId: `during-${i}` }),
        ]),
      ),
    )
    const [answers] = await Promise.all([sending, db.run(purgeOnce)])
    for (const answer of answers) expect(answer.status).toBe(200)
    expect(await one<string | null>("select to_regclass($1)::text as v", monthName(at))).toBeNull()
    expect(
      await one<number>(
        "select count(*)::int as v from events where sensor_id = $1 and sensor_event_id like 'during-%'",
        sensor.id,
      ),
    ).toBe(20)
  })

  test("a resend with another time is still a duplicate: a sensor's event id is stored once whatever month it names", async () => {
    const tenant = await createTenant(db, "Months E")
    const sensor = await createSensor(db, tenant.orgId)
    const first = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "203.0.113.50", sensorEventId: "resent-1", time: new Date().toISOString() }),
    ])
    expect(first.status).toBe(200)
    const earlier = new Date(Date.now() - 40 * DAY).toISOString()
    const again = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "203.0.113.50", sensorEventId: "resent-1", time: earlier }),
    ])
    expect(again.status).toBe(200)
    expect(again.body.results[0]).toMatchObject({ status: "duplicate", id: first.body.results[0].id })
    expect(
      await one<number>(
        "select count(*)::int as v from events where sensor_id = $1 and sensor_event_id = 'resent-1'",
        sensor.id,
      ),
    ).toBe(1)
  })

  test("an event is found by its id whichever month holds it, even one whose time no longer matches its id", async () => {
    const tenant = await createTenant(db, "Months F")
    const sensor = await createSensor(db, tenant.orgId)
    const key = await createKey(db, tenant.orgId, "events:read")
    const seeded = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "198.51.100.60",
      events: [{ time: new Date() }, { time: new Date() }],
    })
    const [same, moved] = seeded.events
    await sqlRun(
      (sql) => sql`update events set time = ${new Date(Date.now() - 45 * DAY)} where id = ${moved?.id ?? ""}`,
    )
    for (const event of [same, moved]) {
      const found = await get(server.url, `/v1/events/${event?.id}`, key.key)
      expect({ status: found.status, id: found.body.id }).toEqual({ status: 200, id: event?.id })
    }
    const missing = await get(server.url, `/v1/events/${newId("event", Date.now() - 45 * DAY)}`, key.key)
    expect(missing.status).toBe(404)
  })
})
