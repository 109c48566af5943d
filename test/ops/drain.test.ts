import { expect, test } from "bun:test"
import type { HttpApp } from "@effect/platform"
import { Duration, Effect, Layer } from "effect"
import { DRAIN_TIMEOUT, draining } from "../../src/platform/http/drain.ts"

/**
 * The drain of a closing listener waits for its requests in flight, DRAIN_TIMEOUT at most: it runs as a finalizer
 * (uninterruptible), so its wait must stay interruptible for that bound to hold. A request that never ends (a client
 * gone while its answer was written, which one HTTP server never reports) must not keep the process from exiting.
 */
test("a request that never ends holds a closing listener DRAIN_TIMEOUT at most, not for ever", async () => {
  let started = false
  const listener = draining((track) =>
    Layer.scopedDiscard(
      Effect.forkScoped(
        track(
          Effect.sync(() => {
            started = true
          }).pipe(Effect.zipRight(Effect.never)) as unknown as HttpApp.Default<never, never>,
        ) as unknown as Effect.Effect<never>,
      ),
    ),
  )
  const closedAfter = await Effect.runPromise(
    Effect.gen(function* () {
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* Layer.build(listener)
          yield* Effect.sleep("50 millis")
        }),
      ).pipe(
        Effect.timed,
        Effect.map(([elapsed]) => elapsed),
      )
      return 0
    }).pipe(
      Effect.timed,
      Effect.map(([elapsed]) => Duration.toMillis(elapsed)),
      // Without the bound the scope never closes: fail the test instead of hanging it.
      Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => new Error("the drain never ended") }),
    ),
  )
  expect(started).toBe(true)
  expect(closedAfter).toBeGreaterThanOrEqual(Duration.toMillis(DRAIN_TIMEOUT) - 100)
  expect(closedAfter).toBeLessThan(Duration.toMillis(DRAIN_TIMEOUT) + 3_000)
}, 20_000)
