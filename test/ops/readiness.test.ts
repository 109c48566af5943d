import { describe, expect, test } from "bun:test"
import type { HttpServerResponse } from "@effect/platform"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { readiness } from "../../src/ops/server.ts"
import { AppConfigLive } from "../../src/platform/config.ts"
import { DatabaseLive } from "../../src/platform/db/client.ts"
import { MigrationsLive } from "../../src/platform/db/migrate.ts"
import { Lifecycle, LifecycleControl } from "../../src/platform/Lifecycle.ts"
import { testEnv } from "../support/server.ts"

/**
 * /readyz's decision with Lifecycle.Test: no signal handlers, no listeners; the test says when the API and ingest
 * listen and when the process drains. The database is the test run's, migrated.
 */

const answer = (response: HttpServerResponse.HttpServerResponse) => {
  const body = response.body
  const text = body._tag === "Uint8Array" ? new TextDecoder().decode(body.body) : ""
  return { status: response.status, body: JSON.parse(text) as { readonly status?: string; readonly detail?: string } }
}

const check = readiness.pipe(Effect.map(answer))

/** A fresh Lifecycle.Test on each run, beside the test run's database (migrated as the server does at start). */
const layer = Layer.merge(
  Lifecycle.Test,
  MigrationsLive.pipe(
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(AppConfigLive),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(await testEnv()))))),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)),
  ),
)

const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>) =>
  Effect.runPromise(Effect.provide(effect, layer))

describe("readiness (/readyz) with Lifecycle.Test", () => {
  test("503 until both the API and ingest listen, 200 while serving, 503 once draining", async () => {
    const seen = await run(
      Effect.gen(function* () {
        const lifecycle = yield* Lifecycle
        const control = yield* LifecycleControl
        const before = yield* check
        yield* lifecycle.listening("api")
        const apiOnly = yield* check
        yield* lifecycle.listening("ingest")
        const serving = yield* check
        yield* control.drain
        const draining = yield* check
        return { before, apiOnly, serving, draining }
      }),
    )
    expect(seen.before.status).toBe(503)
    expect(seen.before.body.detail).toBe("The API and ingest listeners are not up yet.")
    expect(seen.apiOnly.status).toBe(503)
    expect(seen.serving).toEqual({ status: 200, body: { status: "ready" } })
    expect(seen.draining.status).toBe(503)
    expect(seen.draining.body.detail).toBe("The process is shutting down.")
  })

  test("a process that drains before its listeners are up is never ready", async () => {
    const seen = await run(
      Effect.gen(function* () {
        const lifecycle = yield* Lifecycle
        yield* (yield* LifecycleControl).drain
        yield* lifecycle.listening("api")
        yield* lifecycle.listening("ingest")
        return yield* check
      }),
    )
    expect(seen.status).toBe(503)
    expect(seen.body.detail).toBe("The process is shutting down.")
  })

  test("each build of Lifecycle.Test starts afresh: not draining, nothing listening", async () => {
    const seen = await run(Effect.map(Lifecycle, (l) => ({ draining: l.draining(), serving: l.serving() })))
    expect(seen).toEqual({ draining: false, serving: false })
  })
})
