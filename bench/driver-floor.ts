/**
 * `bun bench/driver-floor.ts --db <dsvc_bench_*> [--queries N] [--concurrency C]`
 *
 * What the database driver costs alone (issue #15: "the part of the stack that holds it and what that part costs
 * alone"): the API's own list statement (incidentListStatement, the 1M-event organization's first page of 51 rows)
 * run N times, C at a time, in this one process with no HTTP, through
 *   1. Bun's built-in SQL client (what the baseline uses),
 *   2. the `pg` driver's pool directly (the driver under @effect/sql-pg, its default type parsers),
 *   3. @effect/sql-pg as the service runs it (`sql.unsafe(text, params).withoutTransform`, in Effect fibers),
 *   4. the same statement through the service's client on Bun's driver (src/platform/db/bunPg.ts, DATABASE_DRIVER=bun),
 *   5. the same client's one-step read (bunPg.ts readRows), which the API's list and lookup reads use,
 * and prints, for each, queries/s and this process's CPU per query (process.cpuUsage), beside PostgreSQL's CPU per
 * query (every `postgres` process, from /proc: keep the machine otherwise quiet).
 */
import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { SQL } from "bun"
import { Effect, Redacted } from "effect"
import pg from "pg"
import { isId } from "../src/domain/ids.ts"
import * as BunPg from "../src/platform/db/bunPg.ts"
import { readRows } from "../src/platform/db/directReads.ts"
import { incidentListStatement } from "../src/repos/IncidentsRepo.ts"
import { round, scriptOptions, table } from "./lib/common.ts"
import { databaseUrl } from "./lib/pg.ts"
import { postgresCpuSeconds } from "./lib/proc.ts"
import { loadManifest } from "./lib/seed.ts"

const { option, database } = scriptOptions(
  "bun bench/driver-floor.ts --db <dsvc_bench_*> [--queries N] [--concurrency C]",
)
const queries = Number(option("--queries", "3000"))
const concurrency = Number(option("--concurrency", "10"))
const url = databaseUrl(database)

const manifest = await loadManifest({ databaseUrl: url })
if (manifest === undefined) throw new Error(`${database} has no seed manifest`)
const orgId = manifest.datasets.large.orgId
if (!isId("organization", orgId)) throw new Error(`${database}'s seed manifest names no organization`)
const { text, params } = incidentListStatement({ orgId, status: undefined, after: undefined, fetch: 51 })

/** N queries, C at a time; the CPU of this process and of PostgreSQL per query. */
const measure = async (name: string, run: () => Promise<number>, warm = 300) => {
  const loop = async (n: number) => {
    let next = 0
    let rows = 0
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          next++
          // Not `rows += await run()`: that reads `rows` before the await and loses the other workers' counts.
          const got = await run()
          rows += got
        }
      }),
    )
    return rows
  }
  await loop(warm)
  Bun.gc(true)
  const cpu = process.cpuUsage()
  const pgBefore = postgresCpuSeconds()
  const started = performance.now()
  const rows = await loop(queries)
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  const pgUs = ((postgresCpuSeconds() - pgBefore) * 1e6) / queries
  return [
    name,
    round(queries / seconds, 0),
    round((used.user + used.system) / queries, 0),
    round(pgUs, 0),
    round(rows / queries, 0),
  ] as const
}

const results: Array<ReadonlyArray<string | number>> = []

const bunSql = new SQL({ url, max: concurrency })
results.push(
  await measure("Bun.sql (the baseline's client)", async () => (await bunSql.unsafe(text, [...params])).length),
)
await bunSql.close()

const pool = new pg.Pool({ connectionString: url, max: concurrency })
results.push(
  await measure("pg Pool (under @effect/sql-pg)", async () => (await pool.query(text, [...params])).rowCount ?? 0),
)
await pool.end()

await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: concurrency })
      const once = sql.unsafe(text, [...params]).withoutTransform.pipe(Effect.map((rows) => rows.length))
      results.push(
        yield* Effect.promise(() =>
          measure("@effect/sql-pg as the service runs it", () => Effect.runPromise(Effect.orDie(once))),
        ),
      )
    }),
  ).pipe(Effect.provide(Reactivity.layer)),
)

await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const sql = yield* BunPg.make({
        url: Redacted.make(url),
        maxConnections: concurrency,
        applicationName: "driver-floor",
        poolWait: "2 seconds",
        queryTimeout: "4 seconds",
      })
      const once = sql.unsafe(text, [...params]).withoutTransform.pipe(Effect.map((rows) => rows.length))
      results.push(
        yield* Effect.promise(() =>
          measure("the service's client on Bun.sql (bunPg.ts)", () => Effect.runPromise(Effect.orDie(once))),
        ),
      )
      // What the API's reads run: the same pool, in one step, without @effect/sql's per-statement effects.
      const direct = readRows(sql, text, [...params]).pipe(Effect.map((rows) => rows.length))
      results.push(
        yield* Effect.promise(() =>
          measure("its one-step read (readRows, the API's)", () => Effect.runPromise(Effect.orDie(direct))),
        ),
      )
    }),
  ).pipe(Effect.provide(Reactivity.layer)),
)

console.log(
  `\nGET /v1/incidents's statement (first page, 51 rows of the 1M-event organization), ${queries} queries, ${concurrency} at a time, no HTTP\n`,
)
console.log(table(["client", "queries/s", "CPU µs/query", "PostgreSQL µs/query", "rows"], results))
