import { Effect } from "effect"

/**
 * Whether the process serves: its public listeners are up, and it is not shutting down. SIGTERM (or SIGINT) flips it at once, before the layers start to close,
 * so `/readyz` answers 503 while the listeners finish their in-flight requests and the dispatcher drains; closing
 * the layer flips it too.
 */
export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  scoped: Effect.gen(function* () {
    let draining = false
    const listening = new Set<string>()
    const onSignal = () => {
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
        }),
    )
    return {
      draining: () => draining,
      /** A public listener says it accepts connections; readiness waits for the API and ingest listeners. */
      listening: (name: "api" | "ingest") => Effect.sync(() => listening.add(name)).pipe(Effect.asVoid),
      serving: () => listening.has("api") && listening.has("ingest"),
    } as const
  }),
}) {}
