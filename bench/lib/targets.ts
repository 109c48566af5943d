/**
 * The targets of the performance issues, each met or not by this run: ratios to the baseline of the same run, and
 * absolute bounds (events/s, latency, memory).
 */
import { table } from "./common.ts"
import { memoryRows, ms } from "./report.ts"
import type { Json } from "./runner.ts"

export interface Target {
  readonly target: string
  readonly figure: string
  readonly met: boolean
}

/** The targets the parts that ran can be held to. */
export const targetsOf = (results: Record<string, Json>): ReadonlyArray<Target> => {
  const targets: Array<Target> = []
  const memory = memoryRows(results)
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
    const r = results.ingest.rows.find((x: Json) => x.batch === 100 && (x.route ?? "native") === "native")
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
  if (memory.length > 0) {
    const peak = Math.max(...memory.map((r) => Number(r[1])))
    const worst = memory.find((r) => Number(r[1]) === peak)?.[0]
    targets.push({
      target: "service peak RSS <= 200 MiB (every part)",
      figure: `${peak} MiB (${worst})`,
      met: peak <= 200,
    })
    const start = Math.max(...memory.map((r) => Number(r[2])))
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
  return targets
}

/** The "Targets" section, or undefined when no part has a target. */
export const targetsSection = (targets: ReadonlyArray<Target>): string | undefined =>
  targets.length === 0
    ? undefined
    : `Targets\n${table(
        ["target", "figure", "met"],
        targets.map((t) => [t.target, t.figure, t.met ? "met" : "NOT MET"]),
      )}`
