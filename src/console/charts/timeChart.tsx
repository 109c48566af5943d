import { max, sum } from "d3-array"
import { scaleBand, scaleLinear } from "d3-scale"
import { curveMonotoneX, line } from "d3-shape"
import { ChartTable } from "./barChart.tsx"
import { formatCount } from "./format.ts"

/** One time bucket: its label on the axis, its words in the table, the events and the incidents that began in it. */
export interface TimeBucket {
  readonly key: string
  /** Short, on the axis: `14:00`, `11-26`. */
  readonly label: string
  /** In full, in the table and tooltips: `2026-11-26 14:00 UTC`. */
  readonly words: string
  readonly events: number
  readonly incidents: number
}

const WIDTH = 920
const HEIGHT = 230
const MARGIN = { top: 14, right: 44, bottom: 26, left: 48 }

/** How many axis labels fit: every bucket's up to 12, then every second, third… */
const labelStep = (n: number): number => Math.max(1, Math.ceil(n / 12))

/**
 * Events per bucket as bars (left axis) and incidents that began per bucket as a line (right axis), drawn on the
 * server with d3-scale and d3-shape, with a summary for screen readers and a table view.
 */
export const TimeChart = (props: {
  buckets: ReadonlyArray<TimeBucket>
  /** "hour" or "day": said in the summary ("Events per hour"). */
  unit: string
  /** "last 24 hours" */
  words: string
}) => {
  const { buckets } = props
  const totalEvents = sum(buckets, (b) => b.events)
  const totalIncidents = sum(buckets, (b) => b.incidents)
  const peak = buckets.reduce<TimeBucket | undefined>(
    (best, b) => (best === undefined || b.events > best.events ? b : best),
    undefined,
  )
  const summary =
    totalEvents === 0 && totalIncidents === 0
      ? `Events per ${props.unit}, ${props.words}: none`
      : `Events per ${props.unit}, ${props.words}: ${formatCount(totalEvents)} in all, peak ${formatCount(peak?.events ?? 0)} at ${peak?.words ?? ""}; ${formatCount(totalIncidents)} new incidents`
  const innerBottom = HEIGHT - MARGIN.bottom
  const x = scaleBand<string>()
    .domain(buckets.map((b) => b.key))
    .range([MARGIN.left, WIDTH - MARGIN.right])
    .paddingInner(0.2)
    .paddingOuter(0.1)
  const yEvents = scaleLinear()
    .domain([0, Math.max(1, max(buckets, (b) => b.events) ?? 0)])
    .nice(4)
    .range([innerBottom, MARGIN.top])
  const yIncidents = scaleLinear()
    .domain([0, Math.max(1, max(buckets, (b) => b.incidents) ?? 0)])
    .nice(4)
    .range([innerBottom, MARGIN.top])
  const centre = (b: TimeBucket) => (x(b.key) ?? 0) + x.bandwidth() / 2
  const incidentLine =
    line<TimeBucket>()
      .x(centre)
      .y((b) => yIncidents(b.incidents))
      .curve(curveMonotoneX)
      .digits(1)(buckets) ?? ""
  const step = labelStep(buckets.length)
  return (
    <div class="ov-chart ov-time">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary}>
        <title>{summary}</title>
        {yEvents.ticks(4).map((t) => (
          <g>
            <line class="ov-gridline" x1={MARGIN.left} x2={WIDTH - MARGIN.right} y1={yEvents(t)} y2={yEvents(t)} />
            <text class="ov-tick" x={MARGIN.left - 6} y={yEvents(t)} dy="0.35em" text-anchor="end">
              {formatCount(t)}
            </text>
          </g>
        ))}
        {yIncidents.ticks(4).map((t) =>
          Number.isInteger(t) ? (
            <text class="ov-tick ov-tick-inc" x={WIDTH - MARGIN.right + 6} y={yIncidents(t)} dy="0.35em">
              {formatCount(t)}
            </text>
          ) : null,
        )}
        <line class="ov-axis" x1={MARGIN.left} x2={WIDTH - MARGIN.right} y1={innerBottom} y2={innerBottom} />
        {buckets.map((b, i) => {
          const top = yEvents(b.events)
          return (
            <g>
              <title>{`${b.words}: ${formatCount(b.events)} events, ${formatCount(b.incidents)} new incidents`}</title>
              <rect
                class="ov-bar"
                x={x(b.key) ?? 0}
                y={top}
                width={x.bandwidth()}
                height={Math.max(0, innerBottom - top)}
                rx="1.5"
              />
              {i % step === 0 && (
                <text class="ov-tick" x={centre(b)} y={HEIGHT - 8} text-anchor="middle">
                  {b.label}
                </text>
              )}
            </g>
          )
        })}
        <path class="ov-line" d={incidentLine} fill="none" />
        {buckets.map((b) =>
          b.incidents > 0 ? <circle class="ov-dot" cx={centre(b)} cy={yIncidents(b.incidents)} r="2.5" /> : null,
        )}
      </svg>
      <p class="ov-legend small muted">
        <span class="ov-key ov-key-events" aria-hidden="true" /> Events (left axis){" "}
        <span class="ov-key ov-key-incidents" aria-hidden="true" /> New incidents (right axis)
      </p>
      <ChartTable
        columns={[props.unit === "hour" ? "Hour (UTC)" : "Day (UTC)", "New incidents", "Events"]}
        rows={buckets.map((b) => [b.words, formatCount(b.incidents), formatCount(b.events)])}
      />
    </div>
  )
}
