/**
 * `bun bench/ab.ts --db <dsvc_bench_*> [--path P] [--conns N] [--seconds S] [--rounds R] "A_ENV" "B_ENV"`
 *
 * A lever tried before it is kept (issue #15): the service started with setting A, then with B, alternately for R
 * rounds against one seeded database (`bun run bench seed --keep-db`), each loaded by wrk at N connections. Prints,
 * per round and as medians, req/s and the service's own CPU per request (utime + stime from /proc), which on a
 * 2-core machine shared with PostgreSQL and wrk says more than req/s alone, and PostgreSQL's CPU per request (every
 * `postgres` process on the machine: keep it otherwise quiet). A_ENV / B_ENV are "K=V K=V" lists like
 * BENCH_SERVICE_ENV ("BUN_FLAGS=--smol" gives bun's own flags, comma-separated; "ENTRY=src/main.ts" runs the sources instead of
 * the bundle); "-" is none. The baseline is not run: this compares two settings of the service.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SQL } from "bun"
import { type BenchContext, log, median, round, scriptOptions, serviceEnv, table } from "./lib/common.ts"
import { databaseUrl } from "./lib/pg.ts"
import { cpuSecondsOf, postgresCpuSeconds, startService } from "./lib/proc.ts"
import { loadManifest } from "./lib/seed.ts"
import { ensureWrk } from "./lib/wrk.ts"
import { keyPool, load } from "./parts/api.ts"

const VALUE_OPTIONS = ["--db", "--path", "--conns", "--seconds", "--rounds"]
const settingsOf = (args: ReadonlyArray<string>) =>
  args.filter((a, i) => !a.startsWith("--") && !VALUE_OPTIONS.includes(args[i - 1] ?? ""))
const { args, option, database } = scriptOptions(
  'bun bench/ab.ts --db <dsvc_bench_*> [--path P] [--conns N] [--seconds S] [--rounds R] "A_ENV" "B_ENV"',
  (given) => settingsOf(given).length === 2,
)
const settings = settingsOf(args)
const conns = Number(option("--conns", "16"))
const seconds = Number(option("--seconds", "8"))
const rounds = Number(option("--rounds", "3"))
const envOf = (s: string): Record<string, string> =>
  s === "-"
    ? {}
    : Object.fromEntries(
        s
          .split(" ")
          .filter((kv) => kv.includes("="))
          .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
      )

await ensureWrk()
const url = databaseUrl(database)
const secretRows = await (async () => {
  const sql = new SQL({ url, max: 1 })
  try {
    return await sql`select value->>'key' as key from bench_manifest where name = 'secret'`
  } finally {
    await sql.close()
  }
})()
const secretKey = (secretRows[0] as { key: string }).key
const workDir = mkdtempSync(join(tmpdir(), "dsvc-ab-"))
const ctx: BenchContext = { database, databaseUrl: url, secretKey, workDir, profile: false }
const manifest = await loadManifest(ctx)
if (manifest === undefined) throw new Error(`${database} has no seed manifest`)
const dataset = manifest.datasets.large
const path = option("--path", "/v1/incidents").replace("{fat}", dataset.fatIncidentId)
const keys = keyPool(ctx, dataset)

const rows: Array<Array<string | number>> = []
const figures: Record<string, Array<{ rps: number; cpuUs: number; pgUs: number }>> = { A: [], B: [] }
try {
  for (let r = 1; r <= rounds; r++) {
    for (const [label, setting] of [
      ["A", settings[0]],
      ["B", settings[1]],
    ] as const) {
      const { BUN_FLAGS, ENTRY, ...env } = envOf(setting ?? "-")
      const flags = (BUN_FLAGS ?? "").split(",").filter((f) => f !== "")
      const service = await startService(workDir, serviceEnv(ctx, env), false, `ab-${label}`, flags, ENTRY)
      const base = `http://127.0.0.1:${service.ports.api}`
      await load(base, path, conns, 2, keys) // warm-up
      const before = cpuSecondsOf(service.pid) ?? 0
      const pgBefore = postgresCpuSeconds()
      const result = await load(base, path, conns, seconds, keys)
      const cpuUs = (((cpuSecondsOf(service.pid) ?? 0) - before) * 1e6) / result.requests
      const pgUs = ((postgresCpuSeconds() - pgBefore) * 1e6) / result.requests
      const memory = await service.stop()
      const rss = memory.peakRssMiB
      figures[label]?.push({ rps: result.rps, cpuUs, pgUs })
      rows.push([
        r,
        label,
        setting ?? "-",
        round(result.rps, 0),
        round(cpuUs, 0),
        round(pgUs, 0),
        round(result.latencyMs.p99, 1),
        memory.startRssMiB,
        rss,
      ])
      log(
        `round ${r} ${label}: ${round(result.rps, 0)} req/s, ${round(cpuUs, 0)} µs CPU/req, PostgreSQL ${round(pgUs, 0)}`,
      )
    }
  }
} finally {
  rmSync(workDir, { recursive: true, force: true })
}
console.log(`\n${path} at ${conns} connections, ${seconds} s per run\n`)
console.log(
  table(["round", "", "setting", "req/s", "CPU µs/req", "PostgreSQL µs/req", "p99 ms", "start MiB", "peak MiB"], rows),
)
for (const label of ["A", "B"] as const) {
  const f = figures[label] ?? []
  console.log(
    `${label}: median ${round(median(f.map((x) => x.rps)), 0)} req/s, ${round(median(f.map((x) => x.cpuUs)), 0)} µs CPU/req, PostgreSQL ${round(median(f.map((x) => x.pgUs)), 0)} µs/req`,
  )
}
// The machine drifts over a run (the same setting measured 1,266 µs in its first round and 1,429 in its fifth): the
// difference within each round, A then B a few seconds apart, says more than the difference of the two medians.
const paired = (figures.A ?? []).map((a, i) => {
  const b = figures.B?.[i]
  return b === undefined ? Number.NaN : b.cpuUs - a.cpuUs
})
const pairedSorted = [...paired].sort((x, y) => x - y)
console.log(
  `B - A: median ${round(median(paired), 0)} µs CPU/req over ${paired.length} rounds (from ${round(pairedSorted[0] ?? Number.NaN, 0)} to ${round(pairedSorted.at(-1) ?? Number.NaN, 0)})`,
)
