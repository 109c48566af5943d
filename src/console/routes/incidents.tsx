import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { IncidentAdmin } from "../../admin/IncidentAdmin.ts"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { EVENT_TYPE_NAMES } from "../../domain/eventTypes.ts"
import { isId } from "../../domain/ids.ts"
import { INCIDENT_EVENTS_SHOWN } from "../../domain/models.ts"
import { Severity } from "../../domain/severity.ts"
import { parseTimestamp } from "../../domain/time.ts"
import { AppConfig } from "../../platform/config.ts"
import { EventsRepo } from "../../repos/EventsRepo.ts"
import { IncidentNotesRepo } from "../../repos/IncidentNotesRepo.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentEvent, presentIncident, presentIncidentSummary } from "../../repos/present.ts"
import { TransitionsRepo } from "../../repos/TransitionsRepo.ts"
import { ConsoleReads } from "../ConsoleReads.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { eventFiltersForm, readEventFilters } from "../listFilters.ts"
import { EventsPage } from "../pages/events.tsx"
import { type BulkCloseFields, BulkClosePage, IncidentPage, IncidentsPage } from "../pages/incidents.tsx"
import { OverviewPage } from "../pages/overview.tsx"
import { notFound } from "../responses.tsx"
import { query } from "../session.ts"

const PAGE_SIZE = 50

/** ?after= of the incident and event lists: the keyset position as `<ms>.<id>` (org-scoped in SQL, D7). */
const encodeAfter = (time: Date, id: string) => `${time.getTime()}.${id}`
const decodeAfter = (text: string | undefined, kind: "incident" | "event") => {
  if (text === undefined) return undefined
  const match = /^(\d{1,15})\.(.+)$/.exec(text)
  if (!match || !isId(kind, match[2] as string)) return undefined
  return { time: new Date(Number(match[1])), id: match[2] as string }
}

/** A bulk close's refusal in the words of its form (the service names the CLI's flags). */
const BULK_FIELDS: Readonly<Record<string, string>> = {
  sensor: "the sensor",
  source: "the source IP",
  "older-than": "“last seen longer ago than”",
}
const bulkFieldWords = (message: string) =>
  message.replace(/--([a-z-]+)/g, (_, flag: string) => BULK_FIELDS[flag] ?? `the ${flag.replace("-", " ")}`)

/** What the bulk close's preview shows and its confirm carries back: the count and the resolved time. */
const previewOf = (p: {
  readonly matching: number
  readonly wouldClose: number
  readonly filter: { readonly seenBefore?: Date | undefined }
}) => ({ matching: p.matching, wouldClose: p.wouldClose, seenBefore: p.filter.seenBefore?.toISOString() ?? "" })

/** The overview, incidents (with their live refresh and close) and events pages (D30), of the user's organization. */
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
    /**
     * A POST about one incident of the organization (any user, not only admins): an unknown id, or another
     * organization's, is the 404 page; then `change`, and back to the incident with `done`, or the refusal.
     */
    const onIncident = <A, E, R>(
      done: string,
      change: (id: string, form: Record<string, string>) => Effect.Effect<A, E, R>,
    ) =>
      action(
        (s, form) =>
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.params
            if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
            if (Option.isNone(yield* incidents.findById(s.orgId, id))) return notFound(s.viewer)
            return yield* change(id, form).pipe(
              Effect.zipRight(flashTo(s, `/incidents/${id}`, { kind: "ok", text: done })),
              refused(s, `/incidents/${id}`),
            )
          }),
        false,
      )

    return HttpRouter.empty.pipe(
      // --- Pages (D30) ------------------------------------------------------------------------------------------------
      HttpRouter.get(
        "/",
        page((s) =>
          Effect.gen(function* () {
            const now = new Date()
            const start = new Date(
              Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 13 * 86_400_000,
            )
            const [open, activity, latest, sensors] = yield* Effect.all([
              reads.openBySeverity(s.orgId),
              reads.activity(s.orgId, start),
              incidents.list({ orgId: s.orgId, status: undefined, after: undefined, fetch: 8 }),
              sensorAdmin.list(s.orgId),
            ])
            const counts = new Map(activity.map((a) => [a.day, a.n]))
            const days = Array.from({ length: 14 }, (_, i) => {
              const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10)
              return { day, n: counts.get(day) ?? 0 }
            })
            return html(
              <OverviewPage
                viewer={s.viewer}
                open={Object.fromEntries(open.map((o) => [o.severity, o.n]))}
                days={days}
                latest={latest.map((r) => presentIncidentSummary(r, config.appUrl))}
                now={now}
                silentSensors={sensors.filter((x) => x.status === "silent").length}
              />,
            )
          }),
        ),
      ),
      HttpRouter.get(
        "/incidents",
        page((s) =>
          Effect.gen(function* () {
            const params = yield* query
            const status = params.get("status")
            const severity = params.get("severity")
            const filters = {
              status: status === "open" || status === "closed" ? (status as "open" | "closed") : undefined,
              severity: severity !== null && Schema.is(Severity)(severity) ? severity : undefined,
            }
            const after = decodeAfter(params.get("after") ?? undefined, "incident")
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
                sensors={(yield* sensorAdmin.list(s.orgId)).map((x) => [x.id, x.name] as const)}
                flash={yield* readFlash(s)}
              />,
            )
          }),
        ),
      ),
      HttpRouter.get(
        "/live/incidents",
        Effect.gen(function* () {
          // Polled by an open tab every 10 s: reads the session without touching it, so the tab idles out (D27).
          const session = yield* sessionOf({ touch: false })
          if (Option.isNone(session)) return HttpServerResponse.unsafeJson({ changed: false }, { status: 401 })
          const since = parseTimestamp((yield* query).get("since") ?? "")
          const changed = since === undefined ? false : yield* reads.changedSince(session.value.orgId, since)
          return HttpServerResponse.unsafeJson({ changed }, { headers: { "cache-control": "no-store" } })
        }),
      ),
      HttpRouter.get(
        "/incidents/:id",
        page((s) =>
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
        ),
      ),
      // Closing and notes: any user of the organization (analysts too); IncidentAdmin checks and audits.
      HttpRouter.post(
        "/incidents/:id/close",
        onIncident("Incident closed.", (id, form) => incidentAdmin.close(id, { reason: form.reason, note: form.note })),
      ),
      HttpRouter.post(
        "/incidents/:id/notes",
        onIncident("Note added.", (id, form) => incidentAdmin.addNote(id, form.note)),
      ),
      // Bulk close: the filter (GET, the preview with its count and its absolute "last seen before" time) then the
      // close of at most that count, of the same absolute filter; more matching by then is previewed again.
      HttpRouter.get(
        "/incidents/bulk-close",
        page((s) =>
          Effect.gen(function* () {
            const params = yield* query
            const fields: BulkCloseFields = {
              sensor: params.get("sensor") ?? "",
              source: params.get("source") ?? "",
              olderThan: params.get("olderThan") ?? "",
            }
            const sensors = (yield* sensorAdmin.list(s.orgId)).map((x) => [x.id, x.name] as const)
            const preview = yield* incidentAdmin.previewBulk(s.orgId, fields).pipe(
              Effect.map((p) => ({ preview: p, error: undefined })),
              Effect.catchTags({
                Invalid: (e) => Effect.succeed({ preview: undefined, error: bulkFieldWords(e.message) }),
              }),
            )
            const flash = yield* readFlash(s)
            return html(
              <BulkClosePage
                viewer={s.viewer}
                sensors={sensors}
                fields={fields}
                preview={preview.preview && previewOf(preview.preview)}
                error={preview.error ?? (flash?.kind === "error" ? flash.text : undefined)}
              />,
            )
          }),
        ),
      ),
      HttpRouter.post(
        "/incidents/bulk-close",
        action((s, form) => {
          const fields = { sensor: form.sensor ?? "", source: form.source ?? "", olderThan: form.olderThan ?? "" }
          const back = `/incidents/bulk-close?${new URLSearchParams(fields).toString()}`
          return Effect.gen(function* () {
            // The preview's absolute time and count: without them (an old form) there is nothing confirmed.
            const seenBefore = form.seenBefore ?? ""
            const expected = /^\d{1,9}$/.test(form.expected ?? "") ? Number(form.expected) : undefined
            if (expected === undefined || (fields.olderThan.trim() !== "" && seenBefore === "")) {
              return yield* flashTo(s, back, {
                kind: "error",
                text: "The preview's count is missing: check the count below and confirm again.",
              })
            }
            const absolute = { ...fields, olderThan: seenBefore }
            const done = yield* incidentAdmin.closeBulk(
              s.orgId,
              absolute,
              { reason: form.reason, note: form.note },
              expected,
            )
            if (done._tag === "Changed") {
              const sensors = (yield* sensorAdmin.list(s.orgId)).map((x) => [x.id, x.name] as const)
              return html(
                <BulkClosePage
                  viewer={s.viewer}
                  sensors={sensors}
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
          }).pipe(refused(s, back))
        }, false),
      ),
      HttpRouter.get(
        "/events",
        page((s) =>
          Effect.gen(function* () {
            const params = yield* query
            // Each filter is read on its own: one that cannot be read is named on the page and left out, the others
            // still apply (listFilters.ts; the CSV export reads the same).
            const form = eventFiltersForm(params)
            const read = readEventFilters(form)
            const after = decodeAfter(params.get("after") ?? undefined, "event")
            const [rows, sensors] = yield* Effect.all([
              events.list({
                orgId: s.orgId,
                filters: read.filters,
                sourceNetwork: read.sourceNetwork,
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
        ),
      ),
    )
  })
