import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { CUT_MEMBER } from "../../src/domain/sanitize.ts"
import { STORED_INPUT_READ_MAX } from "../../src/repos/EventsRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Issue "Hardening 2" item 4: a stored attackerInput over 64 KiB is not read, measured by its real size (the UTF-8
 * length of its JSON text), not by its compressed size in the table: a megabyte of repetitive text compresses to a
 * few KiB and must not pass. Rows written from sql/0020 on carry their size (attacker_input_bytes, set by a
 * trigger); older rows (null) are measured on read.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer({ env: await testEnv() })
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const TOO_LARGE = `cut: the stored value is too large to show (over ${STORED_INPUT_READ_MAX} bytes)`

const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => run(sql)))

describe("Hardening 2 item 4: the stored-size guard measures the real size", () => {
  test("a 1 MB compressible attackerInput (a few KiB compressed) is not read; its size was kept when written", async () => {
    const tenant = await createTenant(db, "Compressible")
    const sensor = await createSensor(db, tenant.orgId)
    const big = { username: "root", filler: "A".repeat(1_000_000) }
    const small = { username: "admin" }
    const seeded = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "203.0.113.9",
      events: [
        { time: new Date(Date.now() - 2000), attackerInput: big },
        { time: new Date(Date.now() - 1000), attackerInput: small },
      ],
    })
    const [bigId, smallId] = seeded.events.map((e) => e.id)
    const sizes = await query(
      (sql) =>
        sql<{ id: string; stored: number; bytes: number | null }>`
        select id, pg_column_size(attacker_input) as stored, attacker_input_bytes as bytes from events
        where id in (${bigId ?? ""}, ${smallId ?? ""})`,
    )
    const bigRow = sizes.find((r) => r.id === bigId)
    // The premise: compressed, it is far under the bound.
    expect(bigRow?.stored).toBeLessThan(STORED_INPUT_READ_MAX)
    expect(bigRow?.bytes).toBeGreaterThan(1_000_000)

    const check = async () => {
      const one = await get(server.url, `/v1/events/${bigId}`, tenant.key)
      expect(one.status).toBe(200)
      expect(one.body.attackerInput).toEqual({ [CUT_MEMBER]: TOO_LARGE })
      const listed = await get(server.url, `/v1/events?incidentId=${seeded.incident.id}`, tenant.key)
      expect(listed.body.data.map((e: { attackerInput: unknown }) => e.attackerInput)).toEqual([
        small,
        { [CUT_MEMBER]: TOO_LARGE },
      ])
      const incident = await get(server.url, `/v1/incidents/${seeded.incident.id}`, tenant.key)
      expect(incident.body.events[0].attackerInput).toEqual({ [CUT_MEMBER]: TOO_LARGE })
      expect(incident.body.events[1].attackerInput).toEqual(small)
    }
    await check()

    // A row written before the size was kept (null): measured on read, with the same answer.
    await query(
      (sql) => sql`update events set attacker_input_bytes = null where id in (${bigId ?? ""}, ${smallId ?? ""})`,
    )
    await check()
  })

  test("a rewrite of attacker_input (the repair, a Cowrie session's completion) updates the kept size", async () => {
    const tenant = await createTenant(db, "Rewritten")
    const sensor = await createSensor(db, tenant.orgId)
    const seeded = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "203.0.113.10",
      events: [{ time: new Date(Date.now() - 1000), attackerInput: { username: "root" } }],
    })
    const id = seeded.events[0]?.id ?? ""
    await query(
      (sql) => sql`update events set attacker_input = jsonb_build_object('x', repeat('B', 100000)) where id = ${id}`,
    )
    const [row] = await query(
      (sql) => sql<{ bytes: number }>`select attacker_input_bytes as bytes from events where id = ${id}`,
    )
    expect(row?.bytes).toBe(100_009)
    expect((await get(server.url, `/v1/events/${id}`, tenant.key)).body.attackerInput).toEqual({
      [CUT_MEMBER]: TOO_LARGE,
    })
  })
})
