import type { BenchContext } from "../lib/common.ts"
import { log, round } from "../lib/common.ts"
import { memoryFigures } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"
import type { WrkResult } from "../lib/wrk.ts"
import {
  baselineUrl,
  keyPool,
  load,
  peerUrl,
  sameBody,
  serviceUrl,
  startTargets,
  statusCounts,
  stopTargets,
  type Timing,
  withOrg,
} from "./api.ts"

/**
 * `sweep`: one list endpoint (default GET /v1/incidents of the 1M-event organization) at 1, 16, 64 and 256
 * connections, service, baseline and the conventional peer (Fastify + pg) interleaved at each count.
 * bench/lib/report.ts draws the figures as bench/results/<date>-chart.svg (req/s and p99 against connections).
 */

export const SWEEP_CONNECTIONS = [1, 16, 64, 256] as const

export interface SweepRow {
  readonly connections: number
  readonly service: WrkResult
  readonly baseline: WrkResult
  readonly peer: WrkResult
  readonly rpsRatio: number
  readonly p99Ratio: number
  readonly peerRpsRatio: number
  readonly peerP99Ratio: number
}

export const runSweep = async (ctx: BenchContext, manifest: SeedManifest, timing: Timing, path = "/v1/incidents") => {
  const dataset = manifest.datasets.large
  const keys = keyPool(ctx, dataset)
  const t = await startTargets(ctx, "sweep", true)
  try {
    const check = await sameBody(t, dataset, path)
    if (timing.warmupSeconds > 0) {
      await load(serviceUrl(t), path, 16, timing.warmupSeconds, keys)
      await load(baselineUrl(t), withOrg(path, dataset.orgId), 16, timing.warmupSeconds, undefined)
      await load(peerUrl(t), path, 16, timing.warmupSeconds, keys)
    }
    const rows: Array<SweepRow> = []
    for (const connections of SWEEP_CONNECTIONS) {
      const service = await load(serviceUrl(t), path, connections, timing.seconds, keys)
      const baseline = await load(baselineUrl(t), withOrg(path, dataset.orgId), connections, timing.seconds, undefined)
      const peer = await load(peerUrl(t), path, connections, timing.seconds, keys)
      log(
        `sweep ${path} c=${connections}: service ${service.rps} req/s p99 ${service.latencyMs.p99} ms | baseline ${baseline.rps} req/s p99 ${baseline.latencyMs.p99} ms | peer ${peer.rps} req/s p99 ${peer.latencyMs.p99} ms`,
      )
      rows.push({
        connections,
        service,
        baseline,
        peer,
        rpsRatio: round(service.rps / baseline.rps, 2),
        p99Ratio: round(service.latencyMs.p99 / baseline.latencyMs.p99, 2),
        peerRpsRatio: round(service.rps / peer.rps, 2),
        peerP99Ratio: round(service.latencyMs.p99 / peer.latencyMs.p99, 2),
      })
    }
    const statuses = await statusCounts(t)
    const memory = await stopTargets(t)
    return {
      endpoint: `GET ${path}`,
      events: dataset.events,
      check,
      rows,
      serviceStatuses: statuses,
      memory: {
        service: memoryFigures(memory.service),
        baseline: memoryFigures(memory.baseline),
        ...(memory.peer ? { peer: memoryFigures(memory.peer) } : {}),
      },
      ...(memory.service.profile ? { profile: memory.service.profile } : {}),
    }
  } catch (error) {
    await stopTargets(t).catch(() => undefined)
    throw error
  }
}
