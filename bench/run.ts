/**
 * `bun run bench [part …] [options]`: the performance suite against real PostgreSQL.
 *
 * Parts (seed … ratelimit-memory when none is named; `full` for all; each also runs alone and seeds what it needs):
 *   seed              orgs, sensors, 8,000 API keys, 100k incidents, 10k + 1M events (timings, verification)
 *   console           the web console signed in (session cookie): GET /incidents and GET /incidents/<id> (200
 *                     events) at 16 and 64 connections beside GET /v1/incidents and /v1/incidents/{id}, same process
 *   api               req/s and p50/p99 of three endpoints at 16 and 64 connections, service vs baseline (wrk),
 *                     and the HttpApi floor (bench/httpapi-floor.ts: the framework alone, no database)
 *   scale             first page and a deep page (after 10,000 rows) at 10k and 1M events, service vs baseline
 *   sweep             GET /v1/incidents at 1, 16, 64 and 256 connections, service vs baseline; writes
 *                     bench/results/<date>-chart.svg
 *   ingest            events/s through POST /ingest/v1/events in batches of 1, 100 and 1000
 *   feeds             GET /v1/events/changes: the first page and a page after 900,000 changes of 1M events (D32)
 *   webhooks          deliveries/s and event-to-receipt latency, without and with a dead second channel
 *   ratelimit-memory  heap of the in-memory rate limit store (bench/ratelimit-memory.ts, no database)
 *   startup           the embedded PostgreSQL (D35): first answer and memory after start (fresh and existing DATA_DIR),
 *                     peak memory and req/s of the list beside DATABASE_URL (bench/startup.ts, its own databases)
 *   flood             D37: sensors post while 200 connections flood the API with unknown keys; ingest failures
 *                     (goal 0) beside the API's figures (its own organization and sensors; needs no seed)
 *   scale10m          (long) 10,000,000 events in one organization: first page, page after 1M rows, the change
 *                     feed if the service has it, table and index sizes (bench/parts/scale10m.ts)
 *   soak              (long) 30 minutes at a fixed rate: RSS every 10 s, growth after 5 minutes, errors
 *   rss-curve         (long) peak RSS against req/s for runtime settings (--smol, BUN_JSC_forceRAMSize, the
 *                     container's command); writes bench/results/<date>-rss-curve.svg
 *
 * Options:
 *   --quick           short runs (3 s instead of 8 s, fewer webhook events): to try the suite, not to report
 *   --profile         run the service (and the baseline and the floor in the api part) under `bun --cpu-prof`;
 *                     each profile is summarised, with a per-request stage table for the api part
 *   --keep-db         do not drop the database at the end (its name is printed; reuse it with --db)
 *   --db <name>       use an existing dsvc_bench_* database seeded by an earlier --keep-db run
 *   --seed-events N   events of the large dataset (default 1,000,000): fewer to try the suite cheaply
 *   --scale-events N  events of the scale10m organization (default 10,000,000)
 *   --soak-minutes M  length of the soak (default 30); --soak-rate R its requests/s (default 200)
 *   --sweep-path P    the endpoint of the sweep (default /v1/incidents)
 *
 * A fresh database `dsvc_bench_<timestamp>` is created on BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432)
 * and dropped at the end. The table is printed and the figures written to bench/results/<date>.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { SQL } from "bun"
import { svgChart } from "./lib/chart.ts"
import { type BenchContext, log, RESULTS_DIR, ROOT, round, table } from "./lib/common.ts"
import {
  createDatabase,
  databaseExists,
  databaseUrl,
  dropDatabase,
  newDatabaseName,
  postgresVersion,
} from "./lib/pg.ts"
import { loadManifest, type SeedManifest, seed } from "./lib/seed.ts"
import { ensureWrk } from "./lib/wrk.ts"
import { runApi, runScale } from "./parts/api.ts"
import { runConsole } from "./parts/console.ts"
import { runFeeds } from "./parts/feeds.ts"
import { runFlood } from "./parts/flood.ts"
import { runIngest } from "./parts/ingest.ts"
import { runRssCurve } from "./parts/rssCurve.ts"
import { runScale10m } from "./parts/scale10m.ts"
import { runSoak } from "./parts/soak.ts"
import { runSweep } from "./parts/sweep.ts"
import { runWebhooks } from "./parts/webhooks.ts"
import { formatProfile, formatStageTable, type ProfileSummary, summarizeProfile } from "./profile-summary.ts"

/**
 * Every part and what it needs, in the order a run takes them. long: only when named or with `full`; db: a
 * PostgreSQL database; seed: the main dataset (scale10m and flood make organizations of their own, startup its own
 * databases); wrk: the load generator.
 */
const PART_NEEDS = {
  seed: { db: true, seed: true },
  api: { db: true, seed: true, wrk: true },
  console: { db: true, seed: true, wrk: true },
  scale: { db: true, seed: true, wrk: true },
  sweep: { db: true, seed: true, wrk: true },
  feeds: { db: true, seed: true, wrk: true },
  ingest: { db: true, seed: true },
  webhooks: { db: true, seed: true },
  "ratelimit-memory": {},
  startup: {},
  flood: { db: true },
  scale10m: { long: true, db: true, wrk: true },
  soak: { long: true, db: true, seed: true },
  "rss-curve": { long: true, db: true, seed: true, wrk: true },
} as const satisfies Record<string, { long?: true; db?: true; seed?: true; wrk?: true }>
type Part = keyof typeof PART_NEEDS
const PARTS = Object.keys(PART_NEEDS) as ReadonlyArray<Part>
const partsWhere = (need: "long" | "db" | "seed" | "wrk", value = true): ReadonlyArray<Part> =>
  PARTS.filter((p) => ((PART_NEEDS[p] as Partial<Record<typeof need, true>>)[need] === true) === value)
/** `bun run bench` with no part: every part but the long ones (scale10m, soak, rss-curve). */
const DEFAULT_PARTS = partsWhere("long", false)
const DB_PARTS = partsWhere("db")
const MAIN_SEED_PARTS = partsWhere("seed")
const WRK_PARTS = partsWhere("wrk")

const args = process.argv.slice(2)
const flag = (name: string) => args.includes(name)
const option = (name: string) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}
// Options that take a value (the value is not a part's name).
const VALUE_OPTIONS = ["--db", "--seed-events", "--scale-events", "--soak-minutes", "--soak-rate", "--sweep-path"]
const positional = args.filter((a, i) => !a.startsWith("--") && !VALUE_OPTIONS.includes(args[i - 1] ?? ""))
const unknown = positional.filter((p) => p !== "full" && !(PARTS as ReadonlyArray<string>).includes(p))
if (unknown.length > 0) {
  console.error(`unknown benchmark ${unknown.join(", ")}; known: ${PARTS.join(", ")}, full`)
  process.exit(2)
}
const parts: ReadonlyArray<Part> = positional.includes("full")
  ? PARTS
  : positional.length > 0
    ? (positional as Array<Part>)
    : DEFAULT_PARTS
const quick = flag("--quick")
// The large dataset's events (default 1,000,000): fewer to try the suite on a busy machine, not to report.
const seedEvents = Number(option("--seed-events") ?? 1_000_000)
// scale10m: events in its one organization (default 10,000,000).
const scaleEvents = Number(option("--scale-events") ?? 10_000_000)
// soak: minutes at a steady rate (default 30) and that rate in requests/s (default 200).
const soakMinutes = Number(option("--soak-minutes") ?? 30)
const soakRate = Number(option("--soak-rate") ?? 200)
for (const [name, value] of Object.entries({ seedEvents, scaleEvents, soakMinutes, soakRate })) {
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`${name} must be a positive number`)
    process.exit(2)
  }
}
// Each seeded organization has a 200-event incident and about 10 events per incident.
if (seedEvents < 10_000 || scaleEvents < 10_000) {
  console.error("--seed-events and --scale-events must be at least 10000")
  process.exit(2)
}
const timing = quick ? { seconds: 3, warmupSeconds: 1 } : { seconds: 8, warmupSeconds: 3 }
const webhookSizes = quick ? { latencyEvents: 30, burstEvents: 200 } : { latencyEvents: 100, burstEvents: 1000 }

const machine = async () => {
  const bun = Bun.version
  const pg = parts.some((p) => DB_PARTS.includes(p)) ? await postgresVersion() : undefined
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGiB: round(totalmem() / 1024 ** 3, 1),
    bun,
    ...(pg ? { postgres: pg } : {}),
    loadBefore: loadavg().map((l) => round(l, 2)),
  }
}

/** A part that is a script of its own: its output is the result. */
const runScript = async (script: string, extra: ReadonlyArray<string> = []) => {
  const child = Bun.spawn(["bun", join(import.meta.dir, script), ...extra], { stdout: "pipe", stderr: "inherit" })
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
  process.stdout.write(text)
  if (code !== 0) throw new Error(`${script} exited with ${code}`)
  return { lines: text.trim().split("\n") }
}

// biome-ignore lint/suspicious/noExplicitAny: the parts' results are plain JSON, shaped by each part
type Json = any

const started = performance.now()
const results: Record<string, Json> = {}
const info = await machine()
log(`parts: ${parts.join(", ")}${quick ? " (quick)" : ""}; load average ${info.loadBefore.join(" ")}`)
let wrkVersion: string | undefined
if (parts.some((p) => WRK_PARTS.includes(p))) wrkVersion = await ensureWrk()

const reuse = option("--db")
const keepDb = flag("--keep-db") || reuse !== undefined
const workDir = mkdtempSync(join(tmpdir(), "dsvc-bench-"))
let ctx: BenchContext | undefined
let failure: unknown

try {
  let manifest: SeedManifest | undefined
  if (parts.some((p) => DB_PARTS.includes(p))) {
    const database = reuse ?? newDatabaseName()
    const url = databaseUrl(database)
    let secretKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")
    if (reuse !== undefined) {
      if (!(await databaseExists(reuse))) throw new Error(`no database ${reuse}`)
      // The organizations' and channels' secrets are sealed under the SECRET_KEY of the run that seeded it.
      const sql = new SQL({ url, max: 1 })
      const rows = await sql`select value->>'key' as key from bench_manifest where name = 'secret'`.catch(() => [])
      await sql.close()
      const stored = (rows[0] as { key?: string } | undefined)?.key
      if (stored === undefined) throw new Error(`${reuse} has no bench manifest: seed it with --keep-db first`)
      secretKey = stored
    } else {
      await createDatabase(database)
      log(`database ${database}`)
      // The secret first: a part that seeds on its own (scale10m) leaves a database --db can reuse.
      const sql = new SQL({ url, max: 1 })
      await sql.unsafe("create table if not exists bench_manifest (name text primary key, value jsonb not null)")
      await sql`insert into bench_manifest (name, value) values ('secret', (${JSON.stringify({ key: secretKey })}::text)::jsonb)`
      await sql.close()
    }
    ctx = { database, databaseUrl: url, secretKey, workDir, profile: flag("--profile") }
    if (parts.some((p) => MAIN_SEED_PARTS.includes(p))) {
      manifest = reuse !== undefined ? await loadManifest(ctx) : undefined
      if (manifest === undefined) manifest = await seed(ctx, seedEvents)
      results.seed = manifest.stats
    }
  }
  for (const part of parts) {
    log(`== ${part}`)
    const partStarted = performance.now()
    if (part === "seed") continue
    if (part === "ratelimit-memory") results[part] = await runScript("ratelimit-memory.ts")
    else if (part === "startup") results[part] = await runScript("startup.ts", quick ? ["--seconds", "3"] : [])
    else if (part === "flood" && ctx !== undefined) results.flood = await runFlood(ctx, { seconds: quick ? 10 : 30 })
    else if (part === "scale10m" && ctx !== undefined)
      results.scale10m = await runScale10m(ctx, timing, { events: scaleEvents })
    else if (ctx !== undefined && manifest !== undefined) {
      if (part === "api") results.api = await runApi(ctx, manifest, timing)
      if (part === "console") results.console = await runConsole(ctx, manifest, timing)
      if (part === "scale") results.scale = await runScale(ctx, manifest, timing)
      if (part === "feeds") results.feeds = await runFeeds(ctx, manifest, timing)
      if (part === "rss-curve") results["rss-curve"] = await runRssCurve(ctx, manifest, timing, quick)
      if (part === "soak") results.soak = await runSoak(ctx, manifest, { minutes: soakMinutes, rate: soakRate })
      if (part === "sweep") results.sweep = await runSweep(ctx, manifest, timing, option("--sweep-path"))
      if (part === "ingest") results.ingest = await runIngest(ctx, manifest, timing)
      if (part === "webhooks") results.webhooks = await runWebhooks(ctx, manifest, webhookSizes)
    }
    if (results[part] !== undefined) results[part].seconds = round((performance.now() - partStarted) / 1000, 1)
  }
} catch (error) {
  failure = error
} finally {
  if (ctx !== undefined && !keepDb) {
    await dropDatabase(ctx.database).catch((e) => log(`could not drop ${ctx?.database}: ${e}`))
    log(`dropped ${ctx.database}`)
  } else if (ctx !== undefined) log(`kept database ${ctx.database} (reuse: bun run bench <part> --db ${ctx.database})`)
  rmSync(workDir, { recursive: true, force: true })
}

// ---------------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------------

const SEED_STEPS = [
  "migrate",
  "orgsCli",
  "smallKeys",
  "smallIncidents",
  "smallEvents",
  "largeKeys",
  "largeIncidents",
  "largeEvents",
  "ingestSensorsCli",
  "vacuumAnalyze",
  "verify",
]
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : "-")
const sections: Array<string> = []
const stamp = new Date()
  .toISOString()
  .replace(/:\d\d\.\d+Z$/, "Z")
  .replace(":", "")
/** Charts written beside the results file. */
const charts: Array<{ file: string; svg: string }> = []

if (results.seed) {
  const s = results.seed
  sections.push(
    `Seed: ${s.events?.toLocaleString("en")} events, ${s.incidents?.toLocaleString("en")} incidents, ${s.apiKeys} API keys, ${s.organizations} organizations, ${s.sensors} sensors, ${s.databaseMiB} MiB; verified ${s.verified}; ${s.totalSeconds} s\n` +
      table(
        ["step", "seconds"],
        SEED_STEPS.filter((k) => s[`${k}Seconds`] !== undefined).map((k) => [k, String(s[`${k}Seconds`])]),
      ),
  )
}
if (results.api) {
  sections.push(
    `API (wrk, 2 threads, ${timing.seconds} s per run; service with auth + rate limits on, ${results.api.dataset.apiKeys} keys rotated, X-Forwarded-For rotated)\n` +
      table(
        ["endpoint", "conns", "svc req/s", "svc p50", "svc p99", "base req/s", "base p50", "base p99", "svc/base"],
        results.api.rows.map((r: Json) => [
          r.endpoint,
          r.connections,
          r.service.rps,
          ms(r.service.latencyMs.p50),
          ms(r.service.latencyMs.p99),
          r.baseline.rps,
          ms(r.baseline.latencyMs.p50),
          ms(r.baseline.latencyMs.p99),
          r.rpsRatio.toFixed(2),
        ]),
      ) +
      `\nSQL statements per request (PostgreSQL's count): ${results.api.statementsPerRequest
        .map((x: Json) => `${x.endpoint} ${x.service} (baseline ${x.baseline})`)
        .join("; ")}` +
      `\nservice statuses counted: ${JSON.stringify(results.api.serviceStatuses)}; same body as baseline: ${Object.values(
        results.api.checks,
      )
        .map((c: Json) => c.same)
        .join(", ")}`,
  )
  if (results.api.floor) {
    const f = results.api.floor
    sections.push(
      `HttpApi floor (bench/httpapi-floor.ts: the service's HttpApi + BunHttpServer stack, no database, the baseline's ${f.bodyBytes}-byte first page of GET /v1/incidents as a constant)\n` +
        table(
          [
            "conns",
            "floor req/s",
            "floor p50",
            "floor p99",
            "baseline list req/s",
            "floor/base",
            "svc list req/s",
            "svc/floor",
          ],
          f.rows.map((r: Json) => [
            r.connections,
            r.floor.rps,
            ms(r.floor.latencyMs.p50),
            ms(r.floor.latencyMs.p99),
            r.baselineRps ?? "-",
            r.floorVsBaseline?.toFixed(2) ?? "-",
            r.serviceRps ?? "-",
            r.serviceVsFloor?.toFixed(2) ?? "-",
          ]),
        ),
    )
  }
}
if (results.console) {
  const c = results.console
  sections.push(
    `Console pages (wrk, 2 threads, ${timing.seconds} s per run; signed in with a session cookie; beside the API endpoint reading the same rows, same process, run just before; "checks failed" = responses that were not a 200 with the signed-in page or the API's JSON)\n` +
      table(
        [
          "page",
          "conns",
          "page req/s",
          "page p50",
          "page p99",
          "API endpoint",
          "API req/s",
          "API p50",
          "API p99",
          "page/API",
          "checks failed",
        ],
        c.rows.map((r: Json) => [
          r.page,
          r.connections,
          r.console.rps,
          ms(r.console.latencyMs.p50),
          ms(r.console.latencyMs.p99),
          r.api,
          r.apiResult.rps,
          ms(r.apiResult.latencyMs.p50),
          ms(r.apiResult.latencyMs.p99),
          r.rpsRatio.toFixed(2),
          `${r.console.failedChecks} of ${r.console.checked} / ${r.apiResult.failedChecks} of ${r.apiResult.checked}`,
        ]),
      ) +
      `\npages: ${Object.entries(c.checks)
        .map(
          ([page, x]: [string, Json]) =>
            `${page} ${x.signedIn.bytes} bytes, ${x.signedIn.count} rows (signed out: ${x.signedOutStatus})`,
        )
        .join("; ")}; API statuses counted: ${JSON.stringify(c.apiStatuses)}`,
  )
}
if (results.feeds) {
  sections.push(
    `Feeds: GET /v1/events/changes?limit=50, ${results.feeds.connections} connections (latency in ms); EXPLAIN ANALYZE of the feed's statement\n` +
      table(
        ["case", "req/s", "p50", "p99", "plan", "SQL ms", "buffers"],
        results.feeds.rows.map((r: Json, i: number) => [
          r.case,
          r.service.rps,
          ms(r.service.latencyMs.p50),
          ms(r.service.latencyMs.p99),
          results.feeds.plans[i]?.plan ?? "-",
          String(results.feeds.plans[i]?.executionMs ?? "-"),
          String(results.feeds.plans[i]?.sharedBuffers ?? "-"),
        ]),
      ),
  )
}
if (results.scale) {
  sections.push(
    `Scale: GET /v1/events, ${results.scale.connections} connections (latency in ms; "vs first@10k" = p50 ÷ p50 of the first page at 10k)\n` +
      table(
        [
          "case",
          "svc req/s",
          "svc p50",
          "svc p99",
          "base req/s",
          "base p50",
          "svc p50 vs first@10k",
          "base p50 vs first@10k",
        ],
        results.scale.rows.map((r: Json, i: number) => [
          r.case,
          r.service.rps,
          ms(r.service.latencyMs.p50),
          ms(r.service.latencyMs.p99),
          r.baseline.rps,
          ms(r.baseline.latencyMs.p50),
          results.scale.ratios[i].p50VsFirst10k.toFixed(2),
          results.scale.ratios[i].baselineP50VsFirst10k.toFixed(2),
        ]),
      ),
  )
}
if (results.scale10m) {
  const x = results.scale10m
  const seedLine = [
    "loadSeconds",
    "eventsPerSecond",
    "indexBuildSeconds",
    "vacuumAnalyzeSeconds",
    "verifySeconds",
    "verified",
    "totalSeconds",
  ]
    .filter((k) => x.seed[k] !== undefined)
    .map((k) => `${k} ${x.seed[k]}`)
    .join(", ")
  sections.push(
    `scale10m: GET /v1/events with ${x.events.toLocaleString("en")} events in one organization, ${x.connections} connections (ms; "vs first@10k" = ÷ the first page at 10k)\n` +
      `seed: ${seedLine}\n` +
      table(
        [
          "case",
          "svc req/s",
          "svc p50",
          "svc p99",
          "base req/s",
          "base p50",
          "base p99",
          "p50 vs first@10k",
          "p99 vs first@10k",
        ],
        x.rows.map((r: Json, i: number) => [
          r.case,
          r.service.rps,
          ms(r.service.latencyMs.p50),
          ms(r.service.latencyMs.p99),
          r.baseline?.rps ?? "-",
          r.baseline ? ms(r.baseline.latencyMs.p50) : "-",
          r.baseline ? ms(r.baseline.latencyMs.p99) : "-",
          x.ratios[i].p50VsFirst10k.toFixed(2),
          x.ratios[i].p99VsFirst10k.toFixed(2),
        ]),
      ) +
      `\nchange feed: ${x.feed.available ? `measured (followed through ${x.feed.walked} rows${x.feed.ended ? ", where it ended" : ""})` : `GET /v1/events/changes answered ${x.feed.status}, not measured`}; same body as baseline: ${Object.values(
        x.checks,
      )
        .map((c: Json) => c.same)
        .join(", ")}\n` +
      `events table (all organizations, about ${x.sizes.estimatedRows.toLocaleString("en")} rows): table ${x.sizes.tableMiB} MiB, indexes ${x.sizes.indexesMiB} MiB, total with TOAST ${x.sizes.totalMiB} MiB; incidents total ${x.sizes.incidentsTotalMiB} MiB\n` +
      table(
        ["index", "MiB"],
        x.sizes.indexes.map((i: Json) => [i.name, i.MiB]),
      ),
  )
}
if (results.sweep) {
  const w = results.sweep
  sections.push(
    `Connections sweep: ${w.endpoint} (${w.events.toLocaleString("en")} events), service vs baseline (ms)\n` +
      table(
        [
          "conns",
          "svc req/s",
          "svc p50",
          "svc p99",
          "base req/s",
          "base p50",
          "base p99",
          "svc/base req/s",
          "svc/base p99",
        ],
        w.rows.map((r: Json) => [
          r.connections,
          r.service.rps,
          ms(r.service.latencyMs.p50),
          ms(r.service.latencyMs.p99),
          r.baseline.rps,
          ms(r.baseline.latencyMs.p50),
          ms(r.baseline.latencyMs.p99),
          r.rpsRatio.toFixed(2),
          r.p99Ratio.toFixed(2),
        ]),
      ),
  )
  const categories = w.rows.map((r: Json) => String(r.connections))
  const series = (key: "rps" | "p99", who: "service" | "baseline") =>
    w.rows.map((r: Json, i: number) => ({ x: i, y: key === "rps" ? r[who].rps : r[who].latencyMs.p99 }))
  charts.push({
    file: `${stamp}-chart.svg`,
    svg: svgChart(
      `${w.endpoint}: service vs baseline (bare Bun.serve + Bun.sql), same run`,
      `${new Date().toISOString().slice(0, 16)}Z, ${info.cores} cores, Bun ${info.bun}, wrk ${timing.seconds} s per point${quick ? " (quick run: not for reporting)" : ""}; load average at start ${info.loadBefore.join(" ")}`,
      [
        {
          title: "Throughput",
          xLabel: "connections (wrk)",
          yLabel: "requests/s",
          categories,
          series: [
            { name: "service", color: "#1f6fb2", points: series("rps", "service") },
            { name: "baseline", color: "#e07b00", dashed: true, points: series("rps", "baseline") },
          ],
        },
        {
          title: "Latency p99",
          xLabel: "connections (wrk)",
          yLabel: "p99 ms",
          categories,
          series: [
            { name: "service", color: "#1f6fb2", points: series("p99", "service") },
            { name: "baseline", color: "#e07b00", dashed: true, points: series("p99", "baseline") },
          ],
        },
      ],
    ),
  })
}
if (results.soak) {
  const k = results.soak
  const every = k.minutes > 5 ? 6 : 1
  sections.push(
    `Soak: ${k.minutes} min at ${k.ratePerSecond} req/s (achieved ${k.achievedPerSecond}; incidents, events and a 200-event incident; plus ${k.ingestBatches} ingestion batches of 10), service RSS every 10 s${every > 1 ? " (one line a minute)" : ""}\n` +
      table(
        ["at s", "RSS MiB", "requests", "errors", "p99 ms"],
        k.windows
          .filter((_: Json, i: number) => (i + 1) % every === 0)
          .map((w: Json) => [w.atSeconds, w.rssMiB, w.requests, w.errors, ms(w.p99Ms)]),
      ) +
      `\nRSS after ${k.settleSeconds} s: ${k.rssAtSettleMiB} MiB; at the end: ${k.rssEndMiB} MiB; mean of the ${k.comparedSeconds} s after ${k.settleSeconds} s ${k.rssMeanAfterSettleMiB} MiB, of the last ${k.comparedSeconds} s ${k.rssMeanLastMinuteMiB} MiB: growth ${k.growthMiB} MiB; slope after ${k.settleSeconds} s ${k.slopeMiBPerMinute} MiB/min; peak (VmHWM) ${k.memory.service.peakRssMiB} MiB` +
      `\nerrors: ${k.errors} (statuses ${JSON.stringify(k.statuses)}, ${k.skippedInFlightCap} not sent: 512 in flight); latency p50 ${ms(k.latencyMs.p50)} ms, p99 ${ms(k.latencyMs.p99)} ms, max ${ms(k.latencyMs.max)} ms; ${k.eventsIngested} events ingested`,
  )
}
if (results["rss-curve"]) {
  const c = results["rss-curve"]
  sections.push(
    `RSS against throughput: ${c.endpoint} at ${c.connections} connections, a fresh service per setting (MiB)\n` +
      table(
        ["setting", "req/s", "p50 ms", "p99 ms", "RSS at start", "peak RSS", "max polled RSS"],
        c.points.map((p: Json) => [
          p.setting,
          p.load.rps,
          ms(p.load.latencyMs.p50),
          ms(p.load.latencyMs.p99),
          p.startRssMiB,
          p.peakRssMiB,
          p.maxPolledRssMiB,
        ]),
      ),
  )
  charts.push({
    file: `${stamp}-rss-curve.svg`,
    svg: svgChart(
      `Memory against throughput: ${c.endpoint}, ${c.connections} connections`,
      `${new Date().toISOString().slice(0, 16)}Z, ${info.cores} cores, Bun ${info.bun}, one fresh service per setting${quick ? " (quick run: not for reporting)" : ""}`,
      [
        {
          title: "Peak RSS against req/s",
          xLabel: "requests/s",
          yLabel: "peak RSS (VmHWM), MiB",
          reference: { y: 200, label: "200 MiB (target)" },
          series: [
            {
              name: "service, one point per setting",
              color: "#1f6fb2",
              markersOnly: true,
              // Numbers beside the markers; the key under the chart names the settings.
              points: c.points.map((p: Json, i: number) => ({ x: p.load.rps, y: p.peakRssMiB, label: String(i + 1) })),
            },
          ],
        },
      ],
      c.points.map((p: Json, i: number) => `${i + 1}: ${p.setting}: ${p.load.rps} req/s, peak ${p.peakRssMiB} MiB`),
    ),
  })
}
if (results.ingest) {
  sections.push(
    `Ingestion: POST /ingest/v1/events, ${results.ingest.rows[0]?.connections} connections (closed loop), ${results.ingest.sensors} sensors, ${results.ingest.sourceIps} source IPs\n` +
      table(
        ["batch", "events/s", "req/s", "p50 ms", "p99 ms", "accepted", "stored", "not accepted", "client CPU"],
        results.ingest.rows.map((r: Json) => [
          r.batch,
          r.eventsPerSecond,
          r.requestsPerSecond,
          ms(r.latencyMs.p50),
          ms(r.latencyMs.p99),
          r.eventsAccepted,
          r.eventsStored,
          r.eventsNotAccepted,
          r.clientCpu,
        ]),
      ),
  )
}
if (results.webhooks) {
  const w = results.webhooks
  const row = (name: string, r: Json) => [
    name,
    r.received,
    r.deliveries,
    ms(r.latencyMs.p50),
    ms(r.latencyMs.p99),
    ms(r.latencyMs.max),
    `${ms(r.ingestMs.p50)} / ${ms(r.ingestMs.p99)}`,
    r.deliveriesPerSecond ?? "-",
  ]
  sections.push(
    "Webhooks: healthy channel's deliveries (event-to-receipt = receiver arrival - ingest POST sent)\n" +
      table(
        ["run", "received", "sent", "p50 ms", "p99 ms", "max ms", "ingest answer p50/p99", "deliveries/s"],
        [
          row("latency (10 events/s), healthy only", w.healthyOnly.latency),
          row("burst of new incidents, healthy only", w.healthyOnly.burst),
          row("latency (10 events/s), + dead channel", w.withDeadChannel.latency),
          row("burst of new incidents, + dead channel", w.withDeadChannel.burst),
        ],
      ) +
      `\ndead receiver: ${w.withDeadChannel.deadReceiverConnections} connections held; ${w.failedAttemptsLogged} failed attempts logged`,
  )
}
if (results.flood) {
  const f = results.flood
  sections.push(
    `Isolation (D37): ${f.ingest.sensors} sensors post batches of 10 for ${f.postSeconds} s while ${f.api.connections} connections flood GET /v1/incidents with unknown keys (one client address each)\n` +
      table(
        ["listener", "requests", "req/s", "failed", "failed %", "p50 ms", "p99 ms", "statuses"],
        [
          [
            "ingest",
            f.ingest.requests,
            f.ingest.requestsPerSecond,
            f.ingest.failedRequests,
            f.ingest.failedShare,
            ms(f.ingest.latencyMs.p50),
            ms(f.ingest.latencyMs.p99),
            JSON.stringify(f.ingest.statuses),
          ],
          [
            "api (flood)",
            f.api.requests,
            f.api.requestsPerSecond,
            "-",
            "-",
            ms(f.api.latencyMs.p50),
            ms(f.api.latencyMs.p99),
            JSON.stringify(f.api.statuses),
          ],
        ],
      ) +
      `\nevents accepted ${f.ingest.eventsAccepted}, stored ${f.ingest.eventsStored}, not accepted ${f.ingest.eventsNotAccepted}`,
  )
}
const memoryRows: Array<Array<string | number>> = []
for (const part of ["api", "console", "scale", "sweep", "ingest", "webhooks", "scale10m", "soak"]) {
  const m = results[part]?.memory
  if (m) {
    memoryRows.push([
      part,
      m.service.peakRssMiB,
      m.service.startRssMiB,
      m.baseline?.peakRssMiB ?? "-",
      m.baseline?.startRssMiB ?? "-",
    ])
  }
}
const floorMemory = results.api?.floor?.memory
if (memoryRows.length > 0) {
  sections.push(
    `Memory: peak RSS (VmHWM) in MiB, and RSS right after start-up (1 s after the listeners are up, no load yet)\n${table(
      ["part", "service peak", "service at start", "baseline peak", "baseline at start"],
      memoryRows,
    )}${floorMemory ? `\nthe HttpApi floor (api part, no database): peak ${floorMemory.peakRssMiB} MiB, at start ${floorMemory.startRssMiB} MiB` : ""}`,
  )
}
if (results["ratelimit-memory"])
  sections.push(`Rate limit store memory\n${results["ratelimit-memory"].lines.join("\n")}`)
if (results.startup) sections.push(results.startup.lines.join("\n"))

// Targets of the performance issues (#15 where it raised an earlier one): ratios to the baseline of the same run.
const targets: Array<{ target: string; figure: string; met: boolean }> = []
if (results.api) {
  for (const r of results.api.rows) {
    const single = r.endpoint.includes("{id}")
    const floor = single ? 0.7 : 0.8
    targets.push({
      target: `${r.endpoint} at ${r.connections} conns: >= ${floor * 100} % of baseline req/s`,
      figure: `${Math.round(r.rpsRatio * 100)} % (${r.service.rps} vs ${r.baseline.rps})`,
      met: r.rpsRatio >= floor,
    })
    if (r.connections === 64 && !single)
      targets.push({
        target: `${r.endpoint} at 64 conns: p99 <= 1.5x the baseline's`,
        figure: `${ms(r.service.latencyMs.p99)} vs ${ms(r.baseline.latencyMs.p99)} ms (x${r.p99Ratio.toFixed(2)})`,
        met: r.p99Ratio <= 1.5,
      })
  }
}
if (results.console) {
  const rows = results.console.rows
  const failed = rows.reduce((n: number, r: Json) => n + r.console.failedChecks + r.apiResult.failedChecks, 0)
  const checked = rows.reduce((n: number, r: Json) => n + r.console.checked + r.apiResult.checked, 0)
  targets.push({
    target: "console and API under load: every response a 200 with the signed-in page (or the API's JSON)",
    figure: `${failed} of ${checked} failed`,
    met: failed === 0 && checked > 0,
  })
}
if (results.scale) {
  results.scale.ratios.slice(1).forEach((r: Json) => {
    targets.push({
      target: `${r.case}: within 1.5x of the first page at 10k`,
      figure: `p50 x${r.p50VsFirst10k.toFixed(2)}, req/s ÷${r.rpsDropVsFirst10k.toFixed(2)}`,
      met: r.p50VsFirst10k <= 1.5 && r.rpsDropVsFirst10k <= 1.5,
    })
  })
}
if (results.scale10m) {
  for (const r of results.scale10m.ratios.slice(1)) {
    targets.push({
      target: `scale10m ${r.case}: p50 <= 1.5x the first page at 10k`,
      figure: `p50 x${r.p50VsFirst10k.toFixed(2)}`,
      met: r.p50VsFirst10k <= 1.5,
    })
  }
}
if (results.soak) {
  const k = results.soak
  targets.push({
    target: `soak ${k.minutes} min: RSS flat after ${k.settleSeconds} s (growth <= 10 MiB), no error`,
    figure: `growth ${k.growthMiB} MiB (${k.slopeMiBPerMinute} MiB/min), ${k.errors} errors`,
    met: k.growthMiB <= 10 && k.errors === 0,
  })
}
if (results.ingest) {
  const r = results.ingest.rows.find((x: Json) => x.batch === 100)
  if (r)
    targets.push({
      target: "ingestion, batches of 100: >= 20,000 events/s",
      figure: `${r.eventsPerSecond} events/s`,
      met: r.eventsPerSecond >= 20000,
    })
}
if (results.webhooks) {
  const idle = results.webhooks.healthyOnly.latency
  const dead = results.webhooks.withDeadChannel.latency
  targets.push({
    target: "webhook event-to-receipt p99 <= 500 ms (idle)",
    figure: `${ms(idle.latencyMs.p99)} ms (${idle.received}/${idle.deliveries} received)`,
    met: idle.latencyMs.p99 <= 500 && idle.received === idle.deliveries,
  })
  targets.push({
    target: "... unaffected by a dead receiver (healthy channel p99 <= 500 ms)",
    figure: `${ms(dead.latencyMs.p99)} ms (${dead.received}/${dead.deliveries} received)`,
    met: dead.latencyMs.p99 <= 500 && dead.received === dead.deliveries,
  })
}
if (results.flood) {
  const i = results.flood.ingest
  targets.push({
    target: "D37: no sensor post fails during an API flood",
    figure: `${i.failedRequests} of ${i.requests} failed; ${i.eventsStored}/${i.eventsAccepted} stored`,
    met: i.failedRequests === 0 && i.eventsNotAccepted === 0 && i.eventsStored === i.eventsAccepted,
  })
}
if (memoryRows.length > 0) {
  const peak = Math.max(...memoryRows.map((r) => Number(r[1])))
  const worst = memoryRows.find((r) => Number(r[1]) === peak)?.[0]
  targets.push({
    target: "service peak RSS <= 200 MiB (every part)",
    figure: `${peak} MiB (${worst})`,
    met: peak <= 200,
  })
  const start = Math.max(...memoryRows.map((r) => Number(r[2])))
  targets.push({ target: "service RSS right after start-up <= 100 MiB", figure: `${start} MiB`, met: start <= 100 })
}
if (results["rss-curve"]) {
  const container = results["rss-curve"].points.find((p: Json) => p.setting.startsWith("bun run"))
  if (container)
    targets.push({
      target: "container command (bun run src/main.ts): peak RSS <= 200 MiB",
      figure: `${container.peakRssMiB} MiB`,
      met: container.peakRssMiB <= 200,
    })
}
if (targets.length > 0) {
  sections.push(
    `Targets\n${table(
      ["target", "figure", "met"],
      targets.map((t) => [t.target, t.figure, t.met ? "met" : "NOT MET"]),
    )}`,
  )
}

// Profiles (with --profile).
const profiles: Record<string, ProfileSummary> = {}
for (const part of ["api", "console", "scale", "sweep", "ingest", "webhooks", "scale10m", "soak"]) {
  const file = results[part]?.profile
  if (typeof file !== "string") continue
  try {
    profiles[part] = summarizeProfile(file, 20)
    sections.push(`Profile of the service during ${part}\n${formatProfile(profiles[part] as ProfileSummary)}`)
  } catch (error) {
    sections.push(`Profile of ${part}: ${file} could not be read (${error})`)
  }
}
// The per-request stage breakdown of the api part: the service, the baseline and the HttpApi floor side by side.
if (results.api?.profile && results.api?.baselineProfile) {
  try {
    const columns: Array<{ name: string; summary: ProfileSummary; requests?: number; cpuSeconds?: number }> = [
      {
        name: "service",
        summary: profiles.api ?? summarizeProfile(results.api.profile, 20),
        requests: results.api.requestsServed?.service,
        cpuSeconds: results.api.memory?.service?.cpuSeconds,
      },
      {
        name: "baseline",
        summary: summarizeProfile(results.api.baselineProfile, 20),
        requests: results.api.requestsServed?.baseline,
        cpuSeconds: results.api.memory?.baseline?.cpuSeconds,
      },
    ]
    profiles.apiBaseline = columns[1]?.summary as ProfileSummary
    if (results.api.floor?.profile) {
      profiles.apiFloor = summarizeProfile(results.api.floor.profile, 20)
      columns.push({
        name: "floor",
        summary: profiles.apiFloor,
        requests: results.api.floor.requestsServed,
        cpuSeconds: results.api.floor.memory?.cpuSeconds,
      })
    }
    sections.push(
      `Per-request stages during api (share of the samples with JavaScript on the stack; µs/req = sampled time ÷ the requests wrk made to that process, warm-ups included: CPU time only if the sampled total is close to the process's CPU in the last row, i.e. on a quiet machine; native work with no JavaScript on the stack, e.g. Bun's SQL client decoding rows, is in no stage)\n${formatStageTable(columns)}`,
    )
  } catch (error) {
    sections.push(`Stage table of api: profiles could not be read (${error})`)
  }
}

const totalSeconds = round((performance.now() - started) / 1000, 1)
const loadAfter = loadavg().map((l) => round(l, 2))
console.log(`\n${sections.join("\n\n")}\n`)
console.log(
  `total ${totalSeconds} s; load average before ${info.loadBefore.join(" ")}, after ${loadAfter.join(" ")}${quick ? " (quick run: not for reporting)" : ""}`,
)

if (Object.keys(results).length > 0) {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const suffix =
    parts.length === PARTS.length ? "-full" : parts.join() === DEFAULT_PARTS.join() ? "" : `-${parts.join("-")}`
  const file = join(RESULTS_DIR, `${stamp}${suffix}.json`)
  const profileOut = Object.fromEntries(
    Object.entries(profiles).map(([k, p]) => [
      k,
      { ...p, selfTop: p.selfTop.slice(0, 10), serviceInclusiveTop: p.serviceInclusiveTop.slice(0, 10) },
    ]),
  )
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        date: new Date().toISOString(),
        parts,
        quick,
        profiled: ctx?.profile ?? false,
        machine: { ...info, loadAfter, ...(wrkVersion ? { wrk: wrkVersion } : {}) },
        settings: {
          wrkSecondsPerRun: timing.seconds,
          warmupSeconds: timing.warmupSeconds,
          rateLimit:
            "120 per 60 s per key and per client IP (default); TRUST_PROXY=127.0.0.1/32, X-Forwarded-For rotated",
          // Settings tried on the service through BENCH_SERVICE_ENV (empty: the defaults).
          serviceEnv: process.env.BENCH_SERVICE_ENV ?? "",
        },
        results,
        targets,
        ...(Object.keys(profileOut).length > 0 ? { profiles: profileOut } : {}),
        totalSeconds,
      },
      null,
      1,
    )}\n`,
  )
  console.log(`results: ${file.replace(`${ROOT}/`, "")}`)
  for (const chart of charts) {
    const chartFile = join(RESULTS_DIR, chart.file)
    writeFileSync(chartFile, chart.svg)
    console.log(`chart: ${chartFile.replace(`${ROOT}/`, "")}`)
  }
}

if (failure !== undefined) {
  console.error(failure)
  process.exit(1)
}
