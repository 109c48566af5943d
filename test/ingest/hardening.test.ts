import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { AlertMessage } from "../../src/domain/alertMessage.ts"
import { newId, type OrgId } from "../../src/domain/ids.ts"
import { REPAIR_TASK, repairStoredAttackerInputs } from "../../src/ingest/AttackerInputRepair.ts"
import { OrgKeys } from "../../src/ingest/OrgKeys.ts"
import { readMigrations } from "../../src/platform/db/migrate.ts"
import { EventsRepo } from "../../src/repos/EventsRepo.ts"
import { IncidentsRepo } from "../../src/repos/IncidentsRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { closeIncident, createChannel, createSensor, createTenant, get, idOf } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Issue #17 items 1–4 against the real server: D20 (a stored row never makes a read fail), D22 (invalid UTF-8 is
 * refused), D36 (clock skew) and D19 (masking by word, inside URLs, paths, form bodies and header lines).
 */
let server: RunningServer
let db: TestDatabase
let tenant: { orgId: OrgId; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer({
    env: await testEnv({
      // A channel on a closed local port: deliveries are built (at ingest, in its transaction) and then fail.
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      MAX_CLOCK_SKEW: "5 minutes",
    }),
  })
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "web-01")
  await createChannel(db, tenant.orgId, "https://127.0.0.1:9/hooks")
})

afterAll(() => shutdown(server, db))

const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, SqlClient.SqlClient>)

let ipCounter = 1
const nextIp = () => `198.51.100.${ipCounter++}`
const ocTime = (d: Date) => d.toISOString().replace("T", " ").replace("Z", "000")

/** Every read of the event and its incident answers 200, and every webhook body built for the incident decodes. */
const readsBack = async (eventId: string, incidentId: string) => {
  const one = await get(server.url, `/v1/events/${eventId}`, tenant.key)
  expect(one.status).toBe(200)
  expect((await get(server.url, `/v1/incidents/${incidentId}`, tenant.key)).status).toBe(200)
  expect((await get(server.url, `/v1/events?incidentId=${incidentId}`, tenant.key)).status).toBe(200)
  expect((await get(server.url, "/v1/events?limit=100", tenant.key)).status).toBe(200)
  const bodies = await sql(
    (s) => s<{ body: string }>`select body from webhook_deliveries where incident_id = ${incidentId}`,
  )
  expect(bodies.length).toBeGreaterThan(0)
  for (const { body } of bodies) Schema.decodeUnknownSync(AlertMessage)(JSON.parse(body))
  return one.body.attackerInput as Record<string, unknown>
}

const accepted = (response: { status: number; body: { results: Array<Record<string, unknown>> } }) => {
  expect(response.status).toBe(200)
  const [result] = response.body.results
  expect(result?.status).toBe("accepted")
  return { id: result?.id as string, incidentId: result?.incidentId as string }
}

const masked = expect.objectContaining({ masked: expect.any(String), length: expect.any(Number) })

describe("a stored row never makes a read fail", () => {
  const usernames: Array<[unknown, string | undefined]> = [
    [42, "42"],
    [null, undefined],
    [true, "true"],
    [["a"], '["a"]'],
    [{ nested: 1 }, '{"nested":1}'],
  ]
  for (const [value, shown] of usernames) {
    test(`native username ${JSON.stringify(value)} reads back as ${JSON.stringify(shown)}`, async () => {
      const r = accepted(
        await ingest(
          server.ingestUrl,
          "events",
          sensor.token,
          nativeEvent({ sourceIp: nextIp(), attackerInput: { username: value, password: "x" } }),
        ),
      )
      const input = await readsBack(r.id, r.incidentId)
      if (shown === undefined) expect("username" in input).toBe(false)
      else expect(input.username).toBe(shown)
    })
  }

  test('native {"user\\u200bname":7}: the cleaned name is username, its value the text "7"', async () => {
    const r = accepted(
      await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        nativeEvent({ sourceIp: nextIp(), attackerInput: { "user\u200bname": 7 } }),
      ),
    )
    expect(await readsBack(r.id, r.incidentId)).toEqual({ username: "7" })
  })

  for (const value of [null, true, false]) {
    test(`native password ${value}: ${value === null ? "left out" : "masked as its JSON text"}`, async () => {
      const r = accepted(
        await ingest(
          server.ingestUrl,
          "events",
          sensor.token,
          nativeEvent({ sourceIp: nextIp(), attackerInput: { username: "root", password: value } }),
        ),
      )
      const input = await readsBack(r.id, r.incidentId)
      if (value === null) expect(input).toEqual({ username: "root" })
      else
        expect(input.password).toMatchObject({ masked: "*".repeat(String(value).length), length: String(value).length })
    })
  }

  test('OpenCanary {"USERNAME":42,"PASSWORD":{"a":1}} and "VNC Password": false', async () => {
    const t = new Date()
    const line = (logtype: number, logdata: Record<string, unknown>) => ({
      dst_host: "10.0.0.5",
      dst_port: logtype === 12001 ? 5900 : 22,
      local_time: ocTime(t),
      logdata,
      logtype,
      node_id: "canary-01",
      src_host: nextIp(),
      src_port: 40001,
      utc_time: ocTime(t),
    })
    const ssh = accepted(
      await ingest(server.ingestUrl, "opencanary", sensor.token, line(4002, { USERNAME: 42, PASSWORD: { a: 1 } })),
    )
    const sshInput = await readsBack(ssh.id, ssh.incidentId)
    expect(sshInput.username).toBe("42")
    expect(sshInput.password).toMatchObject({ masked: "*******", length: '{"a":1}'.length })
    const vnc = accepted(
      await ingest(server.ingestUrl, "opencanary", sensor.token, line(12001, { "VNC Password": false })),
    )
    expect((await readsBack(vnc.id, vnc.incidentId)).password).toMatchObject({ masked: "*****", length: 5 })
  })

  test('Cowrie "username": 1', async () => {
    const r = accepted(
      await ingest(server.ingestUrl, "cowrie", sensor.token, {
        eventid: "cowrie.login.failed",
        username: 1,
        password: "x",
        message: "login attempt",
        sensor: "cowrie-01",
        timestamp: new Date().toISOString(),
        src_ip: nextIp(),
        session: "abc123",
      }),
    )
    expect((await readsBack(r.id, r.incidentId)).username).toBe("1")
  })

  test("a row stored before the fix (raw jsonb of any shape) reads back 200, in the shape read today, nothing in clear", async () => {
    const first = accepted(await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: nextIp() })))
    const id = newId("event", Date.now())
    const stored = {
      username: { nested: 1 },
      password: true,
      passwd: "old-clear-secret",
      path: "/login?pwd=old-clear-pwd&next=/",
      token: null,
    }
    await db.run(
      Effect.gen(function* () {
        const events = yield* EventsRepo
        const row = yield* events.findById(tenant.orgId, idOf("event", first.id))
        if (row._tag === "None") throw new Error("no row")
        const { sensorName: _, ...rest } = row.value
        yield* events.insert({ ...rest, id, sensorEventId: `old-${id}`, attackerInput: stored })
      }),
    )
    const one = await get(server.url, `/v1/events/${id}`, tenant.key)
    expect(one.status).toBe(200)
    expect(one.body.attackerInput).toEqual({
      username: '{"nested":1}',
      password: { masked: "****", length: 4, fingerprint: expect.any(String) },
      passwd: { masked: "*".repeat(16), length: 16, fingerprint: expect.any(String) },
      path: "/login?pwd=*************&next=/",
    })
    expect(JSON.stringify(one.body)).not.toContain("old-clear")
    expect((await get(server.url, `/v1/incidents/${first.incidentId}`, tenant.key)).status).toBe(200)
    expect((await get(server.url, "/v1/events?limit=100", tenant.key)).status).toBe(200)

    // The repair (sql/0008 queues it, the service runs it after start-up) rewrites the stored row itself, with the
    // organization's real fingerprints: the same as ingesting the same secret today.
    await sql(
      (s) => s`insert into maintenance_tasks (name) values (${REPAIR_TASK})
      on conflict (name) do update set position = ''`,
    )
    const rewritten = await db.run(Effect.provide(repairStoredAttackerInputs, OrgKeys.Default))
    expect(rewritten).toBeGreaterThanOrEqual(1)
    const [row] = await sql(
      (s) => s<{ attackerInput: Record<string, unknown> }>`
      select attacker_input from events where id = ${id}`,
    )
    expect(JSON.stringify(row?.attackerInput)).not.toContain("old-clear")
    const today = accepted(
      await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        nativeEvent({ sourceIp: nextIp(), attackerInput: { passwd: "old-clear-secret" } }),
      ),
    )
    const fresh = (await get(server.url, `/v1/events/${today.id}`, tenant.key)).body.attackerInput
    expect(row?.attackerInput).toEqual({
      username: '{"nested":1}',
      password: { masked: "****", length: 4, fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/) },
      passwd: fresh.passwd,
      path: "/login?pwd=*************&next=/",
    })
    expect((await sql((s) => s<{ n: number }>`select count(*)::int as n from maintenance_tasks`))[0]?.n).toBe(0)
    // Run again: nothing left to do, nothing changes.
    expect(await db.run(Effect.provide(repairStoredAttackerInputs, OrgKeys.Default))).toBe(0)
  })
})

describe("a body that is not valid UTF-8 is refused whole", () => {
  const post = (bytes: Uint8Array) =>
    fetch(`${server.ingestUrl}/ingest/v1/events`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${sensor.token}` },
      body: bytes,
    })
  const withByte = (byte: number) => {
    const event = JSON.stringify(nativeEvent({ sensorEventId: "coll-#", sourceIp: "192.0.2.200" }))
    const text = new TextEncoder().encode(event)
    const at = event.indexOf("#")
    text[at] = byte
    return { bytes: text, at }
  }

  test('"coll-\\xff" and "coll-\\xfe" are both refused with 400 naming the byte offset; nothing is stored', async () => {
    for (const byte of [0xff, 0xfe]) {
      const { bytes, at } = withByte(byte)
      const response = await post(bytes)
      expect(response.status).toBe(400)
      expect(response.headers.get("content-type")).toStartWith("application/problem+json")
      const problem = (await response.json()) as { code: string; detail: string }
      expect(problem.code).toBe("invalid_request")
      expect(problem.detail).toContain(`byte ${at}`)
    }
    const stored = await sql(
      (s) => s<{ n: number }>`select count(*)::int as n from events where sensor_event_id like 'coll-%'`,
    )
    expect(stored[0]?.n).toBe(0)
  })

  test("a truncated multi-byte sequence at the end and an overlong encoding are refused too; valid UTF-8 passes", async () => {
    const event = new TextEncoder().encode(JSON.stringify(nativeEvent({ sourceIp: "192.0.2.201" })))
    const truncated = new Uint8Array([...event, 0xe2, 0x82])
    expect((await post(truncated)).status).toBe(400)
    const overlong = withByte(0xc0)
    overlong.bytes.set([0xc0, 0xaf], overlong.at) // "/" as an overlong two-byte form
    expect((await post(overlong.bytes)).status).toBe(400)
    const fine = new TextEncoder().encode(
      JSON.stringify(nativeEvent({ sourceIp: "192.0.2.201", attackerInput: { username: "rööt😀" } })),
    )
    expect((await post(fine)).status).toBe(200)
  })
})

describe("clock skew", () => {
  test("an event more than MAX_CLOCK_SKEW ahead is rejected with the skew in seconds; within it is accepted", async () => {
    const ip = nextIp()
    const ahead = new Date(Date.now() + 3600_000)
    const response = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: ip, time: ahead.toISOString() }),
      nativeEvent({ sourceIp: ip, time: new Date(Date.now() + 60_000).toISOString() }),
    ])
    expect(response.status).toBe(200)
    const [far, near] = response.body.results
    expect(far.status).toBe("rejected")
    expect(far.reason).toMatch(/time is 3[56]\d\d seconds ahead of the server clock \(at most 300 allowed\)/)
    expect(near.status).toBe("accepted")
  })

  test("an admin close never sets resolvedAt before lastSeenAt", async () => {
    const r = accepted(
      await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        nativeEvent({ sourceIp: nextIp(), time: new Date(Date.now() + 240_000).toISOString() }),
      ),
    )
    await closeIncident(db, r.incidentId)
    const incident = await get(server.url, `/v1/incidents/${r.incidentId}`, tenant.key)
    expect(incident.body.status).toBe("closed")
    expect(Date.parse(incident.body.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(incident.body.lastSeenAt))
  })

  test("the idle close never sets resolvedAt before lastSeenAt", async () => {
    const r = accepted(
      await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        nativeEvent({ sourceIp: nextIp(), time: new Date(Date.now() + 240_000).toISOString() }),
      ),
    )
    // As if its last event had arrived long ago: only this incident is idle before the cut-off.
    await sql((s) => s`update incidents set last_activity_at = '2001-01-01T00:00:00Z' where id = ${r.incidentId}`)
    const closed = await db.run(
      Effect.flatMap(IncidentsRepo, (incidents) =>
        incidents.closeIdle(new Date("2001-01-02T00:00:00Z"), new Date(), 1000),
      ),
    )
    expect(closed.map((c): string => c.id)).toEqual([r.incidentId])
    const incident = await get(server.url, `/v1/incidents/${r.incidentId}`, tenant.key)
    expect(incident.body.status).toBe("closed")
    expect(Date.parse(incident.body.resolvedAt)).toBeGreaterThanOrEqual(Date.parse(incident.body.lastSeenAt))
  })
})

describe("rows stored before", () => {
  test("sql/0009 sets resolvedAt to lastSeenAt where it was earlier, and touches nothing else", async () => {
    const early = accepted(await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: nextIp() })))
    const fine = accepted(await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: nextIp() })))
    // As an older version could leave them: closed before the (future-dated) last event, and a normal close.
    await sql(
      (s) => s`update incidents set status = 'closed', last_seen_at = '2030-01-01T00:00:00Z',
      resolved_at = '2029-12-31T00:00:00Z' where id = ${early.incidentId}`,
    )
    await sql(
      (s) => s`update incidents set status = 'closed', last_seen_at = '2020-01-01T00:00:00Z',
      resolved_at = '2020-01-02T00:00:00Z' where id = ${fine.incidentId}`,
    )
    const migration = readMigrations().find((m) => m.version === "0009")
    if (migration === undefined) throw new Error("no migration 0009")
    await sql((s) => s.unsafe(migration.sql))
    const rows = await sql(
      (s) => s<{ id: string; resolvedAt: Date }>`
      select id, resolved_at from incidents where id in (${early.incidentId}, ${fine.incidentId})`,
    )
    const byId = new Map(rows.map((r) => [r.id, r.resolvedAt.toISOString()]))
    expect(byId.get(early.incidentId)).toBe("2030-01-01T00:00:00.000Z")
    expect(byId.get(fine.incidentId)).toBe("2020-01-02T00:00:00.000Z")
  })
})

describe("masking by word, and inside URLs, paths, query strings, form bodies and header lines", () => {
  test("native members passwd, pwd, access_token, authorization, x-api-key, userPIN, otpCode are masked", async () => {
    const secrets = {
      passwd: "s3cret-passwd",
      pwd: "s3cret-pwd",
      access_token: "s3cret-access-token",
      authorization: "Bearer s3cret-bearer",
      "x-api-key": "s3cret-api-key",
      userPIN: "s3cret-pin",
      otpCode: "s3cret-otp",
    }
    const r = accepted(
      await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        nativeEvent({ sourceIp: nextIp(), attackerInput: { username: "root", ...secrets, keyboard: "qwerty" } }),
      ),
    )
    const input = await readsBack(r.id, r.incidentId)
    for (const name of Object.keys(secrets)) expect(input[name]).toEqual(masked)
    expect(input.keyboard).toBe("qwerty")
    expect(JSON.stringify(input)).not.toContain("s3cret")
  })

  test("native text: URL, path, query string, form body, JSON body, header lines and URL credentials", async () => {
    const r = accepted(
      await ingest(
        server.ingestUrl,
        "events",
        sensor.token,
        nativeEvent({
          sourceIp: nextIp(),
          type: "http.request",
          attackerInput: {
            url: "https://victim.example/login?user=bob&password=s3cret1&next=/home#top",
            path: "/api/v1/session;jsessionid=abc?api_key=s3cret2",
            query: "access_token=s3cret3&page=2",
            body: "username=bob&passwd=s3cret4&remember=on",
            json: '{"user":"bob","password":"s3cret5"}',
            headers: "GET / HTTP/1.1\r\nHost: victim\r\nAuthorization: Basic s3cret6\r\nCookie: sid=s3cret7\r\n",
            referer: "ftp://bob:s3cret8@files.example/pub",
          },
        }),
      ),
    )
    const input = await readsBack(r.id, r.incidentId)
    expect(JSON.stringify(input)).not.toContain("s3cret")
    expect(input.url).toBe("https://victim.example/login?user=bob&password=*******&next=/home#top")
    expect(input.path).toBe("/api/v1/session;jsessionid=abc?api_key=*******")
    expect(input.query).toBe("access_token=*******&page=2")
    expect(input.body).toBe("username=bob&passwd=*******&remember=on")
    expect(input.json).toBe('{"user":"bob","password":"*******"}')
    // D20 removes the CR/LF of the stored header text; the secrets were masked before.
    expect(input.headers).toContain("Host: victim")
    expect(input.referer).toBe("ftp://bob:*******@files.example/pub")
  })

  test("OpenCanary HTTP path /login?password=… keeps the path and masks the value; Cowrie download URL token", async () => {
    const t = new Date()
    const oc = accepted(
      await ingest(server.ingestUrl, "opencanary", sensor.token, {
        dst_host: "10.0.0.5",
        dst_port: 80,
        local_time: ocTime(t),
        logdata: { PATH: "/login?username=admin&password=hunter2", USERAGENT: "curl/8", HOSTNAME: "victim" },
        logtype: 3000,
        node_id: "canary-01",
        src_host: nextIp(),
        src_port: 40001,
        utc_time: ocTime(t),
      }),
    )
    expect((await readsBack(oc.id, oc.incidentId)).path).toBe("/login?username=admin&password=*******")
    const cw = accepted(
      await ingest(server.ingestUrl, "cowrie", sensor.token, {
        eventid: "cowrie.session.file_download",
        url: "http://203.0.113.9/x.sh?token=abcdef",
        shasum: "00",
        message: "download",
        sensor: "cowrie-01",
        timestamp: new Date().toISOString(),
        src_ip: nextIp(),
        session: "dl1",
      }),
    )
    expect((await readsBack(cw.id, cw.incidentId)).url).toBe("http://203.0.113.9/x.sh?token=******")
  })
})
