import type { IncidentSummary } from "../../domain/models.ts"
import {
  DataTable,
  FilterSelect,
  type Flash,
  FlashNotice,
  ServiceText,
  SeverityBadge,
  StatusBadge,
  Time,
  type Viewer,
} from "../components.tsx"
import { Layout } from "../layout.tsx"
import { BulkCloseForm } from "./bulkClosePage.tsx"

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

/**
 * What matters most about an incident, as small marks beside its title in a list: a bait credential used, a source
 * inside the organization's networks.
 */
export const IncidentMarkers = ({ incident }: { incident: IncidentSummary }) => (
  <>
    {incident.baitCredentialUsed && (
      <>
        {" "}
        <span class="marker marker-bait" title="A bait credential was used">
          bait
        </span>
      </>
    )}
    {incident.source.scope === "internal" && (
      <>
        {" "}
        <span
          class="marker marker-inside"
          title={`From inside your network${incident.source.network ? ` (${incident.source.network.label})` : ""}`}
        >
          inside
        </span>
      </>
    )}
  </>
)

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
          <IncidentMarkers incident={i} />
          <div class="muted small mono hide-sm">{i.id}</div>
        </td>
        <td class="mono" data-label="Source">
          <a href={`/sources/${i.sourceIp}`}>{i.sourceIp}</a>
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

/** Incidents: status and severity filters, keyset paging, live refresh by the console's script. */
export const IncidentsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<IncidentSummary>
  filters: IncidentFilters
  next: string | undefined
  first: boolean
  now: Date
  /** The organization's sensors, for the bulk close filter; without them the form is not shown. */
  sensors?: ReadonlyArray<readonly [id: string, name: string]> | undefined
  flash?: Flash | undefined
}) => (
  <Layout title="Incidents" viewer={props.viewer} section="incidents">
    <FlashNotice flash={props.flash} />
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
      <a href={`/incidents.csv${query(props.filters)}`} download>
        Export CSV
      </a>
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
    {props.sensors && <BulkCloseForm sensors={props.sensors} />}
  </Layout>
)
