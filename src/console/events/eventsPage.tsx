import type { Event } from "../../domain/models.ts"
import { SEVERITIES } from "../../domain/severity.ts"
import type { EventFilters } from "../../repos/EventsRepo.ts"
import { FilterSelect, type Viewer } from "../components.tsx"
import { EventsLeftOut, EventTable, fitEvents } from "../eventTable.tsx"
import { Layout } from "../layout.tsx"
import { EVENT_FILTER_NAMES, type EventFiltersForm, SEARCH_MAX } from "../listFilters.ts"

export type { EventFiltersForm }

/** The filters as given (the page's form fields); the ones a caller leaves out are empty. */
type FiltersGiven = Pick<EventFiltersForm, "type" | "from" | "to" | "incidentId"> & Partial<EventFiltersForm>

/** The query string of these filters (the values as typed), without `after`. */
const filterParams = (filters: FiltersGiven): URLSearchParams => {
  const params = new URLSearchParams()
  for (const name of EVENT_FILTER_NAMES) {
    const value = filters[name] ?? ""
    if (value !== "") params.set(name, value)
  }
  return params
}

/**
 * Where the list goes on after `last`: the same filters, `after` the last event shown (the server's paging token,
 * `<time in ms>.<id>`, as the Next link's).
 */
const continueAfter = (filters: FiltersGiven, last: Event): string => {
  const params = filterParams(filters)
  params.set("after", `${last.time.getTime()}.${last.id}`)
  return `/events?${params.toString()}`
}

/**
 * The API request for the filters that were applied (the API has no source-network, inside-or-outside or search
 * filter: those are left out).
 */
const apiRequest = (filters: FiltersGiven, applied: EventFilters | undefined): string => {
  const params = new URLSearchParams()
  if (applied === undefined) {
    if (filters.type !== "") params.set("type", filters.type)
    if (filters.incidentId !== "") params.set("incidentId", filters.incidentId)
  } else {
    if (applied.type !== undefined) params.set("type", applied.type)
    if (applied.severity !== undefined) params.set("severity", applied.severity)
    if (applied.sensorId !== undefined) params.set("sensorId", applied.sensorId)
    if (applied.sourceIp !== undefined) params.set("sourceIp", applied.sourceIp)
    if (applied.incidentId !== undefined) params.set("incidentId", applied.incidentId)
    if (applied.from !== undefined) params.set("from", applied.from.toISOString())
    if (applied.to !== undefined) params.set("to", applied.to.toISOString())
  }
  const text = params.toString()
  return `GET /v1/events${text === "" ? "" : `?${text}`}`
}

/**
 * Events: type, severity, sensor, source (an address or a CIDR network), inside or outside the organization's
 * networks (the event's incident's judgement), time filters (a plain date is that day in UTC) and a search of attacker
 * input and summaries, keyset paging, a CSV export of the same filters; a page stops adding events past its size budget. A
 * filter that cannot be read is named, with what it accepts, and the list shows what the other filters select.
 */
export const EventsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<Event>
  types: ReadonlyArray<string>
  /** The organization's sensors, as (id, name). */
  sensors?: ReadonlyArray<readonly [string, string]>
  filters: FiltersGiven
  /** The filters that were applied (read from `filters`). */
  applied?: EventFilters
  error?: string | undefined
  /** One sentence per filter that could not be read (and so was not applied). */
  errors?: ReadonlyArray<string>
  next: string | undefined
  now: Date
}) => {
  const { shown, left } = fitEvents(props.rows)
  const last = shown[shown.length - 1]
  const errors = [...(props.errors ?? []), ...(props.error === undefined ? [] : [props.error])]
  const exportQuery = filterParams(props.filters).toString()
  return (
    <Layout title="Events" viewer={props.viewer} section="events">
      <h1>Events</h1>
      <p class="small">
        Events an ignore rule matched are not listed here: <a href="/events/ignored">Show ignored events</a>
      </p>
      <form class="filters search-filters" method="get" action="/events">
        <div class="search-q">
          <label for="q">Search attacker input and summaries</label>
          <input
            id="q"
            name="q"
            type="search"
            class="mono"
            maxlength={SEARCH_MAX}
            placeholder="wget http://, a hash, a file name"
            value={props.filters.q ?? ""}
          />
        </div>
        <FilterSelect id="type" label="Type" options={props.types} selected={props.filters.type} />
        <FilterSelect id="severity" label="Severity" options={SEVERITIES} selected={props.filters.severity ?? ""} />
        <FilterSelect id="sensorId" label="Sensor" options={props.sensors ?? []} selected={props.filters.sensorId} />
        <div>
          <label for="sourceIp">Source IP or CIDR</label>
          <input
            id="sourceIp"
            name="sourceIp"
            type="text"
            placeholder="203.0.113.0/24"
            value={props.filters.sourceIp ?? ""}
          />
        </div>
        <div>
          <label for="from">From (UTC date or RFC 3339)</label>
          <input id="from" name="from" type="text" placeholder="2026-11-20" value={props.filters.from} />
        </div>
        <div>
          <label for="to">To (UTC date, inclusive, or RFC 3339)</label>
          <input id="to" name="to" type="text" placeholder="2026-11-21" value={props.filters.to} />
        </div>
        <FilterSelect
          id="scope"
          label="Inside or outside"
          options={[
            ["internal", "Inside your networks"],
            ["external", "Outside"],
          ]}
          selected={props.filters.scope ?? ""}
        />
        {props.filters.incidentId !== "" && <input type="hidden" name="incidentId" value={props.filters.incidentId} />}
        <button type="submit">Filter</button>
        <a href={`/events.csv${exportQuery === "" ? "" : `?${exportQuery}`}`} download>
          Export CSV
        </a>
      </form>
      {props.filters.incidentId !== "" && (
        <p>
          Events of incident <a href={`/incidents/${props.filters.incidentId}`}>{props.filters.incidentId}</a>
        </p>
      )}
      {errors.length > 0 && (
        <div class="notice notice-error" role="alert">
          {errors.map((text) => (
            <p>{text}</p>
          ))}
          {(props.errors?.length ?? 0) > 0 && (
            <p>A filter that cannot be read is not applied: the list uses the others.</p>
          )}
        </div>
      )}
      <EventTable events={shown} now={props.now} />
      <EventsLeftOut
        n={left}
        link={last && [continueAfter(props.filters, last), "the next page"]}
        api={apiRequest(props.filters, props.applied)}
      />
      {/* Cut short: the next page starts after the last event shown, not after the last one read. */}
      <div class="pager">{left === 0 && props.next && <a href={props.next}>Next page</a>}</div>
    </Layout>
  )
}
