import type { MetricPair } from "effect"
import { MetricState } from "effect"

/**
 * Effect metrics as the Prometheus text exposition format (version 0.0.4), pure. Counters and gauges are one sample
 * per label set; histograms give cumulative `_bucket{le=…}` samples (Effect's buckets are already cumulative),
 * `_sum` and `_count`; frequencies become a counter per value (label `value`). Each family gets one HELP and TYPE.
 */

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')
const escapeHelp = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
const metricName = (name: string) => name.replace(/[^a-zA-Z0-9_:]/g, "_")

const labels = (pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.length === 0
    ? ""
    : `{${pairs.map(([k, v]) => `${k.replace(/[^a-zA-Z0-9_]/g, "_")}="${escapeLabel(v)}"`).join(",")}}`

const number = (n: number | bigint) =>
  typeof n === "bigint"
    ? n.toString()
    : Number.isNaN(n)
      ? "NaN"
      : n === Infinity
        ? "+Inf"
        : n === -Infinity
          ? "-Inf"
          : String(n)

interface Family {
  type: "counter" | "gauge" | "histogram"
  help: string
  lines: Array<string>
}

export const toPrometheus = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, Family>()
  const family = (name: string, type: Family["type"], help: string) => {
    let entry = families.get(name)
    if (entry === undefined) {
      entry = { type, help, lines: [] }
      families.set(name, entry)
    }
    return entry
  }
  for (const pair of pairs) {
    const name = metricName(pair.metricKey.name)
    // Effect's own fiber bookkeeping (an "active" count typed as a counter) would only mislead a dashboard.
    if (name.startsWith("effect_fiber_")) continue
    const help = pair.metricKey.description._tag === "Some" ? pair.metricKey.description.value : name
    const tags = pair.metricKey.tags.map((t) => [t.key, t.value] as const)
    const state: unknown = pair.metricState
    if (MetricState.isCounterState(state)) {
      family(name, "counter", help).lines.push(`${name}${labels(tags)} ${number(state.count)}`)
    } else if (MetricState.isGaugeState(state)) {
      family(name, "gauge", help).lines.push(`${name}${labels(tags)} ${number(state.value)}`)
    } else if (MetricState.isHistogramState(state)) {
      const f = family(name, "histogram", help)
      for (const [bound, count] of state.buckets) {
        const le = bound === null || !Number.isFinite(bound) ? "+Inf" : String(bound)
        f.lines.push(`${name}_bucket${labels([...tags, ["le", le]])} ${count}`)
      }
      if (!state.buckets.some(([bound]) => bound === null || !Number.isFinite(bound))) {
        f.lines.push(`${name}_bucket${labels([...tags, ["le", "+Inf"]])} ${state.count}`)
      }
      f.lines.push(`${name}_sum${labels(tags)} ${number(state.sum)}`)
      f.lines.push(`${name}_count${labels(tags)} ${state.count}`)
    } else if (MetricState.isFrequencyState(state)) {
      const f = family(name, "counter", help)
      for (const [value, count] of state.occurrences)
        f.lines.push(`${name}${labels([...tags, ["value", value]])} ${count}`)
    }
  }
  const out: Array<string> = []
  for (const [name, f] of [...families].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    out.push(`# HELP ${name} ${escapeHelp(f.help)}`, `# TYPE ${name} ${f.type}`, ...f.lines)
  }
  return `${out.join("\n")}\n`
}
