import { max } from "d3-array"
import { scaleBand, scaleLinear } from "d3-scale"
import type { Child } from "hono/jsx"
import { codePointLength, firstCodePoints } from "../../domain/sanitize.ts"
import { Attacker } from "../components.tsx"
import { formatCount } from "./format.ts"

/** One bar: what it counts, how many, and where it leads (our own pages only). */
export interface Bar {
  /** Unique among the chart's bars. */
  readonly key: string
  /** The label beside the bar (cut on the chart; whole, up to the read's bound, in the table). */
  readonly label: string
  readonly n: number
  /** A path of the console (`/sources/…`, `/events?…`), never a link built from attacker text but URL-encoded. */
  readonly href?: string | undefined
  /** The label is attacker-supplied text (a username, a command): boxed as such, monospace. */
  readonly attacker?: boolean | undefined
  /** One more column of the table view (e.g. "outside · DE"). */
  readonly note?: string | undefined
  /** A short mark beside the label on the chart itself (e.g. "DE", "inside"). */
  readonly mark?: string | undefined
}

/** Code points of a label shown on the chart: the rest is in the bar's tooltip and the table. */
export const LABEL_CHARS = 24
/** The most bars a chart draws (each row has its own grid line in overview.css, `.ov-r1` … `.ov-r10`). */
export const BARS_MAX = 10
/** The bars' own coordinate space: the SVG stretches to its column, one row of 24 px per bar. */
const TRACK = 100
const ROW = 24

const round2 = (v: number) => Math.round(v * 100) / 100

/** A label as the chart shows it: at most LABEL_CHARS code points, cut with an ellipsis. */
export const chartLabel = (label: string): string =>
  codePointLength(label) > LABEL_CHARS ? `${firstCodePoints(label, LABEL_CHARS - 1)}…` : label

/**
 * A small horizontal bar chart drawn on the server, with a text alternative that summarises it and a table view of
 * the same numbers behind a <details>. The bars are an SVG (role="img", widths from a d3-scale linear scale) in the
 * middle column of a grid; the labels, links to our own pages, and the counts are HTML beside it in the same rows,
 * so no control sits inside the image. No bars: a sentence instead (`empty`).
 */
export const BarChart = (props: {
  /** What the chart shows, said in full ("Top sources, last 24 hours"): the start of its text alternative. */
  title: string
  bars: ReadonlyArray<Bar>
  /** The table view's column names: the label's, the note's (when bars carry notes), the count's. */
  columns: { readonly label: string; readonly note?: string; readonly n: string }
  empty: string
}) => {
  const bars = props.bars.slice(0, BARS_MAX)
  if (bars.length === 0) return <p class="muted ov-empty">{props.empty}</p>
  const top = max(bars, (b) => b.n) ?? 0
  const x = scaleLinear()
    .domain([0, Math.max(1, top)])
    .range([0, TRACK])
  const y = scaleBand<string>()
    .domain(bars.map((b) => b.key))
    .range([0, bars.length * ROW])
    .paddingInner(0.3)
    .paddingOuter(0.15)
  const first = bars[0]
  const summary =
    first === undefined
      ? props.title
      : `${props.title}: ${bars.length} shown, the most ${formatCount(first.n)} (${chartLabel(first.label)})`
  return (
    <div class="ov-chart">
      <div class="ov-barchart">
        {bars.map((b, i) => {
          const shown = chartLabel(b.label)
          const text = b.attacker === true ? <code class="ov-atk">{shown}</code> : shown
          const tip = `${b.attacker === true ? "Attacker-supplied: " : ""}${b.label}${b.note ? ` (${b.note})` : ""}`
          return (
            <span class={`ov-barlabel ov-r${i + 1}`} title={tip}>
              {b.href === undefined ? <span class="ov-labeltext">{text}</span> : <a href={b.href}>{text}</a>}
              {b.mark !== undefined && b.mark !== "" && <span class="ov-mark">{b.mark}</span>}
            </span>
          )
        })}
        <svg
          class={`ov-bars ov-span${bars.length}`}
          viewBox={`0 0 ${TRACK} ${bars.length * ROW}`}
          preserveAspectRatio="none"
          role="img"
          aria-label={summary}
        >
          <title>{summary}</title>
          {bars.map((b) => (
            <rect
              class="ov-bar"
              x="0"
              y={round2(y(b.key) ?? 0)}
              width={round2(Math.max(0.5, x(b.n)))}
              height={round2(y.bandwidth())}
            />
          ))}
        </svg>
        {bars.map((b, i) => (
          <span class={`ov-barvalue ov-r${i + 1}`}>{formatCount(b.n)}</span>
        ))}
      </div>
      <ChartTable
        columns={[
          props.columns.label,
          ...(props.columns.note === undefined ? [] : [props.columns.note]),
          props.columns.n,
        ]}
        rows={bars.map((b) => [
          <BarLabel bar={b} />,
          ...(props.columns.note === undefined ? [] : [b.note ?? ""]),
          formatCount(b.n),
        ])}
      />
    </div>
  )
}

/** A bar's label in the table view: attacker text boxed, a link when the bar has one. */
const BarLabel = ({ bar }: { bar: Bar }) => {
  if (bar.href === undefined) return bar.attacker === true ? <Attacker value={bar.label} cut={80} /> : bar.label
  if (bar.attacker !== true) return <a href={bar.href}>{bar.label}</a>
  // A long value opens in a <details>, which may not sit inside a link: the search link goes beside it.
  return (
    <>
      <Attacker value={bar.label} cut={80} />{" "}
      <a class="small" href={bar.href}>
        search
      </a>
    </>
  )
}

/** A chart's numbers as a table, behind a <details> (closed: the chart says it first). */
export const ChartTable = (props: { columns: ReadonlyArray<string>; rows: ReadonlyArray<ReadonlyArray<Child>> }) => (
  <details class="ov-table">
    <summary>Table view</summary>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {props.columns.map((c, i) => (
              <th scope="col" class={i === props.columns.length - 1 ? "ov-num" : undefined}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((cells) => (
            <tr>
              {cells.map((cell, i) => (
                <td class={i === cells.length - 1 ? "ov-num" : undefined}>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  </details>
)
