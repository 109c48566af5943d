import { Effect } from "effect"

/**
 * Whether the process is shutting down. SIGTERM (or SIGINT) flips it at once, before the layers start to close,
 * so `/readyz` answers 503 while the listeners finish their in-flight requests and the dispatcher drains; closing
 * the layer flips it too.
 */
export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  scoped: Effect.gen(function* () {
    let draining = false
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
    return { draining: () => draining } as const
  }),
}) {}
