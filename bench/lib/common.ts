import { join } from "node:path"
import { serverEnv } from "../../test/support/server.ts"

/** Shared bits of the benchmark suite: paths, the bench environment, small helpers. */

export const ROOT = join(import.meta.dir, "..", "..")
export const BENCH_DIR = join(ROOT, "bench")
export const RESULTS_DIR = join(BENCH_DIR, "results")
export const PROFILES_DIR = join(RESULTS_DIR, "profiles")

/** PostgreSQL of the machine (trust auth). Override with BENCH_PG_URL (no database name: one is appended). */
export const PG_BASE = (process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432").replace(/\/+$/, "")
export const APP_URL = "https://console.bench"

export interface BenchContext {
  readonly database: string
  readonly databaseUrl: string
  /** SECRET_KEY of this run (hex), generated per run. */
  readonly secretKey: string
  /** Directory for this run's scratch files (keys, logs, certificates). */
  readonly workDir: string
  /** Start the service under `bun --cpu-prof` and summarise the profile. */
  readonly profile: boolean
}

/**
 * The service's environment for a benchmark run: a test server's (serverEnv: every listener, the console's too, on a
 * free port read from its "listening" line, never a fixed 3000; no idle close of the seeded incidents, dated in the
 * past and partly open) on this run's database and key.
 */
export const serviceEnv = (ctx: BenchContext, extra: Record<string, string> = {}): Record<string, string> =>
  serverEnv({
    DATABASE_URL: ctx.databaseUrl,
    SECRET_KEY: ctx.secretKey,
    APP_URL,
    // The load generator rotates X-Forwarded-For, so the per-IP limit sees many clients; the limit stays 120/min.
    TRUST_PROXY: "127.0.0.1/32",
    LOG_LEVEL: "info",
    ...extra,
    // BENCH_SERVICE_ENV="LOG_LEVEL=warn WEBHOOK_CONCURRENCY=32" tries a setting without touching the service.
    ...Object.fromEntries(
      (process.env.BENCH_SERVICE_ENV ?? "")
        .split(" ")
        .filter((kv) => kv.includes("="))
        .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    ),
  })

/**
 * The command line of a standalone bench script (ab.ts, ablate.ts, driver-floor.ts): `option("--rounds", "3")` reads
 * `--rounds N`; `database` is `--db`'s, and without one (or when `valid` says no) the usage line is printed and the
 * script ends with 2.
 */
export const scriptOptions = (usage: string, valid: (args: ReadonlyArray<string>) => boolean = () => true) => {
  const args = process.argv.slice(2)
  const option = (name: string, fallback: string) => {
    const i = args.indexOf(name)
    return i >= 0 ? (args[i + 1] ?? fallback) : fallback
  }
  const database = option("--db", "")
  if (database === "" || !valid(args)) {
    console.error(`usage: ${usage}`)
    process.exit(2)
  }
  return { args, option, database }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const log = (message: string) => {
  const t = new Date().toISOString().slice(11, 19)
  console.error(`[bench ${t}] ${message}`)
}

/** Percentile (nearest rank) of already sorted numbers. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN
}

/** The median of unsorted numbers (the upper one of an even count). */
export const median = (xs: ReadonlyArray<number>): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN

export const round = (n: number, digits = 1): number => {
  const f = 10 ** digits
  return Math.round(n * f) / f
}

/** Runs `tasks` with at most `limit` in flight; results in input order. */
export const pool = async <A, B>(items: ReadonlyArray<A>, limit: number, task: (item: A) => Promise<B>) => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await task(items[index] as A)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

/** A plain text table. */
export const table = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string | number>>): string => {
  const cells = [headers, ...rows.map((r) => r.map((c) => (typeof c === "number" ? String(c) : c)))]
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)))
  const line = (r: ReadonlyArray<string>) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ")
  return [line(cells[0] ?? []), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n")
}
