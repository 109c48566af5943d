import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { OrgAdmin } from "../../src/admin/OrgAdmin.ts"
import { SensorAdmin } from "../../src/admin/SensorAdmin.ts"
import { SensorHealthSweepLive } from "../../src/jobs/sensorHealth.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D43: the silent-sensor sweep decides with the database's clock. A process whose own clock is an hour off (ahead or
 * behind) runs the sweep against the real database: it must not move a sensor that the database's clock says is
 * still in its state, since another process with a right clock would move it back, and each move is announced.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  // The test's own connection sweeps only when asked (the layer below), once.
  db = testDatabase({ ...server.env, SENSOR_SWEEP_INTERVAL: "1 hour" })
})

afterAll(() => shutdown(server, db))

const skewedClock = (base: Clock.Clock, skewMs: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + skewMs,
  currentTimeMillis: Effect.sync(() => base.unsafeCurrentTimeMillis() + skewMs),
  unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + BigInt(skewMs) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => base.unsafeCurrentTimeNanos() + BigInt(skewMs) * 1_000_000n),
  sleep: (d) => base.sleep(d),
})

/** Runs one sweep (the layer's first run) in this process with its clock moved by `skewMs`. */
const sweepWithClock = (skewMs: number) =>
  db.run(
    Effect.scoped(
      Effect.gen(function* () {
        const base = yield* Effect.clock
        yield* Layer.build(SensorHealthSweepLive).pipe(Effect.withClock(skewedClock(base, skewMs)))
        yield* Effect.sleep("1500 millis")
      }),
    ),
  )

const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, run) as Effect.Effect<ReadonlyArray<A>, never, SqlClient.SqlClient>)

const sensorIn = async (health: "alive" | "silent", lastSeenSecondsAgo: number) => {
  const org = await db.run(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.create(`clock-${crypto.randomUUID()}`))))
  const created = await db.run(
    asOperator(
      Effect.flatMap(SensorAdmin, (sensors) =>
        sensors.create(org.id, { name: "clock", profile: "opencanary", heartbeatInterval: "30s" }),
      ),
    ),
  )
  const id = created.id
  await query(
    (sql) => sql`update sensors set health = ${health},
      last_seen_at = now() - make_interval(secs => ${lastSeenSecondsAgo}) where id = ${id} returning id`,
  )
  return id
}

const healthOf = async (id: string) =>
  (await query<{ health: string }>((sql) => sql`select health from sensors where id = ${id}`))[0]?.health

test("a sweeping process whose clock is ahead or behind moves no sensor the database's clock keeps in its state", async () => {
  // Heard from 40 s ago with a 30 s interval: alive for 90 s by the database's clock.
  const alive = await sensorIn("alive", 40)
  // Heard from 200 s ago: silent by the database's clock.
  const silent = await sensorIn("silent", 200)
  await sweepWithClock(3_600_000)
  expect(await healthOf(alive)).toBe("alive")
  await sweepWithClock(-3_600_000)
  expect(await healthOf(silent)).toBe("silent")
  // With a right clock, nothing moves either; a sensor really gone quiet does.
  const quiet = await sensorIn("alive", 500)
  await sweepWithClock(0)
  expect(await healthOf(alive)).toBe("alive")
  expect(await healthOf(silent)).toBe("silent")
  expect(await healthOf(quiet)).toBe("silent")
}, 60_000)
