import { Csrf, DataTable, FlashNotice, ServiceText, SeverityBadge, Time, type Viewer } from "../components.tsx"
import { Layout } from "../layout.tsx"
import { CloseFields } from "./history.tsx"

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
export const BulkCloseForm = ({ sensors }: { sensors: ReadonlyArray<readonly [id: string, name: string]> }) => (
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

/** One incident a bulk close would close, as its preview lists it. */
export interface BulkPreviewIncident {
  readonly id: string
  /** The service's title, quoting attacker text (shown marked as such). */
  readonly title: string
  readonly severity: string
  readonly sensorName: string
  readonly sourceIp: string
  readonly lastSeenAt: Date
}

/**
 * The first incidents the close would close (least recently seen first, the order it closes them in), each with a
 * link to its page, and how many more it would close.
 */
const PreviewList = (props: { first: ReadonlyArray<BulkPreviewIncident>; wouldClose: number; now: Date }) => {
  const more = props.wouldClose - props.first.length
  return (
    <div class="panel triage-preview">
      <h2>{props.first.length < props.wouldClose ? `The first ${props.first.length}` : "The incidents"}</h2>
      <DataTable columns={["Severity", "Incident", "Sensor", "Source", "Last seen"]} rows={props.first} stacked>
        {(i) => (
          <tr>
            <td data-label="Severity">
              <SeverityBadge severity={i.severity} />
            </td>
            <td data-label="Incident">
              <a href={`/incidents/${i.id}`}>
                <ServiceText text={i.title} known={[i.sensorName]} />
              </a>
            </td>
            <td data-label="Sensor">{i.sensorName}</td>
            <td class="mono" data-label="Source">
              {i.sourceIp}
            </td>
            <td data-label="Last seen">
              <Time at={i.lastSeenAt} now={props.now} />
            </td>
          </tr>
        )}
      </DataTable>
      {more > 0 && (
        <p id="bulk-more" class="small">
          and {more.toLocaleString("en-US")} more
        </p>
      )}
    </div>
  )
}

/** The bulk close's preview: how many open incidents match now, and the reason and note to close them with. */
export const BulkClosePage = (props: {
  viewer: Viewer
  sensors: ReadonlyArray<readonly [id: string, name: string]>
  fields: BulkCloseFields
  /** The count now and the absolute time the filter's "longer ago than" was resolved to ("" without one). */
  preview:
    | {
        readonly matching: number
        readonly wouldClose: number
        readonly seenBefore: string
        /** The first of the incidents the close would close (none given: no list). */
        readonly first?: ReadonlyArray<BulkPreviewIncident> | undefined
      }
    | undefined
  error: string | undefined
  now?: Date | undefined
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
      {p?.first !== undefined && p.first.length > 0 && (
        <PreviewList first={p.first} wouldClose={p.wouldClose} now={props.now ?? new Date()} />
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
