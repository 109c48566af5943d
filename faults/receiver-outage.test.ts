import { afterAll, beforeAll, expect, test } from "bun:test"
import type { RunningServerProcess as RunningServer } from "../test/support/server.ts"
import {
  type Hook,
  type HookReceiver,
  startHookReceiver,
  type WebhookTls,
  webhookEnv,
  webhookTls,
} from "./support/hooks.ts"
import { freePort } from "./support/ports.ts"
import { type OwnPostgres, startPostgres } from "./support/postgres.ts"
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
 * Operations and resilience: a webhook receiver that goes away for a few seconds and comes back. With a short D17
 * schedule (300ms, 600ms, 1s, 2s, 4s: dead only after about 8 s of failures) a 3 s outage is survived: every
 * delivery is retried until the receiver is back, arrives then, and ends "succeeded" with its failed attempts logged.
 */

const SCHEDULE = "300ms,600ms,1s,2s,4s"
const OUTAGE_MS = 3_000
const INCIDENTS = 10

let pg: OwnPostgres | undefined
let tls: WebhookTls | undefined
let server: RunningServer | undefined
const receivers: Array<HookReceiver> = []

beforeAll(async () => {
  pg = await startPostgres()
  tls = webhookTls()
  server = await startService(serviceEnv(pg.url, webhookEnv(tls.caFile, { WEBHOOK_RETRY_SCHEDULE: SCHEDULE })))
})

afterAll(async () => {
  await stopAll([server])
  for (const receiver of receivers) await receiver.stop()
  tls?.remove()
  await pg?.destroy()
})

const ingestIncidents = async (token: string, prefix: string, octet: number) => {
  if (!server) throw new Error("setup failed")
  const events = Array.from({ length: INCIDENTS }, (_, i) => ({
    sensorEventId: `${prefix}-${i}`,
    time: new Date().toISOString(),
    sourceIp: `198.51.${octet}.${i + 1}`,
    sourcePort: 50_000,
    type: "ssh.login_attempt",
  }))
  const answer = await timedFetch(`${server.ingestUrl}/ingest/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(events),
  })
  expect(answer.status, show(answer)).toBe(200)
  expect(answer.body.accepted).toBe(INCIDENTS)
}

interface AttemptLog {
  readonly delivery_id: string
  readonly attempt: number
  readonly status_code: number | null
  readonly error: string | null
}

const outbox = async (channelId: string) => {
  const db = pg?.sql()
  if (!db) throw new Error("setup failed")
  const rows =
    (await db`select id, status from webhook_deliveries where channel_id = ${channelId} order by id`) as Array<{
      id: string
      status: string
    }>
  const attempts = (await db`
    select a.delivery_id, a.attempt, a.status_code, a.error from webhook_delivery_attempts a
    join webhook_deliveries d on d.id = a.delivery_id
    where d.channel_id = ${channelId} order by a.delivery_id, a.attempt`) as Array<AttemptLog>
  return { rows, attempts }
}

test("a receiver that is gone (connection refused) for 3 s, then back on the same address: every delivery arrives after it returns and ends succeeded", async () => {
  if (!server || !tls) throw new Error("setup failed")
  const certs = tls.certs
  const tenant = await createTenant(server.env, "Receiver gone")
  const port = await freePort()
  const hooks: Array<Hook> = []
  const before = startHookReceiver(certs, { port, hooks })
  receivers.push(before)
  const channel = await createChannel(server.env, tenant.orgId, `${before.url}/gone`)

  // The receiver works; then it is stopped (listener closed, connections cut) and incidents happen meanwhile.
  await ingestIncidents(tenant.token, "gone-warmup", 10)
  await eventually("the deliveries before the outage", () => hooks.length === INCIDENTS)
  await before.stop()
  const downSince = Date.now()
  await ingestIncidents(tenant.token, "gone", 20)
  const { rows: queued } = await outbox(channel.id)
  const pendingIds = new Set(queued.filter((r) => r.status !== "succeeded").map((r) => r.id))
  expect(pendingIds.size).toBe(INCIDENTS)
  await Bun.sleep(OUTAGE_MS)

  // Back on the same port (a new server process would look the same from the service's side).
  const backAt = Date.now()
  const after = startHookReceiver(certs, { port, hooks })
  receivers.push(after)
  await eventually("every delivery after the receiver came back", () =>
    [...pendingIds].every((id) => hooks.some((h) => h.id === id)),
  )
  await eventually("every delivery recorded as succeeded", async () =>
    (await outbox(channel.id)).rows.every((r) => r.status === "succeeded"),
  )
  await Bun.sleep(500)

  const arrived = hooks.filter((h) => pendingIds.has(h.id))
  // Nothing reached the receiver while it was gone; after it came back each delivery arrived exactly once.
  expect(arrived.filter((h) => h.at < backAt).map((h) => h.id)).toEqual([])
  expect(arrived.map((h) => h.id).sort()).toEqual([...pendingIds].sort())
  const { rows, attempts } = await outbox(channel.id)
  expect(rows.filter((r) => r.status !== "succeeded")).toEqual([])
  for (const id of pendingIds) {
    const log = attempts.filter((a) => a.delivery_id === id)
    // The attempts during the outage failed without an HTTP status (refused), the last one succeeded.
    expect(log.length).toBeGreaterThanOrEqual(2)
    expect(log.slice(0, -1).every((a) => a.status_code === null && a.error !== null)).toBe(true)
    expect(log.at(-1)?.status_code).toBe(202)
    expect(arrived.find((h) => h.id === id)?.attempt).toBe(String(log.length))
  }
  // The outage lasted long enough to need the retries (not a single lucky first attempt after it).
  expect(backAt - downSince).toBeGreaterThanOrEqual(OUTAGE_MS)
}, 120_000)

test("a receiver answering 503 for 3 s, then 202: every delivery is retried until it succeeds, each failed answer logged", async () => {
  if (!server || !tls) throw new Error("setup failed")
  const tenant = await createTenant(server.env, "Receiver 503")
  const receiver = startHookReceiver(tls.certs)
  receivers.push(receiver)
  const channel = await createChannel(server.env, tenant.orgId, `${receiver.url}/busy`)
  receiver.setStatus(503)
  await ingestIncidents(tenant.token, "busy", 30)
  await Bun.sleep(OUTAGE_MS)
  const fixedAt = Date.now()
  receiver.setStatus(202)

  const { rows: queued } = await outbox(channel.id)
  expect(queued).toHaveLength(INCIDENTS)
  await eventually("every delivery recorded as succeeded", async () =>
    (await outbox(channel.id)).rows.every((r) => r.status === "succeeded"),
  )
  await Bun.sleep(500)

  const { attempts } = await outbox(channel.id)
  for (const row of queued) {
    const got = receiver.hooks.filter((h) => h.id === row.id)
    // Refused with 503 while busy (a few times), then accepted once; nothing after the success.
    expect(got.length).toBeGreaterThanOrEqual(3)
    expect(got.slice(0, -1).every((h) => h.status === 503)).toBe(true)
    expect(got.at(-1)?.status).toBe(202)
    expect(got.at(-1)?.at ?? 0).toBeGreaterThanOrEqual(fixedAt - 50)
    expect(new Set(got.map((h) => h.body)).size).toBe(1)
    expect(got.map((h) => h.attempt)).toEqual(got.map((_, i) => String(i + 1)))
    const log = attempts.filter((a) => a.delivery_id === row.id).map((a) => a.status_code)
    expect(log).toEqual([...got.slice(0, -1).map(() => 503), 202])
  }
}, 120_000)
