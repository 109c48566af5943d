import { afterAll, beforeAll, expect, test } from "bun:test"
import { verifyWebhook } from "../src/webhooks/verify.ts"
import type { RunningServerProcess as RunningServer } from "../test/support/server.ts"
import { type HookReceiver, startHookReceiver, type WebhookTls, webhookEnv, webhookTls } from "./support/hooks.ts"
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
 * Operations and resilience: two replicas share one outbox; replica A is SIGKILLed while it has webhook sends in
 * flight. Replica B goes on alone and, once A's leases (WEBHOOK_LEASE, 3 s here) run out, sends what A had claimed:
 * every delivery arrives at least once and every row ends "succeeded" (D17: a crash leads to a resend, never a loss).
 *
 * The receiver cannot tell the replicas apart, but it can count: each process sends at most
 * WEBHOOK_CHANNEL_CONCURRENCY (4) requests of one channel at a time, so more than 4 held at once means both
 * replicas have sends in flight, and A is killed at such a moment.
 */

const DELIVERIES = 36
const CHANNEL_CONCURRENCY = 4
const LEASE_MS = 3_000
const DELAY_MS = 1_000

let pg: OwnPostgres | undefined
let tls: WebhookTls | undefined
let receiver: HookReceiver | undefined
let a: RunningServer | undefined
let b: RunningServer | undefined

beforeAll(async () => {
  pg = await startPostgres()
  tls = webhookTls()
  receiver = startHookReceiver(tls.certs, { delayMs: DELAY_MS })
  const env = serviceEnv(
    pg.url,
    webhookEnv(tls.caFile, {
      WEBHOOK_RETRY_SCHEDULE: "300ms,600ms,1s,2s",
      WEBHOOK_LEASE: `${LEASE_MS / 1000} seconds`,
      WEBHOOK_CHANNEL_CONCURRENCY: String(CHANNEL_CONCURRENCY),
    }),
  )
  a = await startService(env)
  b = await startService(env)
})

afterAll(async () => {
  await stopAll([a, b])
  await receiver?.stop()
  tls?.remove()
  await pg?.destroy()
})

test("SIGKILL of one replica with sends in flight: the other sends everything after the lease, every delivery arrives, all end succeeded", async () => {
  const db = pg?.sql()
  const hooks = receiver
  if (!db || !hooks || !a || !b) throw new Error("setup failed")
  const replicaA = a
  const replicaB = b
  const tenant = await createTenant(replicaA.env, "Replica kill")
  const channel = await createChannel(replicaA.env, tenant.orgId, `${hooks.url}/kill`)

  // 36 incidents, so 36 incident.created deliveries, committed before the answer; split over both replicas.
  const events = Array.from({ length: DELIVERIES }, (_, i) => ({
    sensorEventId: `kill-${i}`,
    time: new Date().toISOString(),
    sourceIp: `198.51.100.${i + 1}`,
    sourcePort: 50_000,
    type: "ssh.login_attempt",
  }))
  const answers = await Promise.all(
    [replicaA, replicaB].map((server, half) =>
      timedFetch(`${server.ingestUrl}/ingest/v1/events`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.token}`, "content-type": "application/json" },
        body: JSON.stringify(events.slice(half * (DELIVERIES / 2), (half + 1) * (DELIVERIES / 2))),
      }),
    ),
  )
  expect(answers.filter((x) => x.status !== 200 || x.body.accepted !== DELIVERIES / 2).map(show)).toEqual([])
  const ids = (
    (await db`select id from webhook_deliveries where channel_id = ${channel.id}`) as Array<{ id: string }>
  ).map((r) => r.id)
  expect(ids).toHaveLength(DELIVERIES)

  // More sends held than one process may have in flight for this channel: both replicas are sending.
  await eventually("both replicas sending", () => hooks.inflight() > CHANNEL_CONCURRENCY, 15_000)
  const heldAtKill = hooks.hooks.filter((h) => h.answeredAt === undefined).map((h) => h.id)
  const killedAt = Date.now()
  expect(await replicaA.stop("SIGKILL")).not.toBe(0)
  expect(hooks.hooks.length).toBeLessThan(DELIVERIES) // killed mid-way, with work left

  const received = () => new Set(hooks.hooks.map((h) => h.id))
  await eventually("every delivery received", () => ids.every((id) => received().has(id)), 60_000)
  const statuses = async () =>
    (await db`select id, status, lease_owner from webhook_deliveries where channel_id = ${channel.id}`) as Array<{
      id: string
      status: string
      lease_owner: string | null
    }>
  await eventually("every delivery recorded as succeeded", async () =>
    (await statuses()).every((r) => r.status === "succeeded"),
  )

  expect((await statuses()).filter((r) => r.status !== "succeeded" || r.lease_owner !== null)).toEqual([])
  expect(ids.filter((id) => !received().has(id))).toEqual([])
  for (const hook of hooks.hooks) expect(verifyWebhook(hook.body, hook.signature, channel.secret).ok).toBe(true)

  // A's sends that were in flight at the kill were sent again, by B, only once their lease had run out.
  const resent = hooks.hooks.filter((h) => h.at > killedAt && heldAtKill.includes(h.id))
  expect(resent.length).toBeGreaterThanOrEqual(1)
  for (const hook of resent) {
    const firstArrival = Math.min(...hooks.hooks.filter((h) => h.id === hook.id).map((h) => h.at))
    expect(hook.at - firstArrival).toBeGreaterThanOrEqual(LEASE_MS - 1_000)
  }
  expect(hooks.hooks.some((h) => h.at >= killedAt + LEASE_MS)).toBe(true)

  // B alone is alive and still serving.
  expect(replicaA.process.exitCode ?? replicaA.process.signalCode).not.toBeNull()
  expect(replicaB.process.exitCode).toBeNull()
  expect((await timedFetch(`${replicaB.opsUrl}/readyz`)).status).toBe(200)
}, 150_000)
