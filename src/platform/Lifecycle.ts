import { Context, Effect, Layer, Runtime } from "effect"

/** Whether the process drains and which public listeners are up: the state behind the live and test layers. */
const lifecycleState = () => {
  let draining = false
  const listening = new Set<string>()
  return {
    drain: () => {
      draining = true
    },
    service: {
      draining: () => draining,
      /** A public listener says it accepts connections; readiness waits for the API and ingest listeners. */
      listening: (name: "api" | "ingest") => Effect.sync(() => listening.add(name)).pipe(Effect.asVoid),
      serving: () => listening.has("api") && listening.has("ingest"),
    } as const,
  }
}

/** A test's hand on Lifecycle.Test: `drain` flips the process to shutting down, as SIGTERM does to the live layer. */
export class LifecycleControl extends Context.Tag("LifecycleControl")<
  LifecycleControl,
  { readonly drain: Effect.Effect<void> }
>() {}

/**
 * Whether the process serves: its public listeners are up, and it is not shutting down. SIGTERM (or SIGINT) flips it at once, before the layers start to close,
 * so `/readyz` answers 503 while the listeners finish their in-flight requests and the dispatcher drains; closing
 * the layer flips it too.
 */
export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  scoped: Effect.gen(function* () {
    const { drain, service } = lifecycleState()
    const runtime = yield* Effect.runtime<never>()
    // An operator (or a supervisor's log) sees that the stop was asked for and when it ended.
    const onSignal = (signal: NodeJS.Signals) => {
      if (!service.draining()) {
        Runtime.runFork(runtime)(Effect.logInfo("shutting down").pipe(Effect.annotateLogs({ signal })))
      }
      drain()
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        process.on("SIGTERM", onSignal)
        process.on("SIGINT", onSignal)
      }),
      () =>
        Effect.sync(() => {
          drain()
          process.off("SIGTERM", onSignal)
          process.off("SIGINT", onSignal)
        }).pipe(Effect.zipRight(Effect.logInfo("stopped"))),
    )
    return service
  }),
}) {
  /**
   * For tests: no signal handlers and no logs; nothing listens and nothing drains until the test says so (the
   * service's `listening`, LifecycleControl's `drain`). Each build of the layer starts afresh.
   */
  static readonly Test: Layer.Layer<Lifecycle | LifecycleControl> = Layer.effectContext(
    Effect.sync(() => {
      const { drain, service } = lifecycleState()
      return Context.make(Lifecycle, Lifecycle.make(service)).pipe(
        Context.add(LifecycleControl, { drain: Effect.sync(drain) }),
      )
    }),
  )
}
