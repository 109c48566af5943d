import type { Incident, IncidentSummary } from "../../domain/models.ts"
import {
  Attacker,
  Csrf,
  DataTable,
  FilterSelect,
  type Flash,
  FlashNotice,
  ServiceText,
  SeverityBadge,
  StatusBadge,
  Techniques,
  Time,
  type Viewer,
} from "../components.tsx"
import { EventsLeftOut, EventTable, fitEvents } from "../eventTable.tsx"
import {
  CLOSE_REASON_LABELS,
  type HistoryEntry,
  IncidentHistory,
  IncidentNotes,
  type NoteEntry,
} from "../incidents/history.tsx"
import { Layout } from "../layout.tsx"

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

/** D30 Incidents: status and severity filters, keyset paging, live refresh by the console's script. */
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

/** The fields of a bulk close's filter, as typed (a duration counts back from the preview, which resolves it). */
export interface BulkCloseFields {
  readonly sensor: string
  readonly source: string
  readonly olderThan: string
}

const FilterFields = (props: {
  sensors: ReadonlyArray<readonly [id: string, name: string]>
  fields: BulkCloseFields | undefined
}) => (
  <>
    <div class="field">
      <label for="bulk-sensor">Sensor</label>
      <select id="bulk-sensor" name="sensor">
        <option value="">Any</option>
        {props.sensors.map(([id, name]) => (
          <option value={id} selected={props.fields?.sensor === id}>
            {name}
          </option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for="bulk-source">Source IP</label>
      <input
        id="bulk-source"
        name="source"
        type="text"
        maxLength={64}
        placeholder="203.0.113.7"
        value={props.fields?.source ?? ""}
      />
    </div>
    <div class="field">
      <label for="bulk-older">Last seen longer ago than</label>
      <input
        id="bulk-older"
        name="olderThan"
        type="text"
        maxLength={40}
        placeholder="7d, 12h or 2026-11-01"
        aria-describedby="bulk-older-help"
        value={props.fields?.olderThan ?? ""}
      />
      <div id="bulk-older-help" class="muted small">
        A duration (30m, 12h, 7d) or a date (2026-11-01) or time (2026-11-01T12:00:00Z).
      </div>
    </div>
  </>
)

/** The bulk close's first step: the filter (open incidents only), sent to the preview. */
const BulkCloseForm = ({ sensors }: { sensors: ReadonlyArray<readonly [id: string, name: string]> }) => (
  <details class="panel bulk-close">
    <summary>Close many open incidents…</summary>
    <form method="get" action="/incidents/bulk-close">
      <p class="small muted">
        Give at least one filter. The next page shows how many open incidents match before anything is closed.
      </p>
      <FilterFields sensors={sensors} fields={undefined} />
      <button type="submit" class="secondary">
        Preview
      </button>
    </form>
  </details>
)

/** A close's reason (required) and note (optional). */
const CloseFields = ({ idPrefix }: { idPrefix: string }) => (
  <>
    <div class="field">
      <label for={`${idPrefix}-reason`}>Reason</label>
      <select id={`${idPrefix}-reason`} name="reason" required>
        <option value="">Choose a reason</option>
        {Object.entries(CLOSE_REASON_LABELS).map(([value, label]) => (
          <option value={value}>{label}</option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for={`${idPrefix}-note`}>Note (optional)</label>
      <textarea id={`${idPrefix}-note`} name="note" class="wide" rows={2} maxLength={2000} />
    </div>
  </>
)

/** The bulk close's preview: how many open incidents match now, and the reason and note to close them with. */
export const BulkClosePage = (props: {
  viewer: Viewer
  sensors: ReadonlyArray<readonly [id: string, name: string]>
  fields: BulkCloseFields
  /** The count now and the absolute time the filter's "longer ago than" was resolved to ("" without one). */
  preview: { readonly matching: number; readonly wouldClose: number; readonly seenBefore: string } | undefined
  error: string | undefined
}) => {
  const p = props.preview
  const n = (k: number) => `${k.toLocaleString("en-US")} ${k === 1 ? "incident" : "incidents"}`
  return (
    <Layout title="Close incidents" viewer={props.viewer} section="incidents">
      <p class="small">
        <a href="/incidents">← Incidents</a>
      </p>
      <h1>{p && p.wouldClose > 0 ? `Close ${n(p.wouldClose)}?` : "Close incidents"}</h1>
      {props.error !== undefined && <FlashNotice flash={{ kind: "error", text: props.error }} />}
      {p && (
        <p id="bulk-count" role="status">
          {p.matching === 0
            ? "No open incident matches this filter."
            : p.matching > p.wouldClose
              ? `${n(p.matching)} match; at most ${n(p.wouldClose)} are closed at once (the least recently seen). Run it again for the rest.`
              : `${p.matching.toLocaleString("en-US")} open ${p.matching === 1 ? "incident matches" : "incidents match"} this filter now.`}
        </p>
      )}
      {p && p.wouldClose > 0 && (
        <form class="panel" method="post" action="/incidents/bulk-close">
          <h2>Reason</h2>
          <Csrf token={props.viewer.csrfToken} />
          <input type="hidden" name="sensor" value={props.fields.sensor} />
          <input type="hidden" name="source" value={props.fields.source} />
          <input type="hidden" name="olderThan" value={props.fields.olderThan} />
          <input type="hidden" name="seenBefore" value={p.seenBefore} />
          <input type="hidden" name="expected" value={String(p.matching)} />
          <p class="small muted">
            {p.seenBefore === ""
              ? "At most the incidents counted here are closed."
              : `At most the incidents counted here are closed: those last seen before ${p.seenBefore}.`}{" "}
            If more match when you confirm, nothing is closed and the new count is shown.
          </p>
          <CloseFields idPrefix="bulk" />
          <button type="submit">Close {n(p.wouldClose)}</button>
        </form>
      )}
      <form class="panel" method="get" action="/incidents/bulk-close">
        <h2>Filter (open incidents)</h2>
        <FilterFields sensors={props.sensors} fields={props.fields} />
        <button type="submit" class="secondary">
          Preview again
        </button>
      </form>
    </Layout>
  )
}

/** D30 Incident, the `url` target (D25): everything the API shows, the timeline, Close. */
/**
 * What enrichment knows of the source address, each only when known. The reverse DNS name and the AS organization
 * are written by whoever holds the address: attacker text, boxed as such.
 */
export const SourceFacts = ({ source }: { source: Incident["source"] }) => (
  <>
    {source.reverseDns !== null && (
      <>
        <dt>Reverse DNS</dt>
        <dd>
          <Attacker value={source.reverseDns} cut={253} />{" "}
          <span class="muted small">(forward-confirmed; written by the address's owner)</span>
        </dd>
      </>
    )}
    {(source.asn !== null || source.asOrganization !== null) && (
      <>
        <dt>Autonomous system</dt>
        <dd>
          {source.asn !== null && <span class="mono">AS{source.asn}</span>}
          {source.asn !== null && source.asOrganization !== null && " "}
          {source.asOrganization !== null && <Attacker value={source.asOrganization} />}
        </dd>
      </>
    )}
    {source.country !== null && (
      <>
        <dt>Country</dt>
        <dd class="mono">{source.country}</dd>
      </>
    )}
  </>
)

/** The page's lead when the source is one of the organization's own machines. */
export const InsideBanner = ({ network, ip }: { network: { cidr: string; label: string }; ip: string }) => (
  <div class="banner banner-inside" role="note" id="banner-inside">
    <p class="banner-title">
      From inside your network ({network.label}, <span class="mono">{network.cidr}</span>)
    </p>
    <p>
      <span class="mono">{ip}</span> is one of your own machines, already past your perimeter: find out what runs on it
      and who uses it.
    </p>
  </div>
)

/** The page's lead when a member event logged in with a credential the organization planted. */
const BaitBanner = () => (
  <div class="banner banner-bait" role="alert" id="banner-bait">
    <p class="banner-title">Bait credential used</p>
    <p>
      Someone logged in with a credential that works nowhere and exists only where you planted it: whoever did it read
      it there. Treat where it is planted, and the source, as compromised.
    </p>
  </div>
)

/** The page's lead when the source touched other decoys too: how many, and the source's own page. */
const OtherSensorsBanner = ({ n, ip }: { n: number; ip: string }) => (
  <div class="banner banner-linked" id="banner-other-sensors">
    <p>
      <strong>
        Also seen on {n} other {n === 1 ? "sensor" : "sensors"}
      </strong>{" "}
      within 7 days of this incident's activity.{" "}
      <a href={`/sources/${ip}`}>
        Everything from <span class="mono">{ip}</span>
      </a>
    </p>
  </div>
)

export const IncidentPage = (props: {
  viewer: Viewer
  incident: Incident
  more: string | undefined
  now: Date
  flash: Flash | undefined
  /** The recorded transitions and the notes, oldest first (none given: none shown). */
  history?: ReadonlyArray<HistoryEntry> | undefined
  notes?: ReadonlyArray<NoteEntry> | undefined
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
      {i.baitCredentialUsed && <BaitBanner />}
      {i.source.scope === "internal" && i.source.network && <InsideBanner network={i.source.network} ip={i.sourceIp} />}
      {i.otherSensors > 0 && <OtherSensorsBanner n={i.otherSensors} ip={i.sourceIp} />}
      <div class="panel">
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono">{i.id}</dd>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={i.status} />
            {i.status === "open" && (
              <>
                {" "}
                <a href="#close" class="small">
                  Close…
                </a>
              </>
            )}
          </dd>
          <dt>Source</dt>
          <dd>
            <a href={`/sources/${i.sourceIp}`} class="mono" title="Everything from this address, on every sensor">
              {i.sourceIp}
            </a>
            {i.source.scope === "internal" && i.source.network ? (
              <span class="small"> inside: {i.source.network.label}</span>
            ) : null}
            {props.viewer.role === "admin" && (
              <>
                {" "}
                <a href={`/settings/ignore?incident=${i.id}#add`} class="small">
                  Ignore activity like this…
                </a>
              </>
            )}
          </dd>
          <SourceFacts source={i.source} />
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
      <div class="panel">
        <h2>History</h2>
        <IncidentHistory history={props.history ?? []} now={props.now} />
      </div>
      <div class="panel">
        <h2>Notes</h2>
        <IncidentNotes notes={props.notes ?? []} now={props.now} />
        <form method="post" action={`/incidents/${i.id}/notes`}>
          <Csrf token={props.viewer.csrfToken} />
          <div class="field">
            <label for="note-body">Add a note</label>
            <textarea id="note-body" name="note" class="wide" rows={3} maxLength={2000} required />
          </div>
          <button type="submit" class="secondary">
            Add note
          </button>
        </form>
      </div>
      {i.status === "open" && (
        <form class="panel" id="close" method="post" action={`/incidents/${i.id}/close`}>
          <h2>Close this incident</h2>
          <Csrf token={props.viewer.csrfToken} />
          <CloseFields idPrefix="close" />
          <button type="submit">Close incident</button>
        </form>
      )}
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
