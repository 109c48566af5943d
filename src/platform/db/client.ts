import { PgClient } from "@effect/sql-pg"
import { type Duration, Effect, Layer, Option, Redacted, Schedule, String as Str } from "effect"
import { AppConfig, type DatabaseDriver } from "../config.ts"
import * as BunPg from "./bunPg.ts"
import { EmbeddedDatabaseError, embeddedDatabase } from "./embedded.ts"

/**
 * Column names are snake_case in SQL and camelCase in TypeScript; the client translates both ways. Not inside JSON
 * values: attackerInput (jsonb) keeps the attacker's own member names, as sent.
 */
const naming = {
  transformResultNames: Str.snakeToCamel,
  transformQueryNames: Str.camelToSnake,
  transformJson: false,
} as const

/**
 * Each listener has its own connection pool, so a flood of one (API requests, sensor posts) can never take the
 * other's connections. `application_name` names the pool in pg_stat_activity. The admin tool uses one pool.
 */
export type PoolName = "api" | "ingest" | "console" | "admin"
export interface PoolSettings {
  readonly name: PoolName
  readonly maxConnections: number
}
const ADMIN_POOL: PoolSettings = { name: "admin", maxConnections: 20 }
/** How every pool of the service names its connections (`<prefix><pool>`), and the admin tool's own. */
export const APPLICATION_PREFIX = "decoy-incident-service/"
const applicationName = (pool: PoolSettings) => `${APPLICATION_PREFIX}${pool.name}`
export const ADMIN_APPLICATION = applicationName(ADMIN_POOL)

/** How long a query waits for a free connection of its pool (or for a new connection) before it fails as busy. */
export const POOL_WAIT = "2 seconds"

/**
 * The embedded PostgreSQL: started by whichever process needs it first, reached over its Unix socket with the
 * very client and settings of DATABASE_URL (pool size, connect and query time-outs).
 */
const embeddedClient = (
  dataDir: string,
  queryTimeoutMs: number | undefined,
  pool: PoolSettings,
  driver: DatabaseDriver,
) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const endpoint = yield* embeddedDatabase(dataDir)
      yield* Effect.logInfo(
        `embedded database: ${endpoint.started ? "started" : "connected to"} PostgreSQL in ${endpoint.socketDir}`,
      )
      const url = `postgres://postgres@localhost:${endpoint.port}/postgres?host=${encodeURIComponent(endpoint.socketDir)}`
      return postgresClient(Redacted.make(url), queryTimeoutMs, pool, driver)
    }),
  )

/**
 * The change feeds' horizon is the cluster's oldest open writing transaction, so none of the service's sessions may sit
 * idle inside a transaction for long: PostgreSQL ends such a session after this long (every pool, also the admin
 * tool's). A transaction that is working (a long migration) is not idle and is never cut.
 */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 15_000

/**
 * The read API's statements are planned once per connection, not at each request: its lists and lookups are keyset
 * range scans whose best plan does not depend on the values given (every filter has its index led by the
 * organization), and PostgreSQL would otherwise plan each of them afresh (it judged the one-off plans cheaper), which
 * over the events' month partitions (sql/0044) cost more than running the statement: 362 → 623 list req/s, 2,513 →
 * 497 µs of PostgreSQL's CPU per request (BENCHMARKS.md). The run-time partition pruning still skips the months a
 * cursor has passed. Only the API's pool: the console's searches and the jobs' statements keep their one-off plans.
 */
const API_PLAN_CACHE_MODE = "force_generic_plan"

/** How long after the client's own time-out PostgreSQL cancels the statement (the client's error is the one seen). */
const STATEMENT_TIMEOUT_MARGIN_MS = 1_000

/**
 * PostgreSQL by URL, through Bun's client (bunPg.ts) or the `pg` driver (DATABASE_DRIVER). A connection attempt gives
 * up after 2 s; with `queryTimeoutMs` (the server) a query gets no answer after that long fails too, so a hung
 * database means a 503 within seconds instead of a hung request (bunPg's own timer; for `pg`, its `query_timeout`,
 * which @effect/sql-pg does not expose but the URL does). The client's timer does not stop the statement: PostgreSQL
 * cancels it itself a second later (`statement_timeout`), so a statement the service gave up on does not go on holding
 * locks and a connection's worth of work. Both send `statement_timeout` and `idle_in_transaction_session_timeout` as
 * session settings at connect.
 */
const postgresClient = (
  url: Redacted.Redacted<string>,
  queryTimeoutMs: number | undefined,
  pool: PoolSettings,
  driver: DatabaseDriver,
) => {
  const session: Record<string, number | string> = {
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
  }
  if (queryTimeoutMs !== undefined) session.statement_timeout = queryTimeoutMs + STATEMENT_TIMEOUT_MARGIN_MS
  if (pool.name === "api") session.plan_cache_mode = API_PLAN_CACHE_MODE
  if (driver === "bun") {
    return BunPg.layer({
      url,
      maxConnections: pool.maxConnections,
      applicationName: applicationName(pool),
      poolWait: POOL_WAIT,
      queryTimeout: queryTimeoutMs,
      sessionSettings: session,
      ...naming,
    })
  }
  let effective = url
  try {
    const parsed = new URL(Redacted.value(url))
    if (queryTimeoutMs !== undefined && !parsed.searchParams.has("query_timeout")) {
      parsed.searchParams.set("query_timeout", String(queryTimeoutMs))
    }
    for (const [name, value] of Object.entries(session)) {
      if (name === "plan_cache_mode") {
        // `pg` sends only the settings it knows by name; others go through the server's own `options`.
        if (!parsed.searchParams.has("options")) parsed.searchParams.set("options", `-c ${name}=${value}`)
      } else if (!parsed.searchParams.has(name)) parsed.searchParams.set(name, String(value))
    }
    effective = Redacted.make(parsed.toString())
  } catch {
    // Not a URL the WHATWG parser takes: leave it to the driver as given.
  }
  return PgClient.layer({
    url: effective,
    maxConnections: pool.maxConnections,
    connectTimeout: POOL_WAIT,
    applicationName: applicationName(pool),
    ...naming,
  })
}

const databaseLayer = (queryTimeoutMs: number | undefined, pool: PoolSettings = ADMIN_POOL) =>
  Layer.unwrapEffect(
    Effect.map(AppConfig, (config) =>
      Option.isSome(config.databaseUrl)
        ? postgresClient(config.databaseUrl.value, queryTimeoutMs, pool, config.databaseDriver)
        : embeddedClient(config.dataDir, queryTimeoutMs, pool, config.databaseDriver),
    ),
  )

/**
 * The one SQL client of the service: PostgreSQL when DATABASE_URL is set, otherwise the embedded PostgreSQL server
 * reached through the same client over its Unix socket. Used as is by the admin tool (no query time-out, so a
 * long migration by `admin migrate` is never cut short).
 */
export const DatabaseLive = databaseLayer(undefined)

/** The server's PostgreSQL queries fail after this long without an answer (embedded or DATABASE_URL). */
export const SERVER_QUERY_TIMEOUT_MS = 4_000

/**
 * The server's database layer: a PostgreSQL still starting (a container started alongside it) is waited for,
 * DATABASE_STARTUP_WAIT (45 s), with a warning per try; after that start-up fails and the supervisor's restart policy
 * takes over. The admin tool uses DatabaseLive and fails at once instead. An embedded server that cannot be set up
 * fails at once too.
 */
const serverDatabase = (pool: PoolSettings, startupWait: Duration.Duration) =>
  databaseLayer(SERVER_QUERY_TIMEOUT_MS, pool).pipe(
    Layer.tapError((error) =>
      error instanceof EmbeddedDatabaseError ? Effect.void : Effect.logWarning("database not reachable yet; retrying"),
    ),
    Layer.retry(
      Schedule.union(Schedule.exponential("250 millis", 1.5), Schedule.spaced("5 seconds")).pipe(
        Schedule.upTo(startupWait),
        // The embedded server could not be set up (initdb, the binaries, DATA_DIR): trying again changes nothing.
        Schedule.whileInput((error: unknown) => !(error instanceof EmbeddedDatabaseError)),
      ),
    ),
  )

/**
 * The server's database layer for one listener's own pool (`api`: the read API; `ingest`: the ingest listener, the
 * webhook dispatcher, the idle close and /readyz), sized by DATABASE_POOL_API / DATABASE_POOL_INGEST.
 */
export const serverPool = (name: "api" | "ingest" | "console") =>
  Layer.unwrapEffect(
    Effect.map(AppConfig, (config) =>
      serverDatabase({ name, maxConnections: config.databasePools[name] }, config.databaseStartupWait),
    ),
  )
