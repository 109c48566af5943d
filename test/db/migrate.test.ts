import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { readMigrations } from "../../src/platform/db/migrate.ts"
import { admin } from "../support/cli.ts"
import { testDatabase } from "../support/db.ts"
import { newEmptyTestDatabase } from "../support/runDatabase.ts"
import { testEnvOn } from "../support/server.ts"

/** A database no test has touched: empty, on the run's PostgreSQL. */
const freshEnv = async () => testEnvOn(await newEmptyTestDatabase())

describe("migrations", () => {
  test("two processes migrating one fresh database together apply each migration exactly once", async () => {
    const env = await freshEnv()
    const results = await Promise.all([admin(env, ["migrate"]), admin(env, ["migrate"]), admin(env, ["migrate"])])
    for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    const db = testDatabase(env)
    const rows = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ version: string }>`select version from schema_migrations order by version`,
      ),
    )
    await db.close()
    expect(rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version))
  })

  test("issue #15: a new database queues no repair of old rows (0008 only when events were stored before it)", async () => {
    const env = await freshEnv()
    expect((await admin(env, ["migrate"])).code).toBe(0)
    const db = testDatabase(env)
    const tasks = await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ name: string }>`select name from maintenance_tasks`),
    )
    await db.close()
    expect(tasks).toEqual([])
  })
})

describe("migrations of stored rows", () => {
  test("0003 keeps old events' attackerInput answers (names as the API gave them), 0004 dates idleness from the last change, 0006 replaces unkeyed honeypot line ids", async () => {
    const env = await freshEnv()
    const db = testDatabase(env)
    const [first, second, ...later] = readMigrations()
    expect(later.map((m) => m.version)).toContain("0003")
    const stored = await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // The database as 0002 left it, with one event written the old way (keys camelCase→snake_case).
        yield* sql`create table schema_migrations (
          version text primary key, name text not null, applied_at timestamptz not null default now())`
        for (const m of [first, second]) {
          if (m === undefined) continue
          yield* sql.unsafe(m.sql)
          yield* sql`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`
        }
        const at = new Date("2026-11-20T10:00:00.000Z")
        const changed = new Date("2026-11-20T11:00:00.000Z")
        yield* sql`insert into organizations (id, name, fingerprint_key, created_at) values ('org_m', 'm', 'k', ${at})`
        yield* sql`insert into sensors (id, org_id, name, profile, token_hash, created_at)
          values ('sen_m', 'org_m', 's', 'p', decode('00', 'hex'), ${at})`
        yield* sql`insert into incidents (id, org_id, sensor_id, source_ip, status, severity, title, narrative,
            recommended_action, first_seen_at, last_seen_at, created_at, updated_at)
          values ('inc_m', 'org_m', 'sen_m', '192.0.2.1', 'open', 'low', 't', 'n', 'r', ${at}, ${at}, ${at}, ${changed})`
        const input = { user_agent: "x", nested: [{ file_name: 1 }, "plain_text"], username: "root", a_: "y" }
        yield* sql`insert into events (id, org_id, incident_id, sensor_id, sensor_event_id, time, source_ip,
            source_port, service, port, type, action, severity, confidence, summary, attacker_input, received_at)
          values ('evt_m', 'org_m', 'inc_m', 'sen_m', 'm1', ${at}, '192.0.2.1', 1, 'ssh', 22, 'ssh.command', 'a',
            'low', 'normal', 's', ${JSON.stringify(input)}::text::jsonb, ${at})`
        // 0006: unkeyed honeypot line ids (an offline oracle for the password in the line) are replaced.
        const sha = "ab".repeat(32)
        for (const [id, sensorEventId] of [
          ["evt_oc", `oc:${sha}`],
          ["evt_cw", `cowrie:sess-1_A:${sha}`],
          ["evt_native", `oc:${sha}x`],
        ]) {
          yield* sql`insert into events (id, org_id, incident_id, sensor_id, sensor_event_id, time, source_ip,
              source_port, service, port, type, action, severity, confidence, summary, received_at)
            values (${id}, 'org_m', 'inc_m', 'sen_m', ${sensorEventId}, ${at}, '192.0.2.1', 1, 'ssh', 22,
              'ssh.command', 'a', 'low', 'normal', 's', ${at})`
        }
        return changed
      }),
    )
    await db.close()
    const migrated = await admin(env, ["migrate"])
    expect({ code: migrated.code, stderr: migrated.stderr }).toEqual({ code: 0, stderr: "" })
    const check = testDatabase(env)
    const rows = await check.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const events = yield* sql<{
          input: string
        }>`select attacker_input::text as input from events where id = 'evt_m'`
        const ids = yield* sql<{ id: string; sensorEventId: string }>`
          select id, sensor_event_id from events where id <> 'evt_m' order by id`
        const incidents = yield* sql<{ lastActivityAt: Date }>`select last_activity_at from incidents`
        return { events, incidents, ids }
      }),
    )
    await check.close()
    expect(JSON.parse(rows.events[0]?.input ?? "null")).toEqual({
      userAgent: "x",
      nested: [{ fileName: 1 }, "plain_text"],
      username: "root",
      a_: "y",
    })
    expect(rows.incidents[0]?.lastActivityAt.toISOString()).toBe(stored.toISOString())
    expect(rows.ids).toEqual([
      { id: "evt_cw", sensorEventId: "legacy:evt_cw" },
      { id: "evt_native", sensorEventId: `oc:${"ab".repeat(32)}x` },
      { id: "evt_oc", sensorEventId: "legacy:evt_oc" },
    ])
  })
})

describe("events partitioned by month (0044) on a database that already holds events", () => {
  test("the events stay, in the partition of the months before; their keys come along, so a resend is still a duplicate; later months get partitions of their own", async () => {
    const env = await freshEnv()
    const db = testDatabase(env)
    const before = readMigrations().filter((m) => m.version < "0044")
    const at = [new Date("2026-03-02T10:00:00.000Z"), new Date(Date.now() - 3_600_000)]
    await db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`create table schema_migrations (
          version text primary key, name text not null, applied_at timestamptz not null default now())`
        for (const m of before) {
          yield* sql.unsafe(m.sql)
          yield* sql`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`
        }
        const t = at[0]
        yield* sql`insert into organizations (id, name, fingerprint_key, created_at) values ('org_p', 'p', 'k', ${t})`
        yield* sql`insert into sensors (id, org_id, name, profile, token_hash, created_at)
          values ('sen_p', 'org_p', 's', 'p', decode('00', 'hex'), ${t})`
        yield* sql`insert into incidents (id, org_id, sensor_id, source_ip, status, severity, title, narrative,
            recommended_action, first_seen_at, last_seen_at, created_at, updated_at)
          values ('inc_p', 'org_p', 'sen_p', '192.0.2.1', 'open', 'low', 't', 'n', 'r', ${t}, ${t}, ${t}, ${t})`
        for (const [i, time] of at.entries()) {
          yield* sql`insert into events (id, org_id, incident_id, sensor_id, sensor_event_id, time, source_ip,
              source_port, service, port, type, action, severity, confidence, summary, received_at)
            values (${`evt_p${i}`}, 'org_p', 'inc_p', 'sen_p', ${`p${i}`}, ${time}, '192.0.2.1', 1, 'ssh', 22,
              'ssh.login_attempt', 'a', 'low', 'normal', 's', ${time})`
        }
      }),
    )
    await db.close()
    const migrated = await admin(env, ["migrate"])
    expect({ code: migrated.code, stderr: migrated.stderr }).toEqual({ code: 0, stderr: "" })
    const check = testDatabase(env)
    const found = await check.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const events = yield* sql<{ id: string; partition: string }>`
          select id, tableoid::regclass::text as partition from events order by id`
        const keys = yield* sql<{ eventId: string }>`select event_id from event_keys order by event_id`
        const nextMonth = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1))
        const name = `events_${nextMonth.toISOString().slice(0, 7).replace("-", "_")}`
        const [ahead] = yield* sql<{ found: boolean }>`select to_regclass(${name}) is not null as found`
        // The ingest path's own statement shape: a key already there takes nothing (the event is a duplicate).
        const resent = yield* sql`insert into event_keys (sensor_id, sensor_event_id, event_id, received_at)
          values ('sen_p', 'p0', 'evt_again', now()) on conflict (sensor_id, sensor_event_id) do nothing returning 1`
        return { events, keys: keys.map((k) => k.eventId), ahead: ahead?.found, resentStored: resent.length }
      }),
    )
    await check.close()
    expect(found).toEqual({
      events: [
        { id: "evt_p0", partition: "events_before" },
        { id: "evt_p1", partition: "events_before" },
      ],
      keys: ["evt_p0", "evt_p1"],
      ahead: true,
      resentStored: 0,
    })
  })
})
