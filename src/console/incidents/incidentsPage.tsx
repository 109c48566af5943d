import { EVENT_TYPE_NAMES } from "../../domain/eventTypes.ts"
import type { IncidentSummary } from "../../domain/models.ts"
import {
  Csrf,
  DataTable,
  FilterSelect,
  type Flash,
  FlashNotice,
  IncidentMarkers,
  ServiceText,
  SeverityBadge,
  StatusBadge,
  Time,
  type Viewer,
} from "../components.tsx"
import { canTriage, Layout } from "../layout.tsx"
import { type IncidentFiltersForm, incidentFilterQuery, SEARCH_MAX } from "../listFilters.ts"
import { BulkCloseForm } from "./bulkClosePage.tsx"

/**
 * Incidents as a table. With `triage`, the table shows each incident's owner and whether someone acknowledged it;
 * with `select` too, each row has a checkbox of the bulk triage form (`form="bulk-triage"`).
 */
export const IncidentTable = ({
  rows,
  now,
  triage = false,
  select = false,
}: {
  rows: ReadonlyArray<IncidentSummary>
  now: Date
  triage?: boolean
  select?: boolean
}) => (
  <DataTable
    columns={[
      ...(select ? [{ label: "Select", class: "search-select" }] : []),
      "Severity",
      "Incident",
      "Source",
      { label: "Sensor", class: "hide-sm" },
      { label: "Events", class: "hide-sm" },
      "Last seen",
      ...(triage ? ["Owner"] : []),
      { label: "Status", class: "hide-sm" },
    ]}
    empty="No incidents."
    rows={rows}
    stacked
  >
    {(i) => (
      <tr>
        {select && (
          <td class="search-select" data-label="Select">
            <input type="checkbox" name="ids" value={i.id} form="bulk-triage" aria-label={`Select ${i.id}`} />
          </td>
        )}
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
        {triage && (
          <td data-label="Owner">
            {i.assignee === null ? <span class="muted">nobody</span> : i.assignee}
            <div class="small">
              {i.acknowledgedAt === null ? (
                <span class="search-unacked">not acknowledged</span>
              ) : (
                <span class="muted">
                  acknowledged <Time at={i.acknowledgedAt} now={now} />
                </span>
              )}
            </div>
          </td>
        )}
        <td class="hide-sm" data-label="Status">
          <StatusBadge status={i.status} />
        </td>
      </tr>
    )}
  </DataTable>
)

const OWNER_CHOICES = [
  ["me", "Assigned to me"],
  ["none", "Nobody"],
] as const

/**
 * Incidents: filters by status, severity, sensor, source (an address or a CIDR network), event type, owner, inside or
 * outside the organization's networks, time (activity overlapping the range) and a search of the member events'
 * attacker input and summaries; each filter in the URL and shown back, a value that cannot be read named with what
 * it accepts. Keyset paging keeps the filters; the CSV export takes the same ones. A checkbox per row feeds the bulk
 * triage form (acknowledge, assign, unassign); live refresh of the first page by the console's script.
 */
export const IncidentsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<IncidentSummary>
  /** The filters as typed. */
  form: IncidentFiltersForm
  /** One sentence per filter that could not be read (and so was not applied). */
  errors?: ReadonlyArray<string>
  next: string | undefined
  first: boolean
  now: Date
  /** The organization's sensors, for the sensor filter and the bulk close filter; without them the close form is not shown. */
  sensors?: ReadonlyArray<readonly [id: string, name: string]> | undefined
  /** The organization's enabled users: owners to filter by and to assign to. */
  users?: ReadonlyArray<{ readonly id: string; readonly email: string }>
  /** This list's own URL (path and query), where the bulk triage form comes back to. */
  back?: string
  flash?: Flash | undefined
}) => {
  const form = props.form
  const users = props.users ?? []
  const errors = props.errors ?? []
  const back = props.back ?? `/incidents${incidentFilterQuery(form)}`
  return (
    <Layout title="Incidents" viewer={props.viewer} section="incidents">
      <FlashNotice flash={props.flash} />
      <h1>Incidents</h1>
      <p class="small search-quick">
        <a href="/incidents?owner=me" aria-current={form.owner === "me" ? "true" : undefined}>
          Assigned to me
        </a>
        {" · "}
        <a href="/incidents?status=open&owner=none">Open and unassigned</a>
      </p>
      <form class="filters search-filters" method="get" action="/incidents">
        <div class="search-q">
          <label for="q">Search attacker input and summaries</label>
          <input
            id="q"
            name="q"
            type="search"
            class="mono"
            maxlength={SEARCH_MAX}
            placeholder="wget http://, a hash, a file name"
            value={form.q}
          />
        </div>
        <FilterSelect
          id="status"
          label="Status"
          options={[
            ["open", "Open"],
            ["closed", "Closed"],
          ]}
          selected={form.status}
        />
        <FilterSelect
          id="severity"
          label="Severity"
          options={["critical", "high", "medium", "low"]}
          selected={form.severity}
        />
        <FilterSelect id="sensor" label="Sensor" options={props.sensors ?? []} selected={form.sensor} />
        <div>
          <label for="source">Source IP or CIDR</label>
          <input id="source" name="source" type="text" class="mono" placeholder="203.0.113.0/24" value={form.source} />
        </div>
        <FilterSelect id="type" label="Event type" options={EVENT_TYPE_NAMES} selected={form.type} />
        <FilterSelect
          id="owner"
          label="Owner"
          options={[...OWNER_CHOICES, ...users.map((u) => [u.id, u.email] as const)]}
          selected={form.owner}
        />
        <FilterSelect
          id="scope"
          label="Inside or outside"
          options={[
            ["internal", "Inside your networks"],
            ["external", "Outside"],
          ]}
          selected={form.scope}
        />
        <div>
          <label for="from">Active from (UTC date or RFC 3339)</label>
          <input id="from" name="from" type="text" placeholder="2026-11-20" value={form.from} />
        </div>
        <div>
          <label for="to">Active to (UTC date, inclusive, or RFC 3339)</label>
          <input id="to" name="to" type="text" placeholder="2026-11-21" value={form.to} />
        </div>
        <button type="submit">Filter</button>
        <a href="/incidents">Clear</a>
        <a href={`/incidents.csv${incidentFilterQuery(form)}`} download>
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
      {errors.length > 0 && (
        <div class="notice notice-error" role="alert">
          {errors.map((text) => (
            <p>{text}</p>
          ))}
          <p>A filter that cannot be read is not applied: the list uses the others.</p>
        </div>
      )}
      {form.q !== "" && !errors.some((e) => e.startsWith("“Search”")) && (
        <p class="small">
          Incidents with an event whose attacker input or summary holds <span class="mono search-term">{form.q}</span>{" "}
          (ignoring case)
        </p>
      )}
      {canTriage(props.viewer) && (
        <form id="bulk-triage" class="search-bulk" method="post" action="/incidents/triage">
          <Csrf token={props.viewer.csrfToken} />
          <input type="hidden" name="back" value={back} />
          <span class="small">Selected incidents:</span>
          <button type="submit" name="action" value="acknowledge">
            Acknowledge
          </button>
          <label for="bulk-assignee" class="search-inline">
            Owner
          </label>
          <select id="bulk-assignee" name="assignee">
            <option value="">Nobody (unassign)</option>
            {users.map((u) => (
              <option value={u.id}>{u.email}</option>
            ))}
          </select>
          <button type="submit" name="action" value="assign">
            Assign
          </button>
        </form>
      )}
      <IncidentTable rows={props.rows} now={props.now} triage select={canTriage(props.viewer)} />
      <div class="pager">
        {!props.first && <a href={`/incidents${incidentFilterQuery(form)}`}>First page</a>}
        {props.next && <a href={`/incidents${incidentFilterQuery(form, { after: props.next })}`}>Next page</a>}
      </div>
      {props.sensors && canTriage(props.viewer) && <BulkCloseForm sensors={props.sensors} />}
    </Layout>
  )
}
