/**
 * `bun run bench [part …] [options]`: the performance suite against real PostgreSQL. `bun run bench --help` lists
 * the parts and options (bench/lib/options.ts). The parts run in bench/lib/runner.ts (each in bench/parts/); the
 * report's sections, targets and profiles are bench/lib/report.ts, targets.ts and profiles.ts. The table is printed
 * and the figures written to bench/results/<date>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import { log, RESULTS_DIR, ROOT, round } from "./lib/common.ts"
import { DEFAULT_PARTS, PARTS, parseOptions, WRK_PARTS } from "./lib/options.ts"
import { profileSections } from "./lib/profiles.ts"
import { partSections } from "./lib/report.ts"
import { machine, runParts } from "./lib/runner.ts"
import { targetsOf, targetsSection } from "./lib/targets.ts"
import { ensureWrk } from "./lib/wrk.ts"

const opts = parseOptions(process.argv.slice(2))
const { parts, quick, timing } = opts

const started = performance.now()
const info = await machine(opts)
log(`parts: ${parts.join(", ")}${quick ? " (quick)" : ""}; load average ${info.loadBefore.join(" ")}`)
let wrkVersion: string | undefined
if (parts.some((p) => WRK_PARTS.includes(p))) wrkVersion = await ensureWrk()

const { results, ctx, failure } = await runParts(opts)

const stamp = new Date()
  .toISOString()
  .replace(/:\d\d\.\d+Z$/, "Z")
  .replace(":", "")
const { sections, charts } = partSections(results, { timing, quick, info, stamp })
const targets = targetsOf(results)
const targetsText = targetsSection(targets)
if (targetsText !== undefined) sections.push(targetsText)
const { sections: profileTexts, profiles } = profileSections(results)
sections.push(...profileTexts)

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
