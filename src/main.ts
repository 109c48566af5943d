import { BunRuntime } from "@effect/platform-bun"
import { ConfigError, Effect, Layer } from "effect"
import { plainIngestWarning } from "./admin/sensorSetup.ts"
import { AlertsLive } from "./alerts/layer.ts"
import { apiServer } from "./api/server.ts"
import { ConsoleLive } from "./console/server.tsx"
import { IngestLive } from "./ingest/layer.ts"
import { JobsLive } from "./jobs/layer.ts"
import { McpRouteLive } from "./mcp/http.ts"
import { OpsServerLive } from "./ops/server.ts"
import { AppConfig, AppConfigLive, describeSettings, formatConfigError } from "./platform/config.ts"
import { serverPool } from "./platform/db/client.ts"
import { MigrationsLive } from "./platform/db/migrate.ts"
import { Keys } from "./platform/keys.ts"
import { Lifecycle } from "./platform/Lifecycle.ts"
import { LoggingLive } from "./platform/logging.ts"
import { exitOnPortInUse } from "./platform/portInUse.ts"
import { RateLimiter } from "./platform/ratelimit/RateLimiter.ts"
import { exitOnStartupFailure } from "./platform/startupFailure.ts"
import { TaxiiRouteLive } from "./taxii/server.ts"

/** Rate-limit counts: in memory, or shared through Redis when REDIS_URL is set. */
const RateLimiterLive = Layer.unwrapEffect(Effect.map(AppConfig, (config) => RateLimiter.layerFrom(config.rateLimit)))

/**
 * One line with the effective configuration (secrets redacted), first thing at start-up; and once, a warning when
 * sensors would send their tokens over plain HTTP to a service whose console is on HTTPS.
 */
const ConfigLogLive = Layer.effectDiscard(
  Effect.flatMap(AppConfig, (config) =>
    Effect.logInfo("configuration").pipe(
      Effect.annotateLogs(describeSettings(config)),
      Effect.zipRight(
        Effect.fromNullable(plainIngestWarning(config.appUrl, config.ingestUrl)).pipe(
          Effect.flatMap((warning) => Effect.logWarning(warning)),
          Effect.ignore,
        ),
      ),
    ),
  ),
)

/**
 * The read API on PORT with the MCP door at POST /mcp and the TAXII server under /taxii2/ (one key cache for all), on the API's own pool so a busy
 * ingest never takes an API client's connection. Fresh: layers are memoised by identity across the whole build, so
 * without it the API would reuse the repositories the ingest side built on the ingest pool.
 */
const ReadApiLive = Layer.fresh(
  apiServer(Layer.mergeAll(McpRouteLive, TaxiiRouteLive)).pipe(
    Layer.provide(RateLimiterLive),
    Layer.provide(serverPool("api")),
  ),
)

/**
 * The web console on CONSOLE_PORT with the admin services, on a small pool of its own: a busy console never takes a
 * sensor's connection, nor an API client's.
 */
const ConsoleFaceLive = Layer.fresh(ConsoleLive.pipe(Layer.provide(serverPool("console"))))

/** The only place the service's faces are composed: each face with its database pool. */
export const MainLive = Layer.mergeAll(
  ReadApiLive,
  // Ingest, the alert dispatcher and the background jobs (jobs/) share the ingest pool (as does ops).
  Layer.mergeAll(IngestLive, AlertsLive, JobsLive),
  ConsoleFaceLive,
).pipe(
  Layer.provide(MigrationsLive),
  // Built before and closed after everything else: during a shutdown /readyz keeps answering (503) while the
  // listeners finish their requests and the dispatcher drains.
  // /healthz, /readyz, /metrics on OPS_PORT: up before migrations, so readiness can say they are pending.
  Layer.provideMerge(OpsServerLive),
  Layer.provide(Lifecycle.Default),
  Layer.provide(ConfigLogLive),
  Layer.provideMerge(serverPool("ingest")),
  Layer.provideMerge(Keys.Default),
  Layer.provideMerge(AppConfigLive),
)

if (import.meta.main) {
  // Once everything is up, one full collection returns start-up's garbage (module evaluation, migrations) before
  // the first request, so the process does not stay at start-up's resident size.
  Layer.launch(MainLive.pipe(Layer.tap(() => Effect.sync(() => Bun.gc(true))))).pipe(
    Effect.provide(LoggingLive),
    // A bad variable (LOG_* included, read before any logger exists): one line naming it, exit 1, no stack trace.
    Effect.catchIf(ConfigError.isConfigError, (error) =>
      Effect.sync(() => {
        console.error(formatConfigError(error))
        process.exit(1)
      }),
    ),
    // The embedded database refused to start, DATABASE_URL unreachable: one line saying what to do, exit 1.
    Effect.catchAll(exitOnStartupFailure),
    // A port another process holds: one line naming the port and its variable, exit 1, no stack trace.
    Effect.catchAllDefect(exitOnPortInUse),
    BunRuntime.runMain({ disablePrettyLogger: true }),
  )
}
