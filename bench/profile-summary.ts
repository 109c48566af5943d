/**
 * Summarises a `.cpuprofile` (as written by `bun --cpu-prof`): the functions with the most self time, the
 * functions of the service's own code (src/) with the most inclusive time, and the self time by origin (a package
 * in node_modules, a folder of src/, Bun's built-ins, GC, idle).
 *
 *   bun bench/profile-summary.ts bench/results/profiles/<file>.cpuprofile [top=25]
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
  /** Sampled time, idle excluded. */
  readonly busyMs: number
  readonly idleMs: number
  readonly selfTop: ReadonlyArray<ProfileLine>
  /** Inclusive time of the service's own functions (src/). */
  readonly serviceInclusiveTop: ReadonlyArray<ProfileLine>
  readonly byOrigin: ReadonlyArray<ProfileLine>
  /** The commonest call chains (4 callers up) of the top self-time functions. */
  readonly callers: ReadonlyArray<{ readonly name: string; readonly chains: ReadonlyArray<ProfileLine> }>
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
  let idle = 0
  let busy = 0
  profile.samples.forEach((id, i) => {
    const delta = (profile.timeDeltas[i] ?? 0) / 1000
    const node = byId.get(id)
    if (node === undefined) return
    if (node.callFrame.functionName === "(idle)") {
      idle += delta
      return
    }
    busy += delta
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
    `profile ${s.file}: ${s.busyMs} ms busy, ${s.idleMs} ms idle (percentages of busy time)`,
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

if (import.meta.main) {
  const file = process.argv[2]
  if (file === undefined) {
    console.error("usage: bun bench/profile-summary.ts <file.cpuprofile> [top]")
    process.exit(2)
  }
  console.log(formatProfile(summarizeProfile(file, Number(process.argv[3] ?? 25))))
}
