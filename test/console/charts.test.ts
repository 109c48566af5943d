import { describe, expect, test } from "bun:test"
import { BarChart, chartLabel, LABEL_CHARS } from "../../src/console/charts/barChart.tsx"
import { type TimeBucket, TimeChart } from "../../src/console/charts/timeChart.tsx"
import { countryName, WorldMap } from "../../src/console/charts/worldMap.tsx"
import { bucketKey, parseRange, rangeWindow } from "../../src/console/overview/range.ts"

/**
 * The overview's charts rendered alone (pure components): with data and empty, their text alternatives and table
 * views, attacker text inert in every place a label goes, and nothing the console's CSP would refuse.
 */

const HOSTILE = `<script>window.__xss=1</script><img src=x onerror=alert(1)>"'&`
const columns = { label: "Username", n: "Attempts" }

/** The console's CSP allows no inline style and no script; SVG presentation attributes (`fill`) are fine. */
const expectCspClean = (html: string) => {
  expect(html).not.toMatch(/\sstyle=/i)
  expect(html).not.toMatch(/<script/i)
  // An attribute named on… in any tag (attribute values skipped whole: escaped text in them may say anything).
  expect(html).not.toMatch(/<[a-z]+(?:\s+[a-z:-]+(?:="[^"]*")?)*\s+on[a-z]+=/i)
  expect(html).not.toMatch(/javascript:/i)
}

describe("BarChart", () => {
  test("draws one bar per row, says what it shows, and has a table view of the same numbers", () => {
    const html = String(
      BarChart({
        title: "Top sensors, last 24 hours",
        bars: [
          { key: "a", label: "dmz-web-01", n: 1234, href: "/events?sensorId=sen_a" },
          { key: "b", label: "db-02", n: 56 },
        ],
        columns: { label: "Sensor", n: "Events" },
        empty: "none",
      }),
    )
    expect(html).toContain('role="img"')
    expect(html).toContain('aria-label="Top sensors, last 24 hours: 2 shown, the most 1,234 (dmz-web-01)"')
    expect(html.match(/<rect class="ov-bar"/g)?.length).toBe(2)
    expect(html).toContain('<a href="/events?sensorId=sen_a">')
    expect(html).toContain("<summary>Table view</summary>")
    expect(html).toContain('<td class="ov-num">1,234</td>')
    expect(html).toContain('<td class="ov-num">56</td>')
    // The longer bar is the larger count: the scale maps counts to widths.
    const widths = [...html.matchAll(/class="ov-bar" x="\d+" y="[\d.]+" width="([\d.]+)"/g)].map((m) => Number(m[1]))
    expect(widths[0]).toBeGreaterThan(widths[1] ?? 0)
    expectCspClean(html)
  })

  test("no rows: the sentence instead of an empty chart", () => {
    const html = String(BarChart({ title: "T", bars: [], columns, empty: "No events in the last 7 days." }))
    expect(html).toContain("No events in the last 7 days.")
    expect(html).not.toContain("<svg")
    expect(html).not.toContain("Table view")
  })

  test("attacker labels are escaped in the chart, its tooltip, its text alternative and its table, and cut on the chart", () => {
    const long = `${HOSTILE}${"x".repeat(300)}`
    const html = String(
      BarChart({
        title: "Usernames tried",
        bars: [{ key: long, label: long, n: 3, attacker: true, href: `/events?q=${encodeURIComponent(long)}` }],
        columns,
        empty: "none",
      }),
    )
    expect(html).not.toContain("<script>")
    expect(html).not.toContain("<img")
    expect(html).toContain("&lt;script&gt;")
    // The search link carries the value URL-encoded, never as markup or a URL of its own.
    expect(html).toContain('href="/events?q=%3Cscript%3Ewindow.__xss%3D1%3C%2Fscript%3E')
    // On the chart: at most LABEL_CHARS code points, marked as attacker text (monospace class).
    expect(html).toContain(
      `<code class="ov-atk">${chartLabel(long).replaceAll("<", "&lt;").replaceAll(">", "&gt;")}</code>`,
    )
    expect(html).toContain('title="Attacker-supplied: &lt;script&gt;')
    expect(chartLabel(long)).toHaveLength(LABEL_CHARS)
    expect(html).toContain(chartLabel(long).replaceAll("<", "&lt;").replaceAll(">", "&gt;"))
    // In the table: boxed as attacker-supplied text.
    expect(html).toContain('<code class="atk" title="Attacker-supplied text">')
    expectCspClean(html)
  })

  test("a label of astral characters is cut on code points, never inside a pair", () => {
    const label = "😀".repeat(40)
    const cut = chartLabel(label)
    expect([...cut]).toHaveLength(LABEL_CHARS)
    expect(cut.endsWith("…")).toBe(true)
    expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/)
  })
})

describe("TimeChart", () => {
  const window = rangeWindow("24h", new Date("2026-11-26T14:30:00Z"))
  const buckets: Array<TimeBucket> = window.buckets.map((key, i) => ({
    key,
    label: key.slice(11),
    words: `${key}:00 UTC`,
    events: key === "2026-11-26 14" ? 412 : i,
    incidents: i % 5 === 0 ? 2 : 0,
  }))

  test("bars of events, a line of new incidents, a summary naming the peak, a table of every bucket", () => {
    const html = String(TimeChart({ buckets, unit: "hour", words: "last 24 hours" }))
    const total = buckets.reduce((s, b) => s + b.events, 0)
    expect(html).toContain(
      `aria-label="Events per hour, last 24 hours: ${total.toLocaleString("en-US")} in all, peak 412 at 2026-11-26 14:00 UTC; 10 new incidents"`,
    )
    expect(html.match(/<rect class="ov-bar"/g)?.length).toBe(24)
    expect(html).toMatch(/<path class="ov-line" d="M[\d.,LC ]+/)
    expect(html).toContain('<th scope="col">Hour (UTC)</th>')
    expect(html.match(/<tr>/g)?.length).toBe(25)
    expectCspClean(html)
  })

  test("no activity: says none, draws the empty axis", () => {
    const empty = buckets.map((b) => ({ ...b, events: 0, incidents: 0 }))
    const html = String(TimeChart({ buckets: empty, unit: "day", words: "last 7 days" }))
    expect(html).toContain('aria-label="Events per day, last 7 days: none"')
    expect(html).toContain('class="ov-axis"')
    expectCspClean(html)
  })
})

describe("WorldMap", () => {
  test("colours the countries with events, names them, and stays small", () => {
    const html = String(
      WorldMap({
        countries: [
          { country: "DE", n: 400 },
          { country: "BR", n: 40 },
          { country: "XK", n: 2 },
        ],
        title: "Events by country of the source, last 24 hours",
      }),
    )
    expect(html).toContain(
      'aria-label="Events by country of the source, last 24 hours: 3 countries, the most from Germany (400 events)"',
    )
    expect(html).toContain("<title>Germany: 400 events</title>")
    expect(html).toContain("<title>Brazil: 40 events</title>")
    // Two shapes coloured (the atlas has no shape for Kosovo: it is in the table only), every other one plain land.
    expect(html.match(/class="ov-land ov-hit"/g)?.length).toBe(2)
    expect(html.match(/class="ov-land"/g)?.length).toBeGreaterThan(150)
    expect(html).toContain("<td>Kosovo</td><td>XK</td>")
    // The darkest colour is the busiest country's.
    const fills = [...html.matchAll(/fill="([^"]+)"><title>(\w+):/g)].map((m) => [m[2], m[1]])
    expect(fills.find(([name]) => name === "Germany")?.[1]).toBe("rgb(18, 63, 128)")
    expect(html.length).toBeLessThan(150_000)
    expectCspClean(html)
  })

  test("country names from their codes", () => {
    expect(countryName("DE")).toBe("Germany")
    expect(countryName("ZZ")).toBe("ZZ")
  })
})

describe("ranges", () => {
  test("24 hours by hour, 7 and 30 days by day, the current one last; anything else is 24 hours", () => {
    const now = new Date("2026-11-26T14:30:00Z")
    const day = rangeWindow("24h", now)
    expect(day.unit).toBe("hour")
    expect(day.buckets).toHaveLength(24)
    expect(day.start.toISOString()).toBe("2026-11-25T15:00:00.000Z")
    expect(day.buckets.at(-1)).toBe(bucketKey(now, "hour"))
    const week = rangeWindow("7d", now)
    expect(week.unit).toBe("day")
    expect(week.buckets).toEqual([
      "2026-11-20",
      "2026-11-21",
      "2026-11-22",
      "2026-11-23",
      "2026-11-24",
      "2026-11-25",
      "2026-11-26",
    ])
    expect(rangeWindow("30d", now).buckets).toHaveLength(30)
    expect(rangeWindow("30d", now).start.toISOString()).toBe("2026-10-28T00:00:00.000Z")
    for (const bad of [null, "", "1y", "24H", "7d ", "<script>"]) expect(parseRange(bad)).toBe("24h")
    expect(parseRange("30d")).toBe("30d")
  })
})
