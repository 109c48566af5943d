import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { parseTimestamp } from "../../domain/time.ts"
import { AppConfig } from "../../platform/config.ts"
import { ConsoleListsRepo } from "../../repos/ConsoleListsRepo.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentIncidentSummary } from "../../repos/present.ts"
import { ConsoleReads } from "../ConsoleReads.ts"
import { csvResponse, csvStream } from "../csv.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import {
  decodeAfter,
  encodeAfter,
  incidentFilterQuery,
  incidentFiltersForm,
  PAGE_SIZE,
  readIncidentFilters,
} from "../listFilters.ts"
import { query } from "../session.ts"
import { INCIDENT_CSV_COLUMNS, incidentCsvRecord, withCloseNotes } from "./csv.ts"
import { IncidentsPage } from "./incidentsPage.tsx"

/** The organization's sensors as (id, name) pairs, for the incident pages' sensor choices. */
export const sensorChoices = (sensorAdmin: SensorAdmin, orgId: string) =>
  Effect.map(sensorAdmin.list(orgId), (list) => list.map((x) => [x.id, x.name] as const))

/**
 * The incidents list of the user's organization: its page with every filter and the search, its live refresh and
 * its CSV export of the same filters. Each filter is read on its own (listFilters.ts): on the page, one that cannot
 * be read is named and left out while the others still apply; an export with one is refused, saying why.
 */
export const incidentListRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const reads = yield* ConsoleReads
    const lists = yield* ConsoleListsRepo
    const incidents = yield* IncidentsRepo
    const sensorAdmin = yield* SensorAdmin
    const { page, sessionOf, readFlash } = kit

    const sensorNames = (orgId: string) => sensorChoices(sensorAdmin, orgId)

    const listIncidents = page((s) =>
      Effect.gen(function* () {
        const params = yield* query
        const form = incidentFiltersForm(params)
        const [users, sensors] = yield* Effect.all([lists.users(s.orgId), sensorNames(s.orgId)])
        const read = readIncidentFilters(form, s.viewer.userId, users)
        const after = decodeAfter(params.get("after"), "incident")
        const rows = yield* lists.incidents({ orgId: s.orgId, filters: read.filters, after, fetch: PAGE_SIZE + 1 })
        const shown = rows.slice(0, PAGE_SIZE)
        const last = shown[shown.length - 1]
        const rawAfter = params.get("after")
        return html(
          <IncidentsPage
            viewer={s.viewer}
            rows={shown.map((r) => presentIncidentSummary(r, config.appUrl))}
            form={form}
            errors={read.errors}
            next={rows.length > PAGE_SIZE && last ? encodeAfter(last.lastSeenAt, last.id) : undefined}
            first={after === undefined}
            now={new Date()}
            sensors={sensors}
            users={users}
            back={`/incidents${incidentFilterQuery(form, after !== undefined && rawAfter !== null ? { after: rawAfter } : {})}`}
            flash={yield* readFlash(s)}
          />,
        )
      }),
    )

    /** Polled by an open tab every 10 s: reads the session without touching it, so the tab idles out. */
    const liveIncidents = Effect.gen(function* () {
      const session = yield* sessionOf({ touch: false })
      if (Option.isNone(session)) return HttpServerResponse.unsafeJson({ changed: false }, { status: 401 })
      const since = parseTimestamp((yield* query).get("since") ?? "")
      const changed = since === undefined ? false : yield* reads.changedSince(session.value.orgId, since)
      return HttpServerResponse.unsafeJson({ changed }, { headers: { "cache-control": "no-store" } })
    })

    /** The incident list's filters as a CSV file (the same query parameters as the page). */
    const exportIncidents = page((s) =>
      Effect.gen(function* () {
        const read = readIncidentFilters(
          incidentFiltersForm(yield* query),
          s.viewer.userId,
          yield* lists.users(s.orgId),
        )
        // A filter that cannot be read is never silently dropped from a file: the export is refused, saying why.
        if (read.errors.length > 0) {
          return HttpServerResponse.text(`Nothing exported. ${read.errors.join(" ")}\n`, {
            status: 400,
            headers: { "cache-control": "no-store" },
          })
        }
        const body = csvStream(
          INCIDENT_CSV_COLUMNS,
          // Each page with the note of each closed incident's latest close.
          (after, fetch) =>
            withCloseNotes(
              incidents.latestCloseNotes,
              s.orgId,
              lists.incidents({ orgId: s.orgId, filters: read.filters, after, fetch }),
            ),
          (row) => ({ time: row.lastSeenAt, id: row.id }),
          (row) => incidentCsvRecord(presentIncidentSummary(row, config.appUrl), row.closeNote),
        )
        return csvResponse("incidents", body)
      }),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/incidents", listIncidents),
      HttpRouter.get("/live/incidents", liveIncidents),
      HttpRouter.get("/incidents.csv", exportIncidents),
    )
  })
