import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { DatabaseLive } from "./client.ts"

/**
 * The repository's sql/ folder: plain, ordered migrations `NNNN_name.sql`. Found by walking up from this module, which
 * runs from src/platform/db/ or, bundled, from dist/.server-XXXXXX/.
 */
const findMigrationsDir = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "sql", "0001_init.sql"))) return join(dir, "sql")
    if (dirname(dir) === dir) return join(from, "sql")
  }
}
export const MIGRATIONS_DIR = findMigrationsDir(import.meta.dir)

export interface Migration {
  readonly version: string
  readonly name: string
  readonly sql: string
}

export const readMigrations = (dir: string = MIGRATIONS_DIR): ReadonlyArray<Migration> =>
  readdirSync(dir)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: file.slice(0, 4), name: file.slice(5, -4), sql: readFileSync(join(dir, file), "utf8") }))

/**
 * Months of partitions made ahead of the current one, at every start and by the retention job's hourly pass. One is
 * enough ahead of an hourly pass; each partition more is one more for every statement's plan to consider.
 */
export const EVENT_MONTHS_AHEAD = 1

// Any constant works; it only has to be the same in every process of the service.
const MIGRATION_LOCK = 7_351_270_114

/**
 * Applies the migrations not applied yet, in order, each exactly once. Runs in one transaction under an
 * advisory lock, so two processes starting together apply them once: the second waits, then finds them done.
 */
export const migrate = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const migrations = readMigrations()
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`
      yield* sql`create table if not exists schema_migrations (
        version text primary key, name text not null, applied_at timestamptz not null default now())`
      const done = new Set(
        (yield* sql<{ version: string }>`select version from schema_migrations`).map((r) => r.version),
      )
      const applied: Array<string> = []
      for (const migration of migrations) {
        if (done.has(migration.version)) continue
        yield* sql.unsafe(migration.sql)
        yield* sql`insert into schema_migrations (version, name) values (${migration.version}, ${migration.name})`
        applied.push(`${migration.version}_${migration.name}`)
      }
      // Events are partitioned by month (sql/0044): this month's and the next exist before the service takes its
      // first event, however long it was stopped (an event of a month without one would wait in events_default).
      yield* sql`select month_partitions_ensure(now(), now() + ${`${EVENT_MONTHS_AHEAD} months`}::interval)`
      return applied
    }),
  )
}).pipe(Effect.withSpan("migrate"))

/**
 * Applies pending migrations before anything that needs them starts (they run once, under the advisory lock), and logs
 * the ones applied. Once the process's own client has reached the database, they run on a client of their own without
 * the server's 4 s query time-out: a data migration over a large table must not be cut short (and rolled back) on every
 * start.
 */
export const MigrationsLive = Layer.effectDiscard(
  Effect.zipRight(
    SqlClient.SqlClient,
    migrate.pipe(
      Effect.tap((applied) => (applied.length > 0 ? Effect.logInfo("migrations applied", applied) : Effect.void)),
      Effect.provide(DatabaseLive),
    ),
  ),
)
