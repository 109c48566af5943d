import { afterAll, afterEach, beforeAll, expect, test } from "bun:test"
import { connect } from "node:net"
import { join } from "node:path"
import { createClient, type Event, type IncidentSummary } from "../src/client/index.ts"
import { verifyWebhook } from "../src/webhooks/verify.ts"
import { admin, adminJson } from "../test/support/cli.ts"
import type { RunningServerProcess as RunningServer } from "../test/support/server.ts"
import { type HookReceiver, startHookReceiver, type WebhookTls, webhookEnv, webhookTls } from "./support/hooks.ts"
import { freePort } from "./support/ports.ts"
import { type OwnPostgres, startPostgres } from "./support/postgres.ts"
import { type OwnRedis, startRedis } from "./support/redis.ts"
import {
  type Answer,
  createChannel,
  createTenant,
  eventually,
  serviceEnv,
  show,
  startService,
  stopAll,
  timedFetch,
} from "./support/service.ts"

/**
 * compose.yaml's `replicas` profile without containers: three server processes on one PostgreSQL and one Redis,
 * behind Debian's HAProxy running deploy/haproxy.cfg unchanged (the file compose mounts). Every request of these
 * tests goes through the balancer. Each replica listens on its own loopback address (127.0.0.21-23) on the same ports
 * as the balancer (127.0.0.1), as the compose services do on their own hosts; the balancer connects to them from
 * 127.0.0.1, the one address they trust (TRUST_PROXY).
 */

const LIMIT = 120
const CONFIG = join(import.meta.dir, "..", "deploy", "haproxy.cfg")
const HOSTS = ["127.0.0.21", "127.0.0.22", "127.0.0.23"] as const
const HAPROXY = Bun.which("haproxy") ?? Bun.which("haproxy", { PATH: "/usr/sbin:/usr/local/sbin" })

let pg: OwnPostgres | undefined
let redis: OwnRedis | undefined
let tls: WebhookTls | undefined
let receiver: HookReceiver | undefined
let servers: Array<RunningServer> = []
let balancer: ReturnType<typeof Bun.spawn> | undefined
const balancerLog: Array<string> = []
let env: Record<string, string>
let ports: { api: number; ingest: number; console: number; ops: number }

const api = () => `http://127.0.0.1:${ports.api}`
const ingest = () => `http://127.0.0.1:${ports.ingest}`
const consoleUrl = () => `http://127.0.0.1:${ports.console}`
const stats = () => `http://127.0.0.1:${ports.ops}`

/** HAProxy's own view of each replica per backend (its CSV stats): state, and how many requests it was given. */
const servedBy = async (): Promise<Record<string, { readonly status: string; readonly picked: number }>> => {
  const csv = await (await fetch(`${stats()}/stats;csv`, { signal: AbortSignal.timeout(5_000) })).text()
  const [header = "", ...lines] = csv.split("\n").filter((line) => line !== "")
  const column = header.replace(/^# /, "").split(",")
  const at = (row: ReadonlyArray<string>, name: string) => row[column.indexOf(name)] ?? ""
  return Object.fromEntries(
    lines
      .map((line) => line.split(","))
      .filter((row) => at(row, "svname").startsWith("replica"))
      .map((row) => [
        `${at(row, "pxname")}/${at(row, "svname")}`,
        { status: at(row, "status").split(" ")[0] ?? "", picked: Number(at(row, "lbtot")) },
      ]),
  )
}
const states = async () => Object.fromEntries(Object.entries(await servedBy()).map(([k, v]) => [k, v.status]))
/** Requests each replica was given in `backend` since `before`. */
const pickedSince = async (backend: string, before: Awaited<ReturnType<typeof servedBy>>) => {
  const now = await servedBy()
  return [1, 2, 3].map(
    (r) => (now[`${backend}/replica${r}`]?.picked ?? 0) - (before[`${backend}/replica${r}`]?.picked ?? 0),
  )
}

/** Counts of the rate limiter start again from zero (the test's own Redis): as if the next minute had come. */
const resetLimits = async () => {
  const port = redis?.port
  if (port === undefined) throw new Error("no redis")
  await new Promise<void>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("error", reject)
    socket.once("connect", () => socket.write("FLUSHALL\r\n"))
    socket.once("data", (data) => {
      socket.destroy()
      data.toString().startsWith("+OK") ? resolve() : reject(new Error(data.toString()))
    })
  })
}

beforeAll(async () => {
  if (HAPROXY === null) throw new Error("haproxy is not installed (apt-get install haproxy; .ci/run does)")
  ;[pg, redis] = await Promise.all([startPostgres(), startRedis()])
  tls = webhookTls()
  receiver = startHookReceiver(tls.certs)
  ports = { api: await freePort(), ingest: await freePort(), console: await freePort(), ops: await freePort() }
  const listeners = {
    PORT: String(ports.api),
    INGEST_PORT: String(ports.ingest),
    CONSOLE_PORT: String(ports.console),
    OPS_PORT: String(ports.ops),
  }
  env = serviceEnv(
    pg.url,
    webhookEnv(tls.caFile, {
      REDIS_URL: redis.url,
      RATE_LIMIT: String(LIMIT),
      // The balancer's address only: the test's own requests (also from 127.0.0.1) reach replicas only through it.
      TRUST_PROXY: "127.0.0.1/32",
      WEBHOOK_RETRY_SCHEDULE: "300ms,600ms,1s",
      ...listeners,
    }),
  )
  const at = (host: string) => ({ ...env, HOST: host })
  // The first one applies the migrations; the other two then start together.
  const first = await startService(at(HOSTS[0]))
  servers = [first, ...(await Promise.all([startService(at(HOSTS[1])), startService(at(HOSTS[2]))]))]

  balancer = Bun.spawn([HAPROXY, "-f", CONFIG, "-db"], {
    env: {
      PATH: process.env.PATH ?? "",
      REPLICA1: HOSTS[0],
      REPLICA2: HOSTS[1],
      REPLICA3: HOSTS[2],
      BALANCER_BIND: "127.0.0.1",
      ...listeners,
    },
    stdout: "pipe",
    stderr: "pipe",
  })
  for (const stream of [balancer.stdout, balancer.stderr]) {
    void (async () => {
      for await (const chunk of stream as ReadableStream<Uint8Array>)
        balancerLog.push(...new TextDecoder().decode(chunk).split("\n"))
    })()
  }
  await eventually(
    "the balancer sees all three replicas up",
    async () => {
      if (balancer?.exitCode !== null) throw new Error(`haproxy exited:\n${balancerLog.join("\n")}`)
      try {
        const now = Object.values(await states())
        return now.length === 9 && now.every((s) => s === "UP")
      } catch {
        return false
      }
    },
    20_000,
  )
}, 120_000)

afterAll(async () => {
  balancer?.kill("SIGTERM")
  await balancer?.exited
  await stopAll(servers)
  await receiver?.stop()
  tls?.remove()
  await redis?.stop()
  await pg?.destroy()
})

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

const post = (token: string, events: ReadonlyArray<Record<string, unknown>>) =>
  timedFetch(
    `${ingest()}/ingest/v1/events`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(events),
    },
    30_000,
  )

/**
 * As a sensor sends: a busy answer (503 `unavailable`: no database connection came free in time on a loaded machine)
 * is sent again a moment later, as the contract asks (sooner than its Retry-After, to keep the test short). Events
 * carry their own ids, so a resend is never counted twice; what the tests check is what the database ends with.
 */
const postAsSensor = async (token: string, events: ReadonlyArray<Record<string, unknown>>) => {
  const deadline = Date.now() + 60_000
  for (;;) {
    const answer = await post(token, events)
    if (answer.status !== 503 || answer.body?.code !== "unavailable" || Date.now() > deadline) return answer
    await Bun.sleep(500 + Math.random() * 500)
  }
}

const event = (sensorEventId: string, sourceIp: string, extra: Record<string, unknown> = {}) => ({
  sensorEventId,
  time: new Date().toISOString(),
  sourceIp,
  sourcePort: 50_000,
  type: "ssh.login_attempt",
  attackerInput: { username: "root", password: "hunter2" },
  ...extra,
})

/** How many log lines of each replica satisfy `match` (its JSON log: message and annotations). */
const logged = (match: (entry: { message?: string; annotations?: Record<string, unknown> }) => boolean) =>
  servers.map(
    (server) =>
      server.logs.filter((line) => {
        try {
          return match(JSON.parse(line))
        } catch {
          return false
        }
      }).length,
  )

const failures = (answers: ReadonlyArray<Answer>) => answers.filter((a) => a.status !== 200).map(show)

test("concurrent ingestion through the balancer: one incident per (sensor, sourceIp), exact eventCount, all three replicas writing", async () => {
  const db = pg?.sql()
  if (!db) throw new Error("setup failed")
  const tenant = await createTenant(env, "Balanced")
  const before = await servedBy()
  const sources = Array.from({ length: 8 }, (_, i) => `203.0.113.${100 + i}`)
  const PER_SOURCE = 30
  const all = sources.flatMap((ip, s) => Array.from({ length: PER_SOURCE }, (_, i) => event(`grp-${s}-${i}`, ip)))
  all.sort(() => Math.random() - 0.5)
  const batches = Array.from({ length: all.length / 5 }, (_, i) => all.slice(i * 5, i * 5 + 5))
  const answers = await Promise.all(batches.map((batch) => postAsSensor(tenant.token, batch)))
  expect(failures(answers)).toEqual([])
  // A resend after a busy answer whose transaction did commit finds its events already there.
  expect(answers.reduce((n, a) => n + a.body.accepted + a.body.duplicates, 0)).toBe(all.length)
  const again = await Promise.all(batches.map((batch) => postAsSensor(tenant.token, batch)))
  expect(failures(again)).toEqual([])
  expect(again.reduce((n, a) => n + a.body.duplicates, 0)).toBe(all.length)

  // Round robin: every replica took its share of the 96 requests.
  for (const n of await pickedSince("ingest", before)) expect(n).toBeGreaterThanOrEqual(20)

  const incidents = (await db`
    select i.source_ip, i.event_count, (select count(*)::int from events e where e.incident_id = i.id) as stored
    from incidents i where i.sensor_id = ${tenant.sensorId} order by i.source_ip`) as Array<{
    source_ip: string
    event_count: number
    stored: number
  }>
  expect(incidents.map((i) => i.source_ip)).toEqual(sources)
  for (const incident of incidents) expect([incident.event_count, incident.stored]).toEqual([PER_SOURCE, PER_SOURCE])

  const listed = await timedFetch(`${api()}/v1/incidents?limit=100`, {
    headers: { authorization: `Bearer ${tenant.key}` },
  })
  expect(listed.status).toBe(200)
  expect(listed.body.data.map((d: { sourceIp: string }) => d.sourceIp).sort()).toEqual(sources)
  expect(listed.body.data.map((d: { eventCount: number }) => d.eventCount)).toEqual(sources.map(() => PER_SOURCE))
}, 120_000)

test("through the balancer: every created, escalated and reopened transition is delivered exactly once", async () => {
  const db = pg?.sql()
  const hooks = receiver
  if (!db || !hooks) throw new Error("setup failed")
  const tenant = await createTenant(env, "Balanced hooks")
  const path = `/balanced-${Date.now()}`
  const channel = await createChannel(env, tenant.orgId, `${hooks.url}${path}`)
  const sources = Array.from({ length: 12 }, (_, i) => `198.51.100.${50 + i}`)

  const created = await Promise.all(
    sources.flatMap((ip, s) =>
      [0, 1, 2].map((r) => postAsSensor(tenant.token, [event(`hook-${s}-c${r}`, ip, { severity: "medium" })])),
    ),
  )
  expect(failures(created)).toEqual([])
  const escalated = await Promise.all(
    sources.map((ip, s) => postAsSensor(tenant.token, [event(`hook-${s}-e`, ip, { severity: "high" })])),
  )
  expect(failures(escalated)).toEqual([])
  const reopenedSources = sources.slice(0, 3)
  for (const answer of escalated.slice(0, 3)) {
    const closed = await admin(env, ["incident", "close", answer.body.results[0].incidentId, "--reason", "resolved"])
    expect(closed.code).toBe(0)
  }
  const reopened = await Promise.all(
    reopenedSources.map((ip, s) => postAsSensor(tenant.token, [event(`hook-${s}-r`, ip)])),
  )
  expect(failures(reopened)).toEqual([])

  const expected = (await db`
    select d.id, t.kind from webhook_deliveries d join incident_transitions t on t.id = d.transition_id
    where d.channel_id = ${channel.id}`) as Array<{ id: string; kind: string }>
  const kinds = expected.map((d) => d.kind)
  expect(kinds.filter((k) => k === "created")).toHaveLength(sources.length)
  expect(kinds.filter((k) => k === "escalated")).toHaveLength(sources.length)
  expect(kinds.filter((k) => k === "reopened")).toHaveLength(reopenedSources.length)

  const received = () => hooks.hooks.filter((h) => h.path === path)
  await eventually("every delivery received", () => new Set(received().map((h) => h.id)).size >= expected.length)
  await eventually("every delivery recorded as succeeded", async () =>
    (
      (await db`select status from webhook_deliveries where channel_id = ${channel.id}`) as Array<{ status: string }>
    ).every((r) => r.status === "succeeded"),
  )
  await Bun.sleep(1_500) // several poll intervals of all three dispatchers: nothing more may come

  const got = received()
  expect(got.map((h) => h.id).sort()).toEqual(expected.map((d) => d.id).sort())
  expect(got.map((h) => h.attempt)).toEqual(got.map(() => "1"))
  for (const hook of got) expect(verifyWebhook(hook.body, hook.signature, channel.secret).ok).toBe(true)
}, 120_000)

test("a follower through the balancer, its polls taken in turn by the three replicas under concurrent ingestion, ends with exactly the database", async () => {
  const db = pg?.sql()
  if (!db) throw new Error("setup failed")
  await resetLimits()
  const tenant = await createTenant(env, "Balanced feeds")
  const secondKey = await adminJson(env, [
    ..."key create --name follower --scopes incidents:read,events:read --org".split(" "),
    tenant.orgId,
  ])
  const writerSensor = await adminJson(env, ["sensor", "create", "--org", tenant.orgId, "--name", "writer"])
  const before = logged((e) => e.message === "request")
  // Both followers come from 127.0.0.1, one address for the per-IP limit: pages of 50 keep them well under it.
  const incidentsClient = createClient({ baseUrl: api(), apiKey: tenant.key })
  const eventsClient = createClient({ baseUrl: api(), apiKey: secondKey.key })
  const stop = new AbortController()
  // A failed assertion must not leave the followers polling (and counting on 127.0.0.1's limit) for later tests.
  cleanups.push(() => stop.abort())
  const incidents: Array<IncidentSummary> = []
  const events: Array<Event> = []
  const following = Promise.all([
    (async () => {
      for await (const i of incidentsClient.incidents.follow({ limit: 50, pollIntervalMs: 700, signal: stop.signal }))
        incidents.push(i)
    })(),
    (async () => {
      for await (const e of eventsClient.events.follow({ limit: 50, pollIntervalMs: 700, signal: stop.signal }))
        events.push(e)
    })(),
  ])

  // A separate process holds its transactions open (up to 1.5 s) while the replicas ingest and commit around them.
  const writer = Bun.spawn(["bun", "test/support/feedWriter.ts", tenant.orgId, writerSensor.id, "9", "1500"], {
    cwd: `${import.meta.dir}/..`,
    env,
    stdout: "pipe",
    stderr: "pipe",
  })
  const sources = Array.from({ length: 6 }, (_, i) => `203.0.113.${150 + i}`)
  const batches = Array.from({ length: 36 }, (_, b) =>
    Array.from({ length: 3 }, (_, k) => event(`feed-${b}-${k}`, sources[(b + k) % sources.length] ?? "")),
  )
  const answers = await Promise.all(batches.map((batch) => postAsSensor(tenant.token, batch)))
  expect(failures(answers)).toEqual([])
  expect(await writer.exited).toBe(0)

  const stored = (await db`select id from events where org_id = ${tenant.orgId}`) as Array<{ id: string }>
  expect(stored.length).toBe(36 * 3 + 18)
  const changes = (await db`select count(*)::int as n from incident_changes where org_id = ${tenant.orgId}`) as Array<{
    n: number
  }>
  await eventually(
    "the follower has caught up",
    () => events.length >= stored.length && incidents.length >= (changes[0]?.n ?? 0),
    60_000,
  )
  stop.abort()
  await following

  expect(events.map((e) => e.id).sort()).toEqual(stored.map((r) => r.id).sort())
  expect(incidents.length).toBe(changes[0]?.n ?? -1)
  const latest = new Map(incidents.map((i) => [i.id, i]))
  const rows = (await db`
    select id, status, severity, event_count from incidents where org_id = ${tenant.orgId}`) as Array<{
    id: string
    status: string
    severity: string
    event_count: number
  }>
  expect(latest.size).toBe(rows.length)
  for (const row of rows) {
    const got = latest.get(row.id)
    expect([row.id, got?.status, got?.severity, got?.eventCount]).toEqual([
      row.id,
      row.status,
      row.severity,
      row.event_count,
    ])
  }
  // The polls really went round: every replica answered some of them.
  const after = logged((e) => e.message === "request")
  for (const [i, n] of after.entries()) expect(n - (before[i] ?? 0)).toBeGreaterThan(0)
}, 170_000)

test("the console through the balancer needs no sticky sessions: a form from one replica is accepted by another, and a session holds on all three", async () => {
  const tenant = await createTenant(env, "Balanced console")
  const cookieOf = (response: Response, name: string) =>
    response.headers
      .getSetCookie()
      .find((c) => c.startsWith(`${name}=`))
      ?.split(";")[0] ?? ""
  const openForm = async (path: string) => {
    const form = await fetch(`${consoleUrl()}${path}`)
    return {
      csrf: /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? "",
      cookie: cookieOf(form, "__Host-form"),
    }
  }
  const postForm = (path: string, fields: Record<string, string>, cookie: string) =>
    fetch(`${consoleUrl()}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl() },
      body: new URLSearchParams(fields),
    })
  const password = "a long enough passphrase 1"
  const email = `balanced-${Date.now()}@example.test`
  const user = await adminJson(env, ["user", "create", "--org", tenant.orgId, "--email", email, "--role", "admin"])
  // Round robin: each GET and its POST reach different replicas.
  const link = new URL(user.link).pathname
  const formBefore = await servedBy()
  const setForm = await openForm(link)
  expect((await postForm(link, { csrf: setForm.csrf, password }, setForm.cookie)).status).toBe(303)
  expect((await pickedSince("console", formBefore)).sort()).toEqual([0, 1, 1])
  const signInForm = await openForm("/sign-in")
  const signedIn = await postForm("/sign-in", { csrf: signInForm.csrf, email, password, next: "/" }, signInForm.cookie)
  expect(signedIn.status).toBe(303)
  const session = cookieOf(signedIn, "__Host-session")
  expect(session).not.toBe("")

  const before = await servedBy()
  const pages = await Promise.all(
    Array.from({ length: 6 }, () =>
      fetch(`${consoleUrl()}/`, { headers: { cookie: session }, redirect: "manual" }).then((r) => r.status),
    ),
  )
  expect(pages).toEqual(pages.map(() => 200))
  expect(await pickedSince("console", before)).toEqual([2, 2, 2])
}, 60_000)

test("through the balancer: one count across the replicas, per address the balancer saw; X-Forwarded-For from a client is never believed", async () => {
  await resetLimits()
  const spoofed = (i: number) => `192.0.2.${(i % 250) + 1}`
  // Key-less, so only the per-address limit counts (each a 401); every one claims another address.
  const request = (i: number) =>
    timedFetch(`${api()}/v1/incidents?limit=1`, { headers: { "x-forwarded-for": spoofed(i) } })
  const before = logged((e) => e.message === "request" && e.annotations?.clientIp === "127.0.0.1")
  const first = await Promise.all(Array.from({ length: LIMIT }, (_, i) => request(i)))
  expect(first.filter((a) => a.status !== 401).map(show)).toEqual([])
  const refused = await request(LIMIT)
  expect(refused.status).toBe(429)
  expect(refused.body.code).toBe("rate_limited")
  expect(refused.body.detail).toContain("address")

  // All three replicas counted into the one bucket, each under the address the balancer saw; none under a claimed one.
  const after = logged((e) => e.message === "request" && e.annotations?.clientIp === "127.0.0.1")
  for (const [i, n] of after.entries()) expect(n - (before[i] ?? 0)).toBeGreaterThanOrEqual(30)
  expect(logged((e) => String(e.annotations?.clientIp ?? "").startsWith("192.0.2."))).toEqual([0, 0, 0])

  // Another real client address (curl bound to 127.0.0.5) has its own bucket: a plain 401, logged as itself.
  const curl = Bun.spawnSync(
    [
      "curl",
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "--noproxy",
      "*",
      "--interface",
      "127.0.0.5",
      "-H",
      "X-Forwarded-For: 127.0.0.1",
      `${api()}/v1/incidents`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  )
  expect(curl.stdout.toString()).toBe("401")
  // The access log line is written as the answer leaves.
  await eventually("the request logged under 127.0.0.5", () =>
    logged((e) => e.annotations?.clientIp === "127.0.0.5").some((n) => n > 0),
  )
  expect(logged((e) => e.annotations?.clientIp === "127.0.0.5").reduce((a, b) => a + b, 0)).toBe(1)

  // The store really is Redis: no replica fell back to failing open.
  for (const [i, host] of HOSTS.entries()) {
    const metrics = await timedFetch(`http://${host}:${ports.ops}/metrics`)
    expect({ replica: i, metrics: /ratelimit_store_errors_total(\{[^}]*\})? 0\b/.test(metrics.body) }).toEqual({
      replica: i,
      metrics: true,
    })
  }
}, 60_000)

/**
 * What holds when a replica is stopped under traffic: nothing fails. The balancer never fails a request itself (no
 * 502/503/504, no reset, no time-out: a refused connection is retried on another replica), and the stopping replica
 * answers what it has in flight with its own answers: its listeners close only once nothing is in flight and nothing
 * has come for a moment, while its readiness already says 503.
 */
test("a replica stopped (SIGTERM) under traffic: the balancer routes around it, no request fails, and nothing ingested is lost", async () => {
  const db = pg?.sql()
  const stopping = servers[2]
  if (!db || !stopping) throw new Error("setup failed")
  await resetLimits()
  const tenant = await createTenant(env, "Balanced stop")
  const answers: Array<Answer> = []
  let running = true
  cleanups.push(() => {
    running = false
  })
  let sent = 0
  const ingesting = Array.from({ length: 4 }, async (_, w) => {
    for (let n = 0; running; n++) {
      const batch = [0, 1].map((k) => event(`stop-${w}-${n}-${k}`, `203.0.113.${200 + w}`))
      sent += batch.length
      answers.push(await post(tenant.token, batch))
    }
  })
  // Reads at ten a second: under the per-address and per-key limits for the few seconds this takes.
  const reading = (async () => {
    while (running) {
      answers.push(
        await timedFetch(`${api()}/v1/incidents?limit=1`, { headers: { authorization: `Bearer ${tenant.key}` } }),
      )
      await Bun.sleep(100)
    }
  })()

  await Bun.sleep(1_500)
  const signalledAt = Date.now()
  const stoppedAt = answers.length
  expect(await stopping.stop("SIGTERM")).toBe(0)
  // The check (every second, one failure) takes it out.
  await eventually("replica3 down in every backend", async () =>
    Object.entries(await states())
      .filter(([name]) => name.endsWith("/replica3"))
      .every(([, state]) => state === "DOWN"),
  )
  const downAt = Date.now()
  const answeredBeforeDown = answers.length
  await Bun.sleep(1_500)
  running = false
  await Promise.all([...ingesting, reading])

  // No answer but 200: neither the balancer nor the stopping replica failed a request.
  expect(answers.filter((a) => a.status !== 200).map(show)).toEqual([])
  expect(answers.length - answeredBeforeDown).toBeGreaterThan(10)
  expect(answeredBeforeDown).toBeGreaterThan(stoppedAt)
  expect(signalledAt).toBeLessThan(downAt)

  // Every event sent is stored exactly once.
  const stored = (await db`
    select count(*)::int as n from events e join incidents i on i.id = e.incident_id
    where i.sensor_id = ${tenant.sensorId}`) as Array<{ n: number }>
  expect(stored[0]?.n).toBe(sent)
  const up = await states()
  for (const name of ["api/replica1", "api/replica2", "ingest/replica1", "ingest/replica2"])
    expect({ name, state: up[name] }).toEqual({ name, state: "UP" })
}, 60_000)
