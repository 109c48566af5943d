import { afterAll, beforeAll, expect, test } from "bun:test"
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
  type Tenant,
  timedFetch,
} from "./support/service.ts"

/**
 * Operations and resilience: the dispatcher's NOTIFY wake-up (D17: it wakes on LISTEN/NOTIFY
 * when a delivery is queued and polls every WEBHOOK_POLL_INTERVAL anyway), before and after PostgreSQL restarts. The poll is set
 * to a minute here, so a delivery that arrives within 2 s of its commit was woken by NOTIFY, not found by the poll
 * (a poll landing in that window by chance has odds of 2/60 per delivery; each test needs two in a row).
 */

const POLL = "60 seconds"
const PROMPT_MS = 2_000

let pg: OwnPostgres | undefined
let tls: WebhookTls | undefined
let receiver: HookReceiver | undefined
let server: RunningServer | undefined
let tenant: Tenant
let sequence = 0

beforeAll(async () => {
  pg = await startPostgres()
  tls = webhookTls()
  receiver = startHookReceiver(tls.certs)
  server = await startService(serviceEnv(pg.url, webhookEnv(tls.caFile, { WEBHOOK_POLL_INTERVAL: POLL })))
  tenant = await createTenant(server.env, "Notify")
  await createChannel(server.env, tenant.orgId, `${receiver.url}/notify`)
})

afterAll(async () => {
  await stopAll([server])
  await receiver?.stop()
  tls?.remove()
  await pg?.destroy()
})

/** A new incident (so one incident.created delivery); resolves with how long until the receiver had it. */
const deliveryLatency = async () => {
  const hooks = receiver
  if (!server || !hooks) throw new Error("setup failed")
  const n = sequence++
  const before = hooks.hooks.length
  const answer = await timedFetch(`${server.ingestUrl}/ingest/v1/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${tenant.token}`, "content-type": "application/json" },
    body: JSON.stringify([
      {
        sensorEventId: `notify-${n}`,
        time: new Date().toISOString(),
        sourceIp: `198.51.100.${n + 1}`,
        sourcePort: 50_000,
        type: "ssh.login_attempt",
      },
    ]),
  })
  expect(answer.status, show(answer)).toBe(200)
  const committed = answer.endedAt
  const deadline = committed + PROMPT_MS
  while (hooks.hooks.length === before && Date.now() < deadline) await Bun.sleep(20)
  return hooks.hooks.length > before ? (hooks.hooks[before]?.at ?? Date.now()) - committed : Number.POSITIVE_INFINITY
}

test("a queued delivery wakes an idle dispatcher at once (NOTIFY), not at its next poll", async () => {
  expect(await deliveryLatency()).toBeLessThan(PROMPT_MS)
  expect(await deliveryLatency()).toBeLessThan(PROMPT_MS)
}, 60_000)

test("after a PostgreSQL restart the dispatcher is still woken by NOTIFY (it listens again)", async () => {
  if (!pg || !server) throw new Error("setup failed")
  const service = server
  await pg.stop("fast")
  await Bun.sleep(1_000)
  await pg.start()
  await eventually("ready again", async () => (await timedFetch(`${service.opsUrl}/readyz`)).status === 200, 15_000)
  expect(await deliveryLatency()).toBeLessThan(PROMPT_MS)
  expect(await deliveryLatency()).toBeLessThan(PROMPT_MS)
}, 60_000)
