import type { Incident, IncidentSummary } from "../../domain/models.ts"
import {
  Csrf,
  DataTable,
  FilterSelect,
  type Flash,
  FlashNotice,
  Layout,
  ServiceText,
  SeverityBadge,
  StatusBadge,
  Techniques,
  Time,
  type Viewer,
} from "./components.tsx"
import { EventsLeftOut, EventTable, fitEvents } from "./timeline.tsx"

export { EventTable } from "./timeline.tsx"

export interface IncidentFilters {
  readonly status: "open" | "closed" | undefined
  readonly severity: string | undefined
}

const query = (filters: IncidentFilters, extra: Record<string, string> = {}) => {
  const params = new URLSearchParams()
  if (filters.status) params.set("status", filters.status)
  if (filters.severity) params.set("severity", filters.severity)
  for (const [k, v] of Object.entries(extra)) params.set(k, v)
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

export const IncidentTable = ({ rows, now }: { rows: ReadonlyArray<IncidentSummary>; now: Date }) => (
  <DataTable
    columns={[
      "Severity",
      "Incident",
      "Source",
      { label: "Sensor", class: "hide-sm" },
      { label: "Events", class: "hide-sm" },
      "Last seen",
      { label: "Status", class: "hide-sm" },
    ]}
    empty="No incidents."
    rows={rows}
    stacked
  >
    {(i) => (
      <tr>
        <td data-label="Severity">
          <SeverityBadge severity={i.severity} />
        </td>
        <td data-label="Incident">
          <a href={`/incidents/${i.id}`}>
            <ServiceText text={i.title} known={[i.sensor.name]} />
          </a>
          <div class="muted small mono hide-sm">{i.id}</div>
        </td>
        <td class="mono" data-label="Source">
          {i.sourceIp}
        </td>
        <td class="hide-sm" data-label="Sensor">
          {i.sensor.name}
        </td>
        <td class="hide-sm" data-label="Events">
          {i.eventCount}
        </td>
        <td data-label="Last seen">
          <Time at={i.lastSeenAt} now={now} />
        </td>
        <td class="hide-sm" data-label="Status">
          <StatusBadge status={i.status} />
        </td>
      </tr>
    )}
  </DataTable>
)

/** D30 Incidents: status and severity filters, keyset paging, live refresh by the console's script. */
export const IncidentsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<IncidentSummary>
  filters: IncidentFilters
  next: string | undefined
  first: boolean
  now: Date
}) => (
  <Layout title="Incidents" viewer={props.viewer} section="incidents">
    <h1>Incidents</h1>
    <form class="filters" method="get" action="/incidents">
      <FilterSelect
        id="status"
        label="Status"
        options={[
          ["open", "Open"],
          ["closed", "Closed"],
        ]}
        selected={props.filters.status}
      />
      <FilterSelect
        id="severity"
        label="Severity"
        options={["critical", "high", "medium", "low"]}
        selected={props.filters.severity}
      />
      <button type="submit">Filter</button>
      {props.first && (
        <span
          class="live"
          id="live-status"
          data-live-since={props.rows[0]?.lastSeenAt.toISOString() ?? new Date(0).toISOString()}
        />
      )}
    </form>
    <IncidentTable rows={props.rows} now={props.now} />
    <div class="pager">
      {!props.first && <a href={`/incidents${query(props.filters)}`}>First page</a>}
      {props.next && <a href={`/incidents${query(props.filters, { after: props.next })}`}>Next page</a>}
    </div>
  </Layout>
)

/** D30 Incident, the `url` target (D25): everything the API shows, the timeline, Close. */
export const IncidentPage = (props: {
  viewer: Viewer
  incident: Incident
  more: string | undefined
  now: Date
  flash: Flash | undefined
}) => {
  const i = props.incident
  const known = [i.sensor.name]
  const { shown, left } = fitEvents(i.events)
  const notShown = left + Math.max(0, i.eventCount - i.events.length)
  return (
    <Layout title={`Incident ${i.id}`} viewer={props.viewer} section="incidents">
      <FlashNotice flash={props.flash} />
      <p class="small">
        <a href="/incidents">← Incidents</a>
      </p>
      <h1>
        <SeverityBadge severity={i.severity} /> <ServiceText text={i.title} known={known} />
      </h1>
      <div class="panel">
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono">{i.id}</dd>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={i.status} />
            {i.status === "open" && (
              <form class="inline" method="post" action={`/incidents/${i.id}/close`}>
                <Csrf token={props.viewer.csrfToken} />{" "}
                <button type="submit" class="secondary">
                  Close incident
                </button>
              </form>
            )}
          </dd>
          <dt>Source</dt>
          <dd class="mono">{i.sourceIp}</dd>
          <dt>Sensor</dt>
          <dd>
            {i.sensor.name} <span class="muted mono small">{i.sensor.id}</span>
          </dd>
          <dt>Events</dt>
          <dd>
            {i.eventCount} ({i.eventTypes.join(", ")})
          </dd>
          <dt>Confidence</dt>
          <dd>{i.highConfidence ? "High (at least one high-confidence event)" : "Normal"}</dd>
          <dt>First seen</dt>
          <dd>
            <Time at={i.firstSeenAt} now={props.now} />
          </dd>
          <dt>Last seen</dt>
          <dd>
            <Time at={i.lastSeenAt} now={props.now} />
          </dd>
          <dt>Resolved</dt>
          <dd>
            <Time at={i.resolvedAt} now={props.now} />
          </dd>
          <dt>Techniques</dt>
          <dd>
            <Techniques techniques={i.techniques} />
          </dd>
        </dl>
      </div>
      <div class="panel">
        <h2>What happened</h2>
        <p>
          <ServiceText text={i.narrative} known={known} />
        </p>
        <h2>Recommended action</h2>
        <p>
          <ServiceText text={i.recommendedAction} known={known} />
        </p>
      </div>
      <h2>Timeline (oldest first)</h2>
      <EventTable events={shown} now={props.now} />
      <EventsLeftOut
        n={notShown}
        link={[props.more ?? `/events?incidentId=${i.id}`, "the Events page"]}
        api={`GET /v1/events?incidentId=${i.id}`}
      />
    </Layout>
  )
}
