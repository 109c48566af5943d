import type { Child } from "hono/jsx"
import type { IncidentSummary } from "../../domain/models.ts"
import { type Bar, BarChart } from "../charts/barChart.tsx"
import { type TimeBucket, TimeChart } from "../charts/timeChart.tsx"
import { type CountryValue, WorldMap } from "../charts/worldMap.tsx"
import { SeverityBadge, type Viewer } from "../components.tsx"
import { IncidentTable } from "../incidents/incidentsPage.tsx"
import { Layout } from "../layout.tsx"
import { SilentNotice } from "../sensors/status.tsx"
import { type OverviewRange, RANGES, type RangeWindow } from "./range.ts"

/** What the overview shows of a range: the activity over time and each "top" chart's bars. */
export interface OverviewFigures {
  readonly window: RangeWindow
  readonly buckets: ReadonlyArray<TimeBucket>
  readonly sources: ReadonlyArray<Bar>
  readonly sensors: ReadonlyArray<Bar>
  readonly services: ReadonlyArray<Bar>
  readonly usernames: ReadonlyArray<Bar>
  readonly commands: ReadonlyArray<Bar>
  readonly types: ReadonlyArray<Bar>
  /** Events of external sources per country; empty when enrichment knows no country for them. */
  readonly countries: ReadonlyArray<CountryValue>
  /** Whether an MMDB file that can hold countries is configured (MMDB_COUNTRY_FILE or MMDB_ASN_FILE). */
  readonly geoConfigured: boolean
}

const RANGE_WORDS: Record<OverviewRange, string> = { "24h": "24 hours", "7d": "7 days", "30d": "30 days" }

/** The range switch: one link per range (no script), the current one marked. */
const RangeSwitch = ({ current }: { current: OverviewRange }) => (
  <nav class="ov-ranges" aria-label="Time range">
    {RANGES.map((r) => (
      <a href={`/?range=${r}`} aria-current={r === current ? "page" : undefined}>
        {RANGE_WORDS[r]}
      </a>
    ))}
  </nav>
)

/** One chart's panel: its heading, a line of what it counts, the chart. */
const ChartPanel = (props: { id: string; title: string; note?: string; wide?: boolean; children: Child }) => (
  <section class={props.wide === true ? "panel ov-panel ov-wide" : "panel ov-panel"} aria-labelledby={props.id}>
    <h2 id={props.id}>{props.title}</h2>
    {props.note !== undefined && <p class="small muted ov-note">{props.note}</p>}
    {props.children}
  </section>
)

/** Why the map is missing: enrichment is off (and how to turn it on), or no outside source has a known country. */
const NoMap = ({ geoConfigured, words }: { geoConfigured: boolean; words: string }) =>
  geoConfigured ? (
    <p class="muted ov-empty">
      No source outside your networks has a known country in the {words} yet: enrichment looks addresses up in the
      background, shortly after their first event.
    </p>
  ) : (
    <p class="ov-empty">
      Source countries are unknown because enrichment is off. To see where attacks come from, set{" "}
      <code>MMDB_COUNTRY_FILE</code> to a country database in MaxMind's format (GeoLite2-Country, DB-IP Country Lite or
      an IPinfo file) and restart the service; the configuration guide's "Enrichment" section has the details.
    </p>
  )

export const OverviewPage = (props: {
  viewer: Viewer
  open: Readonly<Record<string, number>>
  figures: OverviewFigures
  latest: ReadonlyArray<IncidentSummary>
  now: Date
  /** Sensors that missed three heartbeats, said first as a warning. */
  silentSensors?: number
}) => {
  const f = props.figures
  const { words, range } = f.window
  const none = `No events in the ${words}.`
  return (
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
      <div class="ov-head">
        <h2 id="ov-activity">Activity, {words} (UTC)</h2>
        <RangeSwitch current={range} />
      </div>
      <section class="panel ov-panel" aria-labelledby="ov-activity">
        <TimeChart buckets={f.buckets} unit={f.window.unit} words={words} />
      </section>
      <div class="ov-grid">
        <ChartPanel id="ov-sources" title="Top sources" note="Events per source address; each opens its page.">
          <BarChart
            title={`Top sources, ${words}`}
            bars={f.sources}
            columns={{ label: "Source", note: "Where", n: "Events" }}
            empty={none}
          />
        </ChartPanel>
        <ChartPanel id="ov-sensors" title="Top sensors" note="Events per sensor.">
          <BarChart
            title={`Top sensors, ${words}`}
            bars={f.sensors}
            columns={{ label: "Sensor", n: "Events" }}
            empty={none}
          />
        </ChartPanel>
        <ChartPanel id="ov-services" title="Targeted services and ports" note="Events per service and port.">
          <BarChart
            title={`Targeted services and ports, ${words}`}
            bars={f.services}
            columns={{ label: "Service/port", n: "Events" }}
            empty={none}
          />
        </ChartPanel>
        <ChartPanel id="ov-types" title="Event types" note="Events per type.">
          <BarChart
            title={`Event types, ${words}`}
            bars={f.types}
            columns={{ label: "Type", note: "What", n: "Events" }}
            empty={none}
          />
        </ChartPanel>
        <ChartPanel
          id="ov-usernames"
          title="Usernames tried"
          note="Attacker-supplied: login events per username; each opens a search."
        >
          <BarChart
            title={`Usernames tried, ${words}`}
            bars={f.usernames}
            columns={{ label: "Username", n: "Attempts" }}
            empty={`No username was tried in the ${words}.`}
          />
        </ChartPanel>
        <ChartPanel
          id="ov-commands"
          title="Commands run"
          note="Attacker-supplied: events per command; each opens a search."
        >
          <BarChart
            title={`Commands run, ${words}`}
            bars={f.commands}
            columns={{ label: "Command", n: "Events" }}
            empty={`No command was run in the ${words}.`}
          />
        </ChartPanel>
      </div>
      <ChartPanel
        id="ov-map"
        title="Where outside sources come from"
        note="Events from addresses outside your networks, by the country enrichment found for each address."
        wide
      >
        {f.countries.length > 0 ? (
          <WorldMap countries={f.countries} title={`Events by country of the source, ${words}`} />
        ) : (
          <NoMap geoConfigured={f.geoConfigured} words={words} />
        )}
      </ChartPanel>
      <h2>Latest incidents</h2>
      <IncidentTable rows={props.latest} now={props.now} />
      <p>
        <a href="/incidents">All incidents</a>
      </p>
    </Layout>
  )
}
