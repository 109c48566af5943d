import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Chunk, Clock, Duration, Effect, Layer, Option, TestClock, TestContext } from "effect"
import { newId, type OrgId } from "../../src/domain/ids.ts"
import { CowrieSessionsRepo } from "../../src/ingest/CowrieSessionsRepo.ts"
import { IdleCloserLive } from "../../src/jobs/idleClose.ts"
import { SensorHealthSweepLive } from "../../src/jobs/sensorHealth.ts"
import { Keys } from "../../src/platform/keys.ts"
import { ChannelsRepo } from "../../src/repos/ChannelsRepo.ts"
import { IncidentsRepo } from "../../src/repos/IncidentsRepo.ts"
import { SensorsRepo } from "../../src/repos/SensorsRepo.ts"
import { TransitionsRepo } from "../../src/repos/TransitionsRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The two timing rules of the ingest side, run on Effect's TestClock instead of real waiting: the idle close (D13)
 * and the silent-sensor sweep (D43). Each loop is the service's own layer (IdleCloserLive, SensorHealthSweepLive),
 * started in a scope whose clock is a TestClock, against the real database through the real repositories. Time only
 * moves when the test says so (TestClock.adjust, one interval at a time); after each step the test waits until the
 * loop has finished its sweep and sleeps again (its next wake-up is in TestClock.sleeps), so every sweep reads
 * exactly the virtual time of its step.
 *
 * A server is started only to set up the database (migrations, and the embedded PostgreSQL when there is no
 * DATABASE_URL); its own loops are kept out of the way (no idle close, one sensor sweep a day, run at its start).
 */

const IDLE = Duration.hours(1)
const IDLE_EVERY = Duration.minutes(10)
const SWEEP_EVERY = Duration.seconds(30)

let server: RunningServer
let db: TestDatabase
let orgId: OrgId

beforeAll(async () => {
  const env = await testEnv({ SENSOR_SWEEP_INTERVAL: "1 day" })
  server = await startServer({ env })
  // The test's own connection carries the timing settings the loops under test read (AppConfig).
  db = testDatabase({
    ...env,
    INCIDENT_IDLE_CLOSE: "1 hour",
    INCIDENT_IDLE_CLOSE_EVERY: "10 minutes",
    SENSOR_SWEEP_INTERVAL: "30 seconds",
  })
  orgId = (await createTenant(db, "Clockwork")).orgId
})

afterAll(async () => {
  await shutdown(server, db)
})

/** Waits (real time, at most 10 s) until the loop under test sleeps until `at`: its sweep is done and it is idle. */
const sleepsUntil = (at: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 10_000
    for (;;) {
      const sleeps = Chunk.toReadonlyArray(yield* TestClock.sleeps())
      if (sleeps.includes(at)) return
      if (Date.now() > deadline) return yield* Effect.dieMessage(`no sleep until ${at}; sleeps: ${sleeps.join(", ")}`)
      yield* Effect.promise(() => Bun.sleep(10))
    }
  })

/** Moves the TestClock one interval, to the loop's next wake-up, and waits until that sweep is done. */
const step = (every: Duration.Duration) =>
  Effect.gen(function* () {
    yield* TestClock.adjust(every)
    yield* sleepsUntil((yield* Clock.currentTimeMillis) + Duration.toMillis(every))
  })

const sensorOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ health: string; healthChangedAt: Date | null }>`
      select health, health_changed_at from sensors where id = ${id}`.pipe(Effect.map((rows) => rows[0])),
  )

const deliveriesOf = (channelId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ type: string }>`select type from webhook_deliveries where channel_id = ${channelId} order by id`.pipe(
      Effect.map((rows) => rows.map((r) => r.type)),
    ),
  )

describe("timing rules on the TestClock, against the real database", () => {
  test("idle close: an incident stays open through the sweep at exactly INCIDENT_IDLE_CLOSE of quiet, is closed by the first sweep after it (resolved at that sweep's time, one `closed` transition), and later sweeps change nothing", async () => {
    // A virtual era no other test writes: the idle close closes every open incident quiet since the cutoff, so the
    // TestClock starts in 2001, where only this test's incident is.
    const era = Date.UTC(2001, 0, 1)
    const incidentId = newId("incident", era)
    const sensorId = newId("sensor")
    await db.run(
      Effect.gen(function* () {
        yield* (yield* SensorsRepo).create({
          id: sensorId,
          orgId,
          name: "idle-01",
          profile: "linux-server",
          tokenHash: randomBytes(32),
        })
        yield* (yield* IncidentsRepo).insert(
          {
            id: incidentId,
            orgId,
            sensorId,
            sourceIp: "203.0.113.70",
            status: "open",
            severity: "medium",
            title: "SSH brute force from 203.0.113.70",
            narrative: "Seeded narrative.",
            recommendedAction: "Block the source address.",
            eventCount: 3,
            eventTypes: ["ssh.login_attempt"],
            tags: [],
            usernames: ["root"],
            highConfidence: false,
            firstSeenAt: new Date(era - 300_000),
            lastSeenAt: new Date(era - 60_000),
            resolvedAt: null,
          },
          // Its last activity is the era's first instant.
          new Date(era),
        )
      }),
    )

    const seen = await db.run(
      Effect.scoped(
        Effect.gen(function* () {
          const incidents = yield* IncidentsRepo
          const transitions = yield* TransitionsRepo
          const statusAt = Effect.map(incidents.findById(orgId, incidentId), (row) =>
            Option.map(row, (r) => ({ status: r.status, resolvedAt: r.resolvedAt?.getTime() ?? null })),
          )
          const kinds = Effect.map(transitions.forIncident(incidentId), (rows) => rows.map((r) => r.kind))
          const every = Duration.toMillis(IDLE_EVERY)

          yield* TestClock.setTime(era)
          // The loop's first sweep runs at once (at the era), then one every INCIDENT_IDLE_CLOSE_EVERY.
          yield* Layer.build(IdleCloserLive.pipe(Layer.provide(CowrieSessionsRepo.Default)))
          yield* sleepsUntil(era + every)
          const open: Array<unknown> = [yield* statusAt]
          // Sweeps at 10, 20, ..., 60 minutes: at 60 the incident has been quiet exactly INCIDENT_IDLE_CLOSE, which
          // is not more than it.
          for (let i = 1; i <= Duration.toMillis(IDLE) / every; i++) {
            yield* step(IDLE_EVERY)
            open.push(yield* statusAt)
          }
          const kindsBefore = yield* kinds
          // 70 minutes: the first sweep after the hour.
          yield* step(IDLE_EVERY)
          const closedAt = yield* Clock.currentTimeMillis
          const closed = yield* statusAt
          // Three more sweeps find it already closed.
          for (let i = 0; i < 3; i++) yield* step(IDLE_EVERY)
          return { open, kindsBefore, closedAt, closed, after: yield* statusAt, kindsAfter: yield* kinds }
        }),
      ).pipe(Effect.provide(TestContext.TestContext)),
    )

    expect(seen.open).toHaveLength(7)
    for (const s of seen.open) expect(s).toEqual(Option.some({ status: "open", resolvedAt: null }))
    expect(seen.kindsBefore).toEqual([])
    expect(seen.closedAt).toBe(era + 70 * 60_000)
    expect(seen.closed).toEqual(Option.some({ status: "closed", resolvedAt: seen.closedAt }))
    expect(seen.after).toEqual(seen.closed)
    expect(seen.kindsAfter).toEqual(["closed"])
  }, 60_000)

  test("silent-sensor sweep: a sensor silent past three heartbeat intervals is announced once (one sensor.silent) by the first sweep and not again by the next ones; its heartbeat is announced (sensor.recovered) by the next sweep the clock reaches, not before", async () => {
    const sensorId = newId("sensor")
    const channelId = newId("webhookChannel")
    await db.run(
      Effect.gen(function* () {
        const sensors = yield* SensorsRepo
        const channels = yield* ChannelsRepo
        const { sealer } = yield* Keys
        yield* sensors.create({
          id: sensorId,
          orgId,
          name: "quiet-01",
          profile: "linux-server",
          tokenHash: randomBytes(32),
          heartbeatIntervalSeconds: 60,
        })
        // Last heard from 10 minutes ago (the database's clock decides status): more than 3 x 60 s.
        yield* sensors.touchLastSeen(sensorId, new Date(Date.now() - 600_000))
        yield* channels.insertChannel({
          id: channelId,
          orgId,
          url: "https://receiver.invalid/hooks",
          minSeverity: "critical",
          secretEnc: sealer.seal(new TextEncoder().encode("whsec-test")),
          enabled: true,
          sensorHealth: true,
          createdAt: new Date(),
        })
      }),
    )

    const seen = await db.run(
      Effect.scoped(
        Effect.gen(function* () {
          const sensors = yield* SensorsRepo
          const every = Duration.toMillis(SWEEP_EVERY)
          const start = Date.UTC(2030, 0, 1)
          yield* TestClock.setTime(start)
          yield* Layer.build(SensorHealthSweepLive)
          // The first sweep (at once) finds the sensor silent.
          yield* sleepsUntil(start + every)
          const first = { sensor: yield* sensorOf(sensorId), deliveries: yield* deliveriesOf(channelId) }
          for (let i = 0; i < 3; i++) yield* step(SWEEP_EVERY)
          const later = { sensor: yield* sensorOf(sensorId), deliveries: yield* deliveriesOf(channelId) }
          // A heartbeat lands. Real time passes, the TestClock does not: no sweep runs, nothing is announced.
          yield* sensors.touchLastSeen(sensorId, new Date())
          yield* Effect.promise(() => Bun.sleep(300))
          const beforeStep = yield* deliveriesOf(channelId)
          yield* step(SWEEP_EVERY)
          const recovered = { sensor: yield* sensorOf(sensorId), deliveries: yield* deliveriesOf(channelId) }
          return { first, later, beforeStep, recovered }
        }),
      ).pipe(Effect.provide(TestContext.TestContext)),
    )

    expect(seen.first.sensor?.health).toBe("silent")
    expect(seen.first.deliveries).toEqual(["sensor.silent"])
    // Three more sweeps: still one announcement, and the move itself was not made again.
    expect(seen.later.deliveries).toEqual(["sensor.silent"])
    expect(seen.later.sensor).toEqual(seen.first.sensor)
    expect(seen.beforeStep).toEqual(["sensor.silent"])
    expect(seen.recovered.sensor?.health).toBe("alive")
    expect(seen.recovered.deliveries).toEqual(["sensor.silent", "sensor.recovered"])
  }, 60_000)
})
