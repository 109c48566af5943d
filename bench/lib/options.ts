/**
 * The command line of `bun run bench`: the parts, what each needs, the options, and their checks. `--help` prints the
 * usage below and exits.
 */

/** The usage `bun run bench --help` prints. */
export const USAGE = `\`bun run bench [part …] [options]\`: the performance suite against real PostgreSQL.

Parts (seed … ratelimit-memory when none is named; \`full\` for all; each also runs alone and seeds what it needs):
  seed              orgs, sensors, 8,000 API keys, 100k incidents, 10k + 1M events (timings, verification)
  console           the web console signed in (session cookie): GET /incidents and GET /incidents/<id> (200
                    events) at 16 and 64 connections beside GET /v1/incidents and /v1/incidents/{id}, same process
                    (BENCH_CONSOLE_PAGES=list or =incident: that page alone, to tell what each costs)
  api               req/s and p50/p99 of three endpoints at 16 and 64 connections, service vs baseline (wrk),
                    and the HttpApi floor (bench/httpapi-floor.ts: the framework alone, no database)
  scale             first page and a deep page (after 10,000 rows) at 10k and 1M events, service vs baseline
  sweep             GET /v1/incidents at 1, 16, 64 and 256 connections, service vs baseline; writes
                    bench/results/<date>-chart.svg
  ingest            events/s through POST /ingest/v1/events in batches of 1, 100 and 1000
  feeds             GET /v1/events/changes: the first page and a page after 900,000 changes of 1M events (D32)
  webhooks          deliveries/s and event-to-receipt latency, without and with a dead second channel
  ratelimit-memory  heap of the in-memory rate limit store (bench/ratelimit-memory.ts, no database)
  startup           the embedded PostgreSQL (D35): first answer and memory after start (fresh and existing DATA_DIR),
                    peak memory and req/s of the list beside DATABASE_URL (bench/startup.ts, its own databases)
  flood             D37: sensors post while 200 connections flood the API with unknown keys; ingest failures
                    (goal 0) beside the API's figures (its own organization and sensors; needs no seed)
  scale10m          (long) 10,000,000 events in one organization: first page, page after 1M rows, the change
                    feed if the service has it, table and index sizes (bench/parts/scale10m.ts)
  retention         (long) the purge of a year out of an organization of 10,000,000 events over two years while
                    sensors post: its wall time, events/s before and during it, table sizes before and after
                    (bench/parts/retention.ts; --scale-events N sets the events)
  soak              (long) 30 minutes at a fixed rate: RSS every 10 s, growth after 5 minutes, errors
  rss-curve         (long) peak RSS against req/s for runtime settings (--smol, BUN_JSC_forceRAMSize, the
                    container's command); writes bench/results/<date>-rss-curve.svg

Options:
  --quick           short runs (3 s instead of 8 s, fewer webhook events): to try the suite, not to report
  --profile         run the service (and the baseline and the floor in the api part) under \`bun --cpu-prof\`;
                    each profile is summarised, with a per-request stage table for the api part
  --keep-db         do not drop the database at the end (its name is printed; reuse it with --db)
  --db <name>       use an existing dsvc_bench_* database seeded by an earlier --keep-db run
  --seed-events N   events of the large dataset (default 1,000,000): fewer to try the suite cheaply
  --scale-events N  events of the scale10m and retention organizations (default 10,000,000)
  --soak-minutes M  length of the soak (default 30); --soak-rate R its requests/s (default 200)
  --sweep-path P    the endpoint of the sweep (default /v1/incidents)
  --ignore-rules N  ingest: first give the ingesting organization N ignore rules (none matching the load), so
                    the figures include matching each event against them (compare with a run without)

A fresh database \`dsvc_bench_<timestamp>\` is created on BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432)
and dropped at the end (kept with --keep-db). The table is printed and the figures written to
bench/results/<date>.json.`

/**
 * Every part and what it needs, in the order a run takes them. long: only when named or with `full`; db: a
 * PostgreSQL database; seed: the main dataset (scale10m, retention and flood make organizations of their own, startup its own
 * databases); wrk: the load generator.
 */
export const PART_NEEDS = {
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
  retention: { long: true, db: true },
  soak: { long: true, db: true, seed: true },
  "rss-curve": { long: true, db: true, seed: true, wrk: true },
} as const satisfies Record<string, { long?: true; db?: true; seed?: true; wrk?: true }>
export type Part = keyof typeof PART_NEEDS
export const PARTS = Object.keys(PART_NEEDS) as ReadonlyArray<Part>
const partsWhere = (need: "long" | "db" | "seed" | "wrk", value = true): ReadonlyArray<Part> =>
  PARTS.filter((p) => ((PART_NEEDS[p] as Partial<Record<typeof need, true>>)[need] === true) === value)
/** `bun run bench` with no part: every part but the long ones (scale10m, retention, soak, rss-curve). */
export const DEFAULT_PARTS = partsWhere("long", false)
export const DB_PARTS = partsWhere("db")
export const MAIN_SEED_PARTS = partsWhere("seed")
export const WRK_PARTS = partsWhere("wrk")

/** Seconds of each wrk run and of its warm-up. */
export interface Timing {
  readonly seconds: number
  readonly warmupSeconds: number
  /**
   * The api part's warm-up of its freshly started processes, before their first measured run: long enough for the
   * JIT to settle (the service's compiler threads keep working for several seconds after a short warm-up, and the
   * first measured list run read low). Later endpoints of the same processes take warmupSeconds.
   */
  readonly firstWarmupSeconds: number
}

export interface BenchOptions {
  readonly parts: ReadonlyArray<Part>
  readonly quick: boolean
  readonly profile: boolean
  /** --db: an existing database seeded by an earlier --keep-db run. */
  readonly reuse: string | undefined
  readonly keepDb: boolean
  readonly seedEvents: number
  readonly scaleEvents: number
  readonly soakMinutes: number
  readonly soakRate: number
  readonly sweepPath: string | undefined
  /** --ignore-rules: ignore rules the ingest part gives its organization first (default 0). */
  readonly ignoreRules: number
  readonly timing: Timing
  readonly webhookSizes: { readonly latencyEvents: number; readonly burstEvents: number }
}

/**
 * How long a fresh service takes to settle: GET /v1/incidents at 16 connections in consecutive 8-s runs from a cold
 * start took 1,147 then 1,049 µs of the service's CPU per request, then 955-985 from the third run (16 s) on
 * (bench/results/2026-11-29-ab-edge-warmup.txt): the JIT's compiler threads work through the first 16 s.
 */
export const FIRST_WARMUP_SECONDS = 16

/** Reads the command line; prints the usage and exits 0 on --help, names the mistake and exits 2 on a bad one. */
export const parseOptions = (args: ReadonlyArray<string>): BenchOptions => {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE)
    process.exit(0)
  }
  const flag = (name: string) => args.includes(name)
  const option = (name: string) => {
    const i = args.indexOf(name)
    return i >= 0 ? args[i + 1] : undefined
  }
  // Options that take a value (the value is not a part's name).
  const VALUE_OPTIONS = [
    "--db",
    "--seed-events",
    "--scale-events",
    "--soak-minutes",
    "--soak-rate",
    "--sweep-path",
    "--ignore-rules",
  ]
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
  // scale10m and retention: events in their one organization (default 10,000,000).
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
  const ignoreRules = Number(option("--ignore-rules") ?? 0)
  if (!Number.isInteger(ignoreRules) || ignoreRules < 0) {
    console.error("--ignore-rules must be a whole number")
    process.exit(2)
  }
  const timing = quick
    ? { seconds: 3, warmupSeconds: 1, firstWarmupSeconds: 1 }
    : { seconds: 8, warmupSeconds: 3, firstWarmupSeconds: FIRST_WARMUP_SECONDS }
  const webhookSizes = quick ? { latencyEvents: 30, burstEvents: 200 } : { latencyEvents: 100, burstEvents: 1000 }
  const reuse = option("--db")
  return {
    parts,
    quick,
    profile: flag("--profile"),
    reuse,
    keepDb: flag("--keep-db") || reuse !== undefined,
    seedEvents,
    scaleEvents,
    soakMinutes,
    soakRate,
    sweepPath: option("--sweep-path"),
    ignoreRules,
    timing,
    webhookSizes,
  }
}
