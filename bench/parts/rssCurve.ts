import { type BenchContext, log, serviceEnv } from "../lib/common.ts"
import { memoryFigures, startService } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"
import type { WrkResult } from "../lib/wrk.ts"
import { keyPool, load, type Timing } from "./api.ts"

/**
 * `rss-curve`: the memory/throughput trade-off. For each runtime setting a fresh service answers GET /v1/incidents
 * (the 1M-event organization) at 64 connections after a warm-up; the part records req/s, p99, RSS at start-up and
 * the peak (VmHWM). Settings: the default start command (`bin/serve`: the bundle that `bun run start` and the
 * Dockerfile's CMD run, heap sized for 384 MiB), the same with the heap unbounded (forceRAMSize 0: sized from the
 * machine's RAM), the sources unbundled (`bun src/main.ts`, as the tests run them, unbounded), `bun --smol`, and
 * `BUN_JSC_forceRAMSize` (the heap JavaScriptCore sizes
 * itself for) at 512, 384, 256, 192 and 128 MiB; `--quick` runs the default, --smol and 256 MiB only.
 * BENCH_RSS_SETTINGS="default smol 256 smol+256" picks others (numbers are MiB of forceRAMSize; smol+N both). bench/lib/report.ts draws
 * the curve as bench/results/<date>-rss-curve.svg (peak RSS against req/s, one point per setting).
 */

interface Setting {
  readonly name: string
  readonly env: Record<string, string>
  readonly bunFlags: ReadonlyArray<string>
  readonly entry?: string
}

const setting = (word: string): Setting => {
  // "smol+256": both settings together.
  if (word.startsWith("smol+")) {
    const heap = setting(word.slice("smol+".length))
    return { name: `--smol, ${heap.name}`, env: heap.env, bunFlags: ["--smol", ...heap.bunFlags] }
  }
  if (word === "default") return { name: "default (bin/serve: heap sized for 384 MiB)", env: {}, bunFlags: [] }
  // forceRAMSize 0: JavaScriptCore sizes its heap from the machine's RAM, as a plain `bun dist/server/main.js` does.
  if (word === "unbounded") return { name: "heap unbounded", env: { BUN_JSC_forceRAMSize: "0" }, bunFlags: [] }
  if (word === "sources")
    return {
      name: "sources (bun src/main.ts), unbounded",
      env: { BUN_JSC_forceRAMSize: "0" },
      bunFlags: [],
      entry: "src/main.ts",
    }
  if (word === "smol")
    return { name: "--smol (heap unbounded)", env: { BUN_JSC_forceRAMSize: "0" }, bunFlags: ["--smol"] }
  const mib = Number(word)
  if (!Number.isInteger(mib) || mib <= 0) throw new Error(`rss-curve: unknown setting ${word}`)
  return { name: `forceRAMSize ${mib} MiB`, env: { BUN_JSC_forceRAMSize: String(mib * 1024 * 1024) }, bunFlags: [] }
}

export interface RssPoint {
  readonly setting: string
  readonly load: WrkResult
  readonly startRssMiB: number
  readonly peakRssMiB: number
  readonly maxPolledRssMiB: number
}

export const runRssCurve = async (ctx: BenchContext, manifest: SeedManifest, timing: Timing, quick: boolean) => {
  const dataset = manifest.datasets.large
  const keys = keyPool(ctx, dataset)
  const words = (
    process.env.BENCH_RSS_SETTINGS ?? (quick ? "default smol 256" : "default unbounded sources smol 512 256 192 128")
  )
    .split(" ")
    .filter((w) => w !== "")
  const path = "/v1/incidents"
  const points: Array<RssPoint> = []
  for (const s of words.map(setting)) {
    const service = await startService(
      ctx.workDir,
      serviceEnv(ctx, s.env),
      false,
      `service-rss-${s.name.replace(/[^a-z0-9]+/gi, "-")}`,
      s.bunFlags,
      s.entry,
    )
    try {
      const url = `http://127.0.0.1:${service.ports.api}`
      if (timing.warmupSeconds > 0) await load(url, path, 16, timing.warmupSeconds, keys)
      const result = await load(url, path, 64, timing.seconds, keys)
      const memory = memoryFigures(await service.stop())
      log(
        `rss-curve ${s.name}: ${result.rps} req/s p99 ${result.latencyMs.p99} ms, RSS at start ${memory.startRssMiB} MiB, peak ${memory.peakRssMiB} MiB`,
      )
      points.push({ setting: s.name, load: result, ...memory })
    } catch (error) {
      await service.stop().catch(() => undefined)
      throw error
    }
  }
  return { endpoint: `GET ${path}`, connections: 64, points }
}
