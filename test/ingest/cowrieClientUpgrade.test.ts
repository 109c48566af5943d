import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D42 across the 0021 upgrade: a Cowrie session merged by an earlier version has no client state
 * (`cowrie_sessions.client` null) but its merged lines' details in `cowrie_session_details`. Its next merged line
 * must add to those details on the session's events, not replace them.
 */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "cowrie-upgrade")
})

afterAll(() => shutdown(server, db))

const exec = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, run) as Effect.Effect<ReadonlyArray<A>, never, SqlClient.SqlClient>)

const base = Date.now() - 120_000
const line = (session: string, ip: string, i: number, eventid: string, fields: Record<string, unknown> = {}) => ({
  eventid,
  session,
  src_ip: ip,
  sensor: "cowrie-1",
  timestamp: new Date(base + i * 10).toISOString(),
  message: "m",
  ...fields,
})

// biome-ignore lint/suspicious/noExplicitAny: events as the API answers them
const eventsOf = async (ip: string): Promise<Array<any>> =>
  (await get(server.url, `/v1/events?sourceIp=${ip}&limit=100`, tenant.key)).body.data

test("a session merged before 0021 keeps its client version, HASSH and environment when a new merged line arrives", async () => {
  const ip = "192.0.2.180"
  const s = "upgrade01"
  const first = [
    line(s, ip, 0, "cowrie.session.connect", { protocol: "ssh", src_port: 40000, dst_port: 22 }),
    line(s, ip, 50, "cowrie.command.input", { input: "uname -a" }),
  ]
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, first)).body.accepted).toBe(2)

  // What the version before 0021 left behind: details rows per merged line, the client members on the events, no
  // client state.
  const old = [
    { lineId: "old-1", i: 1, details: { clientVersion: "SSH-2.0-OldClient" } },
    { lineId: "old-2", i: 2, details: { hassh: "0df0d56bb50c6b2426d8d40234bf1826" } },
    { lineId: "old-3", i: 3, details: { env: { LANG: "C" } } },
    // A later value of a member the session already has: the earliest one wins.
    { lineId: "old-4", i: 4, details: { clientVersion: "SSH-2.0-Later" } },
  ]
  const members = { clientVersion: "SSH-2.0-OldClient", hassh: "0df0d56bb50c6b2426d8d40234bf1826", env: { LANG: "C" } }
  await exec(
    (sql) => sql`
      insert into cowrie_session_details (org_id, sensor_id, session, line_id, time, details, created_at)
      select ${tenant.orgId}, ${sensor.id}, ${s}, r.line_id, r.time, r.details, now()
      from jsonb_to_recordset(${JSON.stringify(
        old.map((o) => ({ line_id: o.lineId, time: new Date(base + o.i * 10).toISOString(), details: o.details })),
      )}::text::jsonb) as r(line_id text, time timestamptz, details jsonb)`,
  )
  await exec(
    (sql) =>
      sql`update cowrie_sessions set client = null where sensor_id = ${sensor.id} and session = ${s} returning 1`,
  )
  await exec(
    (sql) => sql`
      update events set attacker_input = attacker_input || ${JSON.stringify(members)}::text::jsonb
      where org_id = ${tenant.orgId} and source_ip = ${ip} returning 1`,
  )
  for (const e of await eventsOf(ip)) expect(e.attackerInput).toMatchObject(members)

  // The new version's first merged line of that session.
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, [
    line(s, ip, 5, "cowrie.client.var", { name: "TERM", value: "xterm" }),
  ])
  expect(res.body.results.map((r: { status: string }) => r.status)).toEqual(["merged"])

  const events = await eventsOf(ip)
  expect(events.length).toBe(2)
  for (const e of events) {
    expect(e.attackerInput).toMatchObject({
      clientVersion: "SSH-2.0-OldClient",
      hassh: "0df0d56bb50c6b2426d8d40234bf1826",
      env: { LANG: "C", TERM: "xterm" },
    })
  }
  const command = events.find((e) => e.type === "ssh.command")
  expect(command?.attackerInput.command).toBe("uname -a")
  // The state is stored once: the old details are not read again.
  const state = await exec<{ client: unknown }>(
    (sql) => sql`select client from cowrie_sessions where sensor_id = ${sensor.id} and session = ${s}`,
  )
  expect(JSON.stringify(state[0]?.client)).toContain("SSH-2.0-OldClient")
})

test("at most 1,000 events waiting for a session's connect are completed per request; the rest by its next request", async () => {
  const ip = "192.0.2.181"
  const s = "upgrade02"
  const waiting = Array.from({ length: 1005 }, (_, k) =>
    line(s, ip, 10 + k, "cowrie.login.failed", { username: `u${k}`, password: "x" }),
  )
  for (let k = 0; k < waiting.length; k += 500) {
    const res = await ingest(server.ingestUrl, "cowrie", sensor.token, waiting.slice(k, k + 500))
    expect(res.body.rejected).toBe(0)
  }
  const incomplete = () =>
    exec<{ n: number }>(
      (sql) =>
        sql`select count(*)::int as n from cowrie_session_events where sensor_id = ${sensor.id} and session = ${s} and not complete`,
    ).then((r) => r[0]?.n)
  expect(await incomplete()).toBe(1005)
  const connect = line(s, ip, 0, "cowrie.session.connect", { protocol: "telnet", src_port: 41000, dst_port: 2323 })
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, [connect])).body.rejected).toBe(0)
  expect(await incomplete()).toBe(5)
  const later = line(s, ip, 2000, "cowrie.login.failed", { username: "last", password: "x" })
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, [later])).body.accepted).toBe(1)
  expect(await incomplete()).toBe(0)
  const ports = await exec<{ port: number; n: number }>(
    (sql) =>
      sql`select port, count(*)::int as n from events where org_id = ${tenant.orgId} and source_ip = ${ip} group by port`,
  )
  // The 1,005 waiting events, the connect and the later line.
  expect(ports).toEqual([{ port: 2323, n: 1007 }])
})
