/**
 * `bun bench/ablate.ts --db <dsvc_bench_*> [--rounds R] [--seconds S] [--conns N] [--path P] [--only a,b]`
 *
 * What each part of an API request costs alone, measured by taking it out: copies of the sources in a temporary
 * directory, each with one part replaced by the cheapest thing that gives the same answer to the load (the edits
 * below, each checked to apply: a changed source fails the run instead of measuring nothing), run by bench/ab.ts
 * against an unchanged copy, alternately, R rounds each. A part's cost is the unchanged copy's CPU per request minus
 * the copy without it, round by round (each round runs both a few seconds apart; the median of the rounds). Copies run from the sources (bun's defaults), not the bundle: compare them with each
 * other, not with `bun run bench api`. Keep the machine otherwise quiet. `--only` picks variants: log, limits, sql, all
 * (the default, for the list), incident-sql and incident-all (for `--path /v1/incidents/<id>`).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { round, scriptOptions, table } from "./lib/common.ts"

const ROOT = join(import.meta.dir, "..")
const { option, database } = scriptOptions(
  "bun bench/ablate.ts --db <dsvc_bench_*> [--rounds R] [--seconds S] [--conns N] [--path P] [--only a,b]",
)

type Edit = readonly [file: string, from: string, to: string]

const NO_ACCESS_LOG: Edit = [
  "src/api/edge.ts",
  "  const facts = requestFacts(request)\n  const route = routeOf(request.url)",
  "  if (request.url !== undefined) return Effect.void\n  const facts = requestFacts(request)\n  const route = routeOf(request.url)",
]
const NO_RATE_LIMIT: Edit = [
  "src/platform/ratelimit/RateLimiter.ts",
  "    hit: (bucket, atMs) =>\n",
  // The real decision stays as the branch never taken, so the copy still type-checks as the limiter it replaces.
  "    hit: (true as boolean) ? (_bucket, _atMs) => Effect.succeed(failOpenDecision(limit)) : (bucket, atMs) =>\n",
]
/**
 * One repository's API reads (`read`, the function every one of its reads goes through) made to remember their rows:
 * each distinct statement and parameters read once, then served from memory; everything else runs as it does.
 */
const rememberReads = (file: string, read: string, rowType: string): Edit => {
  const from = `    const ${read} = ({ text, params }: SqlText) =>`
  return [
    file,
    from,
    `    const remembered = new Map<string, ReadonlyArray<${rowType}>>()
    const ${read} = (statement: SqlText) => {
      const key = statement.text + JSON.stringify(statement.params)
      const rows = remembered.get(key)
      if (rows !== undefined) return Effect.succeed(rows)
      return Effect.tap(${read}FromDatabase(statement), (r) => Effect.sync(() => remembered.set(key, r)))
    }
${from.replace(read, `${read}FromDatabase`)}`,
  ]
}
// The list reads through the first; a single incident through both (the incident, then its member events).
const NO_INCIDENT_READS = rememberReads("src/repos/IncidentsRepo.ts", "readIncidents", "IncidentRow")
const NO_EVENT_READS = rememberReads("src/repos/EventsRepo.ts", "readEvents", "EventRow")

const VARIANTS: Record<string, { readonly what: string; readonly edits: ReadonlyArray<Edit> }> = {
  log: { what: "the access log line and the two request metrics", edits: [NO_ACCESS_LOG] },
  limits: { what: "both rate-limit decisions (per address, per key)", edits: [NO_RATE_LIMIT] },
  sql: { what: "the list statement (rows from memory after the first)", edits: [NO_INCIDENT_READS] },
  all: { what: "all three", edits: [NO_ACCESS_LOG, NO_RATE_LIMIT, NO_INCIDENT_READS] },
  // For --path /v1/incidents/<id>: not among the defaults.
  "incident-sql": {
    what: "the single incident's two reads (rows from memory after the first)",
    edits: [NO_INCIDENT_READS, NO_EVENT_READS],
  },
  "incident-all": {
    what: "the log, both limits and the single incident's two reads",
    edits: [NO_ACCESS_LOG, NO_RATE_LIMIT, NO_INCIDENT_READS, NO_EVENT_READS],
  },
}
const DEFAULT_VARIANTS = ["log", "limits", "sql", "all"]
const only = option("--only", "")
const chosen = only === "" ? DEFAULT_VARIANTS : Object.keys(VARIANTS).filter((name) => only.split(",").includes(name))

const work = mkdtempSync(join(tmpdir(), "dsvc-ablate-"))
const copy = (name: string, edits: ReadonlyArray<Edit>) => {
  const dir = join(work, name)
  for (const part of ["src", "sql", "package.json", "tsconfig.json", "bunfig.toml"]) {
    cpSync(join(ROOT, part), join(dir, part), { recursive: true })
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"))
  for (const [file, from, to] of edits) {
    const path = join(dir, file)
    const text = readFileSync(path, "utf8")
    if (!text.includes(from)) throw new Error(`${file} no longer holds the text this edit replaces:\n${from}`)
    writeFileSync(path, text.replace(from, to))
  }
  return join(dir, "src", "main.ts")
}

const medianOf = (output: string, label: "A" | "B") => {
  const m = new RegExp(`^${label}: median (\\d+) req/s, (\\d+) µs CPU/req, PostgreSQL (\\d+)`, "m").exec(output)
  if (m === null) throw new Error(`bench/ab.ts printed no median for ${label}:\n${output.slice(-2000)}`)
  return { rps: Number(m[1]), cpuUs: Number(m[2]), pgUs: Number(m[3]) }
}

const pairedOf = (output: string) => {
  const m = /^B - A: median (-?\d+) µs CPU\/req over \d+ rounds \(from (-?\d+) to (-?\d+)\)/m.exec(output)
  if (m === null) throw new Error(`bench/ab.ts printed no paired difference:\n${output.slice(-2000)}`)
  return { median: Number(m[1]), low: Number(m[2]), high: Number(m[3]) }
}

const rows: Array<Array<string | number>> = []
try {
  const base = copy("unchanged", [])
  for (const name of chosen) {
    const variant = VARIANTS[name]
    if (variant === undefined) continue
    const entry = copy(name, variant.edits)
    const child = Bun.spawn(
      [
        "bun",
        join(import.meta.dir, "ab.ts"),
        "--db",
        database,
        "--rounds",
        option("--rounds", "3"),
        "--seconds",
        option("--seconds", "8"),
        "--conns",
        option("--conns", "16"),
        "--path",
        option("--path", "/v1/incidents"),
        `ENTRY=${base}`,
        `ENTRY=${entry}`,
      ],
      { cwd: ROOT, stdout: "pipe", stderr: "inherit" },
    )
    const output = await new Response(child.stdout).text()
    if ((await child.exited) !== 0) throw new Error(`bench/ab.ts failed for ${name}`)
    const a = medianOf(output, "A")
    const b = medianOf(output, "B")
    const saved = pairedOf(output)
    rows.push([
      variant.what,
      a.rps,
      b.rps,
      a.cpuUs,
      b.cpuUs,
      -saved.median,
      `${-saved.high} to ${-saved.low}`,
      `${round((-saved.median / a.cpuUs) * 100, 1)} %`,
    ])
    console.error(`[ablate] ${name}: ${a.cpuUs} -> ${b.cpuUs} µs CPU/req, round by round ${-saved.median}`)
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
console.log(
  `\n${option("--path", "/v1/incidents")} at ${option("--conns", "16")} connections, ${option("--rounds", "3")} rounds of ${option("--seconds", "8")} s (medians)\n`,
)
console.log(
  table(
    [
      "taken out",
      "req/s with",
      "req/s without",
      "CPU µs/req with",
      "without",
      "its cost µs/req (round by round, median)",
      "rounds' range",
      "share",
    ],
    rows,
  ),
)
