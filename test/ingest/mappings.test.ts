/**
 * D42: every line a real honeypot writes has an outcome a person would call right. The tables below list every
 * eventid and logtype that today's sources can emit, copied from the upstream code:
 *   Cowrie:     src/cowrie/core/eventids.py (`ALL`, the catalogue Cowrie's own tests check every emitter against)
 *   OpenCanary: opencanary/logger.py (`LoggerBase.LOG_*`) and opencanary/modules/mongodb.py (`LOG_ACTION_*`)
 * The lines posted for each are written by hand from the emitting code (file named per row); the real captures in
 * test/fixtures/real/ are replayed as well.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { COWRIE_EVENTIDS } from "../../src/ingest/formats/cowrie.ts"
import { MONGODB_ACTIONS, OPENCANARY_LOGTYPES } from "../../src/ingest/formats/opencanary.ts"
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
  sensor = await createSensor(db, tenant.orgId, "mappings-01")
})

afterAll(() => shutdown(server, db))

type Status = "accepted" | "merged" | "ignored"

/** [eventid, expected outcome, event type when accepted, extra fields, upstream file that emits it]. */
const COWRIE_TABLE: ReadonlyArray<readonly [string, Status, string | null, Record<string, unknown>, string]> = [
  ["cowrie.abuseipdb.ratelimited", "ignored", null, {}, "output/abuseipdb.py"],
  ["cowrie.abuseipdb.reportedip", "ignored", null, {}, "output/abuseipdb.py"],
  ["cowrie.abuseipdb.reportfail", "ignored", null, {}, "output/abuseipdb.py"],
  ["cowrie.abuseipdb.started", "ignored", null, {}, "output/abuseipdb.py"],
  ["cowrie.abuseipdb.wakeup", "ignored", null, {}, "output/abuseipdb.py"],
  [
    "cowrie.client.fingerprint",
    "merged",
    null,
    { username: "root", fingerprint: "aa:bb", key: "ssh-ed25519 AAAA", type: "ssh-ed25519" },
    "core/checkers.py",
  ],
  [
    "cowrie.client.kex",
    "merged",
    null,
    { hassh: "ec7378c1a92f5a8dde7e8b7a1ddf33d1", hasshAlgorithms: "curve25519-sha256;aes128-ctr;hmac-sha2-256;none" },
    "ssh/transport.py",
  ],
  ["cowrie.client.malformed_packet", "ignored", null, {}, "ssh/transport.py"],
  ["cowrie.client.size", "merged", null, { width: 80, height: 24 }, "shell/session.py"],
  ["cowrie.client.var", "merged", null, { name: "LANG", value: "C.UTF-8" }, "ssh/session.py"],
  ["cowrie.client.version", "merged", null, { version: "SSH-2.0-Go" }, "ssh/transport.py"],
  [
    "cowrie.command.chpasswd",
    "accepted",
    "ssh.command",
    { realm: "chpasswd", username: "admin" },
    "commands/chpasswd.py",
  ],
  ["cowrie.command.failed", "merged", null, { input: "foo" }, "shell/honeypot.py"],
  ["cowrie.command.input", "accepted", "ssh.command", { input: "uname -a" }, "shell/honeypot.py"],
  ["cowrie.command.success", "accepted", "ssh.command", { realm: "passwd", input: "n3wpass" }, "commands/base.py"],
  [
    "cowrie.direct-tcpip.data",
    "accepted",
    "ssh.port_forward",
    { dst_ip: "198.51.100.9", dst_port: 80, data: "b'GET / HTTP/1.1'", id: 1 },
    "ssh/forwarding.py",
  ],
  [
    "cowrie.direct-tcpip.ja4",
    "merged",
    null,
    { dst_ip: "198.51.100.9", dst_port: 443, ja4: "t13d1516h2_8daaf6152771_02713d6af862" },
    "ssh/forwarding.py",
  ],
  [
    "cowrie.direct-tcpip.ja4h",
    "merged",
    null,
    { dst_ip: "198.51.100.9", dst_port: 80, ja4h: "ge11nn050000_4740ae6347b0_000000000000_000000000000" },
    "ssh/forwarding.py",
  ],
  [
    "cowrie.direct-tcpip.redirect",
    "accepted",
    "ssh.port_forward",
    { dst_ip: "198.51.100.9", dst_port: 25, orig_ip: "0.0.0.0", orig_port: 0, new_ip: "127.0.0.1", new_port: 2525 },
    "ssh/forwarding.py",
  ],
  [
    "cowrie.direct-tcpip.request",
    "accepted",
    "ssh.port_forward",
    { dst_ip: "198.51.100.9", dst_port: 25, orig_ip: "0.0.0.0", orig_port: 0 },
    "ssh/forwarding.py",
  ],
  [
    "cowrie.direct-tcpip.tunnel",
    "accepted",
    "ssh.port_forward",
    { dst_ip: "198.51.100.9", dst_port: 80, orig_ip: "0.0.0.0", orig_port: 0, new_ip: "127.0.0.1", new_port: 8080 },
    "ssh/forwarding.py",
  ],
  [
    "cowrie.tunnelproxy-tcpip.data",
    "accepted",
    "ssh.port_forward",
    { dst_ip: "198.51.100.9", dst_port: 80, data: "b'x'" },
    "ssh/forwarding.py",
  ],
  ["cowrie.greynoise.result", "ignored", null, {}, "output/greynoise.py"],
  [
    "cowrie.log.closed",
    "ignored",
    null,
    { ttylog: "var/lib/cowrie/tty/x", size: 10, duration_ms: 1200 },
    "ssh/channel.py",
  ],
  ["cowrie.log.open", "ignored", null, { ttylog: "var/lib/cowrie/tty/x" }, "ssh/channel.py"],
  [
    "cowrie.login.failed",
    "accepted",
    "ssh.login_attempt",
    { username: "root", password: "123456" },
    "core/checkers.py",
  ],
  ["cowrie.login.success", "accepted", "ssh.login_success", { username: "root", password: "toor" }, "core/checkers.py"],
  ["cowrie.proxy.backend_connect_error", "ignored", null, {}, "ssh_proxy/server_transport.py"],
  ["cowrie.proxy.backend_connected", "ignored", null, {}, "ssh_proxy/server_transport.py"],
  ["cowrie.proxy.backend_disconnected", "ignored", null, {}, "ssh_proxy/server_transport.py"],
  ["cowrie.proxy.client_disconnect", "ignored", null, {}, "ssh_proxy/client_transport.py"],
  ["cowrie.proxy.ssh", "ignored", null, {}, "ssh_proxy/protocols/ssh.py"],
  ["cowrie.reversedns.connect", "ignored", null, {}, "output/reversedns.py"],
  ["cowrie.reversedns.forward", "ignored", null, {}, "output/reversedns.py"],
  ["cowrie.session.closed", "merged", null, { duration_ms: 5300 }, "core/events.py"],
  [
    "cowrie.session.connect",
    "accepted",
    "ssh.session",
    { src_port: 40000, dst_ip: "10.0.0.7", dst_port: 22 },
    "core/events.py",
  ],
  [
    "cowrie.session.file_download",
    "accepted",
    "ssh.file_download",
    { url: "http://198.51.100.7/x.sh", shasum: "ab", outfile: "dl/ab" },
    "core/download.py",
  ],
  [
    "cowrie.session.file_download.failed",
    "accepted",
    "ssh.file_download_failed",
    { url: "http://198.51.100.7/y.sh" },
    "core/download.py",
  ],
  [
    "cowrie.session.file_upload",
    "accepted",
    "ssh.file_upload",
    { filename: "x.bin", outfile: "dl/cd", shasum: "cd", destfile: "/tmp/x.bin" },
    "commands/scp.py",
  ],
  ["cowrie.session.input", "accepted", "ssh.command", { realm: "cat", input: "hello" }, "commands/cat.py"],
  ["cowrie.session.params", "ignored", null, { arch: "linux-x64-lsb" }, "shell/protocol.py"],
  ["cowrie.telnet.error", "ignored", null, {}, "telnet/transport.py"],
  [
    "cowrie.telnet.exploit_attempt",
    "accepted",
    "ssh.exploit_attempt",
    { cve: "CVE-2026-24061", name: "USER", value: "-f root" },
    "telnet/userauth.py",
  ],
  [
    "cowrie.telnet.exploit_success",
    "accepted",
    "ssh.exploit_success",
    { cve: "CVE-2026-24061", username: "root", original_username: "guest", attempted_command: "uname -a" },
    "telnet/userauth.py",
  ],
  ["cowrie.telnet.option", "ignored", null, {}, "telnet/transport.py"],
  ["cowrie.urlhaus.submitted", "ignored", null, {}, "output/urlhaus.py"],
  ["cowrie.virustotal.scanfile", "ignored", null, {}, "output/virustotal.py"],
  ["cowrie.virustotal.scanurl", "ignored", null, {}, "output/virustotal.py"],
  // A later Cowrie's eventid: kept as a generic event, never rejected.
  ["cowrie.future.thing", "accepted", "ssh.activity", {}, "(none: not emitted today)"],
]

/** [logtype, expected outcome, event type when accepted, logdata, upstream module that emits it]. */
const OPENCANARY_TABLE: ReadonlyArray<readonly [number, Status, string | null, Record<string, unknown>, string]> = [
  [1000, "ignored", null, { msg: "boot" }, "logger.py"],
  [
    1001,
    "ignored",
    null,
    { msg: { logdata: "Added service from class CanaryFTP in opencanary.modules.ftp to fake" } },
    "bin/opencanary.tac logMsg",
  ],
  [1002, "ignored", null, {}, "logger.py"],
  [1003, "ignored", null, {}, "logger.py"],
  [1004, "ignored", null, {}, "logger.py"],
  [1005, "ignored", null, {}, "logger.py"],
  [1006, "ignored", null, {}, "modules/example0.py"],
  [2000, "accepted", "ftp.login_attempt", { USERNAME: "ftp", PASSWORD: "ftp" }, "modules/ftp.py"],
  [2001, "accepted", "ftp.session", {}, "modules/ftp.py"],
  [
    3000,
    "accepted",
    "http.request",
    { PATH: "/", USERAGENT: "curl/8", HOSTNAME: "x", SKIN: "basicLogin" },
    "modules/http.py",
  ],
  [
    3001,
    "accepted",
    "http.login_attempt",
    { PATH: "/index.html", USERNAME: "admin", PASSWORD: "admin" },
    "modules/http.py",
  ],
  [3002, "accepted", "http.request", { PATH: "/" }, "modules/http.py"],
  [3003, "accepted", "http.request", { PATH: "/" }, "modules/http.py"],
  [4000, "accepted", "ssh.session", { SESSION: "1" }, "modules/ssh.py"],
  [4001, "merged", null, { REMOTEVERSION: "SSH-2.0-Go" }, "modules/ssh.py"],
  [4002, "accepted", "ssh.login_attempt", { USERNAME: "root", PASSWORD: "root" }, "modules/ssh.py"],
  [5000, "accepted", "smb.file_open", { USER: "bob", FILENAME: "a.docx", SHARENAME: "Share" }, "modules/samba.py"],
  [5001, "accepted", "portscan.syn", {}, "modules/portscan.py"],
  [5002, "accepted", "portscan.nmap_os", {}, "modules/portscan.py"],
  [5003, "accepted", "portscan.nmap_null", {}, "modules/portscan.py"],
  [5004, "accepted", "portscan.nmap_xmas", {}, "modules/portscan.py"],
  [5005, "accepted", "portscan.nmap_fin", {}, "modules/portscan.py"],
  [6001, "accepted", "telnet.login_attempt", { USERNAME: "root", PASSWORD: "xc3511" }, "modules/telnet.py"],
  [6002, "accepted", "telnet.session", {}, "modules/telnet.py"],
  [7001, "accepted", "httpproxy.login_attempt", { USERNAME: "u", PASSWORD: "p" }, "modules/httpproxy.py"],
  [8001, "accepted", "mysql.login_attempt", { USERNAME: "root", PASSWORD: null }, "modules/mysql.py"],
  [9001, "accepted", "mssql.login_attempt", { UserName: "sa", Password: "" }, "modules/mssql.py"],
  [9002, "accepted", "mssql.login_attempt", { UserName: "sa" }, "modules/mssql.py"],
  [9003, "accepted", "mysql.session", {}, "modules/mysql.py"],
  [10001, "accepted", "tftp.request", { FILENAME: "boot.cfg", OPCODE: "READ", MODE: "octet" }, "modules/tftp.py"],
  [11001, "accepted", "ntp.monlist", { "NTP CMD": "monlist" }, "modules/ntp.py"],
  [12001, "accepted", "vnc.login_attempt", { "VNC Password": "123456" }, "modules/vnc.py"],
  [13001, "accepted", "snmp.request", { REQUESTS: ["1.3.6.1"], COMMUNITY_STRING: "public" }, "modules/snmp.py"],
  [14001, "accepted", "rdp.login_attempt", { USERNAME: "admin" }, "modules/rdp.py"],
  [15001, "accepted", "sip.request", { HEADERS: { "call-id": ["1"] } }, "modules/sip.py"],
  [16001, "accepted", "git.clone_request", { REPO: "secret.git", HOST: "git.corp" }, "modules/git.py"],
  [17001, "accepted", "redis.command", { CMD: "INFO", ARGS: "" }, "modules/redis.py"],
  [
    18001,
    "accepted",
    "tcp.connection",
    { FUNCTION: "CONNECTION_MADE", DATA: "", BANNER_ID: "1" },
    "modules/tcpbanner.py",
  ],
  [18002, "accepted", "tcp.connection", { FUNCTION: "CONNECTION_MADE", BANNER_ID: "1" }, "modules/tcpbanner.py"],
  [
    18003,
    "accepted",
    "tcp.data",
    { FUNCTION: "DATA_RECEIVED", DATA: "s3cr3t", BANNER_ID: "1" },
    "modules/tcpbanner.py",
  ],
  [18004, "accepted", "tcp.data", { FUNCTION: "DATA_RECEIVED", DATA: "x", BANNER_ID: "1" }, "modules/tcpbanner.py"],
  [18005, "accepted", "tcp.data", { FUNCTION: "DATA_RECEIVED", DATA: "x", BANNER_ID: "1" }, "modules/tcpbanner.py"],
  [
    19001,
    "accepted",
    "llmnr.poisoning",
    { query_hostname: "fileserver", response: "LLMNR answer" },
    "modules/llmnr.py",
  ],
  [20001, "accepted", "mongodb.session", { action: "mongodb.connection" }, "modules/mongodb.py"],
  ...Array.from(
    { length: 10 },
    (_, i) => [99000 + i, "accepted", "decoy.activity", { msg: "user module" }, "logger.py LOG_USER_n"] as const,
  ),
  // A later OpenCanary's logtype: kept as a generic event, never rejected.
  [31337, "accepted", "decoy.activity", { X: "y" }, "(none: not emitted today)"],
]

const MONGODB_TABLE: ReadonlyArray<readonly [string, Status, string | null]> = [
  ["mongodb.connection", "accepted", "mongodb.session"],
  ["mongodb.auth_attempt", "accepted", "mongodb.login_attempt"],
  ["mongodb.command", "accepted", "mongodb.command"],
  ["mongodb.error", "ignored", null],
  ["mongodb.disconnect", "ignored", null],
]

const recent = (offsetMs = 0) => new Date(Date.now() - 60_000 + offsetMs)
const cowrieLine = (eventid: string, fields: Record<string, unknown>, session: string, ip: string, i = 0) => ({
  eventid,
  session,
  src_ip: ip,
  sensor: "cowrie-1",
  timestamp: recent(i * 10).toISOString(),
  message: "m",
  ...fields,
})
const ocTime = (d: Date) => d.toISOString().replace("T", " ").replace("Z", "000")
const ocLine = (logtype: number, logdata: Record<string, unknown>, ip: string) => ({
  dst_host: "10.0.0.5",
  dst_port: -1,
  local_time: ocTime(recent()),
  logdata,
  logtype,
  node_id: "oc-1",
  src_host: ip,
  src_port: 40123,
  utc_time: ocTime(recent()),
})

test("the Cowrie table is Cowrie's catalogue, and each eventid's mapping agrees with it", () => {
  const listed = COWRIE_TABLE.map(([eventid]) => eventid).filter((e) => e !== "cowrie.future.thing")
  expect(new Set(listed)).toEqual(
    new Set([...COWRIE_EVENTIDS.keys()].filter((e) => e !== "cowrie.backend_pool.libvirtd")),
  )
  for (const [eventid, status] of COWRIE_TABLE) {
    const outcome = COWRIE_EVENTIDS.get(eventid)?.outcome ?? "accepted"
    expect(`${eventid} ${outcome}`).toBe(`${eventid} ${status}`)
  }
})

test("the OpenCanary table is logger.py's constants, and each logtype's mapping agrees with it", () => {
  const listed = OPENCANARY_TABLE.map(([logtype]) => logtype).filter((l) => l !== 31337 && l < 99000)
  expect(new Set(listed)).toEqual(new Set(OPENCANARY_LOGTYPES.keys()))
  expect(new Set(MONGODB_TABLE.map(([a]) => a))).toEqual(new Set(MONGODB_ACTIONS.keys()))
})

test("every Cowrie eventid posted to /ingest/v1/cowrie gets its outcome, never rejected", async () => {
  const ip = "192.0.2.201"
  const lines = COWRIE_TABLE.map(([eventid, , , fields], i) => cowrieLine(eventid, fields, `tbl${i}`, ip, i))
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.status).toBe(200)
  expect(res.body.rejected).toBe(0)
  for (const [i, [eventid, status]] of COWRIE_TABLE.entries()) {
    expect(`${eventid} ${res.body.results[i].status}`).toBe(`${eventid} ${status}`)
    if (status !== "accepted") expect(res.body.results[i].reason).toContain(eventid)
  }
  const events = await get(server.url, `/v1/events?sourceIp=${ip}&limit=100`, tenant.key)
  const typeOf = new Map(events.body.data.map((e: { id: string; type: string }) => [e.id, e.type]))
  for (const [i, [eventid, status, type]] of COWRIE_TABLE.entries()) {
    if (status === "accepted") expect(`${eventid} ${typeOf.get(res.body.results[i].id)}`).toBe(`${eventid} ${type}`)
  }
})

test("every OpenCanary logtype (and MongoDB action) posted to /ingest/v1/opencanary gets its outcome", async () => {
  const ip = "192.0.2.202"
  const rows = [
    ...OPENCANARY_TABLE,
    ...MONGODB_TABLE.map(
      ([action, status, type], i) => [20001, status, type, { action, seq: i }, "modules/mongodb.py"] as const,
    ),
  ]
  const res = await ingest(
    server.ingestUrl,
    "opencanary",
    sensor.token,
    rows.map(([l, , , d]) => ocLine(l, d, ip)),
  )
  expect(res.status).toBe(200)
  expect(res.body.rejected).toBe(0)
  const events = await get(server.url, `/v1/events?sourceIp=${ip}&limit=100`, tenant.key)
  const typeOf = new Map(events.body.data.map((e: { id: string; type: string }) => [e.id, e.type]))
  for (const [i, [logtype, status, type]] of rows.entries()) {
    expect(`${logtype} ${res.body.results[i].status}`).toBe(`${logtype} ${status}`)
    if (status === "accepted") expect(`${logtype} ${typeOf.get(res.body.results[i].id)}`).toBe(`${logtype} ${type}`)
    else expect(res.body.results[i].reason).toContain(String(logtype))
  }
})

test("the real captures (test/fixtures/real) are never rejected, and their client lines are merged", async () => {
  const cowrie = readFileSync(new URL("../fixtures/real/cowrie/cowrie.json", import.meta.url), "utf8")
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, cowrie, true)
  expect(res.status).toBe(200)
  expect(res.body.rejected).toBe(0)
  const lines = cowrie
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l))
  const expected = lines.map((l) => COWRIE_EVENTIDS.get(l.eventid)?.outcome)
  expect(res.body.results.map((r: { status: string }) => r.status)).toEqual(expected)

  const oc = readFileSync(new URL("../fixtures/real/opencanary/opencanary.log", import.meta.url), "utf8")
  const ocRes = await ingest(server.ingestUrl, "opencanary", sensor.token, oc, true)
  expect(ocRes.status).toBe(200)
  expect(ocRes.body.rejected).toBe(0)
  for (const r of ocRes.body.results) expect(["accepted", "merged", "ignored", "duplicate"]).toContain(r.status)

  // The public-key login attempt: key fingerprint and type, no password member.
  const pubkey = lines.findIndex((l) => l.eventid === "cowrie.login.failed" && l.fingerprint !== undefined)
  if (pubkey >= 0) {
    const event = await get(server.url, `/v1/events/${res.body.results[pubkey].id}`, tenant.key)
    expect(event.body.type).toBe("ssh.pubkey_attempt")
    expect(event.body.attackerInput.keyFingerprint).toBe(lines[pubkey].fingerprint)
    expect(event.body.attackerInput.keyType).toBe(lines[pubkey].type)
    expect(Object.keys(event.body.attackerInput)).not.toContain("password")
    // The session's client version (merged) is a member of the session's events.
    expect(event.body.attackerInput.clientVersion).toStartWith("SSH-2.0-")
  }
})

test("a MySQL incident of refused logins lists no Valid Accounts technique, even for default credentials", async () => {
  const ip = "192.0.2.203"
  const lines = [
    { ...ocLine(9003, {}, ip), dst_port: 3306 },
    { ...ocLine(8001, { USERNAME: "root", PASSWORD: null }, ip), dst_port: 3306 },
    { ...ocLine(8001, { USERNAME: "root", PASSWORD: "root" }, ip), dst_port: 3306 },
  ]
  const res = await ingest(server.ingestUrl, "opencanary", sensor.token, lines)
  expect(res.body.accepted).toBe(3)
  const incident = await get(server.url, `/v1/incidents/${res.body.results[0].incidentId}`, tenant.key)
  const ids = incident.body.techniques.map((t: { id: string }) => t.id)
  expect(ids).not.toContain("T1078.001")
  expect(ids).not.toContain("T1078")
  expect(ids).toContain("T1110.001")
  expect(incident.body.eventTypes).toEqual(["mysql.login_attempt", "mysql.session"])
})

test("Cowrie's \\xNN escapes are shown as the characters they encode when they are UTF-8", async () => {
  const ip = "192.0.2.204"
  const session = "esc0001"
  const lines = [
    cowrieLine("cowrie.session.connect", { protocol: "ssh", src_port: 40000, dst_port: 22 }, session, ip, 0),
    cowrieLine("cowrie.login.failed", { username: "r\\xc3\\xa9mi", password: "p\\xc3\\xa4ss" }, session, ip, 1),
    cowrieLine("cowrie.login.failed", { username: "bad\\xff\\xfe", password: "x" }, session, ip, 2),
    // A typed command is not escaped by Cowrie: its \x41 is what the attacker typed.
    cowrieLine("cowrie.command.input", { input: "echo -e '\\x41'" }, session, ip, 3),
  ]
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.body.accepted).toBe(4)
  const read = async (i: number) => (await get(server.url, `/v1/events/${res.body.results[i].id}`, tenant.key)).body
  expect((await read(1)).attackerInput.username).toBe("rémi")
  expect((await read(1)).attackerInput.password.length).toBe(4)
  expect((await read(2)).attackerInput.username).toBe("bad\\xff\\xfe")
  expect((await read(3)).attackerInput.command).toBe("echo -e '\\x41'")
})

test("public-key login, file upload and port forwarding carry their techniques", async () => {
  const ip = "192.0.2.205"
  const s = "kinds001"
  const lines = [
    cowrieLine("cowrie.session.connect", { protocol: "ssh", src_port: 41000, dst_port: 2222 }, s, ip, 0),
    cowrieLine(
      "cowrie.login.failed",
      { username: "root", fingerprint: "3f:aa", key: "ssh-rsa AAAA", type: "ssh-rsa" },
      s,
      ip,
      1,
    ),
    cowrieLine("cowrie.session.file_upload", { filename: "x", shasum: "ab", destfile: "/tmp/x" }, s, ip, 2),
    cowrieLine(
      "cowrie.direct-tcpip.request",
      { dst_ip: "198.51.100.9", dst_port: 25, orig_ip: "0.0.0.0", orig_port: 0 },
      s,
      ip,
      3,
    ),
  ]
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.body.accepted).toBe(4)
  const read = async (i: number) => (await get(server.url, `/v1/events/${res.body.results[i].id}`, tenant.key)).body
  const pubkey = await read(1)
  expect(pubkey.type).toBe("ssh.pubkey_attempt")
  expect(pubkey.attackerInput).toEqual({ username: "root", keyFingerprint: "3f:aa", keyType: "ssh-rsa" })
  const upload = await read(2)
  expect(upload.techniques.map((t: { id: string }) => t.id)).toEqual(["T1105"])
  const forward = await read(3)
  expect(forward.techniques.map((t: { id: string }) => t.id)).toEqual(["T1090", "T1572"])
  // The decoy's port is the session's (2222), the forward's target is attacker input.
  expect(forward.port).toBe(2222)
  expect(forward.attackerInput).toMatchObject({ targetHost: "198.51.100.9", targetPort: 25 })
})

test("a successful telnet exploit is a critical success with its members; generic activity claims no technique", async () => {
  const ip = "192.0.2.206"
  const s = "xpl00001"
  const lines = [
    cowrieLine("cowrie.session.connect", { protocol: "telnet", src_port: 42000, dst_port: 23 }, s, ip, 0),
    cowrieLine(
      "cowrie.telnet.exploit_success",
      { cve: "CVE-2026-24061", username: "root", original_username: "guest", attempted_command: "uname -a" },
      s,
      ip,
      1,
    ),
    cowrieLine("cowrie.future.thing", {}, s, ip, 2),
  ]
  const res = await ingest(server.ingestUrl, "cowrie", sensor.token, lines)
  expect(res.body.accepted).toBe(3)
  const read = async (i: number) => (await get(server.url, `/v1/events/${res.body.results[i].id}`, tenant.key)).body
  const success = await read(1)
  expect(success.type).toBe("telnet.exploit_success")
  expect(success.severity).toBe("critical")
  expect(success.techniques.map((t: { id: string }) => t.id)).toEqual(["T1190"])
  expect(success.attackerInput).toMatchObject({
    cve: "CVE-2026-24061",
    username: "root",
    originalUsername: "guest",
    attemptedCommand: "uname -a",
  })
  const activity = await read(2)
  expect(activity.type).toBe("telnet.activity")
  expect(activity.techniques).toEqual([])
})
