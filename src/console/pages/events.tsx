import type { Event } from "../../domain/models.ts"
import { FilterSelect, Layout, type Viewer } from "./components.tsx"
import { EventTable } from "./incidents.tsx"

export interface EventFiltersForm {
  readonly type: string
  readonly from: string
  readonly to: string
  readonly incidentId: string
}

/** D30 Events: type and time filters, keyset paging. */
export const EventsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<Event>
  types: ReadonlyArray<string>
  filters: EventFiltersForm
  error: string | undefined
  next: string | undefined
  now: Date
}) => (
  <Layout title="Events" viewer={props.viewer} section="events">
    <h1>Events</h1>
    <form class="filters" method="get" action="/events">
      <FilterSelect id="type" label="Type" options={props.types} selected={props.filters.type} />
      <div>
        <label for="from">From (UTC, RFC 3339)</label>
        <input id="from" name="from" type="text" placeholder="2026-11-20T00:00:00Z" value={props.filters.from} />
      </div>
      <div>
        <label for="to">To (UTC, RFC 3339)</label>
        <input id="to" name="to" type="text" placeholder="2026-11-21T00:00:00Z" value={props.filters.to} />
      </div>
      {props.filters.incidentId !== "" && <input type="hidden" name="incidentId" value={props.filters.incidentId} />}
      <button type="submit">Filter</button>
    </form>
    {props.filters.incidentId !== "" && (
      <p>
        Events of incident <a href={`/incidents/${props.filters.incidentId}`}>{props.filters.incidentId}</a>
      </p>
    )}
    {props.error && (
      <div class="notice notice-error" role="alert">
        {props.error}
      </div>
    )}
    <EventTable events={props.rows} now={props.now} />
    <div class="pager">{props.next && <a href={props.next}>Next page</a>}</div>
  </Layout>
)
