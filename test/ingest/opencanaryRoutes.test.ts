import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { eventTypeSpec } from "../../src/domain/eventTypes.ts"
import { CONFIDENCES, SEVERITIES, severityRank } from "../../src/domain/severity.ts"
import { TAG_TECHNIQUES, TECHNIQUES } from "../../src/domain/techniques.ts"
import { OPENCANARY_LOGTYPES } from "../../src/ingest/formats/opencanary.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, SPEC_EVENT_FIELDS } from "../support/fixtures.ts"
import { IPTABLES_KV, ingest } from "../support/ingest.ts"
import { APP_URL, type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D22: every OpenCanary logtype the mapper supports, end to end: one log line each, as OpenCanary writes it
 * (opencanary/logger.py: the module's logdata plus logtype, src_host, src_port, dst_host, dst_port, utc_time,
 * local_time, local_time_adjusted, node_id), posted over real HTTP to the ingest port, then read back through the
 * read API (GET /v1/events/{id}, GET /v1/incidents/{id}) and checked against the spec's Event and Incident shapes
 * field by field (D1, D2, D3, D19, D20, D23).
 */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

const SENSOR_NAME = "canary-routes-01"
const SOURCE_IP = "203.0.113.77"

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db, "OpenCanary routes")
  sensor = await createSensor(db, tenant.orgId, SENSOR_NAME)
})

afterAll(() => shutdown(server, db))

// Log times: ten minutes ago, one second apart per line, with OpenCanary's microseconds (cut to ms by the service, D2).
const BASE_MS = Math.floor((Date.now() - 600_000) / 1000) * 1000
const ocTime = (ms: number, fraction = "123456") =>
  `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")}.${fraction}`
const isoOf = (ms: number) => new Date(ms).toISOString()

const lowerKeys = (o: Record<string, string>) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toLowerCase(), v]))

interface Case {
  readonly logtype: number
  readonly logdata: Record<string, unknown>
  readonly srcPort: unknown
  readonly dstPort: unknown
  readonly type: string
  readonly service: string
  readonly port: number
  readonly sourcePort: number
  /** attackerInput as the API answers it, without the password. */
  readonly input: Record<string, unknown>
  /** The raw password the line carries (masked by the service, D19). */
  readonly password?: string
  readonly tags: ReadonlyArray<string>
}

const HTTP_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
const SHARED_PASSWORD = "Winter2024!"

const CASES: ReadonlyArray<Case> = [
  {
    logtype: 2000,
    logdata: { PASSWORD: "pässwörd🔑", USERNAME: "ftpadmin" },
    srcPort: 40100,
    dstPort: 21,
    type: "ftp.login_attempt",
    service: "ftp",
    port: 21,
    sourcePort: 40100,
    input: { username: "ftpadmin" },
    password: "pässwörd🔑",
    tags: [],
  },
  {
    logtype: 3000,
    logdata: {
      HOSTNAME: "files.corp.example",
      PATH: "/cgi-bin/%2e%2e/%2e%2e/etc/passwd",
      SKIN: "nasLogin",
      USERAGENT: "Nikto/2.5.0",
    },
    srcPort: 40101,
    dstPort: 80,
    type: "http.request",
    service: "http",
    port: 80,
    sourcePort: 40101,
    input: {
      hostname: "files.corp.example",
      path: "/cgi-bin/%2e%2e/%2e%2e/etc/passwd",
      skin: "nasLogin",
      userAgent: "Nikto/2.5.0",
    },
    tags: ["path-traversal", "scanner"],
  },
  {
    logtype: 3001,
    logdata: {
      HOSTNAME: "files.corp.example",
      PASSWORD: SHARED_PASSWORD,
      PATH: "/index.html",
      SKIN: "basicLogin",
      USERAGENT: HTTP_UA,
      USERNAME: "admin",
    },
    srcPort: 40102,
    dstPort: 80,
    type: "http.login_attempt",
    service: "http",
    port: 80,
    sourcePort: 40102,
    input: {
      hostname: "files.corp.example",
      path: "/index.html",
      skin: "basicLogin",
      userAgent: HTTP_UA,
      username: "admin",
    },
    password: SHARED_PASSWORD,
    tags: [],
  },
  {
    logtype: 3002,
    logdata: { HOSTNAME: "files.corp.example", PATH: "/", SKIN: "basicLogin", USERAGENT: "curl/8.5.0" },
    srcPort: 40103,
    dstPort: 8080,
    type: "http.request",
    service: "http",
    port: 8080,
    sourcePort: 40103,
    input: { hostname: "files.corp.example", path: "/", skin: "basicLogin", userAgent: "curl/8.5.0" },
    tags: [],
  },
  {
    logtype: 3003,
    logdata: {
      HOSTNAME: "files.corp.example",
      PATH: "/",
      SKIN: "basicLogin",
      USERAGENT: "masscan/1.3 (https://github.com/robertdavidgraham/masscan)",
    },
    srcPort: 40104,
    dstPort: 80,
    type: "http.request",
    service: "http",
    port: 80,
    sourcePort: 40104,
    input: {
      hostname: "files.corp.example",
      path: "/",
      skin: "basicLogin",
      userAgent: "masscan/1.3 (https://github.com/robertdavidgraham/masscan)",
    },
    tags: ["scanner"],
  },
  {
    logtype: 4000,
    logdata: { SESSION: "17" },
    srcPort: 40105,
    dstPort: 22,
    type: "ssh.session",
    service: "ssh",
    port: 22,
    sourcePort: 40105,
    input: { session: "17" },
    tags: [],
  },
  {
    logtype: 4002,
    logdata: {
      LOCALVERSION: "SSH-2.0-OpenSSH_5.1p1 Debian-5",
      PASSWORD: SHARED_PASSWORD,
      REMOTEVERSION: "SSH-2.0-libssh_0.9.6",
      USERNAME: "root",
    },
    srcPort: 40107,
    dstPort: 22,
    type: "ssh.login_attempt",
    service: "ssh",
    port: 22,
    sourcePort: 40107,
    input: { localVersion: "SSH-2.0-OpenSSH_5.1p1 Debian-5", remoteVersion: "SSH-2.0-libssh_0.9.6", username: "root" },
    password: SHARED_PASSWORD,
    tags: [],
  },
  {
    // The samba audit log gives src_port "-1": unknown, so 0.
    logtype: 5000,
    logdata: {
      AUDITACTION: "pread",
      DOMAIN: "CORP",
      FILENAME: "Finance/Q1 Budget.txt",
      LOCALNAME: "FILESRV01",
      REMOTENAME: "LAPTOP-7",
      SHARENAME: "Documents",
      SMBARCH: "Win10",
      SMBVER: "SMB3_11",
      STATUS: "ok",
      USER: "jdoe",
    },
    srcPort: "-1",
    dstPort: 445,
    type: "smb.file_open",
    service: "smb",
    port: 445,
    sourcePort: 0,
    input: {
      auditAction: "pread",
      domain: "CORP",
      fileName: "Finance/Q1 Budget.txt",
      localName: "FILESRV01",
      remoteName: "LAPTOP-7",
      shareName: "Documents",
      smbArch: "Win10",
      smbVersion: "SMB3_11",
      status: "ok",
      username: "jdoe",
    },
    tags: [],
  },
  // The portscan module copies SPT/DPT from the kernel log as strings.
  ...(
    [
      [5001, "portscan.syn", { ...IPTABLES_KV, SYN: "" }, "23"],
      [5002, "portscan.nmap_os", { ...IPTABLES_KV, URG: "", PSH: "", SYN: "", FIN: "" }, "445"],
      [5003, "portscan.nmap_null", IPTABLES_KV, "3306"],
      [5004, "portscan.nmap_xmas", { ...IPTABLES_KV, URG: "", PSH: "", FIN: "" }, "5900"],
      [5005, "portscan.nmap_fin", { ...IPTABLES_KV, FIN: "" }, "8443"],
    ] as const
  ).map(
    ([logtype, type, kv, dpt], i): Case => ({
      logtype,
      logdata: kv,
      srcPort: String(40110 + i),
      dstPort: dpt,
      type,
      service: "portscan",
      port: Number(dpt),
      sourcePort: 40110 + i,
      input: lowerKeys(kv),
      tags: [],
    }),
  ),
  {
    // Mirai's factory credentials.
    logtype: 6001,
    logdata: { PASSWORD: "xc3511", USERNAME: "root" },
    srcPort: 40120,
    dstPort: 23,
    type: "telnet.login_attempt",
    service: "telnet",
    port: 23,
    sourcePort: 40120,
    input: { username: "root" },
    password: "xc3511",
    tags: [], // D42: a refused login with default credentials is no Default Accounts technique
  },
  {
    // A scrambled MySQL password longer than 32 characters: masked is capped at 32, length is the real one.
    logtype: 8001,
    logdata: { PASSWORD: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", USERNAME: "app" },
    srcPort: 40121,
    dstPort: 3306,
    type: "mysql.login_attempt",
    service: "mysql",
    port: 3306,
    sourcePort: 40121,
    input: { username: "app" },
    password: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    tags: [],
  },
  {
    logtype: 9001,
    logdata: {
      AppName: "sqlcmd",
      CltIntName: "ODBC",
      Database: "master",
      HostName: "WIN-ATTACK",
      Language: "",
      Password: "Spring!2025",
      ServerName: "10.0.0.5",
      UserName: "sa",
    },
    srcPort: 40122,
    dstPort: 1433,
    type: "mssql.login_attempt",
    service: "mssql",
    port: 1433,
    sourcePort: 40122,
    input: {
      appName: "sqlcmd",
      cltIntName: "ODBC",
      database: "master",
      hostname: "WIN-ATTACK",
      language: "",
      serverName: "10.0.0.5",
      username: "sa",
    },
    password: "Spring!2025",
    tags: [],
  },
  {
    // An empty password is still a captured secret: masked "" with length 0.
    logtype: 9002,
    logdata: { PASSWORD: "", USERNAME: "svc_backup" },
    srcPort: 40123,
    dstPort: 1433,
    type: "mssql.login_attempt",
    service: "mssql",
    port: 1433,
    sourcePort: 40123,
    input: { username: "svc_backup" },
    password: "",
    tags: [],
  },
  {
    logtype: 12001,
    logdata: {
      "VNC Client Response": "5c2b0ad2f0a3e5a1a9d4c1be7f11c0de",
      "VNC Password": "letmein99",
      "VNC Server Challenge": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    },
    srcPort: 40124,
    dstPort: 5900,
    type: "vnc.login_attempt",
    service: "vnc",
    port: 5900,
    sourcePort: 40124,
    input: {
      vncClientResponse: "5c2b0ad2f0a3e5a1a9d4c1be7f11c0de",
      vncServerChallenge: "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    },
    password: "letmein99",
    tags: [],
  },
  {
    logtype: 14001,
    logdata: { USERNAME: "administrator" },
    srcPort: 40125,
    dstPort: 3389,
    type: "rdp.login_attempt",
    service: "rdp",
    port: 3389,
    sourcePort: 40125,
    input: { username: "administrator" },
    tags: [],
  },
  {
    // Redis AUTH: the argument is the tried password, masked (D19).
    logtype: 17001,
    logdata: { ARGS: "r3dis-s3cret", CMD: "AUTH" },
    srcPort: 40126,
    dstPort: 6379,
    type: "redis.command",
    service: "redis",
    port: 6379,
    sourcePort: 40126,
    input: { command: "AUTH" },
    password: "r3dis-s3cret",
    tags: [],
  },
]

/** One OpenCanary line; `i` sets its time (BASE_MS + i s) and local_time one hour ahead (a UTC+1 canary). */
const lineOf = (c: Case, i: number) => ({
  dst_host: "10.0.0.5",
  dst_port: c.dstPort,
  local_time: ocTime(BASE_MS + i * 1000 + 3600_000),
  local_time_adjusted: ocTime(BASE_MS + i * 1000 + 3600_000, "123789"),
  logdata: c.logdata,
  logtype: c.logtype,
  node_id: "opencanary-1",
  src_host: SOURCE_IP,
  src_port: c.srcPort,
  utc_time: ocTime(BASE_MS + i * 1000),
})

const ID_BODY = "[0-9A-HJKMNP-TV-Z]{26}"
const MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Spec "Technique": {id, name, tactics}, from the fixed table (D23). */
const expectTechniques = (techniques: unknown, mustInclude: ReadonlyArray<string>) => {
  expect(Array.isArray(techniques)).toBe(true)
  const list = techniques as Array<Record<string, unknown>>
  for (const t of list) {
    expect(Object.keys(t).sort()).toEqual(["id", "name", "tactics"])
    expect(t.id).toMatch(/^T\d{4}(\.\d{3})?$/)
    expect(typeof t.name).toBe("string")
    expect((t.name as string).length).toBeGreaterThan(0)
    expect(Array.isArray(t.tactics)).toBe(true)
    expect((t.tactics as Array<unknown>).length).toBeGreaterThan(0)
    for (const tactic of t.tactics as Array<unknown>) expect(typeof tactic).toBe("string")
    // The table's own entry, not something made up per request.
    expect(t).toEqual({ ...(TECHNIQUES.get(t.id as string) as object) })
  }
  const ids = list.map((t) => t.id as string)
  expect(new Set(ids).size).toBe(ids.length)
  for (const id of mustInclude) expect({ missing: id, ids }).toEqual({ missing: id, ids: expect.arrayContaining([id]) })
}

const codePoints = (s: string) => [...s].length

describe("every supported OpenCanary logtype, end to end over HTTP", () => {
  // Results of the one ingest request, shared by the tests below (they read, never write).
  let reply: {
    status: number
    body: { accepted: number; duplicates: number; rejected: number; results: Array<Record<string, string>> }
  }
  const events = new Map<number, Record<string, unknown>>()

  // Every logtype's outcome (D42) is tested in mappings.test.ts; these fixtures are the ones mapped before it.
  test("each fixture's logtype maps to the fixture's type", () => {
    for (const c of CASES)
      expect({ logtype: c.logtype, type: OPENCANARY_LOGTYPES.get(c.logtype) }).toEqual({
        logtype: c.logtype,
        type: { outcome: "accepted", type: c.type },
      })
  })

  test("one NDJSON request with a line of each logtype: every line accepted, with evt_ and inc_ ids", async () => {
    // Sent newest first: out of order on purpose (first/last seen are checked on the incident).
    const ndjson = CASES.map((c, i) => JSON.stringify(lineOf(c, i)))
      .reverse()
      .join("\n")
    const res = await ingest(server.ingestUrl, "opencanary", sensor.token, `${ndjson}\n`, true)
    expect(res.status).toBe(200)
    reply = res
    expect(res.body).toMatchObject({ accepted: CASES.length, duplicates: 0, rejected: 0 })
    expect(res.body.results).toHaveLength(CASES.length)
    for (const [index, r] of (res.body.results as Array<Record<string, unknown>>).entries()) {
      expect(r).toEqual({
        index,
        status: "accepted",
        id: expect.stringMatching(new RegExp(`^evt_${ID_BODY}$`)),
        incidentId: expect.stringMatching(new RegExp(`^inc_${ID_BODY}$`)),
      })
    }
    // One grouping key (organization, sensor, source address): one incident (D12).
    expect(new Set(res.body.results.map((r: { incidentId: string }) => r.incidentId)).size).toBe(1)
  })

  test("GET /v1/events/{id} answers each event in the spec's Event shape, field by field", async () => {
    expect(reply?.status).toBe(200)
    for (const [i, c] of CASES.entries()) {
      const result = reply.body.results[CASES.length - 1 - i] as Record<string, string>
      const res = await get(server.url, `/v1/events/${result.id}`, tenant.key)
      const label = `logtype ${c.logtype}`
      expect({ label, status: res.status }).toEqual({ label, status: 200 })
      const e = res.body as Record<string, unknown>
      events.set(c.logtype, e)
      const spec = eventTypeSpec(c.type)
      if (spec === undefined) throw new Error(`${label}: no event type ${c.type}`)
      for (const field of SPEC_EVENT_FIELDS)
        expect({ label, field, present: field in e }).toEqual({ label, field, present: true })
      expect({ label, id: e.id }).toEqual({ label, id: result.id })
      expect(e.id).toMatch(new RegExp(`^evt_${ID_BODY}$`))
      // D2: utc_time (not local_time), microseconds cut to milliseconds, Z.
      expect(e.time).toMatch(MS_UTC)
      expect({ label, time: e.time }).toEqual({ label, time: isoOf(BASE_MS + i * 1000 + 123) })
      expect(e.sensor).toEqual({ id: sensor.id, name: SENSOR_NAME })
      expect(e.sourceIp).toBe(SOURCE_IP)
      expect({ label, sourcePort: e.sourcePort }).toEqual({ label, sourcePort: c.sourcePort })
      expect({ label, service: e.service, port: e.port, type: e.type }).toEqual({
        label,
        service: c.service,
        port: c.port,
        type: c.type,
      })
      expect(Number.isInteger(e.sourcePort) && Number.isInteger(e.port)).toBe(true)
      expect({ label, action: e.action }).toEqual({ label, action: spec.action })
      expect(SEVERITIES as ReadonlyArray<unknown>).toContain(e.severity)
      expect(CONFIDENCES as ReadonlyArray<unknown>).toContain(e.confidence)
      expect({ label, severity: e.severity, confidence: e.confidence }).toEqual({
        label,
        severity: spec.severity,
        confidence: spec.confidence,
      })
      expect(Array.isArray(e.tags)).toBe(true)
      expect({ label, tags: [...(e.tags as Array<string>)].sort() }).toEqual({ label, tags: [...c.tags].sort() })
      // An event's techniques: its type's and its payload tags' (D23).
      expectTechniques(e.techniques, [...spec.techniques, ...c.tags.flatMap((t) => TAG_TECHNIQUES.get(t) ?? [])])
      expect(typeof e.summary).toBe("string")
      expect(e.summary as string).toContain(SOURCE_IP)
      const username = c.input.username
      if (typeof username === "string") expect(e.summary as string).toContain(JSON.stringify(username))
      // attackerInput: every plain member as sent (keys in lower camel case), the password masked (D19).
      const { password, ...rest } = e.attackerInput as Record<string, unknown>
      expect({ label, attackerInput: rest }).toEqual({ label, attackerInput: c.input })
      if (c.password === undefined) {
        expect({ label, password }).toEqual({ label, password: undefined })
      } else {
        const length = codePoints(c.password)
        expect({ label, password }).toEqual({
          label,
          password: {
            masked: "*".repeat(Math.min(length, 32)),
            length,
            fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/),
          },
        })
        expect(Object.keys(password as object).sort()).toEqual(["fingerprint", "length", "masked"])
        if (c.password !== "") expect(JSON.stringify(e)).not.toContain(c.password)
      }
    }
  })

  test("equal passwords have equal fingerprints within the organization, different ones differ", () => {
    const fingerprint = (logtype: number) =>
      (events.get(logtype)?.attackerInput as Record<string, { fingerprint: string }> | undefined)?.password?.fingerprint
    expect(fingerprint(3001)).toMatch(/^[0-9a-f]{32}$/)
    expect(fingerprint(4002)).toBe(fingerprint(3001) as string)
    const others = [2000, 6001, 8001, 9001, 9002, 12001, 17001].map(fingerprint)
    expect(new Set([fingerprint(3001), ...others]).size).toBe(others.length + 1)
  })

  test("GET /v1/incidents/{id}: the incident of these events, in the spec's Incident shape", async () => {
    const incidentId = reply.body.results[0]?.incidentId as string
    const res = await get(server.url, `/v1/incidents/${incidentId}`, tenant.key)
    expect(res.status).toBe(200)
    const incident = res.body as Record<string, unknown>
    const types = [...new Set(CASES.map((c) => c.type))].sort()
    const specs = types.map((t) => eventTypeSpec(t))
    const highest = specs.reduce(
      (acc, s) => (s && severityRank(s.severity) > severityRank(acc) ? s.severity : acc),
      "low" as (typeof SEVERITIES)[number],
    )
    expect(incident).toMatchObject({
      id: incidentId,
      status: "open",
      sensor: { id: sensor.id, name: SENSOR_NAME },
      sourceIp: SOURCE_IP,
      eventCount: CASES.length,
      eventTypes: types,
      severity: highest,
      highConfidence: specs.some((s) => s?.confidence === "high"),
      // Out-of-order arrival: first is the earliest utc_time, last the latest (D3).
      firstSeenAt: isoOf(BASE_MS + 123),
      lastSeenAt: isoOf(BASE_MS + (CASES.length - 1) * 1000 + 123),
      resolvedAt: null,
      url: `${APP_URL}/incidents/${incidentId}`,
    })
    for (const field of ["title", "narrative", "recommendedAction"]) {
      expect(typeof incident[field]).toBe("string")
      expect((incident[field] as string).length).toBeGreaterThan(0)
    }
    // On a single incident: the techniques of its types and of its events' payload tags.
    expectTechniques(incident.techniques, [
      ...specs.flatMap((s) => s?.techniques ?? []),
      ...CASES.flatMap((c) => c.tags.flatMap((t) => TAG_TECHNIQUES.get(t) ?? [])),
    ])
    // Member events, oldest first (D8), the same events GET /v1/events/{id} answered.
    const members = incident.events as Array<Record<string, unknown>>
    expect(members.map((e) => e.time)).toEqual(CASES.map((_, i) => isoOf(BASE_MS + i * 1000 + 123)))
    expect(members.map((e) => e.id)).toEqual(CASES.map((c) => events.get(c.logtype)?.id))
    for (const [i, c] of CASES.entries()) expect(members[i]).toEqual(events.get(c.logtype) as Record<string, unknown>)
    const text = JSON.stringify(incident)
    for (const c of CASES) if (c.password) expect(text).not.toContain(c.password)
  })

  test("a line sent again is a duplicate with the stored event's id", async () => {
    const at = CASES.findIndex((c) => c.logtype === 4002)
    const res = await ingest(server.ingestUrl, "opencanary", sensor.token, lineOf(CASES[at] as Case, at))
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ accepted: 0, duplicates: 1, rejected: 0 })
    expect(res.body.results[0]).toEqual({ index: 0, status: "duplicate", id: events.get(4002)?.id })
  })
})

describe("lines that record no attacker action are ignored, unknown logtypes kept, malformed ones rejected", () => {
  test("daemon messages ignored and unknown logtypes accepted as generic events beside a good line", async () => {
    const t = ocTime(Date.now() - 60_000)
    const line = (logtype: unknown, logdata: Record<string, unknown> = {}) => ({
      dst_host: "10.0.0.5",
      dst_port: 0,
      local_time: t,
      logdata,
      logtype,
      node_id: "opencanary-1",
      src_host: "203.0.113.78",
      src_port: 40200,
      utc_time: t,
    })
    const lines = [
      line(1001, { msg: "Canary running!!!" }),
      line(18001, { FUNCTION: "CONNECTION_MADE" }),
      line(4002, { USERNAME: "root", PASSWORD: "unmapped-batch-pw" }),
      line(99999),
      line(15001, { HEADERS: { "call-id": ["1"] } }),
      line("not-a-number"),
      { ...line(0), logtype: undefined },
    ]
    const res = await ingest(server.ingestUrl, "opencanary", sensor.token, lines)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ accepted: 4, duplicates: 0, rejected: 2 })
    const results = res.body.results as Array<{ status: string; reason?: string }>
    expect(results.map((r) => r.status)).toEqual([
      "ignored",
      "accepted",
      "accepted",
      "accepted",
      "accepted",
      "rejected",
      "rejected",
    ])
    expect(results[0]?.reason).toContain("1001 (LOG_BASE_MSG)")
    expect(results[5]?.reason).toContain('"not-a-number"')
    expect(results[6]?.reason).toBe("missing or invalid logtype: missing")
    const listed = await get(server.url, "/v1/events?sourceIp=203.0.113.78", tenant.key)
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((e: { type: string }) => e.type).sort()).toEqual([
      "decoy.activity",
      "sip.request",
      "ssh.login_attempt",
      "tcp.connection",
    ])
  })
})
