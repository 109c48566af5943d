import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { IncidentAdmin } from "../../admin/IncidentAdmin.ts"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { isId } from "../../domain/ids.ts"
import { INCIDENT_EVENTS_SHOWN } from "../../domain/models.ts"
import { parseTimestamp } from "../../domain/time.ts"
import { AppConfig } from "../../platform/config.ts"
import { EventsRepo } from "../../repos/EventsRepo.ts"
import { IncidentNotesRepo } from "../../repos/IncidentNotesRepo.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentIncident, presentIncidentSummary } from "../../repos/present.ts"
import { TransitionsRepo } from "../../repos/TransitionsRepo.ts"
import { ConsoleReads } from "../ConsoleReads.ts"
import { csvResponse, csvStream } from "../csv.ts"
import { Blank, decodeForm, firstValues, Text } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { decodeAfter, encodeAfter, PAGE_SIZE, readIncidentFilters } from "../listFilters.ts"
import { type FieldWords, invalidText } from "../refusals.ts"
import { notFound } from "../responses.tsx"
import { query } from "../session.ts"
import { BulkClosePage } from "./bulkClosePage.tsx"
import { INCIDENT_CSV_COLUMNS, incidentCsvRecord } from "./csv.ts"
import { IncidentPage } from "./incidentPage.tsx"
import { IncidentsPage } from "./incidentsPage.tsx"

/** Close an incident: its reason (the service checks it is one of the reasons) and an optional note. */
const CloseForm = Schema.Struct({ reason: Text, note: Text })
/** A note on an incident. */
const NoteForm = Schema.Struct({ note: Text })
/** A bulk close's filter, as typed (the preview's GET and the confirm's POST carry the same fields). */
const BulkFilterForm = Schema.Struct({ sensor: Blank, source: Blank, olderThan: Blank })

const PREVIEW_MISSING = "The preview's count is missing: check the count below and confirm again."
/**
 * A bulk close's confirm: the filter, the preview's count and the absolute time its "longer ago than" was resolved
 * to; without them (an old form) there is nothing confirmed.
 */
const BulkCloseForm = Schema.Struct({
  ...BulkFilterForm.fields,
  seenBefore: Blank,
  expected: Schema.propertySignature(
    Schema.compose(
      Schema.String.pipe(Schema.pattern(/^\d{1,9}$/, { message: () => PREVIEW_MISSING })),
      Schema.NumberFromString,
    ),
  ).annotations({ missingMessage: () => PREVIEW_MISSING }),
  reason: Text,
  note: Text,
}).pipe(Schema.filter((f) => f.olderThan.trim() === "" || f.seenBefore !== "" || PREVIEW_MISSING))

/** How the bulk close's form names its filter's inputs, where the console's usual words differ. */
const BULK_WORDS: FieldWords = { source: "the source IP" }

/** What the bulk close's preview shows and its confirm carries back: the count and the resolved time. */
const previewOf = (p: {
  readonly matching: number
  readonly wouldClose: number
  readonly filter: { readonly seenBefore?: Date | undefined }
}) => ({ matching: p.matching, wouldClose: p.wouldClose, seenBefore: p.filter.seenBefore?.toISOString() ?? "" })

/**
 * Incidents of the user's organization: the list (with its live refresh and its CSV export), an incident's page,
 * closing and notes (any user of the organization, not only admins: IncidentAdmin checks and audits) and the bulk
 * close.
 */
export const incidentRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const reads = yield* ConsoleReads
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const sensorAdmin = yield* SensorAdmin
    const incidentAdmin = yield* IncidentAdmin
    const transitions = yield* TransitionsRepo
    const incidentNotes = yield* IncidentNotesRepo
    const { page, action, sessionOf, flashTo, readFlash, refused } = kit

    const sensorNames = (orgId: string) =>
      Effect.map(sensorAdmin.list(orgId), (list) => list.map((x) => [x.id, x.name] as const))

    const listIncidents = page((s) =>
      Effect.gen(function* () {
        const params = yield* query
        const filters = readIncidentFilters(params)
        const after = decodeAfter(params.get("after"), "incident")
        const rows = yield* incidents.list({ orgId: s.orgId, ...filters, after, fetch: PAGE_SIZE + 1 })
        const shown = rows.slice(0, PAGE_SIZE)
        const last = shown[shown.length - 1]
        return html(
          <IncidentsPage
            viewer={s.viewer}
            rows={shown.map((r) => presentIncidentSummary(r, config.appUrl))}
            filters={filters}
            next={rows.length > PAGE_SIZE && last ? encodeAfter(last.lastSeenAt, last.id) : undefined}
            first={after === undefined}
            now={new Date()}
            sensors={yield* sensorNames(s.orgId)}
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
        const filters = readIncidentFilters(yield* query)
        const body = csvStream(
          INCIDENT_CSV_COLUMNS,
          (after, fetch) => incidents.list({ orgId: s.orgId, ...filters, after, fetch }),
          (row) => ({ time: row.lastSeenAt, id: row.id }),
          (row) => incidentCsvRecord(presentIncidentSummary(row, config.appUrl)),
        )
        return csvResponse("incidents", body)
      }),
    )

    const showIncident = page((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
        const row = yield* incidents.findById(s.orgId, id)
        if (Option.isNone(row)) return notFound(s.viewer)
        const [members, history, notes] = yield* Effect.all([
          events.members(s.orgId, id, INCIDENT_EVENTS_SHOWN),
          transitions.history(s.orgId, id),
          incidentNotes.forIncident(s.orgId, id),
        ])
        return html(
          <IncidentPage
            viewer={s.viewer}
            incident={presentIncident(row.value, members, config.appUrl)}
            more={row.value.eventCount > members.length ? `/events?incidentId=${id}` : undefined}
            now={new Date()}
            flash={yield* readFlash(s)}
            history={history}
            notes={notes}
          />,
        )
      }),
    )

    /**
     * A POST about one incident of the organization (any user, not only admins): an unknown id, or another
     * organization's, is the 404 page; then `change`, and back to the incident with `done`, or the refusal.
     */
    const onIncident = <A, E, R>(
      done: string,
      change: (id: string, fields: Record<string, string>) => Effect.Effect<A, E, R>,
    ) =>
      action(
        (s, fields) =>
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.params
            if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
            if (Option.isNone(yield* incidents.findById(s.orgId, id))) return notFound(s.viewer)
            return yield* change(id, fields).pipe(
              Effect.zipRight(flashTo(s, `/incidents/${id}`, { kind: "ok", text: done })),
              refused(s, `/incidents/${id}`),
            )
          }),
        false,
      )

    const closeIncident = onIncident("Incident closed.", (id, fields) =>
      Effect.flatMap(decodeForm(CloseForm)(fields), (form) => incidentAdmin.close(id, form)),
    )
    const addNote = onIncident("Note added.", (id, fields) =>
      Effect.flatMap(decodeForm(NoteForm)(fields), (form) => incidentAdmin.addNote(id, form.note)),
    )

    /** The bulk close's preview: its count and its absolute "last seen before" time, or why the filter is refused. */
    const previewBulkClose = page((s) =>
      Effect.gen(function* () {
        const fields = yield* decodeForm(BulkFilterForm)(firstValues(yield* query))
        const preview = yield* incidentAdmin.previewBulk(s.orgId, fields).pipe(
          Effect.map((p) => ({ preview: p, error: undefined })),
          Effect.catchTags({
            Invalid: (e) => Effect.succeed({ preview: undefined, error: invalidText(e, BULK_WORDS) }),
          }),
        )
        const flash = yield* readFlash(s)
        return html(
          <BulkClosePage
            viewer={s.viewer}
            sensors={yield* sensorNames(s.orgId)}
            fields={fields}
            preview={preview.preview && previewOf(preview.preview)}
            error={preview.error ?? (flash?.kind === "error" ? flash.text : undefined)}
          />,
        )
      }),
    )

    /** Closes at most the previewed count, of the same absolute filter; more matching by then is previewed again. */
    const bulkClose = action(
      (s, sent) =>
        Effect.gen(function* () {
          const fields = yield* decodeForm(BulkFilterForm)(sent)
          const back = `/incidents/bulk-close?${new URLSearchParams(fields).toString()}`
          return yield* Effect.gen(function* () {
            const form = yield* decodeForm(BulkCloseForm)(sent)
            const absolute = { ...fields, olderThan: form.seenBefore }
            const done = yield* incidentAdmin.closeBulk(
              s.orgId,
              absolute,
              { reason: form.reason, note: form.note },
              form.expected,
            )
            if (done._tag === "Changed") {
              return html(
                <BulkClosePage
                  viewer={s.viewer}
                  sensors={yield* sensorNames(s.orgId)}
                  fields={fields}
                  preview={previewOf(done)}
                  error={`Nothing was closed: ${done.matching.toLocaleString("en-US")} open incidents match now, more than the ${done.previewed.toLocaleString("en-US")} previewed. Check the new count and confirm again.`}
                />,
              )
            }
            return yield* flashTo(s, "/incidents", {
              kind: "ok",
              text:
                `${done.closed} ${done.closed === 1 ? "incident" : "incidents"} closed.` +
                (done.remaining > 0 ? ` ${done.remaining} still match: close them the same way.` : ""),
            })
          }).pipe(refused(s, back, BULK_WORDS))
        }),
      false,
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/incidents", listIncidents),
      HttpRouter.get("/live/incidents", liveIncidents),
      HttpRouter.get("/incidents/:id", showIncident),
      HttpRouter.post("/incidents/:id/close", closeIncident),
      HttpRouter.post("/incidents/:id/notes", addNote),
      // Bulk close: the filter (GET, the preview with its count and its absolute "last seen before" time) then the
      // close of at most that count, of the same absolute filter.
      HttpRouter.get("/incidents/bulk-close", previewBulkClose),
      HttpRouter.post("/incidents/bulk-close", bulkClose),
      HttpRouter.get("/incidents.csv", exportIncidents),
    )
  })
