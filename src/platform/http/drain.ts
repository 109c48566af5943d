import type { HttpApp } from "@effect/platform"
import { Duration, Effect, Layer } from "effect"

/**
 * How long a closing listener waits for the requests it has in flight. A request here is short (the slowest is a
 * sensor's batch at the body deadline); the rest of the shutdown (the dispatcher's sends, the pools) fits in the
 * 15 s an operator is told to allow.
 */
export const DRAIN_TIMEOUT = Duration.seconds(5)

/** A listener closes once it has had no request for this long: a balancer still sending sees readiness fail first. */
const QUIET = Duration.millis(250)

/**
 * Counts one listener's requests from the moment the handler sees them until their answer is made, and when the last
 * one came. The platform's server, when its layer closes, puts a bare 404 handler back and interrupts the request
 * fibers before it stops Bun's server; so a listener closes only once nothing is in flight and nothing has come for
 * QUIET (or after DRAIN_TIMEOUT), answering as usual until then.
 */
class InFlight {
  private count = 0
  private lastArrival = 0

  readonly track = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        this.count++
        this.lastArrival = Date.now()
      }),
      () => app,
      () =>
        Effect.sync(() => {
          this.count--
        }),
    )

  private readonly settled = () => this.count === 0 && Date.now() - this.lastArrival >= Duration.toMillis(QUIET)

  readonly drained: Effect.Effect<void> = Effect.suspend(() => {
    if (this.settled()) return Effect.void
    return Effect.logInfo("waiting for requests in flight").pipe(
      Effect.annotateLogs({ requests: this.count }),
      // A finalizer runs uninterruptibly: the wait must be interruptible itself, or the time-out could never stop
      // it and one request that never ends (a client gone mid-answer) would hold the process for ever.
      Effect.zipRight(Effect.interruptible(Effect.repeat(Effect.sleep(Duration.millis(25)), { until: this.settled }))),
      Effect.timeoutOption(DRAIN_TIMEOUT),
      Effect.flatMap((done) =>
        done._tag === "Some"
          ? Effect.void
          : Effect.logWarning("requests still in flight at the drain's end").pipe(
              Effect.annotateLogs({ requests: this.count }),
            ),
      ),
    )
  })
}

/**
 * A listener whose requests in flight at shutdown get their own answers: `serve` builds the listener (its server
 * layer included) with the given middleware as the outermost one. The drain is a layer built after the listener, so
 * it closes first: while it waits, the listener still answers (readiness already says 503, so a balancer stops
 * sending); then the listener closes as before, and Bun's server stops accepting connections.
 */
export const draining = <E, R>(
  serve: (track: <E1, R1>(app: HttpApp.Default<E1, R1>) => HttpApp.Default<E1, R1>) => Layer.Layer<never, E, R>,
): Layer.Layer<never, E, R> =>
  Layer.unwrapEffect(
    Effect.sync(() => {
      const inFlight = new InFlight()
      return Layer.scopedDiscard(Effect.addFinalizer(() => inFlight.drained)).pipe(Layer.provide(serve(inFlight.track)))
    }),
  )
