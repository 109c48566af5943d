import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Chunk, Clock, Duration, Effect, Layer, TestClock, TestContext } from "effect"
import { AlertDispatcherLive } from "../../src/alerts/Dispatcher.ts"
import { newId } from "../../src/domain/ids.ts"
import { Keys } from "../../src/platform/keys.ts"
import type { SendResult } from "../../src/platform/outbound/send.ts"
import { ChannelsRepo } from "../../src/repos/ChannelsRepo.ts"
import { DeliveriesRepo } from "../../src/repos/DeliveriesRepo.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { recordingChannelSender } from "../support/recordingChannelSender.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The dispatcher's retry schedule (D17) on Effect's TestClock: the service's own dispatcher layer, against the real
 * database, with a recording sender in place of HTTPS. A delivery that fails three times is sent again when the
 * schedule says (5 s, then 30 s, then 2 min after each failure, plus at most 10 % jitter), never before, and not again
 * once it succeeded.
 *
 * The delivery lives in a virtual era (2099): the running server's own dispatcher, on the real clock, never finds it
 * due, and the test's dispatcher is the only one that sends it. The file has a database of its own: other files'
 * pending deliveries would fill the dispatcher's first rounds, and ours would be claimed only after their sends
 * ended, a moment the test cannot see from outside.
 */

const POLL = Duration.seconds(5)
const SCHEDULE = ["5s", "30s", "2m"]

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  const env = await testEnv()
  server = await startServer({ env })
  db = testDatabase({ ...env, WEBHOOK_RETRY_SCHEDULE: SCHEDULE.join(","), WEBHOOK_POLL_INTERVAL: "5 seconds" })
})

afterAll(async () => {
  await shutdown(server, db)
})

const answer = (ok: boolean): SendResult => ({
  ok,
  status: ok ? 202 : 503,
  durationMs: 1,
  responseBody: "",
  responseTruncated: false,
  error: null,
  address: "192.0.2.10",
})

describe("retry schedule on the TestClock, against the real database", () => {
  test("a delivery failing three times is retried 5 s, 30 s and 2 min after each failure (plus its jitter), never earlier, and stops once it succeeded", async () => {
    const { orgId } = await createTenant(db, "Retry clock")
    const era = Date.UTC(2099, 0, 1)
    const channelId = newId("webhookChannel")
    const deliveryId = newId("webhookDelivery", era)
    await db.run(
      Effect.gen(function* () {
        const channels = yield* ChannelsRepo
        const deliveries = yield* DeliveriesRepo
        const { sealer } = yield* Keys
        yield* channels.insertChannel({
          id: channelId,
          orgId,
          url: "https://receiver.invalid/hooks",
          minSeverity: "low",
          secretEnc: sealer.seal(new TextEncoder().encode("whsec-test")),
          enabled: true,
          sensorHealth: false,
          createdAt: new Date(era),
        })
        yield* deliveries.insertDeliveries([
          {
            id: deliveryId,
            orgId,
            channelId,
            transitionId: null,
            type: "incident.created",
            incidentId: null,
            body: '{"test":true}',
            status: "pending",
            nextAttemptAt: new Date(era),
            createdAt: new Date(era),
          },
        ])
      }),
    )

    // Other tests' pending deliveries (in the real past) are due at 2099 too: they are answered and not looked at.
    const sender = recordingChannelSender((request) => answer(request.deliveryId !== deliveryId || request.attempt > 3))
    const ours = () => sender.sent.filter((s) => s.request.deliveryId === deliveryId)

    const seen = await db.run(
      Effect.scoped(
        Effect.gen(function* () {
          const deliveries = yield* DeliveriesRepo
          const sql = yield* SqlClient.SqlClient
          const attempts = () => Effect.map(deliveries.attemptsOf([deliveryId]), (rows) => rows.length)
          /** Ours is due at the test clock's now (a claimed send not yet recorded still is: its next time moves on). */
          const dueNow = (now: number) =>
            Effect.map(
              sql<{ due: boolean }>`
                select exists (select 1 from webhook_deliveries where id = ${deliveryId}
                  and status in ('pending', 'failed') and next_attempt_at <= ${new Date(now)}) as due`,
              (rows) => rows[0]?.due === true,
            )
          /**
           * Waits (real time) until the claimer sleeps until its next poll, ours is no longer due, and every send of
           * ours is recorded: only then may the clock move on.
           */
          const settled = Effect.gen(function* () {
            const deadline = Date.now() + 60_000
            for (;;) {
              const now = yield* Clock.currentTimeMillis
              const sleeping = Chunk.toReadonlyArray(yield* TestClock.sleeps()).includes(now + Duration.toMillis(POLL))
              if (sleeping && !(yield* dueNow(now)) && (yield* attempts()) === ours().length) return
              if (Date.now() > deadline) return yield* Effect.dieMessage("the dispatcher did not settle")
              yield* Effect.promise(() => Bun.sleep(10))
            }
          })

          yield* TestClock.setTime(era)
          yield* Layer.build(AlertDispatcherLive.pipe(Layer.provide(sender.layer)))
          yield* settled
          // 5 s steps (the poll) for 4 minutes: every send happens at the first poll at or after its due time.
          for (let i = 0; i < 48; i++) {
            yield* TestClock.adjust(POLL)
            yield* settled
          }
          const rows = yield* deliveries.attemptsOf([deliveryId])
          return { attempts: rows.map((r) => r.statusCode) }
        }),
      ).pipe(Effect.provide(TestContext.TestContext)),
    )

    // Attempt 1 at once; each retry is due its schedule's wait after the failure before it, plus up to 10 % jitter
    // (later, never earlier), and is sent at the dispatcher's first poll at or after that.
    const at = ours().map((s) => (s.at - era) / 1000)
    expect(at[0]).toBe(0)
    const waits = [5, 30, 120]
    const gaps = at.slice(1).map((t, i) => t - (at[i] ?? 0))
    expect(gaps).toHaveLength(3)
    gaps.forEach((gap, i) => {
      const wait = waits[i] ?? 0
      expect(gap).toBeGreaterThanOrEqual(wait)
      expect(gap).toBeLessThanOrEqual(wait * 1.1 + Duration.toSeconds(POLL))
    })
    expect(ours().map((s) => s.request.attempt)).toEqual([1, 2, 3, 4])
    expect(seen.attempts).toEqual([503, 503, 503, 202])
  }, 60_000)
})
