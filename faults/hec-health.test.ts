import { afterAll, beforeAll, expect, test } from "bun:test"
import type { RunningServerProcess as RunningServer } from "../test/support/server.ts"
import { type OwnPostgres, startPostgres } from "./support/postgres.ts"
import { type Answer, eventually, serviceEnv, show, startService, stopAll, timedFetch } from "./support/service.ts"

/**
 * D41 (a): `GET /services/collector/health` is what a HEC shipper (Vector, Fluent Bit, the OpenTelemetry Collector)
 * polls before it sends. It answers HEC's 200 code 17 "HEC is healthy" while the database answers, and HEC's 503
 * code 18 when it cannot be reached: the database crashed (pg_ctl stop -m immediate: connections cut, new ones
 * refused) or hangs (SIGSTOP: connections accepted, nothing answers; the health check gives up after 2 s). It comes
 * back to 200 by itself once the database does. Never a 500, never a hang.
 */

const LIMIT_MS = 5_000

let pg: OwnPostgres | undefined
let server: RunningServer | undefined

beforeAll(async () => {
  pg = await startPostgres()
  server = await startService(serviceEnv(pg.url))
})

afterAll(async () => {
  pg?.thaw()
  await stopAll([server])
  await pg?.destroy()
})

const health = () => timedFetch(`${server?.ingestUrl}/services/collector/health`, {}, LIMIT_MS)

const isHealthy = (a: Answer) =>
  a.status === 200 &&
  a.contentType.startsWith("application/json") &&
  a.body?.code === 17 &&
  a.body?.text === "HEC is healthy"

const isUnhealthy = (a: Answer) =>
  a.status === 503 && a.contentType.startsWith("application/json") && a.body?.code === 18

/** Polls until an answer satisfies `ok`; every answer on the way must be one of the two HEC answers. */
const until = async (what: string, ok: (a: Answer) => boolean) => {
  let last: Answer | undefined
  await eventually(
    what,
    async () => {
      last = await health()
      if (!isHealthy(last) && !isUnhealthy(last)) throw new Error(`not a HEC health answer: ${show(last)}`)
      return ok(last)
    },
    30_000,
  )
  return last as Answer
}

test("(a): HEC health is 200 code 17 with the database, 503 code 18 while it is down or hung, 200 again after", async () => {
  if (!pg || !server) throw new Error("setup failed")
  const healthy = await health()
  expect({ healthy: isHealthy(healthy), answer: show(healthy) }).toMatchObject({ healthy: true })

  // A crash: the pool's connections are cut and new ones refused.
  await pg.stop("immediate")
  try {
    const down = await until("503 code 18 after the crash", isUnhealthy)
    expect(down.body).toMatchObject({ text: "HEC is unhealthy, queues are full", code: 18 })
    expect(down.endedAt - down.startedAt).toBeLessThan(LIMIT_MS)
    // Every answer while it stays down is the same 503, promptly.
    for (let i = 0; i < 3; i++) {
      const again = await health()
      expect({ unhealthy: isUnhealthy(again), answer: show(again) }).toMatchObject({ unhealthy: true })
    }
  } finally {
    await pg.start()
  }
  await until("200 code 17 after the restart", isHealthy)

  // A hang: connections are accepted, nothing answers; the check gives up after 2 s.
  pg.freeze()
  try {
    const hung = await until("503 code 18 while the database hangs", isUnhealthy)
    expect(hung.endedAt - hung.startedAt).toBeLessThan(LIMIT_MS)
  } finally {
    pg.thaw()
  }
  await until("200 code 17 after the thaw", isHealthy)
})
