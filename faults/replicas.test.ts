import { afterAll, beforeAll, expect, test } from "bun:test"
import { createClient, type Event, type IncidentSummary } from "../src/client/index.ts"
import { verifyWebhook } from "../src/webhooks/verify.ts"
import { admin, adminJson } from "../test/support/cli.ts"
import type { RunningServerProcess as RunningServer } from "../test/support/server.ts"
import { type HookReceiver, startHookReceiver, type WebhookTls, webhookEnv, webhookTls } from "./support/hooks.ts"
import { type OwnPostgres, startPostgres } from "./support/postgres.ts"
import { type OwnRedis, startRedis } from "./support/redis.ts"
import {
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
 * Operations and resilience: three server processes on one PostgreSQL and one Redis, as replicas run behind a
 * load balancer. Concurrent ingestion through all three never makes a second incident for a key nor loses a count
 * (D12), every transition is delivered exactly once in the normal path (D17: SKIP LOCKED claims), and the D11 limit
 * is one count shared through Redis, whichever replica a request reaches.
 */

const LIMIT = 120
let pg: OwnPostgres | undefined
let redis: OwnRedis | undefined
let tls: WebhookTls | undefined
let receiver: HookReceiver | undefined
let servers: Array<RunningServer> = []
let env: Record<string, string>

beforeAll(async () => {
  ;[pg, redis] = await Promise.all([startPostgres(), startRedis()])
  tls = webhookTls()
  receiver = startHookReceiver(tls.certs)
  env = serviceEnv(
    pg.url,
    webhookEnv(tls.caFile, {
      REDIS_URL: redis.url,
      RATE_LIMIT: String(LIMIT),
      TRUST_PROXY: "127.0.0.1/32",
      WEBHOOK_RETRY_SCHEDULE: "300ms,600ms,1s",
    }),
  )
  // The first one applies the migrations; the other two then start together.
  const first = await startService(env)
  servers = [first, ...(await Promise.all([startService(env), startService(env)]))]
})

afterAll(async () => {
  await stopAll(servers)
  await receiver?.stop()
  tls?.remove()
  await redis?.stop()
  await pg?.destroy()
})

const replica = (i: number): RunningServer => {
  const server = servers[i % servers.length]
  if (!server) throw new Error("replicas not started")
  return server
}

const post = (server: RunningServer, token: string, events: ReadonlyArray<Record<string, unknown>>) =>
  timedFetch(
    `${server.ingestUrl}/ingest/v1/events`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(events),
    },
    30_000,
  )

const event = (sensorEventId: string, sourceIp: string, extra: Record<string, unknown> = {}) => ({
  sensorEventId,
  time: new Date().toISOString(),
  sourceIp,
  sourcePort: 50_000,
  type: "ssh.login_attempt",
  attackerInput: { username: "root", password: "hunter2" },
  ...extra,
})

test("concurrent ingestion through three replicas: one incident per (sensor, sourceIp), exact eventCount", async () => {
  const db = pg?.sql()
  if (!db) throw new Error("setup failed")
  const tenant = await createTenant(replica(0).env, "Replicas")
  const sources = Array.from({ length: 8 }, (_, i) => `203.0.113.${100 + i}`)
  const PER_SOURCE = 30
  // 48 requests of 5 events, each mixing several addresses, all in flight at once, round-robin over the replicas:
  // every address is written by all three processes at the same time.
  const all = sources.flatMap((ip, s) => Array.from({ length: PER_SOURCE }, (_, i) => event(`grp-${s}-${i}`, ip)))
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const a = all[i]
    const b = all[j]
    if (a && b) {
      all[i] = b
      all[j] = a
    }
  }
  const batches = Array.from({ length: all.length / 5 }, (_, i) => all.slice(i * 5, i * 5 + 5))
  const answers = await Promise.all(batches.map((batch, i) => post(replica(i), tenant.token, batch)))
  expect(answers.filter((a) => a.status !== 200).map(show)).toEqual([])
  expect(answers.reduce((n, a) => n + a.body.accepted, 0)).toBe(all.length)

  // The same, resent through other replicas: every one a duplicate, nothing counted twice.
  const again = await Promise.all(batches.map((batch, i) => post(replica(i + 1), tenant.token, batch)))
  expect(again.filter((a) => a.status !== 200).map(show)).toEqual([])
  expect(again.reduce((n, a) => n + a.body.duplicates, 0)).toBe(all.length)

  const incidents = (await db`
    select i.source_ip, i.event_count, (select count(*)::int from events e where e.incident_id = i.id) as stored
    from incidents i where i.sensor_id = ${tenant.sensorId} order by i.source_ip`) as Array<{
    source_ip: string
    event_count: number
    stored: number
  }>
  expect(incidents.map((i) => i.source_ip)).toEqual(sources)
  for (const incident of incidents) {
    expect(incident.event_count).toBe(PER_SOURCE)
    expect(incident.stored).toBe(PER_SOURCE)
  }
  const created = (await db`
    select count(*)::int as n from incident_transitions t join incidents i on i.id = t.incident_id
    where i.sensor_id = ${tenant.sensorId} and t.kind = 'created'`) as Array<{ n: number }>
  expect(created[0]?.n).toBe(sources.length)

  // What the API serves, from any replica, agrees.
  for (const [i, server] of servers.entries()) {
    const listed = await timedFetch(`${server.url}/v1/incidents?limit=100`, {
      headers: { authorization: `Bearer ${tenant.key}`, "x-forwarded-for": `192.0.2.${10 + i}` },
    })
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((d: { sourceIp: string }) => d.sourceIp).sort()).toEqual(sources)
    expect(listed.body.data.map((d: { eventCount: number }) => d.eventCount)).toEqual(sources.map(() => PER_SOURCE))
  }
}, 120_000)

test("three dispatchers on one outbox: every created, escalated and reopened transition is delivered exactly once", async () => {
  const db = pg?.sql()
  const hooks = receiver
  if (!db || !hooks) throw new Error("setup failed")
  const tenant = await createTenant(replica(0).env, "Replica hooks")
  const path = `/replicas-${Date.now()}`
  const channel = await createChannel(replica(0).env, tenant.orgId, `${hooks.url}${path}`)
  const sources = Array.from({ length: 12 }, (_, i) => `198.51.100.${50 + i}`)

  // created: medium events for every address, through all three replicas at once.
  const created = await Promise.all(
    sources.flatMap((ip, s) =>
      [0, 1, 2].map((r) => post(replica(r), tenant.token, [event(`hook-${s}-c${r}`, ip, { severity: "medium" })])),
    ),
  )
  expect(created.filter((a) => a.status !== 200).map(show)).toEqual([])
  // escalated: a high event per address, each through another replica.
  const escalated = await Promise.all(
    sources.map((ip, s) => post(replica(s), tenant.token, [event(`hook-${s}-e`, ip, { severity: "high" })])),
  )
  expect(escalated.filter((a) => a.status !== 200).map(show)).toEqual([])
  // reopened: three incidents closed by an operator, then active again.
  const reopenedSources = sources.slice(0, 3)
  for (const answer of escalated.slice(0, 3)) {
    const closed = await admin(replica(0).env, [
      "incident",
      "close",
      answer.body.results[0].incidentId,
      "--reason",
      "resolved",
    ])
    expect(closed.code).toBe(0)
  }
  const reopened = await Promise.all(
    reopenedSources.map((ip, s) => post(replica(s + 1), tenant.token, [event(`hook-${s}-r`, ip)])),
  )
  expect(reopened.filter((a) => a.status !== 200).map(show)).toEqual([])

  const expected = (await db`
    select d.id, d.type, t.kind, d.status from webhook_deliveries d join incident_transitions t on t.id = d.transition_id
    where d.channel_id = ${channel.id}`) as Array<{ id: string; type: string; kind: string; status: string }>
  const kinds = expected.map((d) => d.kind)
  expect(kinds.filter((k) => k === "created")).toHaveLength(sources.length)
  expect(kinds.filter((k) => k === "escalated")).toHaveLength(sources.length)
  expect(kinds.filter((k) => k === "reopened")).toHaveLength(reopenedSources.length)
  for (const d of expected) expect(d.type).toBe(`incident.${d.kind}`)

  const received = () => hooks.hooks.filter((h) => h.path === path)
  await eventually("every delivery received", () => new Set(received().map((h) => h.id)).size >= expected.length)
  const statuses = async () =>
    (await db`select status from webhook_deliveries where channel_id = ${channel.id}`) as Array<{ status: string }>
  await eventually("every delivery recorded as succeeded", async () =>
    (await statuses()).every((r) => r.status === "succeeded"),
  )
  await Bun.sleep(1_500) // several poll intervals of all three dispatchers: nothing more may come

  const got = received()
  expect(got.map((h) => h.id).sort()).toEqual(expected.map((d) => d.id).sort())
  expect(got.map((h) => h.attempt)).toEqual(got.map(() => "1"))
  for (const hook of got) {
    expect(verifyWebhook(hook.body, hook.signature, channel.secret).ok).toBe(true)
    expect(JSON.parse(hook.body).id).toBe(hook.id)
  }
  const attempts = (await db`
    select count(*)::int as n from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
    where d.channel_id = ${channel.id}`) as Array<{ n: number }>
  expect(attempts[0]?.n).toBe(expected.length)
}, 120_000)

test("the rate limit is one count across replicas (Redis): 120 requests spread over three servers pass, the 121st is 429 on any of them", async () => {
  const tenant = await createTenant(replica(0).env, "Replica limits")
  const client = "192.0.2.200"
  const request = (server: RunningServer) =>
    timedFetch(`${server.url}/v1/incidents?limit=1`, {
      headers: { authorization: `Bearer ${tenant.key}`, "x-forwarded-for": client },
    })
  // All 120 at once, round-robin: the count must be atomic across processes, not only within one.
  const first = await Promise.all(Array.from({ length: LIMIT }, (_, i) => request(replica(i))))
  expect(first.filter((a) => a.status !== 200).map(show)).toEqual([])

  for (const server of servers) {
    const refused = await request(server)
    expect(refused.status).toBe(429)
    expect(refused.contentType).toStartWith("application/problem+json")
    expect(refused.body.code).toBe("rate_limited")
    expect(refused.body.detail).toContain("address")
  }
  const raw = await fetch(`${replica(2).url}/v1/incidents?limit=1`, {
    headers: { authorization: `Bearer ${tenant.key}`, "x-forwarded-for": client },
    signal: AbortSignal.timeout(5_000),
  })
  expect(raw.status).toBe(429)
  expect(Number(raw.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  expect(raw.headers.get("ratelimit")).toContain("r=0")

  // Another address is its own bucket (a key-less request counts on it and is a plain 401).
  const other = await timedFetch(`${replica(1).url}/v1/incidents`, { headers: { "x-forwarded-for": "192.0.2.201" } })
  expect(other.status).toBe(401)

  // The store really is Redis: no replica fell back to failing open.
  for (const server of servers) {
    const metrics = await timedFetch(`${server.opsUrl}/metrics`)
    expect(metrics.body).toMatch(/ratelimit_store_errors_total(\{[^}]*\})? 0\b/)
  }
}, 120_000)

test("a follower using the client, on three replicas under concurrent ingestion with transactions held open, ends with exactly the database", async () => {
  const db = pg?.sql()
  if (!db) throw new Error("setup failed")
  const tenant = await createTenant(replica(0).env, "Feeds")
  const secondKey = await adminJson(env, [
    ..."key create --name follower --scopes incidents:read,events:read --org".split(" "),
    tenant.orgId,
  ])
  const writerSensor = await adminJson(env, ["sensor", "create", "--org", tenant.orgId, "--name", "writer"])
  // The two feeds are followed through two other replicas, each as its own client address (D11 counts per key and
  // per address; the test's other requests come from other addresses).
  const incidentsClient = createClient({
    baseUrl: replica(1).url,
    apiKey: tenant.key,
    headers: { "x-forwarded-for": "192.0.2.231" },
  })
  const eventsClient = createClient({
    baseUrl: replica(2).url,
    apiKey: secondKey.key,
    headers: { "x-forwarded-for": "192.0.2.232" },
  })
  const stop = new AbortController()
  const incidents: Array<IncidentSummary> = []
  const events: Array<Event> = []
  const following = Promise.all([
    (async () => {
      for await (const i of incidentsClient.incidents.follow({ limit: 20, pollIntervalMs: 700, signal: stop.signal }))
        incidents.push(i)
    })(),
    (async () => {
      for await (const e of eventsClient.events.follow({ limit: 20, pollIntervalMs: 700, signal: stop.signal }))
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
  const answers = await Promise.all(batches.map((batch, i) => post(replica(i), tenant.token, batch)))
  expect(answers.filter((a) => a.status !== 200).map(show)).toEqual([])
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

  // Every event exactly once; every incident at its latest state, as the database has it.
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
    expect({
      id: row.id,
      status: String(latest.get(row.id)?.status),
      severity: String(latest.get(row.id)?.severity),
    }).toEqual({
      id: row.id,
      status: row.status,
      severity: row.severity,
    })
    expect(latest.get(row.id)?.eventCount).toBe(row.event_count)
  }
  const listed = incidentsClient.incidents.list({ limit: 100 })
  for await (const incident of listed) expect(latest.get(incident.id)).toEqual(incident)
}, 170_000)
