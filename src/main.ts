import { BunRuntime } from "@effect/platform-bun"
import { SqlClient } from "@effect/sql"
import { ConfigError, Effect, Layer } from "effect"
import { plainIngestWarning } from "./admin/sensorSetup.ts"
import { ApiServerLive } from "./api/server.ts"
import { SensorAuth } from "./auth/SensorAuth.ts"
import { AppConfig, AppConfigLive, describeSettings, formatConfigError } from "./config.ts"
import { ConsoleServerLive, ConsoleServicesLive } from "./console/server.tsx"
import { DatabaseLive, serverPool } from "./db/client.ts"
import { migrate } from "./db/migrate.ts"
import { AttackerInputRepairLive } from "./ingest/AttackerInputRepair.ts"
import { IdleCloserLive } from "./ingest/IdleCloser.ts"
import { Ingestor } from "./ingest/Ingestor.ts"
import { OrgKeys } from "./ingest/OrgKeys.ts"
import { SensorHealthSweepLive } from "./ingest/SensorHealthSweep.ts"
import { IngestServerLive } from "./ingest/server.ts"
import { LoggingLive } from "./logging.ts"
import { Lifecycle } from "./ops/Lifecycle.ts"
import { exitOnPortInUse } from "./ops/portInUse.ts"
import { OpsServerLive } from "./ops/server.ts"
import { exitOnStartupFailure } from "./ops/startupFailure.ts"
import { RateLimiter } from "./ratelimit/RateLimiter.ts"
import { CowrieSessionsRepo } from "./repos/CowrieSessionsRepo.ts"
import { EventsRepo } from "./repos/EventsRepo.ts"
import { IncidentsRepo } from "./repos/IncidentsRepo.ts"
import { OrgsRepo } from "./repos/OrgsRepo.ts"
import { SensorsRepo } from "./repos/SensorsRepo.ts"
import { TransitionsRepo } from "./repos/TransitionsRepo.ts"
import { WebhooksRepo } from "./repos/WebhooksRepo.ts"
import { WebhookDispatcherLive } from "./webhooks/Dispatcher.ts"
import { WebhookOutbox } from "./webhooks/Outbox.ts"
import { WebhookSender } from "./webhooks/WebhookSender.ts"

/**
 * Applies pending migrations before anything serves (they run once, under an advisory lock). Once the server's client
 * has reached the database, they run on a client of their own without the server's 4 s query time-out: a data
 * migration over a large table must not be cut short (and rolled back) on every start.
 */
const MigrationsLive = Layer.effectDiscard(
  Effect.zipRight(
    SqlClient.SqlClient,
    migrate.pipe(
      Effect.tap((applied) => (applied.length > 0 ? Effect.logInfo("migrations applied", applied) : Effect.void)),
      Effect.provide(DatabaseLive),
    ),
  ),
)

/** The repositories every face reads and writes through (each built on the pool of the face it is given to). */
const ReposLive = Layer.mergeAll(
  OrgsRepo.Default,
  IncidentsRepo.Default,
  EventsRepo.Default,
  TransitionsRepo.Default,
  SensorsRepo.Default,
  WebhooksRepo.Default,
)

/**
 * Sensors report here (INGEST_PORT); the idle-close and silent-sensor fibers run beside it; the dispatcher sends the
 * webhooks.
 */
const IngestionLive = Layer.mergeAll(
  IngestServerLive,
  IdleCloserLive,
  SensorHealthSweepLive,
  WebhookDispatcherLive,
  AttackerInputRepairLive,
).pipe(
  Layer.provide(Layer.mergeAll(Ingestor.Default, SensorAuth.Default, WebhookSender.Default)),
  // One cache of the organizations' keys for the Ingestor and the honeypot routes.
  Layer.provide(Layer.mergeAll(WebhookOutbox.Default, OrgKeys.Default)),
  Layer.provideMerge(Layer.mergeAll(ReposLive, CowrieSessionsRepo.Default)),
)

/** D11 counts: in memory, or shared through Redis when REDIS_URL is set. */
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

/** /healthz, /readyz, /metrics on OPS_PORT; up before migrations so readiness can say they are pending. */
const OpsLive = OpsServerLive.pipe(Layer.provide(WebhooksRepo.Default))

/** D25: the web console on CONSOLE_PORT, on the same repos and admin services as the API and the admin CLI. */
const ConsoleLive = ConsoleServerLive.pipe(
  Layer.provide(ConsoleServicesLive),
  Layer.provide(Layer.mergeAll(ReposLive, WebhookSender.Default)),
)

/** The only place the service's layers are composed. */
export const MainLive = Layer.mergeAll(
  // D37: the read API has a pool of its own; everything else (ingest, dispatcher, ops) shares the ingest pool.
  // Fresh: layers are memoised by identity across the whole build, so without it the API would reuse the
  // repositories the ingest side built on the ingest pool.
  Layer.fresh(ApiServerLive.pipe(Layer.provide(RateLimiterLive), Layer.provide(serverPool("api")))),
  IngestionLive,
  // The console (people at a browser) has a small pool of its own too: a busy console never takes a sensor's
  // connection, nor an API client's.
  Layer.fresh(ConsoleLive.pipe(Layer.provide(serverPool("console")))),
).pipe(
  Layer.provide(MigrationsLive),
  // Built before and closed after everything else: during a shutdown /readyz keeps answering (503) while the
  // listeners finish their requests and the dispatcher drains.
  Layer.provideMerge(OpsLive),
  Layer.provide(Lifecycle.Default),
  Layer.provide(ConfigLogLive),
  Layer.provideMerge(serverPool("ingest")),
  Layer.provideMerge(AppConfigLive),
)

if (import.meta.main) {
  // Once everything is up, one full collection returns start-up's garbage (module evaluation, migrations) before
  // the first request (issue #15: RSS right after start).
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
