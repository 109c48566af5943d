import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import type { CursorPosition } from "../../domain/cursor.ts"
import { EVENT_TYPE_NAMES } from "../../domain/eventTypes.ts"
import { type EventListQuery, EventsRepo } from "../../repos/EventsRepo.ts"
import { presentEvent } from "../../repos/present.ts"
import { csvResponse, csvStream } from "../csv.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { decodeAfter, encodeAfter, eventFiltersForm, PAGE_SIZE, readEventFilters } from "../listFilters.ts"
import { query } from "../session.ts"
import { EVENT_CSV_COLUMNS, eventCsvRecord } from "./csv.ts"
import { EventsPage } from "./eventsPage.tsx"

/**
 * Events of the user's organization: the list with its filters, and the same filters as a CSV file. Each filter is
 * read on its own (listFilters.ts): on the page, one that cannot be read is named and left out while the others still
 * apply; an export with one is refused, saying why.
 */
export const eventRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const events = yield* EventsRepo
    const sensorAdmin = yield* SensorAdmin
    const { page } = kit

    const listEvents = page((s) =>
      Effect.gen(function* () {
        const params = yield* query
        const form = eventFiltersForm(params)
        const read = readEventFilters(form)
        const after = decodeAfter(params.get("after"), "event")
        const [rows, sensors] = yield* Effect.all([
          events.list({
            orgId: s.orgId,
            filters: read.filters,
            sourceNetwork: read.sourceNetwork,
            scope: read.scope,
            q: read.q,
            after,
            fetch: PAGE_SIZE + 1,
          }),
          sensorAdmin.list(s.orgId),
        ])
        const shown = rows.slice(0, PAGE_SIZE)
        const last = shown[shown.length - 1]
        let next: string | undefined
        if (rows.length > PAGE_SIZE && last) {
          const nextParams = new URLSearchParams(params)
          nextParams.delete("flash")
          nextParams.set("after", encodeAfter(last.time, last.id))
          next = `/events?${nextParams.toString()}`
        }
        return html(
          <EventsPage
            viewer={s.viewer}
            rows={shown.map(presentEvent)}
            types={EVENT_TYPE_NAMES}
            sensors={sensors.map((x) => [x.id, x.name] as const)}
            filters={{ ...form, incidentId: read.filters.incidentId ?? "" }}
            applied={read.filters}
            errors={read.errors}
            next={next}
            now={new Date()}
          />,
        )
      }),
    )

    const exportEvents = page((s) =>
      Effect.gen(function* () {
        const read = readEventFilters(eventFiltersForm(yield* query))
        // A filter that cannot be read is never silently dropped from a file: the export is refused, saying why.
        if (read.errors.length > 0) {
          return HttpServerResponse.text(`Nothing exported. ${read.errors.join(" ")}\n`, {
            status: 400,
            headers: { "cache-control": "no-store" },
          })
        }
        const listQuery = (after: CursorPosition | undefined, fetch: number): EventListQuery => ({
          orgId: s.orgId,
          filters: read.filters,
          sourceNetwork: read.sourceNetwork,
          scope: read.scope,
          q: read.q,
          after,
          fetch,
        })
        const body = csvStream(
          EVENT_CSV_COLUMNS,
          (after, fetch) => events.list(listQuery(after, fetch)),
          (row) => ({ time: row.time, id: row.id }),
          (row) => eventCsvRecord(presentEvent(row), row.incidentId),
        )
        return csvResponse("events", body)
      }),
    )

    return HttpRouter.empty.pipe(HttpRouter.get("/events", listEvents), HttpRouter.get("/events.csv", exportEvents))
  })
