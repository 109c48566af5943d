import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer, Metric } from "effect"
import { problemBody } from "../domain/problem.ts"
import { AppConfig } from "../platform/config.ts"
import { readMigrations } from "../platform/db/migrate.ts"
import { readBodyCapped } from "../platform/http/body.ts"
import { listening } from "../platform/http/listening.ts"
import { payloadTooLarge } from "../platform/http/responses.ts"
import { Lifecycle } from "../platform/Lifecycle.ts"
import { webhookOldestDueAge, webhookQueueDepth } from "../platform/metrics.ts"
import { rateLimitStoreErrors } from "../platform/ratelimit/RateLimiter.ts"
import { DeliveriesRepo } from "../repos/DeliveriesRepo.ts"
import { ReposLive } from "../repos/layers.ts"
import { toPrometheus } from "./prometheus.ts"

/**
 * The operations listener (OPS_PORT, never the public port): `/healthz` (the process answers), `/readyz` (the API
 * and ingest listeners are up, the database answers within 2 s, every migration is applied, and the process is not
 * shutting down; 503 otherwise)
 * and `/metrics` (Prometheus text of the Effect metrics, with the delivery queue read at scrape time).
 */

const json = (status: number, body: unknown) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store" } })

const notReady = (detail: string) =>
  HttpServerResponse.unsafeJson(problemBody(503, "Service Unavailable", "not_ready", detail), {
    status: 503,
    headers: { "cache-control": "no-store", "content-type": "application/problem+json; charset=utf-8" },
  })

const expectedMigrations = readMigrations().map((m) => m.version)

export const readiness = Effect.gen(function* () {
  const lifecycle = yield* Lifecycle
  if (lifecycle.draining()) return notReady("The process is shutting down.")
  if (!lifecycle.serving()) return notReady("The API and ingest listeners are not up yet.")
  const sql = yield* SqlClient.SqlClient
  const applied = yield* sql<{ version: string }>`select version from schema_migrations`.pipe(
    // Disconnected: interrupting a hung query waits for the driver's cancel request, which must not hold readiness.
    Effect.disconnect,
    Effect.timeout(Duration.seconds(2)),
    Effect.map((rows) => new Set(rows.map((r) => r.version))),
    Effect.option,
  )
  if (applied._tag === "None") return notReady("The database does not answer.")
  const missing = expectedMigrations.filter((v) => !applied.value.has(v))
  if (missing.length > 0) return notReady(`Migrations not applied yet: ${missing.join(", ")}.`)
  return json(200, { status: "ready" })
})

const metrics = Effect.gen(function* () {
  const deliveries = yield* DeliveriesRepo
  const now = new Date(yield* Clock.currentTimeMillis)
  // Queue figures come from the database (shared by every process), read now; a failure leaves the last values.
  yield* deliveries.queueStats(now).pipe(
    Effect.tap((stats) => Metric.set(webhookQueueDepth, stats.depth)),
    Effect.tap((stats) => Metric.set(webhookOldestDueAge, stats.oldestDueSeconds)),
    Effect.timeout(Duration.seconds(2)),
    Effect.ignore,
  )
  const text = toPrometheus(yield* Metric.snapshot)
  return HttpServerResponse.text(text, {
    headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" },
  })
})

/** Nothing on this listener takes a body: anything over this is refused (413) before any route runs. */
export const OPS_MAX_BODY_BYTES = 1024

const tooLarge = () =>
  payloadTooLarge("The operations endpoints take no request body.", {
    "cache-control": "no-store",
    "content-type": "application/problem+json; charset=utf-8",
    connection: "close",
  })

/** The declared length first; a body without one (chunked) is counted as it streams and cut off at the limit. */
const refuseBodies = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = request.headers["content-length"]
    if (declared !== undefined && !(Number(declared) <= OPS_MAX_BODY_BYTES)) return tooLarge()
    if (declared === undefined && (request.source as { body?: unknown }).body != null) {
      const bytes = yield* readBodyCapped(request.stream, OPS_MAX_BODY_BYTES).pipe(
        Effect.orElseSucceed(() => undefined),
      )
      if (bytes === undefined) return tooLarge()
    }
    return yield* app
  })

const router = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", Effect.succeed(json(200, { status: "ok" }))),
  HttpRouter.get("/readyz", readiness),
  HttpRouter.get("/metrics", metrics),
)

// Counters appear once touched: show the fail-open count as 0 from the start rather than not at all.
const touchCounters = Metric.incrementBy(rateLimitStoreErrors, 0)

const OpsListenerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    HttpServer.serve(
      refuseBodies(
        router.pipe(
          HttpRouter.catchAllCause(() =>
            Effect.succeed(
              HttpServerResponse.unsafeJson(
                problemBody(
                  500,
                  "Internal Server Error",
                  "internal",
                  "An unexpected error occurred. It has been logged.",
                ),
                { status: 500 },
              ),
            ),
          ),
        ),
      ),
    ).pipe(
      Layer.provide(Layer.effectDiscard(Effect.zipRight(touchCounters, listening("ops")))),
      // Bun's own cut-off, far below its 128 MiB default but well above ours: Bun closes a connection that passes it
      // without an answer, which a fast chunked sender reached before our 413 under load (at 64 KiB).
      Layer.provide(
        BunHttpServer.layer({ port: config.opsPort, hostname: config.host, maxRequestBodySize: 8 * 1024 * 1024 }),
      ),
    ),
  ),
)

/** /healthz, /readyz, /metrics on OPS_PORT, with the repositories it reads, on the pool main.ts gives it. */
export const OpsServerLive = OpsListenerLive.pipe(Layer.provide(ReposLive))
