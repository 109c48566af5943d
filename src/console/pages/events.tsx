import type { Event } from "../../domain/models.ts"
import { FilterSelect, Layout, type Viewer } from "./components.tsx"
import { EventsLeftOut, EventTable, fitEvents } from "./timeline.tsx"

export interface EventFiltersForm {
  readonly type: string
  readonly from: string
  readonly to: string
  readonly incidentId: string
}

/**
 * Where the list goes on after `last`: the same filters, `after` the last event shown (the server's paging token,
 * `<time in ms>.<id>`, as the Next link's).
 */
const continueAfter = (filters: EventFiltersForm, last: Event): string => {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(filters)) if (value !== "") params.set(name, value)
  params.set("after", `${last.time.getTime()}.${last.id}`)
  return `/events?${params.toString()}`
}

/** The API request for these filters. */
const apiRequest = (filters: EventFiltersForm): string => {
  const params = new URLSearchParams()
  if (filters.type !== "") params.set("type", filters.type)
  if (filters.incidentId !== "") params.set("incidentId", filters.incidentId)
  const text = params.toString()
  return `GET /v1/events${text === "" ? "" : `?${text}`}`
}

/** D30 Events: type and time filters, keyset paging; a page stops adding events past its size budget. */
export const EventsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<Event>
  types: ReadonlyArray<string>
  filters: EventFiltersForm
  error: string | undefined
  next: string | undefined
  now: Date
}) => {
  const { shown, left } = fitEvents(props.rows)
  const last = shown[shown.length - 1]
  return (
    <Layout title="Events" viewer={props.viewer} section="events">
      <h1>Events</h1>
      <p class="small">
        Events an ignore rule matched are not listed here: <a href="/events/ignored">Show ignored events</a>
      </p>
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
      <EventTable events={shown} now={props.now} />
      <EventsLeftOut
        n={left}
        link={last && [continueAfter(props.filters, last), "the next page"]}
        api={apiRequest(props.filters)}
      />
      {/* Cut short: the next page starts after the last event shown, not after the last one read. */}
      <div class="pager">{left === 0 && props.next && <a href={props.next}>Next page</a>}</div>
    </Layout>
  )
}
