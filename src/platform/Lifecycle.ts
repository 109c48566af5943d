import { Effect, Runtime } from "effect"

/**
 * Whether the process serves: its public listeners are up, and it is not shutting down. SIGTERM (or SIGINT) flips it at once, before the layers start to close,
 * so `/readyz` answers 503 while the listeners finish their in-flight requests and the dispatcher drains; closing
 * the layer flips it too.
 */
export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  scoped: Effect.gen(function* () {
    let draining = false
    const listening = new Set<string>()
    const runtime = yield* Effect.runtime<never>()
    // An operator (or a supervisor's log) sees that the stop was asked for and when it ended.
    const onSignal = (signal: NodeJS.Signals) => {
      if (!draining) {
        Runtime.runFork(runtime)(Effect.logInfo("shutting down").pipe(Effect.annotateLogs({ signal })))
      }
      draining = true
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        process.on("SIGTERM", onSignal)
        process.on("SIGINT", onSignal)
      }),
      () =>
        Effect.sync(() => {
          draining = true
          process.off("SIGTERM", onSignal)
          process.off("SIGINT", onSignal)
        }).pipe(Effect.zipRight(Effect.logInfo("stopped"))),
    )
    return {
      draining: () => draining,
      /** A public listener says it accepts connections; readiness waits for the API and ingest listeners. */
      listening: (name: "api" | "ingest") => Effect.sync(() => listening.add(name)).pipe(Effect.asVoid),
      serving: () => listening.has("api") && listening.has("ingest"),
    } as const
  }),
}) {}
