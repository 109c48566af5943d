import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { ChannelAdmin } from "../../src/admin/ChannelAdmin.ts"
import { OrgAdmin } from "../../src/admin/OrgAdmin.ts"
import { SensorAdmin } from "../../src/admin/SensorAdmin.ts"
import { UserAdmin } from "../../src/admin/UserAdmin.ts"
import { type SensorStatus, statusOf } from "../../src/domain/sensorStatus.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { admin, adminJson } from "../support/cli.ts"
import { freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { channelDeliveries, listChannels } from "../support/fixtures.ts"
import { type OwnDatabase, postgresForFile } from "../support/postgres.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D43 silent detection end to end: two real server processes sweeping one PostgreSQL database every 150 ms
 * (SENSOR_SWEEP_INTERVAL), a real local HTTPS receiver (its certificate made here, trusted through WEBHOOK_CA_FILE),
 * sensors made silent by moving their last contact back in time through the test's own database connection, and
 * heartbeats through the real ingest listener. Two processes are the point: a change must be announced once.
 *
 * On PostgreSQL: the suite's DATABASE_URL, otherwise a fresh database of the machine's PostgreSQL
 * (TEST_POSTGRES_URL), created and dropped here.
 */

let ownDatabase: OwnDatabase | undefined

/** DATABASE_URL for this file's servers: the suite's PostgreSQL, or a fresh database of the machine's one. */
const postgresUrl = async (): Promise<string> => {
  const target = await postgresForFile("health")
  ownDatabase = target.own
  return target.url
}

let receiver: Receiver
let caFile: string
let server: RunningServer
let second: RunningServer
let db: TestDatabase
let consoleUrl: string

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"] })
  caFile = join(tmpdir(), `dsvc-health-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  const env = await testEnv({
    DATABASE_URL: await postgresUrl(),
    CONSOLE_PORT: String(port),
    APP_URL: consoleUrl,
    SENSOR_SWEEP_INTERVAL: "150 millis",
    WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8,::1/128",
    WEBHOOK_CA_FILE: caFile,
    WEBHOOK_POLL_INTERVAL: "200 millis",
  })
  server = await startServer({ env })
  // A second process on the same database, sweeping too.
  second = await startServer({ env: { ...env, CONSOLE_PORT: "0" } })
  db = testDatabase(env)
}, 90_000)

afterAll(async () => {
  await db?.close()
  await second?.stop()
  await server?.stop()
  receiver?.stop()
  rmSync(caFile, { force: true })
  await ownDatabase?.drop()
})

const eventually = async (what: string, check: () => boolean | Promise<boolean>, ms = 15_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, run) as Effect.Effect<ReadonlyArray<A>, never, SqlClient.SqlClient>)

const healthOf = async (sensorId: string) =>
  (await query<{ health: string }>((sql) => sql`select health from sensors where id = ${sensorId}`))[0]?.health

/** The sensor's last contact, as if it happened `secondsAgo` ago (never heard from: its creation instead). */
const lastHeard = (sensorId: string, secondsAgo: number, never = false) => {
  const at = new Date(Date.now() - secondsAgo * 1000)
  return query((sql) =>
    never
      ? sql`update sensors set created_at = ${at}, last_seen_at = null where id = ${sensorId} returning id`
      : sql`update sensors set last_seen_at = ${at} where id = ${sensorId} returning id`,
  ).then(() => at)
}

const heartbeat = (token: string, via: RunningServer = server) =>
  fetch(`${via.ingestUrl}/ingest/v1/heartbeat`, { method: "POST", headers: { authorization: `Bearer ${token}` } })

/** Organization names are unique: each gets this run's suffix (a rerun on the same database makes them again). */
const RUN = crypto.randomUUID().slice(0, 8)

// Set-up goes through the same audited admin services as the CLI, as its operator, in this process (the CLI itself
// is tested where it is the subject: a process per command is slow on a busy machine).
const newOrg = (name: string) =>
  db.run(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.create(`${name} ${RUN}`)))).then((org) => org.id)

/** null: no heartbeat expected. */
const newSensor = (orgId: string, name: string, heartbeatInterval: string | null = "30s") =>
  db.run(
    asOperator(
      Effect.flatMap(SensorAdmin, (sensors) =>
        sensors.create(orgId, { name, profile: "opencanary", heartbeatInterval: heartbeatInterval ?? undefined }),
      ),
    ),
  )

const newChannel = (orgId: string, path: string, sensorHealth = false) =>
  db.run(
    asOperator(
      Effect.flatMap(ChannelAdmin, (channels) =>
        channels.create(orgId, { url: `${receiver.url}${path}`, minSeverity: "low", sensorHealth }),
      ),
    ),
  )

const at = (path: string) => receiver.requests.filter((r) => r.path === path)
const bodiesAt = (path: string) => at(path).map((r) => JSON.parse(r.body) as Record<string, unknown>)

describe("sensor.silent and sensor.recovered", () => {
  test("a sensor that misses three heartbeats becomes silent within a sweep; a signed sensor.silent reaches the opted-in channel only; a heartbeat brings a sensor.recovered", async () => {
    const orgId = await newOrg("Silent sensors")
    const sensor = await newSensor(orgId, "dmz-web-01")
    // The CLI's --sensor-health opts in; without it, nothing new.
    const opted = (await adminJson(server.env, [
      "webhook",
      "create",
      "--org",
      orgId,
      "--url",
      `${receiver.url}/d43-opted`,
      "--sensor-health",
    ])) as { id: string; secret: string }
    await newChannel(orgId, "/d43-plain")
    const disabled = await newChannel(orgId, "/d43-disabled", true)
    await db.run(asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.setEnabled(disabled.id, false))))

    // First contact: recorded as alive, announced to nobody.
    expect((await heartbeat(sensor.token)).status).toBe(204)
    await eventually("health alive", async () => (await healthOf(sensor.id)) === "alive")

    // Three 30 s intervals and more without a word.
    const seen = await lastHeard(sensor.id, 95)
    await eventually("sensor.silent at the opted-in channel", () => at("/d43-opted").length === 1)
    expect(await healthOf(sensor.id)).toBe("silent")
    const silent = at("/d43-opted")[0]
    if (silent === undefined) throw new Error("no request")
    const body = JSON.parse(silent.body)
    expect(Object.keys(body)).toEqual(["id", "type", "createdAt", "sensor"])
    expect(body).toMatchObject({
      type: "sensor.silent",
      sensor: {
        id: sensor.id,
        name: "dmz-web-01",
        profile: "opencanary",
        lastSeenAt: seen.toISOString().replace(/\.\d{3}Z$/, "Z"),
      },
    })
    expect(Object.keys(body.sensor)).toEqual(["id", "name", "profile", "lastSeenAt"])
    expect(body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    // Signed like every webhook, with the same headers (D15, D16).
    expect(verifyWebhook(silent.body, silent.headers["x-service-signature"] ?? "", opted.secret).ok).toBe(true)
    expect(silent.headers["x-service-webhook-id"]).toBe(body.id)
    expect(silent.headers["x-service-delivery-attempt"]).toBe("1")
    expect(silent.headers["content-type"]).toContain("application/json")

    // The CLI's list says silent too.
    // What `sensor list` shows, read through the admin service.
    const listed = await db.run(asOperator(Effect.flatMap(SensorAdmin, (sensors) => sensors.list(orgId))))
    expect(listed.find((s) => s.id === sensor.id)?.status).toBe("silent")

    // Heard from again, through the other process (each process writes a sensor's contact at most every 10 s, and the
    // first one wrote it moments ago; moving last_seen_at back is what only a test does).
    expect((await heartbeat(sensor.token, second)).status).toBe(204)
    await eventually("sensor.recovered at the opted-in channel", () => at("/d43-opted").length === 2)
    const recovered = bodiesAt("/d43-opted")[1] as { type: string; sensor: { id: string; lastSeenAt: string } }
    expect(recovered.type).toBe("sensor.recovered")
    expect(recovered.sensor.id).toBe(sensor.id)
    expect(Date.now() - Date.parse(recovered.sensor.lastSeenAt)).toBeLessThan(10_000)
    expect(await healthOf(sensor.id)).toBe("alive")

    // Nothing more, nowhere else: not the channel that did not opt in, not the disabled one.
    await Bun.sleep(800)
    expect(at("/d43-opted")).toHaveLength(2)
    expect(at("/d43-plain")).toHaveLength(0)
    expect(at("/d43-disabled")).toHaveLength(0)

    // In the delivery log like every delivery (no incident), delivered.
    const log = await channelDeliveries(db, opted.id)
    expect(log.map((d) => [d.type, d.status, d.incidentId]).sort()).toEqual([
      ["sensor.recovered", "succeeded", null],
      ["sensor.silent", "succeeded", null],
    ])
  }, 180_000)

  test("two servers sweeping one database announce each change once; a sensor never heard from is silent three intervals after its creation", async () => {
    const orgId = await newOrg("Many silent sensors")
    await newChannel(orgId, "/d43-many", true)
    const sensors: Array<{ id: string; token: string }> = []
    for (let i = 0; i < 8; i++) sensors.push(await newSensor(orgId, `fleet-${i}`))
    for (const s of sensors.slice(0, 4)) expect((await heartbeat(s.token)).status).toBe(204)
    await eventually("the heard-from ones alive", async () => {
      const health = await Promise.all(sensors.slice(0, 4).map((s) => healthOf(s.id)))
      return health.every((h) => h === "alive")
    })
    // All at once: half heard from long ago, half never heard from since a creation long ago.
    await Promise.all(sensors.map((s, i) => lastHeard(s.id, 200, i >= 4)))
    await eventually("eight sensor.silent", () => at("/d43-many").length >= 8)
    await Bun.sleep(1000) // several more sweeps of both processes
    const bodies = bodiesAt("/d43-many") as Array<{ type: string; sensor: { id: string; lastSeenAt: string | null } }>
    expect(bodies).toHaveLength(8)
    expect(new Set(bodies.map((b) => b.sensor.id))).toEqual(new Set(sensors.map((s) => s.id)))
    expect(bodies.every((b) => b.type === "sensor.silent")).toBe(true)
    const never = new Set(sensors.slice(4).map((s) => s.id))
    for (const b of bodies) expect(b.sensor.lastSeenAt === null).toBe(never.has(b.sensor.id))
    // One delivery row per change in the outbox, and one log line per change across both processes.
    const rows = await query<{ n: number }>(
      (sql) => sql`select count(*)::int as n from webhook_deliveries where org_id = ${orgId}`,
    )
    expect(rows[0]?.n).toBe(8)
    const announced = [...server.logs, ...second.logs].filter(
      (l) => l.includes('"sensor silent"') && sensors.some((s) => l.includes(s.id)),
    )
    expect(announced).toHaveLength(8)
    expect(
      server.logs.filter((l) => l.includes('"sensor silent"')).length +
        second.logs.filter((l) => l.includes('"sensor silent"')).length,
    ).toBeGreaterThanOrEqual(8)
  }, 180_000)

  test("the sensors gauge counts every sensor by state (alive, silent, unknown, revoked)", async () => {
    const orgId = await newOrg("Counted sensors")
    const revoked = await newSensor(orgId, "gone")
    await query((sql) => sql`update sensors set revoked_at = now() where id = ${revoked.id} returning id`)
    await newSensor(orgId, "no-heartbeat", null)
    const quiet = await newSensor(orgId, "quiet")
    await lastHeard(quiet.id, 200)

    const expected = async () => {
      const rows = await query<{
        revokedAt: Date | null
        lastSeenAt: Date | null
        heartbeatIntervalSeconds: number | null
        createdAt: Date
      }>((sql) => sql`select revoked_at, last_seen_at, heartbeat_interval_seconds, created_at from sensors`)
      const now = new Date()
      const counts: Record<SensorStatus, number> = { alive: 0, silent: 0, unknown: 0, revoked: 0 }
      for (const r of rows) counts[statusOf(r, now)]++
      return counts
    }
    const scraped = async (url: string) => {
      const text = await (await fetch(`${url}/metrics`)).text()
      const value = (state: string) => {
        const line = text.split("\n").find((l) => l.startsWith(`sensors{state="${state}"} `))
        return line === undefined ? undefined : Number(line.split(" ")[1])
      }
      return { alive: value("alive"), silent: value("silent"), unknown: value("unknown"), revoked: value("revoked") }
    }
    const want = await expected()
    expect(want.revoked).toBeGreaterThanOrEqual(1)
    expect(want.silent).toBeGreaterThanOrEqual(1)
    expect(want.unknown).toBeGreaterThanOrEqual(1)
    // Each process's gauge, as its sweeps find every organization's sensors (the database may change meanwhile).
    for (const url of [server.opsUrl, second.opsUrl]) {
      let last: unknown
      await eventually(`gauge at ${url} (last ${JSON.stringify(last)})`, async () => {
        const [got, now] = await Promise.all([scraped(url), expected()])
        last = { got, now }
        return JSON.stringify(got) === JSON.stringify(now)
      })
    }
    const text = await (await fetch(`${server.opsUrl}/metrics`)).text()
    expect(text).toContain("# TYPE sensors gauge")
  }, 180_000)
})

describe("opting a channel in to sensor-health alerts", () => {
  test("webhook create without --sensor-health opts in to nothing new; webhook sensor-health on|off moves it, audited", async () => {
    const orgId = await newOrg("Opt in")
    const plain = await newChannel(orgId, "/d43-opt")
    const listed = async () =>
      ((await adminJson(server.env, ["webhook", "list", "--org", orgId])) as Array<Record<string, unknown>>).find(
        (c) => c.id === plain.id,
      )?.sensorHealth
    expect(await listed()).toBe(false)
    const on = await admin(server.env, ["webhook", "sensor-health", plain.id, "on"])
    expect(on.code).toBe(0)
    expect(on.stdout).toContain("on")
    expect(await listed()).toBe(true)
    expect((await admin(server.env, ["webhook", "sensor-health", plain.id, "off"])).code).toBe(0)
    expect(await listed()).toBe(false)
    const bad = await admin(server.env, ["webhook", "sensor-health", plain.id, "maybe"])
    expect(bad.code).not.toBe(0)
    const audit = await query<{ action: string; detail: string | null; actor: string }>(
      (sql) => sql`select action, detail, actor from audit_log where target = ${plain.id} order by id`,
    )
    expect(audit.filter((a) => a.action === "webhook.sensor_health").map((a) => [a.detail, a.actor])).toEqual([
      ["on", "cli"],
      ["off", "cli"],
    ])
  }, 180_000)

  test("the console's Alerts page creates an opted-in channel with its checkbox and toggles it; the overview and Sensors page show silent sensors as a warning", async () => {
    const orgId = await newOrg("Console opt in")
    const user = await db.run(
      asOperator(
        Effect.flatMap(UserAdmin, (users) =>
          users.create({ orgId, email: `lead-${Date.now().toString(36)}@acme.example`, role: "admin" }),
        ),
      ),
    )
    const password = "correct horse battery staple"
    const path = new URL(user.link).pathname
    const form = await fetch(`${consoleUrl}${path}`)
    const preCookie = (form.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const preCsrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
    const set = await fetch(`${consoleUrl}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: preCookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
      body: new URLSearchParams({ csrf: preCsrf, password }),
    })
    expect(set.status).toBe(303)
    const signInForm = await fetch(`${consoleUrl}/sign-in`)
    const signInCookie = (signInForm.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const signInCsrf = /name="csrf" value="([^"]+)"/.exec(await signInForm.text())?.[1] ?? ""
    const signedIn = await fetch(`${consoleUrl}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: signInCookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
      body: new URLSearchParams({ csrf: signInCsrf, email: user.email, password, next: "/" }),
    })
    const cookie = signedIn.headers
      .getSetCookie()
      .find((c) => c.startsWith("__Host-session="))
      ?.split(";")[0]
    if (cookie === undefined) throw new Error(`sign-in refused: ${signedIn.status}`)
    const get = async (p: string) => (await fetch(`${consoleUrl}${p}`, { headers: { cookie } })).text()
    const post = async (p: string, fields: Record<string, string>) => {
      const csrf = /name="csrf" value="([^"]+)"/.exec(await get("/settings/alerts"))?.[1] ?? ""
      return fetch(`${consoleUrl}${p}`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
        body: new URLSearchParams({ csrf, ...fields }),
      })
    }

    const alerts = await get("/settings/alerts")
    expect(alerts).toContain('name="sensorHealth"')
    const created = await post("/settings/alerts/channels", {
      url: `${receiver.url}/d43-console`,
      minSeverity: "high",
      sensorHealth: "on",
    })
    expect(created.status).toBe(303)
    const channels = await listChannels(db, orgId)
    expect(channels).toHaveLength(1)
    const channel = channels[0] as { id: string; sensorHealth: boolean }
    expect(channel.sensorHealth).toBe(true)
    expect(await get("/settings/alerts")).toContain("Stop sensor-health alerts")
    expect((await post(`/settings/alerts/channels/${channel.id}/sensor-health-off`, {})).status).toBe(303)
    const after = await listChannels(db, orgId)
    expect(after[0]?.sensorHealth).toBe(false)
    const audit = await query<{ action: string; detail: string | null }>(
      (sql) => sql`select action, detail from audit_log where target = ${channel.id} order by id`,
    )
    expect(audit.map((a) => a.action)).toEqual(["webhook.create", "webhook.sensor_health"])
    expect(audit[0]?.detail).toContain("sensor health")

    // A silent sensor: a warning on the overview (with a link) and on the Sensors page.
    expect(await get("/")).not.toContain("notice-warn")
    const sensor = await newSensor(orgId, "console-quiet")
    await lastHeard(sensor.id, 200)
    const overview = await get("/")
    expect(overview).toContain("1 sensor is silent")
    expect(overview).toContain('href="/settings/sensors"')
    const sensorsPage = await get("/settings/sensors")
    expect(sensorsPage).toContain("notice-warn")
    expect(sensorsPage).toContain('class="status status-silent"')
  }, 180_000)
})
