/**
 * Summarises a `.cpuprofile` (as written by `bun --cpu-prof`): the busy time by stage of a request (STAGES),
 * the functions with the most self time, the functions of the service's own code (src/) with the most inclusive
 * time, and the self time by origin (a package in node_modules, a folder of src/, Bun's built-ins, GC, idle).
 *
 *   bun bench/profile-summary.ts bench/results/profiles/<file>.cpuprofile [top=25]
 *   bun bench/profile-summary.ts --stages <service.cpuprofile> <baseline.cpuprofile> …   (stages side by side)
 */
import { readFileSync } from "node:fs"
import { relative } from "node:path"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export interface ProfileLine {
  readonly name: string
  readonly ms: number
  readonly percent: number
}

export interface ProfileSummary {
  readonly file: string
  /** Sampled time with JavaScript on the stack (the event loop's waits and stack-less native work excluded). */
  readonly busyMs: number
  /** The event loop waiting, or native work with no JavaScript on the stack. */
  readonly idleMs: number
  readonly selfTop: ReadonlyArray<ProfileLine>
  /** Inclusive time of the service's own functions (src/). */
  readonly serviceInclusiveTop: ReadonlyArray<ProfileLine>
  readonly byOrigin: ReadonlyArray<ProfileLine>
  /** The commonest call chains (4 callers up) of the top self-time functions. */
  readonly callers: ReadonlyArray<{ readonly name: string; readonly chains: ReadonlyArray<ProfileLine> }>
  /** Busy time by stage of a request (see STAGES), in STAGES order. */
  readonly stages: ReadonlyArray<ProfileLine>
}

/**
 * The stages of a request, for the per-request breakdown (performance issue #15). A sample belongs to the stage
 * of the innermost frame of its stack that a rule recognises, looking no further down than the first frame of
 * Effect's fiber run loop (below it is only what resumed the fiber, e.g. the pg socket's data handler, not the
 * work). Schema's functions are decoding when src/api/params.ts is below them, row decoding under @effect/sql's
 * SqlSchema, encoding otherwise; JSON under the pg driver is the driver's (jsonb parameters and columns). The rules match file paths and function names, so a
 * renamed file moves its time to "our code, other" or "Effect runtime": check the top functions when a stage
 * looks empty.
 */
export const STAGES = [
  "routing and middleware (HttpApi, HttpRouter, edge)",
  "auth and limits (auth, KeyAuth, rate limit, client IP)",
  "query-parameter decoding (params, Schema decode)",
  "SQL round trip (driver, @effect/sql, socket I/O)",
  "row decoding (pg-types, result rows)",
  "response encoding (present, cursor, Schema encode)",
  "JSON (stringify, parse)",
  "logging, metrics, tracing",
  "handlers and repos (our code)",
  "background (webhook dispatcher, idle closer)",
  "our code, other",
  "Effect runtime (fibers, scheduler, fiber refs)",
  "Bun HTTP server and built-ins",
  "garbage collector",
  "other",
] as const
export type Stage = (typeof STAGES)[number]

const [
  ROUTING,
  AUTH,
  PARAMS,
  SQL_TRIP,
  ROWS,
  ENCODE,
  JSON_STAGE,
  OBSERVE,
  HANDLERS,
  BACKGROUND,
  OURS,
  EFFECT,
  BUN,
  GC,
  OTHER,
] = STAGES

/** The stage of one frame, or undefined (look further down the stack); "schema" and "json" are decided by context. */
const frameStage = (frame: CallFrame): Stage | "schema" | "json" | "runloop" | undefined => {
  const url = shortUrl(frame.url)
  const fn = frame.functionName
  if (frame.url === "") {
    if (fn === "stringify" || fn === "parse") return "json"
    if (fn === "(garbage collector)") return GC
    return undefined
  }
  // The pg driver and its Effect client: the SQL round trip; its parsers of column values: row decoding.
  if (/^(pg-types|postgres-array|postgres-date|postgres-interval|postgres-bytea|pg-numeric)\//.test(url)) return ROWS
  if (/^pg\/lib\/result\.js/.test(url) && /parseRow|_parsers|addRow/.test(fn)) return ROWS
  // pg-protocol's DataRow messages: the columns' bytes to strings.
  if (/^pg-protocol\/dist\/buffer-reader\.js/.test(url) || fn === "parseDataRowMessage") return ROWS
  if (/^(pg|pg-pool|pg-protocol|pg-cursor|@effect\/sql|@effect\/sql-pg)\//.test(url)) return SQL_TRIP
  // Observability: Effect's logger, metrics and tracer, our log format and metrics.
  if (/^effect\/dist\/(cjs|esm)\/(internal\/)?(logger|Logger|metric|Metric|tracer|Tracer|internal\/metric)/.test(url))
    return OBSERVE
  if (/^src\/(logging\.ts|ops\/metrics\.ts|ops\/prometheus\.ts)/.test(url)) return OBSERVE
  // Schema: decoding or encoding, by what is below it.
  if (/^effect\/dist\/(cjs|esm)\/(Schema|ParseResult|SchemaAST|internal\/schema\/)/.test(url)) return "schema"
  // The fiber run loop: the boundary (what is below only resumed the fiber).
  if (/^effect\/dist\/(cjs|esm)\/internal\/fiberRuntime\.js/.test(url) && /runLoop|evaluateEffect|drainQueue/.test(fn))
    return "runloop"
  if (/^effect\//.test(url)) return EFFECT
  if (/^@effect\/platform(-bun)?\//.test(url)) return ROUTING
  if (/^src\/api\/(edge|requestContext|problems|server|definition)\.ts/.test(url)) return ROUTING
  if (/^src\/(api\/auth\.ts|api\/clientIp\.ts|auth\/|ratelimit\/)/.test(url)) return AUTH
  if (/^src\/api\/params\.ts/.test(url)) return PARAMS
  // A cursor read from the query is parameter decoding; one written into the answer is encoding.
  if (/^src\/domain\/cursor\.ts/.test(url) && /decode|verify|parse/i.test(fn)) return PARAMS
  if (/^src\/domain\/(present|cursor)\.ts/.test(url)) return ENCODE
  if (/^src\/(api\/handlers\.ts|repos\/)/.test(url)) return HANDLERS
  if (/^src\/(webhooks\/|jobs\/idleClose\.ts|db\/listen\.ts)/.test(url)) return BACKGROUND
  if (/^src\//.test(url)) return OURS
  // The baseline: its own file is its routing and handlers; Bun's SQL client is its SQL round trip.
  if (/^bench\/baseline\.ts/.test(url)) {
    if (fn === "fetch") return ROUTING
    if (fn === "limitOf") return PARAMS
    return HANDLERS
  }
  if (/^bench\/httpapi-floor\.ts/.test(url)) return HANDLERS
  if (/sql/i.test(url) && !url.includes("node_modules")) return SQL_TRIP
  return undefined
}

/** The stage of a sample, from its stack (leaf first). */
const sampleStage = (stack: ReadonlyArray<CallFrame>): Stage => {
  const leaf = stack[0]
  for (let i = 0; i < stack.length; i++) {
    const frame = stack[i] as CallFrame
    const stage = frameStage(frame)
    if (stage === undefined) continue
    if (stage === "runloop") return EFFECT
    if (stage === "json" || stage === "schema") {
      // Decide by the nearest recognised frame below (before the run loop).
      for (let j = i + 1; j < stack.length; j++) {
        const below = frameStage(stack[j] as CallFrame)
        if (below === undefined || below === "json" || below === "schema" || below === EFFECT) continue
        if (below === "runloop") break
        // Schema under @effect/sql (SqlSchema: the repos' row schemas) decodes rows.
        if (stage === "schema" && /^@effect\/sql\//.test(shortUrl((stack[j] as CallFrame).url))) return ROWS
        if (below === SQL_TRIP || below === ROWS) return below
        if (stage === "schema") return below === PARAMS ? PARAMS : ENCODE
        break
      }
      return stage === "json" ? JSON_STAGE : ENCODE
    }
    return stage
  }
  if (leaf === undefined) return OTHER
  if (leaf.functionName === "(program)") return OTHER
  if (leaf.url === "" || !leaf.url.includes("/") || leaf.url.startsWith("node:") || leaf.url.includes("builtin"))
    return BUN
  return OTHER
}

const ROOT = `${relative("/", `${import.meta.dir}/..`)}`

const shortUrl = (url: string) => {
  const path = url.replace(/^file:\/\//, "")
  const nm = path.lastIndexOf("node_modules/")
  if (nm >= 0) return path.slice(nm + "node_modules/".length)
  const rootIndex = path.indexOf(ROOT)
  return rootIndex >= 0 ? path.slice(rootIndex + ROOT.length + 1) : path
}

const keyOf = (frame: CallFrame) => {
  const name = frame.functionName || "(anonymous)"
  if (frame.url === "") return name
  return `${name} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`
}

const originOf = (frame: CallFrame) => {
  const url = shortUrl(frame.url)
  if (frame.url === "") {
    if (frame.functionName === "(idle)" || frame.functionName === "(program)") return frame.functionName
    if (frame.functionName === "(garbage collector)") return "(garbage collector)"
    return "native / Bun built-ins"
  }
  if (frame.url.includes("node_modules/")) {
    const parts = url.split("/")
    return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url)
  }
  if (url.startsWith("src/")) return url.split("/").slice(0, 2).join("/")
  if (url.startsWith("bench/") || url.startsWith("test/")) return url.split("/").slice(0, 2).join("/")
  return url.startsWith("/") || url.includes(":") ? "Bun built-ins (JS)" : url
}

export const summarizeProfile = (file: string, top = 25): ProfileSummary => {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

  const self = new Map<string, number>()
  const chainsOf = new Map<string, Map<string, number>>()
  const inclusive = new Map<string, number>()
  const origins = new Map<string, number>()
  const stages = new Map<string, number>(STAGES.map((s) => [s, 0]))
  const stageOfNode = new Map<number, Stage>()
  const stageOf = (id: number): Stage => {
    const known = stageOfNode.get(id)
    if (known !== undefined) return known
    const stack: Array<CallFrame> = []
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)?.callFrame
      if (frame !== undefined) stack.push(frame)
    }
    const stage = sampleStage(stack)
    stageOfNode.set(id, stage)
    return stage
  }
  let idle = 0
  let busy = 0
  profile.samples.forEach((id, i) => {
    const delta = (profile.timeDeltas[i] ?? 0) / 1000
    const node = byId.get(id)
    if (node === undefined) return
    // Bun's sampler puts the event loop's waits (and native work with no JavaScript on the stack: socket I/O,
    // HTTP parsing, Bun's SQL protocol) in an anonymous native frame right under the root: not JavaScript time.
    const top = parent.get(id)
    if (
      node.callFrame.functionName === "(idle)" ||
      ((node.callFrame.functionName === "" || node.callFrame.functionName === "(anonymous)") &&
        node.callFrame.url === "" &&
        top !== undefined &&
        byId.get(top)?.callFrame.functionName === "(root)")
    ) {
      idle += delta
      return
    }
    busy += delta
    const stage = stageOf(id)
    stages.set(stage, (stages.get(stage) ?? 0) + delta)
    const key = keyOf(node.callFrame)
    self.set(key, (self.get(key) ?? 0) + delta)
    const chain: Array<string> = []
    for (let cur = parent.get(id); cur !== undefined && chain.length < 4; cur = parent.get(cur)) {
      const frame = byId.get(cur)?.callFrame
      if (frame !== undefined) chain.push(keyOf(frame))
    }
    const chains = chainsOf.get(key) ?? new Map<string, number>()
    chainsOf.set(key, chains)
    const chainKey = chain.join(" < ")
    chains.set(chainKey, (chains.get(chainKey) ?? 0) + delta)
    const origin = originOf(node.callFrame)
    origins.set(origin, (origins.get(origin) ?? 0) + delta)
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)?.callFrame
      if (frame === undefined || !shortUrl(frame.url).startsWith("src/")) continue
      const k = keyOf(frame)
      if (seen.has(k)) continue
      seen.add(k)
      inclusive.set(k, (inclusive.get(k) ?? 0) + delta)
    }
  })
  const lines = (m: Map<string, number>, n: number): Array<ProfileLine> =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), percent: Math.round((ms / busy) * 1000) / 10 }))
  const selfTop = lines(self, top)
  return {
    file,
    busyMs: Math.round(busy),
    idleMs: Math.round(idle),
    selfTop,
    serviceInclusiveTop: lines(inclusive, top),
    byOrigin: lines(origins, 20),
    stages: STAGES.map((name) => {
      const ms = stages.get(name) ?? 0
      return { name, ms: Math.round(ms), percent: busy > 0 ? Math.round((ms / busy) * 1000) / 10 : 0 }
    }),
    callers: selfTop.slice(0, 10).map((line) => ({
      name: line.name,
      chains: lines(chainsOf.get(line.name) ?? new Map<string, number>(), 2),
    })),
  }
}

export const formatProfile = (s: ProfileSummary): string => {
  const block = (title: string, rows: ReadonlyArray<ProfileLine>) =>
    [
      title,
      ...rows.map((r) => `  ${String(r.percent.toFixed(1)).padStart(5)} %  ${String(r.ms).padStart(7)} ms  ${r.name}`),
    ].join("\n")
  return [
    `profile ${s.file}: ${s.busyMs} ms with JavaScript on the stack, ${s.idleMs} ms idle or native without it (percentages of the first)`,
    block("by stage of a request:", s.stages),
    block("self time by origin:", s.byOrigin),
    block("top functions by self time:", s.selfTop),
    block("service functions (src/) by inclusive time:", s.serviceInclusiveTop),
    [
      "callers of the top functions (4 frames up):",
      ...s.callers.flatMap((c) => [
        `  ${c.name}`,
        ...c.chains.map((r) => `    ${String(r.percent.toFixed(1)).padStart(5)} %  < ${r.name}`),
      ]),
    ].join("\n"),
  ].join("\n")
}

/**
 * Stages of several profiles side by side (e.g. the service, the baseline and the HttpApi floor under the same
 * load): share of busy CPU and, with `requests`, CPU microseconds per request of each stage.
 */
export const formatStageTable = (
  columns: ReadonlyArray<{
    readonly name: string
    readonly summary: ProfileSummary
    readonly requests?: number
    /** The process's CPU time (utime + stime from /proc) over its life, for the true total per request. */
    readonly cpuSeconds?: number
  }>,
): string => {
  // µs per request: the stage's sampled time ÷ requests. The sampler measures wall time between samples, so it is
  // CPU time only while the machine is quiet; the last row (the process's CPU from /proc) shows whether it was.
  const perRequest = (c: (typeof columns)[number], sampledMs: number) =>
    c.requests ? [String(Math.round((sampledMs * 1000) / c.requests))] : []
  const header = ["stage", ...columns.flatMap((c) => [`${c.name} %`, ...(c.requests ? [`${c.name} µs/req`] : [])])]
  const rows = STAGES.map((stage) => [
    stage,
    ...columns.flatMap((c) => {
      const line = c.summary.stages.find((l) => l.name === stage)
      return [(line?.percent ?? 0).toFixed(1), ...perRequest(c, line?.ms ?? 0)]
    }),
  ])
  rows.push([
    "total sampled with JavaScript on the stack",
    ...columns.flatMap((c) => ["100.0", ...perRequest(c, c.summary.busyMs)]),
  ])
  rows.push([
    "sampled idle, or native with no JavaScript on the stack",
    ...columns.flatMap((c) => ["", ...perRequest(c, c.summary.idleMs)]),
  ])
  rows.push([
    "process CPU (/proc utime+stime, all threads)",
    ...columns.flatMap((c) => [
      "",
      ...(c.requests ? [c.cpuSeconds !== undefined ? String(Math.round((c.cpuSeconds * 1e6) / c.requests)) : "-"] : []),
    ]),
  ])
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => (r[i] ?? "").length)))
  const line = (r: ReadonlyArray<string>) =>
    r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

if (import.meta.main) {
  const file = process.argv[2]
  if (file === "--stages") {
    const files = process.argv.slice(3)
    console.log(
      formatStageTable(
        files.map((f) => ({ name: f.split("/").pop()?.split("-")[0] ?? f, summary: summarizeProfile(f, 5) })),
      ),
    )
    process.exit(0)
  }
  if (file === undefined) {
    console.error("usage: bun bench/profile-summary.ts <file.cpuprofile> [top]")
    process.exit(2)
  }
  console.log(formatProfile(summarizeProfile(file, Number(process.argv[3] ?? 25))))
}
