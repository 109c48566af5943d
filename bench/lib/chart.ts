/**
 * Hand-written SVG line charts for the benchmark results (no dependency): one or more panels side by side, each
 * with labelled axes, grid lines, a legend, and lines with a marker and value at each point. The x axis is either
 * categories spaced evenly (connection counts) or linear (req/s), the y axis always linear from 0.
 */

export interface Point {
  readonly x: number
  readonly y: number
  /** Written beside the marker (e.g. the setting a point of a trade-off curve stands for). */
  readonly label?: string
}
export interface Series {
  readonly name: string
  readonly color: string
  readonly dashed?: boolean
  /** Markers only, no line between them (points that are settings, not a sequence). */
  readonly markersOnly?: boolean
  readonly points: ReadonlyArray<Point>
}
export interface Panel {
  readonly title: string
  readonly xLabel: string
  readonly yLabel: string
  /** Category axis: x is an index into these labels. Otherwise linear. */
  readonly categories?: ReadonlyArray<string>
  readonly series: ReadonlyArray<Series>
  /** A horizontal reference line (e.g. a target), with its label. */
  readonly reference?: { readonly y: number; readonly label: string }
}

const W = 520
const H = 380
const M = { left: 70, right: 20, top: 56, bottom: 58 }

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** About five round tick values from 0 to at least max. */
const ticks = (max: number): Array<number> => {
  if (!(max > 0)) return [0, 1]
  const raw = max / 5
  const mag = 10 ** Math.floor(Math.log10(raw))
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag
  const out: Array<number> = []
  for (let v = 0; v < max + step * 0.999; v += step) out.push(Math.round(v * 1000) / 1000)
  return out
}

const fmt = (n: number) =>
  n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 100 ? String(Math.round(n)) : String(Math.round(n * 10) / 10)

const panelSvg = (p: Panel, offsetX: number): string => {
  const plotW = W - M.left - M.right
  const plotH = H - M.top - M.bottom
  const ys = p.series.flatMap((s) => s.points.map((pt) => pt.y)).concat(p.reference ? [p.reference.y] : [])
  const yTicks = ticks(Math.max(...ys, 0) * 1.08)
  const yMax = yTicks[yTicks.length - 1] ?? 1
  const xs = p.series.flatMap((s) => s.points.map((pt) => pt.x))
  const categorical = p.categories !== undefined
  const xTicks = categorical ? (p.categories ?? []).map((_, i) => i) : ticks(Math.max(...xs, 0) * 1.05)
  const xMax = categorical ? Math.max(1, (p.categories?.length ?? 1) - 1) : (xTicks[xTicks.length - 1] ?? 1)
  const pad = categorical ? 0.08 : 0
  const sx = (x: number) => M.left + (pad + (x / xMax) * (1 - 2 * pad)) * plotW
  const sy = (y: number) => M.top + plotH - (y / yMax) * plotH
  const parts: Array<string> = [`<g transform="translate(${offsetX},0)">`]
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(p.title)}</text>`)
  for (const t of yTicks) {
    parts.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${sy(t)}" y2="${sy(t)}" stroke="#e3e3e3"/>`,
      `<text x="${M.left - 6}" y="${sy(t) + 4}" text-anchor="end" font-size="11">${fmt(t)}</text>`,
    )
  }
  for (const t of xTicks) {
    const label = categorical ? (p.categories?.[t] ?? "") : fmt(t)
    parts.push(
      `<line x1="${sx(t)}" x2="${sx(t)}" y1="${M.top + plotH}" y2="${M.top + plotH + 5}" stroke="#444"/>`,
      `<text x="${sx(t)}" y="${M.top + plotH + 18}" text-anchor="middle" font-size="11">${esc(label)}</text>`,
    )
  }
  parts.push(
    `<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${M.top + plotH}" stroke="#444"/>`,
    `<line x1="${M.left}" x2="${W - M.right}" y1="${M.top + plotH}" y2="${M.top + plotH}" stroke="#444"/>`,
    `<text x="${M.left + plotW / 2}" y="${H - 14}" text-anchor="middle" font-size="12">${esc(p.xLabel)}</text>`,
    `<text transform="translate(18,${M.top + plotH / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(p.yLabel)}</text>`,
  )
  if (p.reference) {
    const y = sy(p.reference.y)
    parts.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#c0392b" stroke-dasharray="2,3"/>`,
      `<text x="${W - M.right - 4}" y="${y - 4}" text-anchor="end" font-size="10" fill="#c0392b">${esc(p.reference.label)}</text>`,
    )
  }
  for (const [index, s] of p.series.entries()) {
    // The second series writes its values below its markers, so two close points stay readable.
    const dy = index % 2 === 1 ? 15 : -6
    const pts = [...s.points].sort((a, b) => a.x - b.x)
    const d = pts.map((pt, i) => `${i === 0 ? "M" : "L"}${sx(pt.x).toFixed(1)},${sy(pt.y).toFixed(1)}`).join(" ")
    if (!s.markersOnly) {
      parts.push(
        `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2.2"${s.dashed ? ' stroke-dasharray="6,4"' : ""}/>`,
      )
    }
    for (const pt of pts) {
      parts.push(
        `<circle cx="${sx(pt.x).toFixed(1)}" cy="${sy(pt.y).toFixed(1)}" r="3.5" fill="${s.color}"/>`,
        `<text x="${(sx(pt.x) + 5).toFixed(1)}" y="${(sy(pt.y) + dy).toFixed(1)}" font-size="10" fill="${s.color}">${esc(pt.label ?? fmt(pt.y))}</text>`,
      )
    }
  }
  p.series.forEach((s, i) => {
    const x = M.left + 8 + i * 150
    parts.push(
      `<line x1="${x}" x2="${x + 22}" y1="40" y2="40" stroke="${s.color}" stroke-width="2.2"${s.dashed ? ' stroke-dasharray="6,4"' : ""}/>`,
      `<text x="${x + 27}" y="44" font-size="12">${esc(s.name)}</text>`,
    )
  })
  parts.push("</g>")
  return parts.join("\n")
}

/**
 * An SVG document: a title line, a note line, then the panels side by side, then `key` lines under them (what short
 * point labels stand for).
 */
export const svgChart = (
  title: string,
  note: string,
  panels: ReadonlyArray<Panel>,
  key: ReadonlyArray<string> = [],
): string => {
  const width = W * panels.length
  const top = 44
  const height = H + top + key.length * 15
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="12" y="20" font-size="16" font-weight="bold">${esc(title)}</text>`,
    `<text x="12" y="37" font-size="11" fill="#555">${esc(note)}</text>`,
    `<g transform="translate(0,${top})">`,
    ...panels.map((p, i) => panelSvg(p, i * W)),
    "</g>",
    ...key.map((line, i) => `<text x="12" y="${H + top + 12 + i * 15}" font-size="11" fill="#333">${esc(line)}</text>`),
    "</svg>",
    "",
  ].join("\n")
}
