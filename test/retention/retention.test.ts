import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Chunk, ConfigProvider, Deferred, Duration, Effect, Either, Layer, TestClock, TestContext } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { OrgAdmin } from "../../src/admin/OrgAdmin.ts"
import { newId } from "../../src/domain/ids.ts"
import { PURGE_BATCH, purgeOnce, RETENTION_EVERY, RetentionLive } from "../../src/jobs/retention.ts"
import { formatConfigError, loadSettings } from "../../src/platform/config.ts"
import { admin } from "../support/cli.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Retention: the purge (src/jobs/retention.ts) against the real PostgreSQL through the real repositories, its
 * fiber on the TestClock, ingestion through the real server while it runs, and 410 token_expired through the real
 * API. Ages are set by moving rows' times back in SQL: the purge reads the clock, never the row's own idea of "now".
 */

const DAY = 86_400_000
let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  // The server runs its own purge at start-up, and that pass can begin after the first test has made its
  // organizations and aged its rows: with the default windows it would delete them before the test looks. Its windows
  // here are as long as allowed, so every purge the tests judge is theirs (`purge()`, on the 365/30-day windows below).
  const env = await testEnv({ RETENTION_DAYS: "100000", FEED_RETENTION_DAYS: "100000" })
  server = await startServer({ env })
  // WEBHOOK_ALLOW_PRIVATE: a channel on a loopback address can be made (it is never sent to here).
  db = testDatabase({ ...env, RETENTION_DAYS: "365", FEED_RETENTION_DAYS: "30", WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" })
}, 60_000)

afterAll(async () => {
  await shutdown(server, db)
})

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, SqlClient.SqlClient>)

/** Moves an incident's events (stored and happened) and the incident itself `days` into the past. */
const age = (incidentId: string, days: number) => ageTo(incidentId, Date.now() - days * DAY)
const ageTo = (incidentId: string, atMs: number) =>
  sqlRun((sql) =>
    Effect.gen(function* () {
      const at = new Date(atMs)
      yield* sql`update events set received_at = ${at}, time = ${at} where incident_id = ${incidentId}`
      yield* sql`update incidents set first_seen_at = ${at}, last_seen_at = ${at} where id = ${incidentId}`
    }),
  )

const count = (query: string, ...params: Array<unknown>) =>
  sqlRun((sql) => Effect.map(sql.unsafe<{ n: number }>(query, params), (rows) => Number(rows[0]?.n ?? 0)))

const eventsOf = (incidentId: string) => count("select count(*) as n from events where incident_id = $1", incidentId)
const incidentExists = (id: string) => count("select count(*) as n from incidents where id = $1", id)

const setRetention = (orgId: string, days: string) =>
  db.run(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.setRetention(orgId, days))))

const purge = () => db.run(purgeOnce)

const oneEvent = (orgId: string, sensorId: string, sourceIp: string) =>
  seedIncident(db, { orgId, sensorId, sourceIp, events: [{ time: new Date() }] })

describe("retention purge", () => {
  test("deletes only events stored before the window; an incident left empty goes with its transitions, notes and deliveries; a partly old one stays; a per-organization override is honoured both ways; another organization is untouched", async () => {
    const a = await createTenant(db, "Keeper A")
    const b = await createTenant(db, "Longer B")
    const c = await createTenant(db, "Shorter C")
    const sa = await createSensor(db, a.orgId)
    const sb = await createSensor(db, b.orgId)
    const sc = await createSensor(db, c.orgId)
    await setRetention(b.orgId, "1000")
    await setRetention(c.orgId, "5")

    // A: X all 400 days old (goes); Y one old and one new event (stays with its new one); W 364 days old (kept).
    const x = await seedIncident(db, {
      orgId: a.orgId,
      sensorId: sa.id,
      sourceIp: "198.51.100.1",
      events: [{ time: new Date() }, { time: new Date() }],
    })
    await age(x.incident.id, 400)
    const y = await seedIncident(db, {
      orgId: a.orgId,
      sensorId: sa.id,
      sourceIp: "198.51.100.2",
      events: [{ time: new Date() }, { time: new Date() }],
    })
    await sqlRun(
      (sql) =>
        sql`update events set received_at = ${new Date(Date.now() - 400 * DAY)} where id = ${y.events[0]?.id ?? ""}`,
    )
    const w = await oneEvent(a.orgId, sa.id, "198.51.100.3")
    await age(w.incident.id, 364)
    // B (1000 days): 400 days is inside its window. C (5 days): 10 days is outside.
    const z = await oneEvent(b.orgId, sb.id, "198.51.100.4")
    await age(z.incident.id, 400)
    const v = await oneEvent(c.orgId, sc.id, "198.51.100.5")
    await age(v.incident.id, 10)
    const v2 = await oneEvent(c.orgId, sc.id, "198.51.100.6")
    await age(v2.incident.id, 4)

    // X has a transition, a note and a delivery with an attempt: all refer to it and must go first.
    const channel = await createChannel(db, a.orgId, "https://127.0.0.1:9/hooks")
    const transitionId = newId("transition")
    const deliveryId = newId("webhookDelivery")
    await sqlRun((sql) =>
      Effect.gen(function* () {
        const at = new Date(Date.now() - 400 * DAY)
        yield* sql`insert into incident_transitions (id, org_id, incident_id, kind, to_severity, at)
          values (${transitionId}, ${a.orgId}, ${x.incident.id}, 'created', 'medium', ${at})`
        yield* sql`insert into incident_notes (id, org_id, incident_id, author, body, created_at)
          values (${newId("incidentNote")}, ${a.orgId}, ${x.incident.id}, 'cli', 'old note', ${at})`
        yield* sql`insert into webhook_deliveries (id, org_id, channel_id, transition_id, type, incident_id, status,
            next_attempt_at, created_at)
          values (${deliveryId}, ${a.orgId}, ${channel.id}, ${transitionId}, 'incident.created', ${x.incident.id},
            'succeeded', ${at}, ${at})`
        yield* sql`insert into webhook_delivery_attempts (id, delivery_id, attempt, started_at, duration_ms, status_code)
          values (${newId("deliveryAttempt")}, ${deliveryId}, 1, ${at}, 10, 200)`
      }),
    )

    await purge()

    expect(await eventsOf(x.incident.id)).toBe(0)
    expect(await incidentExists(x.incident.id)).toBe(0)
    expect(await count("select count(*) as n from incident_transitions where incident_id = $1", x.incident.id)).toBe(0)
    expect(await count("select count(*) as n from incident_notes where incident_id = $1", x.incident.id)).toBe(0)
    expect(await count("select count(*) as n from webhook_deliveries where id = $1", deliveryId)).toBe(0)
    expect(await count("select count(*) as n from webhook_delivery_attempts where delivery_id = $1", deliveryId)).toBe(
      0,
    )
    expect(await eventsOf(y.incident.id)).toBe(1)
    expect(await count("select count(*) as n from events where id = $1", y.events[1]?.id)).toBe(1)
    expect(await incidentExists(y.incident.id)).toBe(1)
    expect(await eventsOf(w.incident.id)).toBe(1)
    expect(await eventsOf(z.incident.id)).toBe(1)
    expect(await incidentExists(z.incident.id)).toBe(1)
    expect(await eventsOf(v.incident.id)).toBe(0)
    expect(await incidentExists(v.incident.id)).toBe(0)
    expect(await eventsOf(v2.incident.id)).toBe(1)
    // The channel itself is the organization's, not the incident's.
    expect(await count("select count(*) as n from webhook_channels where id = $1", channel.id)).toBe(1)
  }, 60_000)

  test("a window an admin lengthens while a pass is under way holds for that pass: the pass reads each organization's retention when it deletes, not when it began", async () => {
    const t = await createTenant(db, "Lengthened")
    const st = await createSensor(db, t.orgId)
    const old = await oneEvent(t.orgId, st.id, "198.51.100.7")
    await age(old.incident.id, 400)
    // The pass is held on its first organization's Cowrie step (every organization before this new one is first) by a
    // lock another transaction takes; the window is lengthened while it waits, then the lock is let go.
    const release = Effect.runSync(Deferred.make<void>())
    const locked = Effect.runSync(Deferred.make<void>())
    const holding = sqlRun((sql) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`lock table cowrie_session_events in access exclusive mode`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        }),
      ),
    )
    await Effect.runPromise(Deferred.await(locked))
    const pass = purge()
    const waiting = () =>
      count(`select count(*) as n from pg_locks l join pg_class c on c.oid = l.relation
        where c.relname = 'cowrie_session_events' and not l.granted`)
    const until = Date.now() + 10_000
    while ((await waiting()) === 0 && Date.now() < until) await Bun.sleep(20)
    expect(await waiting()).toBeGreaterThan(0)
    await setRetention(t.orgId, "1000")
    await Effect.runPromise(Deferred.succeed(release, undefined))
    await holding
    await pass
    expect(await eventsOf(old.incident.id)).toBe(1)
    expect(await incidentExists(old.incident.id)).toBe(1)
  }, 60_000)

  test("an organization's retention is set by an admin, audited, and refused unless a whole number of days from 1 (0 is refused); blank returns to RETENTION_DAYS", async () => {
    const t = await createTenant(db, "Settings T")
    for (const bad of ["0", "-1", "1.5", "abc", "100001"]) {
      const result = await db.run(
        Effect.either(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.setRetention(t.orgId, bad)))),
      )
      expect({ bad, refused: Either.isLeft(result) }).toEqual({ bad, refused: true })
    }
    expect((await setRetention(t.orgId, "90")).retentionDays).toBe(90)
    expect((await setRetention(t.orgId, "")).retentionDays).toBeNull()
    const audit = await sqlRun((sql) =>
      Effect.map(
        sql<{ detail: string }>`select detail from audit_log where org_id = ${t.orgId} and action = 'org.retention'
          order by id`,
        (rows) => rows.map((r) => r.detail),
      ),
    )
    expect(audit).toEqual(["default -> 90", "90 -> default"])
  }, 30_000)

  test("the operator sets an organization's retention with the CLI (org retention <org-id> <days|default>), audited; a bad value is one line, nothing changed", async () => {
    const t = await createTenant(db, "Retention by CLI")
    const retentionOf = () =>
      sqlRun(
        (sql) => sql<{ days: number | null }>`select retention_days as days from organizations where id = ${t.orgId}`,
      )
    const set = await admin(server.env, ["org", "retention", t.orgId, "30", "--json"])
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "" })
    expect(JSON.parse(set.stdout)).toEqual({ id: t.orgId, retentionDays: 30 })
    expect((await retentionOf())[0]?.days).toBe(30)
    const refused = await admin(server.env, ["org", "retention", t.orgId, "0"])
    expect(refused.code).toBe(1)
    expect(refused.stderr.split("\n")).toHaveLength(1)
    expect(refused.stderr).toContain("whole number of days")
    expect((await retentionOf())[0]?.days).toBe(30)
    const back = await admin(server.env, ["org", "retention", t.orgId, "default"])
    expect(back.code).toBe(0)
    expect(back.stdout).toContain("RETENTION_DAYS")
    expect((await retentionOf())[0]?.days).toBe(null)
    const audit = await sqlRun(
      (sql) => sql<{
        detail: string
      }>`select detail from audit_log where org_id = ${t.orgId} and action = 'org.retention'
        order by at, id`,
    )
    expect(audit.map((a) => a.detail)).toEqual(["default -> 30", "30 -> default"])
  }, 60_000)

  test("the fiber purges at start-up and every hour by the clock: an event 30 minutes short of the window is kept by the first pass and deleted by the pass an hour later", async () => {
    const t = await createTenant(db, "Clock T")
    const s = await createSensor(db, t.orgId)
    const old = await oneEvent(t.orgId, s.id, "198.51.100.20")
    await age(old.incident.id, 400)
    const edge = await oneEvent(t.orgId, s.id, "198.51.100.21")
    const start = Date.now()
    // Stored 365 days minus 30 minutes before `start`.
    await ageTo(edge.incident.id, start - 365 * DAY + 30 * 60_000)
    const every = Duration.toMillis(RETENTION_EVERY)
    const sleepsUntil = (at: number) =>
      Effect.gen(function* () {
        const deadline = Date.now() + 20_000
        for (;;) {
          if (Chunk.toReadonlyArray(yield* TestClock.sleeps()).includes(at)) return
          if (Date.now() > deadline) return yield* Effect.dieMessage(`no sleep until ${at}`)
          yield* Effect.promise(() => Bun.sleep(10))
        }
      })
    const seen = await db.run(
      Effect.scoped(
        Effect.gen(function* () {
          yield* TestClock.setTime(start)
          yield* Layer.build(RetentionLive)
          yield* sleepsUntil(start + every)
          const first = {
            old: yield* Effect.promise(() => eventsOf(old.incident.id)),
            edge: yield* Effect.promise(() => eventsOf(edge.incident.id)),
          }
          yield* TestClock.adjust(every)
          yield* sleepsUntil(start + 2 * every)
          return { first, later: yield* Effect.promise(() => eventsOf(edge.incident.id)) }
        }),
      ).pipe(Effect.provide(TestContext.TestContext)),
    )
    expect(seen.first).toEqual({ old: 0, edge: 1 })
    expect(seen.later).toBe(0)
    expect(await incidentExists(edge.incident.id)).toBe(0)
  }, 60_000)

  test("ingestion through the real server during a purge of several batches loses nothing new: every event accepted is stored, in an incident that exists", async () => {
    const t = await createTenant(db, "Busy T")
    const sensor = await createSensor(db, t.orgId)
    const ips = ["198.51.100.30", "198.51.100.31", "198.51.100.32"]
    // Old incidents on the very addresses being ingested, with 3.5 batches of old events between them.
    const oldIncidents: Array<string> = []
    for (const ip of ips) {
      const seeded = await oneEvent(t.orgId, sensor.id, ip)
      oldIncidents.push(seeded.incident.id)
    }
    const perIncident = Math.ceil((PURGE_BATCH * 3.5) / ips.length)
    await sqlRun((sql) =>
      Effect.gen(function* () {
        for (const incidentId of oldIncidents) {
          const ids = Array.from({ length: perIncident }, () => newId("event"))
          yield* sql`
            insert into events (id, org_id, incident_id, sensor_id, sensor_event_id, time, source_ip, source_port, service,
              port, type, action, severity, confidence, summary, received_at)
            select e.id, i.org_id, i.id, i.sensor_id, 'old-' || e.id, now(), i.source_ip, 40000, 'ssh', 22,
              'ssh.login_attempt', 'login', 'medium', 'normal', 'old', now()
            from incidents i, jsonb_array_elements_text(${JSON.stringify(ids)}::text::jsonb) as e(id)
            where i.id = ${incidentId}`
        }
      }),
    )
    for (const id of oldIncidents) await age(id, 400)
    const oldTotal = await count("select count(*) as n from events where org_id = $1", t.orgId)
    expect(oldTotal).toBe(ips.length * (perIncident + 1))

    const sent: Array<string> = []
    let sending = true
    const sender = (async () => {
      let i = 0
      while (sending || i < 20) {
        const batch = ips.map((ip) => nativeEvent({ sourceIp: ip, sensorEventId: `new-${i}-${ip}` }))
        const res = await ingest(server.ingestUrl, "events", sensor.token, batch)
        expect(res.status).toBe(200)
        for (const e of batch) sent.push(e.sensorEventId)
        i++
      }
    })()
    const counts = await purge()
    sending = false
    await sender

    expect(counts.events).toBeGreaterThanOrEqual(oldTotal)
    expect(
      await count(
        "select count(*) as n from events where org_id = $1 and received_at < now() - interval '1 day'",
        t.orgId,
      ),
    ).toBe(0)
    const stored = await sqlRun((sql) =>
      Effect.map(
        sql<{ sensorEventId: string; incidentId: string | null; incidentExists: boolean }>`
          select e.sensor_event_id, e.incident_id, exists (select 1 from incidents i where i.id = e.incident_id) as incident_exists
          from events e where e.org_id = ${t.orgId}`,
        (rows) => rows,
      ),
    )
    expect(stored.map((r) => r.sensorEventId).sort()).toEqual([...sent].sort())
    expect(stored.every((r) => r.incidentExists)).toBe(true)
    expect(sent.length).toBeGreaterThanOrEqual(60)
  }, 120_000)

  test("a feed token from before purged changes gets 410 token_expired (problem+json, detail says to start again with from) on both feeds; a token already past them still works; a first call with from works", async () => {
    const t = await createTenant(db, "Feed T")
    const s = await createSensor(db, t.orgId)
    const first = await seedIncident(db, {
      orgId: t.orgId,
      sensorId: s.id,
      sourceIp: "198.51.100.40",
      events: [{ time: new Date() }, { time: new Date() }],
    })
    await seedIncident(db, {
      orgId: t.orgId,
      sensorId: s.id,
      sourceIp: "198.51.100.41",
      events: [{ time: new Date() }],
    })

    // A follower part-way (one change read, more to come) and one that has read everything.
    await olderWritersEnded(db)
    const partIncidents = await get(server.url, "/v1/incidents/changes?limit=1", t.key)
    expect(partIncidents.status).toBe(200)
    expect(partIncidents.body.hasMore).toBe(true)
    const partEvents = await get(server.url, "/v1/events/changes?limit=1", t.key)
    expect(partEvents.body.hasMore).toBe(true)

    // Every incident change of this organization written 40 days ago (past FEED_RETENTION_DAYS), and the first
    // incident's events stored 400 days ago (past RETENTION_DAYS).
    await age(first.incident.id, 400)
    // A follower that has read every change so far (the ageing above is one too): nothing it has not seen goes.
    await olderWritersEnded(db)
    const doneIncidents = (await get(server.url, "/v1/incidents/changes?limit=100", t.key)).body
    expect(doneIncidents.hasMore).toBe(false)
    await sqlRun(
      (sql) =>
        sql`update incident_changes set changed_at = ${new Date(Date.now() - 40 * DAY)} where org_id = ${t.orgId}`,
    )
    // Before the purge the token is still good.
    const before = await get(
      server.url,
      `/v1/incidents/changes?after=${encodeURIComponent(partIncidents.body.nextToken)}`,
      t.key,
    )
    expect(before.status).toBe(200)
    await purge()
    expect(await count("select count(*) as n from incident_changes where org_id = $1", t.orgId)).toBe(0)

    for (const [feed, token] of [
      ["incidents", partIncidents.body.nextToken],
      ["events", partEvents.body.nextToken],
    ] as const) {
      const res = await get(server.url, `/v1/${feed}/changes?after=${encodeURIComponent(token)}`, t.key)
      expect({ feed, status: res.status }).toEqual({ feed, status: 410 })
      expect(res.headers.get("content-type")).toContain("application/problem+json")
      expect(res.body).toMatchObject({ type: "about:blank", title: "Gone", status: 410, code: "token_expired" })
      expect(res.body.detail).toContain("from")
    }
    const caughtUp = await get(
      server.url,
      `/v1/incidents/changes?after=${encodeURIComponent(doneIncidents.nextToken)}`,
      t.key,
    )
    expect(caughtUp.status).toBe(200)
    const again = await get(
      server.url,
      `/v1/events/changes?from=${encodeURIComponent(new Date(Date.now() - DAY).toISOString())}`,
      t.key,
    )
    expect(again.status).toBe(200)
    // What is left of the events feed: the second incident's event only.
    expect(again.body.data).toHaveLength(1)
  }, 60_000)
})

describe("feed marks from another cluster", () => {
  test("a purge mark past the horizon (as a backup restored into another cluster leaves it) answers no 410 and is cleared by the next purge", async () => {
    const t = await createTenant(db, "Restored T")
    const s = await createSensor(db, t.orgId)
    await seedIncident(db, {
      orgId: t.orgId,
      sensorId: s.id,
      sourceIp: "198.51.100.50",
      events: [{ time: new Date() }, { time: new Date() }],
    })
    await olderWritersEnded(db)
    const part = await get(server.url, "/v1/events/changes?limit=1", t.key)
    expect(part.body.hasMore).toBe(true)
    await sqlRun(
      (sql) => sql`insert into feed_purges (org_id, feed, purged_xid, purged_seq)
        values (${t.orgId}, 'events/changes', '18446744073709551615', 0)`,
    )
    const res = await get(server.url, `/v1/events/changes?after=${encodeURIComponent(part.body.nextToken)}`, t.key)
    expect(res.status).toBe(200)
    expect(res.body.data).toHaveLength(1)
    await purge()
    expect(await count("select count(*) as n from feed_purges where org_id = $1", t.orgId)).toBe(0)
  }, 30_000)
})

describe("settings", () => {
  const settingsWith = (vars: Record<string, string>) =>
    Effect.runPromise(
      Effect.either(
        loadSettings.pipe(
          Effect.withConfigProvider(
            ConfigProvider.fromMap(new Map(Object.entries({ DATABASE_URL: "postgres://db/x", ...vars }))),
          ),
        ),
      ),
    )

  test("RETENTION_DAYS and FEED_RETENTION_DAYS default to 365 and 30 and take a whole number of days", async () => {
    const defaults = await settingsWith({})
    expect(Either.isRight(defaults) && [defaults.right.retentionDays, defaults.right.feedRetentionDays]).toEqual([
      365, 30,
    ])
    const set = await settingsWith({ RETENTION_DAYS: "90", FEED_RETENTION_DAYS: " 7 " })
    expect(Either.isRight(set) && [set.right.retentionDays, set.right.feedRetentionDays]).toEqual([90, 7])
  })

  test("0, negatives, fractions, words and more than 100000 are refused with the variable's name and what it allows", async () => {
    for (const name of ["RETENTION_DAYS", "FEED_RETENTION_DAYS"]) {
      for (const bad of ["0", "-5", "1.5", "a year", "", "100001"]) {
        const result = await settingsWith({ [name]: bad })
        expect(Either.isLeft(result)).toBe(true)
        if (Either.isLeft(result)) {
          expect(formatConfigError(result.left)).toBe(
            `configuration error: ${name} must be a whole number of days from 1 to 100000 (got ${JSON.stringify(bad)})`,
          )
        }
      }
    }
  })
})
