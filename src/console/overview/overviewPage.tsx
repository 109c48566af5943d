import type { IncidentSummary } from "../../domain/models.ts"
import { SeverityBadge, type Viewer } from "../components.tsx"
import { IncidentTable } from "../incidents/incidentsPage.tsx"
import { Layout } from "../layout.tsx"
import { SilentNotice } from "../sensors/status.tsx"

export interface DayCount {
  readonly day: string
  readonly n: number
}

/** The last 14 days of activity, drawn on the server as SVG (no script, no inline style). */
export const ActivityChart = ({ days }: { days: ReadonlyArray<DayCount> }) => {
  const width = 700
  const height = 180
  const left = 36
  const bottom = 22
  const max = Math.max(1, ...days.map((d) => d.n))
  const slot = (width - left) / days.length
  const total = days.reduce((sum, d) => sum + d.n, 0)
  return (
    <svg
      viewBox={`0 0 ${width} ${height}`}
      role="img"
      aria-label={`Events per day over the last ${days.length} days: ${total} in all, at most ${max} in one day`}
    >
      <line class="axis" x1={left} y1={height - bottom} x2={width} y2={height - bottom} />
      <text x={left - 6} y={12} text-anchor="end">
        {max}
      </text>
      <text x={left - 6} y={height - bottom} text-anchor="end">
        0
      </text>
      {days.map((d, i) => {
        const h = Math.round(((height - bottom - 10) * d.n) / max)
        const x = left + i * slot + slot * 0.15
        return (
          <g>
            <rect class="bar" x={x} y={height - bottom - h} width={slot * 0.7} height={h}>
              <title>{`${d.day}: ${d.n} events`}</title>
            </rect>
            <text x={x + slot * 0.35} y={height - 6} text-anchor="middle">
              {d.day.slice(5)}
            </text>
          </g>
        )
      })}
    </svg>
  )
}

export const OverviewPage = (props: {
  viewer: Viewer
  open: Readonly<Record<string, number>>
  days: ReadonlyArray<DayCount>
  latest: ReadonlyArray<IncidentSummary>
  now: Date
  /** Sensors that missed three heartbeats, said first as a warning. */
  silentSensors?: number
}) => (
  <Layout title="Overview" viewer={props.viewer} section="overview">
    <h1>Overview</h1>
    <SilentNotice count={props.silentSensors ?? 0} link />
    <h2>Open incidents by severity</h2>
    <div class="grid">
      {["critical", "high", "medium", "low"].map((s) => (
        <a class="stat" href={`/incidents?status=open&severity=${s}`}>
          <span class="n">{props.open[s] ?? 0}</span>
          <SeverityBadge severity={s} />
        </a>
      ))}
    </div>
    <h2>Activity, last 14 days (UTC)</h2>
    <div class="panel chart">
      <ActivityChart days={props.days} />
    </div>
    <h2>Latest incidents</h2>
    <IncidentTable rows={props.latest} now={props.now} />
    <p>
      <a href="/incidents">All incidents</a>
    </p>
  </Layout>
)
