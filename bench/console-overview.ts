/**
 * `bun bench/console-overview.ts --db <dsvc_bench_*> [--runs N] [--ranges 24h,7d,30d]`
 *
 * The console's overview at 1M events (the seeded large organization): each of its reads (src/console/ConsoleReads.ts,
 * run as the service runs them, through @effect/sql-pg) N times one after another, for each range, with p50 and p95;
 * then the whole page, `GET /?range=…` signed in over HTTP from a service process of its own, N times each. The
 * database is migrated first (the overview's indexes are sql/0035_overview_indexes.sql). Keep the machine otherwise
 * quiet: the figures are wall times.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { SQL } from "bun"
import { Effect, Layer, Redacted } from "effect"
import { ConsoleReads } from "../src/console/ConsoleReads.ts"
import { parseRange, rangeWindow } from "../src/console/overview/range.ts"
import { isId } from "../src/domain/ids.ts"
import { DEFAULT_NETWORKS } from "../src/domain/networks.ts"
import { adminJson } from "./lib/admin.ts"
import { type BenchContext, round, scriptOptions, serviceEnv, table } from "./lib/common.ts"
import { databaseUrl } from "./lib/pg.ts"
import { startService } from "./lib/proc.ts"
import { loadManifest } from "./lib/seed.ts"
import { signInAdmin } from "./parts/console.ts"

const { option, database } = scriptOptions("bun bench/console-overview.ts --db <dsvc_bench_*> [--runs N]")
const runs = Number(option("--runs", "15"))
const ranges = option("--ranges", "24h,7d,30d")
  .split(",")
  .map((r) => parseRange(r))
const url = databaseUrl(database)

const manifest = await loadManifest({ databaseUrl: url })
if (manifest === undefined) throw new Error(`${database} has no seed manifest`)
const orgId = manifest.datasets.large.orgId
if (!isId("organization", orgId)) throw new Error(`${database}'s seed manifest names no organization`)

/** The SECRET_KEY the seeding run stored (organizations' secrets are sealed under it), or a new one. */
const secretKey = await (async () => {
  const sql = new SQL({ url, max: 1 })
  try {
    const rows = await sql`select value->>'key' as key from bench_manifest where name = 'secret'`.catch(() => [])
    return (
      (rows[0]?.key as string | undefined) ?? Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")
    )
  } finally {
    await sql.close()
  }
})()
const workDir = mkdtempSync(join(tmpdir(), "dsvc-bench-overview-"))
const ctx: BenchContext = { database, databaseUrl: url, secretKey, workDir, profile: false }
await adminJson(serviceEnv(ctx), ["migrate"]).catch(() => ({}))

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? 0

const timeRuns = async (run: () => Promise<unknown>): Promise<{ p50: number; p95: number }> => {
  await run()
  const times: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    await run()
    times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  return { p50: round(percentile(times, 0.5), 1), p95: round(percentile(times, 0.95), 1) }
}

/** The same timing inside Effect (so a read runs on the fiber's transaction when there is one). */
const timeEffect = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    yield* effect
    const times: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const started = performance.now()
      yield* effect
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    return { p50: round(percentile(times, 0.5), 1), p95: round(percentile(times, 0.95), 1) }
  })

const COUNTRIES = ["CN", "US", "RU", "BR", "DE", "NL", "IN", "VN", "KR", "FR", "GB", "RO", "ID", "TW", "IR"]
const rows: Array<ReadonlyArray<string | number>> = []
const PgLive = PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })
await Effect.runPromise(
  Effect.gen(function* () {
    const reads = yield* ConsoleReads
    const sql = yield* SqlClient.SqlClient
    const cidrs = DEFAULT_NETWORKS.map((n) => n.cidr)
    for (const range of ranges) {
      const { start, unit } = rangeWindow(range, new Date())
      const queries: ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown>]> = [
        ["events over time", reads.eventsOverTime(orgId, start, unit)],
        ["new incidents over time", reads.incidentsOverTime(orgId, start, unit)],
        ["top sources", reads.topSources(orgId, start)],
        ["top sensors", reads.topSensors(orgId, start)],
        ["services and ports", reads.topServices(orgId, start)],
        ["event types", reads.topTypes(orgId, start)],
        ["usernames tried", reads.topAttackerValues(orgId, start, "username")],
        ["commands run", reads.topAttackerValues(orgId, start, "command")],
        ["open by severity", reads.openBySeverity(orgId)],
      ]
      for (const [name, query] of queries) {
        const t = yield* timeEffect(Effect.orDie(query))
        rows.push([range, name, t.p50, t.p95])
      }
      // The map's read needs countries: every source address of the organization gets one, inside a transaction that
      // is rolled back, so the seeded database keeps no enrichment (the API's reads skip its join while none exists).
      const country = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`insert into address_enrichment (address, rdns_status, country, geo_source, geo_looked_up_at)
              select s.source_ip, 'off', (${COUNTRIES}::text[])[1 + abs(hashtext(s.source_ip)) % ${COUNTRIES.length}],
                'bench', now()
              from (select distinct source_ip from incidents where org_id = ${orgId}) s
              on conflict (address) do nothing`.pipe(Effect.orDie)
            const t = yield* timeEffect(Effect.orDie(reads.eventsByCountry(orgId, start, cidrs)))
            return yield* Effect.fail(t)
          }),
        )
        .pipe(Effect.catchAll((e) => ("p50" in e ? Effect.succeed(e) : Effect.die(e))))
      rows.push([range, "events by country", country.p50, country.p95])
    }
  }).pipe(Effect.provide(Layer.merge(ConsoleReads.Default.pipe(Layer.provide(PgLive)), PgLive))),
)
console.log(`\nThe overview's reads, organization of ${manifest.datasets.large.events} events, ${runs} runs each\n`)
console.log(table(["range", "read", "p50 ms", "p95 ms"], rows))

const service = await startService(workDir, serviceEnv(ctx), false, "service-overview")
try {
  const consoleUrl = `http://127.0.0.1:${service.ports.console}`
  const { cookie } = await signInAdmin(ctx, consoleUrl, orgId)
  const pages: Array<ReadonlyArray<string | number>> = []
  for (const range of ranges) {
    let bytes = 0
    const t = await timeRuns(async () => {
      const response = await fetch(`${consoleUrl}/?range=${range}`, { headers: { cookie }, redirect: "manual" })
      const body = await response.text()
      if (response.status !== 200 || !body.includes("Top sources")) {
        throw new Error(`GET /?range=${range} answered ${response.status}: ${body.slice(0, 200)}`)
      }
      bytes = Buffer.byteLength(body)
    })
    pages.push([`GET /?range=${range}`, t.p50, t.p95, round(bytes / 1024, 1)])
  }
  console.log("\nThe whole page, signed in, one request at a time\n")
  console.log(table(["page", "p50 ms", "p95 ms", "KiB"], pages))
} finally {
  await service.stop()
  rmSync(workDir, { recursive: true, force: true })
}
