import { HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { IncidentAdmin, TRIAGE_MAX } from "../../admin/IncidentAdmin.ts"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { isId } from "../../domain/ids.ts"
import { INCIDENT_EVENTS_SHOWN } from "../../domain/models.ts"
import { AppConfig } from "../../platform/config.ts"
import { ConsoleUsersRepo } from "../../repos/ConsoleUsersRepo.ts"
import { EventsRepo } from "../../repos/EventsRepo.ts"
import { IncidentIndicatorsRepo } from "../../repos/IncidentIndicatorsRepo.ts"
import { IncidentNotesRepo } from "../../repos/IncidentNotesRepo.ts"
import { type IncidentRow, IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentIncident } from "../../repos/present.ts"
import { TransitionsRepo } from "../../repos/TransitionsRepo.ts"
import { Blank, decodeForm, FormRefused, firstValues, Text } from "../forms.ts"
import { formEntries, html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { type FieldWords, invalidText } from "../refusals.ts"
import { notFound } from "../responses.tsx"
import { query } from "../session.ts"
import { BulkClosePage } from "./bulkClosePage.tsx"
import { mergeHistory } from "./history.tsx"
import { IncidentPage } from "./incidentPage.tsx"
import { sensorChoices } from "./listRoutes.tsx"

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

/** Assign one incident: a user id of the organization, or empty for nobody. */
const AssignForm = Schema.Struct({ assignee: Blank })
/** Several incidents at once from the list: what to do, to whom, and the list to go back to. */
const TriageForm = Schema.Struct({ action: Blank, assignee: Blank, back: Blank })

/** The longest list address a triage form may ask to go back to (filters and a cursor fit well within it). */
const BACK_MAX = 2000

/**
 * Where a triage of several incidents goes back to: the incidents list it came from, as a path of this console
 * (`/incidents`, with its filters), never another site or another page; anything else is the plain list. An old
 * notice's `flash` is dropped, so the new one is read.
 */
export const triageBack = (back: string): string => {
  if (back === "" || back.length > BACK_MAX || !back.startsWith("/incidents") || /[\\\s]/.test(back)) {
    return "/incidents"
  }
  let url: URL
  try {
    url = new URL(back, "http://console.invalid")
  } catch {
    return "/incidents"
  }
  if (url.origin !== "http://console.invalid" || (url.pathname !== "/incidents" && url.pathname !== "/incidents/")) {
    return "/incidents"
  }
  url.searchParams.delete("flash")
  const search = url.searchParams.toString()
  return search === "" ? "/incidents" : `/incidents?${search}`
}

const incidentsWord = (n: number) => `${n} ${n === 1 ? "incident" : "incidents"}`

/** How the bulk close's form names its filter's inputs, where the console's usual words differ. */
const BULK_WORDS: FieldWords = { source: "the source IP" }

/** What the bulk close's preview shows and its confirm carries back: the count and the resolved time. */
const previewOf = (p: {
  readonly matching: number
  readonly wouldClose: number
  readonly filter: { readonly seenBefore?: Date | undefined }
  readonly first?: ReadonlyArray<IncidentRow> | undefined
}) => ({
  matching: p.matching,
  wouldClose: p.wouldClose,
  seenBefore: p.filter.seenBefore?.toISOString() ?? "",
  first: p.first?.map((i) => ({
    id: i.id,
    title: i.title,
    severity: i.severity,
    sensorName: i.sensorName,
    sourceIp: i.sourceIp,
    lastSeenAt: i.lastSeenAt,
  })),
})

/**
 * One incident of the user's organization (the list is in listRoutes.tsx): its page, closing and notes (any user of the organization, not only admins: IncidentAdmin checks and audits) and the bulk
 * close.
 */
export const incidentRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const sensorAdmin = yield* SensorAdmin
    const incidentAdmin = yield* IncidentAdmin
    const transitions = yield* TransitionsRepo
    const incidentNotes = yield* IncidentNotesRepo
    const indicatorReads = yield* IncidentIndicatorsRepo
    const consoleUsers = yield* ConsoleUsersRepo
    const { page, action, flashTo, readFlash, refused } = kit

    const sensorNames = (orgId: string) => sensorChoices(sensorAdmin, orgId)

    const showIncident = page((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
        const row = yield* incidents.findById(s.orgId, id)
        if (Option.isNone(row)) return notFound(s.viewer)
        const [members, history, triage, notes, users, acknowledgedBy, indicators] = yield* Effect.all([
          events.members(s.orgId, id, INCIDENT_EVENTS_SHOWN),
          transitions.history(s.orgId, id),
          incidents.triageHistory(s.orgId, id),
          incidentNotes.forIncident(s.orgId, id),
          consoleUsers.listByOrg(s.orgId),
          incidents.acknowledgedBy(s.orgId, id),
          // Over every member event; past its time bound the page counts the events it shows, and says so.
          indicatorReads.forIncident(s.orgId, id).pipe(
            Effect.tapError((e) => Effect.logWarning("incident indicators not read in time", e)),
            Effect.option,
          ),
        ])
        return html(
          <IncidentPage
            viewer={s.viewer}
            incident={presentIncident(row.value, members, config.appUrl)}
            more={row.value.eventCount > members.length ? `/events?incidentId=${id}` : undefined}
            now={new Date()}
            flash={yield* readFlash(s)}
            history={mergeHistory(history, triage)}
            notes={notes}
            users={users.filter((u) => u.disabledAt === null).map((u) => ({ id: u.id, email: u.email }))}
            acknowledgedBy={acknowledgedBy === "cli" ? "the operator (CLI)" : acknowledgedBy}
            indicators={Option.getOrUndefined(indicators)}
          />,
        )
      }),
    )

    /**
     * A POST about one incident of the organization (any user, not only admins): an unknown id, or another
     * organization's, is the 404 page; then `change`, and back to the incident with `done`, or the refusal.
     */
    const onIncident = <A, E, R>(
      done: string | ((a: A) => string),
      change: (id: string, fields: Record<string, string>) => Effect.Effect<A, E, R>,
    ) =>
      action((s, fields) =>
        Effect.gen(function* () {
          const { id } = yield* HttpRouter.params
          if (id === undefined || !isId("incident", id)) return notFound(s.viewer)
          if (Option.isNone(yield* incidents.findById(s.orgId, id))) return notFound(s.viewer)
          return yield* change(id, fields).pipe(
            Effect.flatMap((a) =>
              flashTo(s, `/incidents/${id}`, { kind: "ok", text: typeof done === "string" ? done : done(a) }),
            ),
            refused(s, `/incidents/${id}`),
          )
        }),
      )

    const closeIncident = onIncident("Incident closed.", (id, fields) =>
      Effect.flatMap(decodeForm(CloseForm)(fields), (form) => incidentAdmin.close(id, form)),
    )
    const addNote = onIncident("Note added.", (id, fields) =>
      Effect.flatMap(decodeForm(NoteForm)(fields), (form) => incidentAdmin.addNote(id, form.note)),
    )

    const acknowledgeIncident = onIncident(
      (done: { readonly changed: ReadonlyArray<string> }) =>
        done.changed.length > 0 ? "Incident acknowledged." : "Already acknowledged: the first acknowledgement stands.",
      (id) => incidentAdmin.acknowledge(undefined, [id]),
    )
    const assignIncident = onIncident(
      (done: { readonly changed: ReadonlyArray<string>; readonly assignee: string | null }) =>
        done.changed.length === 0
          ? "Nothing changed: the incident already had that owner."
          : done.assignee === null
            ? "Incident unassigned."
            : `Incident assigned to ${done.assignee}.`,
      (id, fields) =>
        Effect.flatMap(decodeForm(AssignForm)(fields), (form) => incidentAdmin.assign(undefined, [id], form.assignee)),
    )

    /**
     * Several incidents at once, from the list's checkboxes: acknowledge them, or assign them to one user (or to
     * nobody). 1 to TRIAGE_MAX ids; back to the list the form came from, with a notice.
     */
    const triageMany = action((s, sent) =>
      Effect.gen(function* () {
        const back = triageBack(sent.back ?? "")
        return yield* Effect.gen(function* () {
          const form = yield* decodeForm(TriageForm)(sent)
          const ids = (yield* formEntries).filter(([k]) => k === "ids").map(([, v]) => v)
          if (ids.length === 0) {
            return yield* new FormRefused({ field: "ids", text: "Choose at least one incident first." })
          }
          if (ids.length > TRIAGE_MAX) {
            return yield* new FormRefused({
              field: "ids",
              text: `Choose at most ${TRIAGE_MAX} incidents at once; nothing was changed.`,
            })
          }
          if (form.action !== "acknowledge" && form.action !== "assign") {
            return yield* new FormRefused({
              field: "action",
              text: "Choose what to do with the incidents: acknowledge or assign.",
            })
          }
          if (form.action === "acknowledge") {
            const done = yield* incidentAdmin.acknowledge(s.orgId, ids)
            const same = done.asked - done.changed.length
            return yield* flashTo(s, back, {
              kind: "ok",
              text:
                `${incidentsWord(done.changed.length)} acknowledged.` +
                (same > 0 ? ` ${incidentsWord(same)} had been acknowledged already.` : ""),
            })
          }
          const done = yield* incidentAdmin.assign(s.orgId, ids, form.assignee)
          const same = done.asked - done.changed.length
          return yield* flashTo(s, back, {
            kind: "ok",
            text:
              (done.assignee === null
                ? `${incidentsWord(done.changed.length)} unassigned.`
                : `${incidentsWord(done.changed.length)} assigned to ${done.assignee}.`) +
              (same > 0 ? ` ${incidentsWord(same)} had that owner already.` : ""),
          })
        }).pipe(refused(s, back))
      }),
    )

    /** The bulk close's preview: its count, the first incidents it would close and its absolute "last seen before" time, or why the filter is refused. */
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
    const bulkClose = action((s, sent) =>
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
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/incidents/:id", showIncident),
      HttpRouter.post("/incidents/:id/close", closeIncident),
      HttpRouter.post("/incidents/:id/notes", addNote),
      HttpRouter.post("/incidents/:id/acknowledge", acknowledgeIncident),
      HttpRouter.post("/incidents/:id/assign", assignIncident),
      // Several incidents of the list at once (acknowledge, assign), back to the list it came from.
      HttpRouter.post("/incidents/triage", triageMany),
      // Bulk close: the filter (GET, the preview with its count and its absolute "last seen before" time) then the
      // close of at most that count, of the same absolute filter.
      HttpRouter.get("/incidents/bulk-close", previewBulkClose),
      HttpRouter.post("/incidents/bulk-close", bulkClose),
    )
  })
