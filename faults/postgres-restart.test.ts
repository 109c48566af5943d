import { afterAll, beforeAll, expect, test } from "bun:test"
import type { RunningServerProcess as RunningServer } from "../test/support/server.ts"
import { type HookReceiver, startHookReceiver, type WebhookTls, webhookEnv, webhookTls } from "./support/hooks.ts"
import { type OwnPostgres, startPostgres } from "./support/postgres.ts"
import {
  type Answer,
  createChannel,
  createTenant,
  eventually,
  serviceEnv,
  show,
  startService,
  stopAll,
  type Tenant,
  timedFetch,
} from "./support/service.ts"

/**
 * Operations and resilience: PostgreSQL crashes (pg_ctl stop -m immediate) and comes back under API and ingest
 * traffic. While it is down every API and ingest answer is a D4 503 `unavailable` problem (never a 500, never a
 * hang), /readyz says 503; afterwards the service recovers by itself, and every event it answered "accepted" is
 * in the database (the ingest transaction commits before the answer). The webhook dispatcher carries on too: every
 * delivery queued before or after the outage is sent and ends "succeeded" (D17).
 *
 * The second test freezes the database instead (SIGSTOP: the kernel still accepts connections, nothing answers, as
 * with a hung or partitioned host): answers must still come within 5 s, as 503s, and /readyz within its 2 s.
 */

const OUTAGE_MS = 4_000
const RECOVERY_MS = 15_000
const LIMIT_MS = 5_000

let pg: OwnPostgres | undefined
let server: RunningServer | undefined
let tls: WebhookTls | undefined
let receiver: HookReceiver | undefined
let tenant: Tenant
let channelId: string

beforeAll(async () => {
  pg = await startPostgres()
  tls = webhookTls()
  receiver = startHookReceiver(tls.certs)
  server = await startService(
    serviceEnv(
      pg.url,
      webhookEnv(tls.caFile, {
        WEBHOOK_RETRY_SCHEDULE: "300ms,600ms,1s,2s",
        // A send whose outcome could not be written (the database went down meanwhile) is sent again after this.
        WEBHOOK_LEASE: "3 seconds",
      }),
    ),
  )
  tenant = await createTenant(server.env, "Outage")
  channelId = (await createChannel(server.env, tenant.orgId, `${receiver.url}/outage`)).id
})

afterAll(async () => {
  await stopAll([server])
  await receiver?.stop()
  tls?.remove()
  await pg?.destroy()
})

interface Sample extends Answer {
  readonly kind: "api" | "ingest" | "ready"
  /** Ingest: the sensorEventIds this request sent. */
  readonly sent: ReadonlyArray<string>
}

const isUnavailable = (a: Answer) =>
  a.status === 503 &&
  a.contentType.startsWith("application/problem+json") &&
  a.body?.code === "unavailable" &&
  a.body?.status === 503

test("PostgreSQL crash and restart under API and ingest traffic: 503 `unavailable` during the outage (never 500, never a hang), recovery without a restart, no accepted event lost", async () => {
  if (!pg || !server || !receiver) throw new Error("setup failed")
  const database = pg
  const service = server
  const hooks = receiver
  const samples: Array<Sample> = []
  let running = true
  let sequence = 0
  const sources = ["198.51.100.21", "198.51.100.22", "198.51.100.23", "198.51.100.24", "198.51.100.25"]

  const apiLoop = async () => {
    while (running) {
      const answer = await timedFetch(
        `${service.url}/v1/incidents?limit=5`,
        { headers: { authorization: `Bearer ${tenant.key}` } },
        LIMIT_MS,
      )
      samples.push({ ...answer, kind: "api", sent: [] })
      await Bun.sleep(40)
    }
  }
  const ingestLoop = async () => {
    while (running) {
      const n = sequence++
      // Two long-lived incidents (two transactions in flight per request); every tenth request also starts a new
      // incident, so new webhook deliveries are queued before and after the outage.
      const addresses = [sources[n % sources.length], sources[(n + 1) % sources.length]]
      if (n % 10 === 0) addresses.push(`2001:db8::${(n + 1).toString(16)}`)
      const events = addresses.map((sourceIp, i) => ({
        sensorEventId: `pg-restart-${n}-${i}`,
        time: new Date().toISOString(),
        sourceIp,
        sourcePort: 40000 + i,
        type: "ssh.login_attempt",
        attackerInput: { username: "root", password: "hunter2" },
      }))
      const answer = await timedFetch(
        `${service.ingestUrl}/ingest/v1/events`,
        {
          method: "POST",
          headers: { authorization: `Bearer ${tenant.token}`, "content-type": "application/json" },
          body: JSON.stringify(events),
        },
        LIMIT_MS,
      )
      samples.push({ ...answer, kind: "ingest", sent: events.map((e) => e.sensorEventId) })
      await Bun.sleep(10)
    }
  }
  const readyLoop = async () => {
    while (running) {
      const answer = await timedFetch(`${service.opsUrl}/readyz`, {}, LIMIT_MS)
      samples.push({ ...answer, kind: "ready", sent: [] })
      await Bun.sleep(150)
    }
  }
  // Several ingest loops: transactions are in flight at the moment the database dies.
  const loops = Promise.all([apiLoop(), ingestLoop(), ingestLoop(), ingestLoop(), ingestLoop(), readyLoop()])

  await Bun.sleep(1_500)
  await database.stop("immediate")
  const downSince = Date.now()
  await Bun.sleep(OUTAGE_MS)
  const downUntil = Date.now()
  await database.start()
  const upAgain = Date.now()

  // Recovery: every kind answers 200 again, by itself.
  const recovered = (kind: Sample["kind"]) =>
    samples.some((s) => s.kind === kind && s.startedAt >= upAgain && s.status === 200)
  const deadline = upAgain + RECOVERY_MS
  while (!(recovered("api") && recovered("ingest") && recovered("ready")) && Date.now() < deadline) await Bun.sleep(50)
  await Bun.sleep(1_500) // a few more requests after the recovery
  running = false
  await loops

  const of = (kind: Sample["kind"]) => samples.filter((s) => s.kind === kind)

  // Never a hang, never a network error, never a 500: in every phase.
  expect(samples.filter((s) => s.timedOut || s.error !== undefined).map(show)).toEqual([])
  expect(samples.filter((s) => s.status >= 500 && s.status !== 503).map(show)).toEqual([])

  // Before the crash: all served.
  const before = samples.filter((s) => s.endedAt < downSince - 200)
  expect(before.filter((s) => s.status !== 200).map(show)).toEqual([])

  // While the database is down: every API and ingest answer is a 503 `unavailable` problem, /readyz 503.
  const during = samples.filter((s) => s.startedAt >= downSince && s.endedAt <= downUntil)
  for (const kind of ["api", "ingest"] as const) {
    const answers = during.filter((s) => s.kind === kind)
    expect(answers.length).toBeGreaterThanOrEqual(5)
    expect(answers.filter((s) => !isUnavailable(s)).map(show)).toEqual([])
  }
  const readyDuring = during.filter((s) => s.kind === "ready")
  expect(readyDuring.length).toBeGreaterThanOrEqual(3)
  expect(
    readyDuring
      .filter(
        (s) =>
          s.status !== 503 || !s.contentType.startsWith("application/problem+json") || s.body?.code !== "not_ready",
      )
      .map(show),
  ).toEqual([])

  // Any other non-200 (around the crash and the restart) is a 503 too, and there are none once recovered.
  for (const kind of ["api", "ingest"] as const) {
    expect(
      of(kind)
        .filter((s) => s.status !== 200 && !isUnavailable(s))
        .map(show),
    ).toEqual([])
  }
  for (const kind of ["api", "ingest", "ready"] as const) {
    const answers = of(kind)
    const lastFailure = Math.max(0, ...answers.filter((s) => s.status !== 200).map((s) => s.endedAt))
    expect(lastFailure - upAgain).toBeLessThan(RECOVERY_MS)
    const after = answers.filter((s) => s.startedAt > lastFailure)
    expect(after.length).toBeGreaterThanOrEqual(kind === "ready" ? 3 : 5)
  }

  // Every event answered "accepted" is stored; no accepted answer was a lie.
  const accepted: Array<string> = []
  for (const s of of("ingest")) {
    if (s.status !== 200) continue
    expect(s.body.results.map((r: { status: string }) => r.status)).toEqual(s.sent.map(() => "accepted"))
    accepted.push(...s.sent)
  }
  expect(accepted.length).toBeGreaterThanOrEqual(20)
  const sql = database.sql()
  const stored = new Set(
    (
      (await sql`select sensor_event_id from events where sensor_id = ${tenant.sensorId}`) as Array<{
        sensor_event_id: string
      }>
    ).map((r) => r.sensor_event_id),
  )
  expect(accepted.filter((id) => !stored.has(id))).toEqual([])

  // D12: still one incident per source address, and each incident's count is its events' (no half transaction).
  const incidents = (await sql`
    select i.source_ip, i.event_count, count(e.id)::int as stored
    from incidents i left join events e on e.incident_id = i.id
    where i.sensor_id = ${tenant.sensorId}
    group by i.id, i.source_ip, i.event_count`) as Array<{ source_ip: string; event_count: number; stored: number }>
  const addresses = incidents.map((i) => i.source_ip)
  expect(addresses.length).toBe(new Set(addresses).size)
  expect(addresses.filter((ip) => sources.includes(ip)).sort()).toEqual(sources)
  for (const incident of incidents) expect(incident.event_count).toBe(incident.stored)
  expect(incidents.reduce((sum, i) => sum + i.stored, 0)).toBe(stored.size)

  // The dispatcher survived the outage: every incident.created queued before or after it is delivered.
  const deliveries = async () =>
    (await sql`select id, status from webhook_deliveries where channel_id = ${channelId}`) as Array<{
      id: string
      status: string
    }>
  expect((await deliveries()).length).toBe(incidents.length)
  await eventually(
    "every delivery succeeded",
    async () => (await deliveries()).every((d) => d.status === "succeeded"),
    30_000,
  )
  const received = new Set(hooks.hooks.map((h) => h.id))
  expect((await deliveries()).filter((d) => !received.has(d.id))).toEqual([])
  expect(hooks.hooks.some((h) => h.at > upAgain)).toBe(true)
}, 120_000)

test("PostgreSQL frozen (SIGSTOP: connections accepted, never answered): API and ingest answer 503 `unavailable` within 5 s, /readyz 503; recovery once it answers again", async () => {
  if (!pg || !server) throw new Error("setup failed")
  const database = pg
  const service = server
  const api = () =>
    timedFetch(`${service.url}/v1/incidents?limit=5`, { headers: { authorization: `Bearer ${tenant.key}` } }, LIMIT_MS)
  let n = 0
  const ingest = () =>
    timedFetch(
      `${service.ingestUrl}/ingest/v1/events`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.token}`, "content-type": "application/json" },
        body: JSON.stringify({
          sensorEventId: `pg-freeze-${n++}`,
          time: new Date().toISOString(),
          sourceIp: "198.51.100.99",
          sourcePort: 40_000,
          type: "ssh.login_attempt",
        }),
      },
      LIMIT_MS,
    )
  await eventually("served before the freeze", async () => (await api()).status === 200, RECOVERY_MS)

  database.freeze()
  let answers: Array<Answer> = []
  try {
    answers = await Promise.all([
      api(),
      ingest(),
      timedFetch(`${service.opsUrl}/readyz`, {}, LIMIT_MS),
      // A second wave: the pool's connections may all be stuck in the first one by now.
      Bun.sleep(500).then(api),
      Bun.sleep(500).then(ingest),
    ])
  } finally {
    database.thaw()
  }
  const [apiFirst, ingestFirst, ready, apiSecond, ingestSecond] = answers.map(show)
  expect(apiFirst).toStartWith('503 application/problem+json; charset=utf-8 {"type":"about:blank"')
  expect(apiFirst).toContain('"code":"unavailable"')
  expect(ingestFirst).toStartWith('503 application/problem+json; charset=utf-8 {"type":"about:blank"')
  expect(ingestFirst).toContain('"code":"unavailable"')
  expect(ready).toStartWith("503 application/problem+json")
  expect(ready).toContain('"code":"not_ready"')
  expect(apiSecond).toContain('"code":"unavailable"')
  expect(ingestSecond).toContain('"code":"unavailable"')

  await eventually("the API served again", async () => (await api()).status === 200, RECOVERY_MS)
  await eventually("ingestion served again", async () => (await ingest()).status === 200, RECOVERY_MS)
}, 120_000)
