import { HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { IgnoreAdmin } from "../../admin/IgnoreAdmin.ts"
import { IncidentAdmin } from "../../admin/IncidentAdmin.ts"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { UserAdmin } from "../../admin/UserAdmin.ts"
import { EVENT_TYPE_NAMES } from "../../domain/eventTypes.ts"
import { isId } from "../../domain/ids.ts"
import { IgnoreRulesRepo } from "../../repos/IgnoreRulesRepo.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentEvent } from "../../repos/present.ts"
import { Blank, Checkbox, decodeForm } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { decodeAfter, PAGE_SIZE } from "../listFilters.ts"
import { notFound } from "../responses.tsx"
import { query } from "../session.ts"
import { IgnoredEventsPage } from "./ignoredEventsPage.tsx"
import { CLOSE_WITH_RULE, ConfirmIgnorePage, EMPTY_IGNORE_FORM, IgnoreRulesPage } from "./rulesPage.tsx"

/** A field kept only when it is one of what the form offers; anything else reads as "" (not chosen). */
const offered = (keep: (value: string) => boolean) =>
  Schema.optionalWith(
    Schema.transform(Schema.String, Schema.String, {
      strict: true,
      decode: (value) => (keep(value) ? value : ""),
      encode: (value) => value,
    }),
    { default: () => "" },
  )

/**
 * Add an ignore rule. Its fields are kept whole: IgnoreAdmin refuses a value longer than it keeps (a note over its
 * bound), never a silently cut one. `confirmed` comes from the confirmation page; without it the rule is shown to
 * confirm and nothing is written.
 */
const IgnoreRuleForm = Schema.Struct({
  source: Blank,
  sensor: Blank,
  port: Blank,
  type: Blank,
  note: Blank,
  expires: Blank,
  incidentId: offered((id) => isId("incident", id)),
  closeAs: offered((value) => CLOSE_WITH_RULE.some(([offer]) => offer === value)),
  confirmed: Checkbox("yes"),
})

/**
 * Settings → Ignore rules and Events → Show ignored events. Every change through IgnoreAdmin (administrators only,
 * audited); adding goes through a confirmation page, and from an incident ("Ignore activity like this") may close that
 * incident with its reason at the same time.
 */
export const ignoreRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const ignoreAdmin = yield* IgnoreAdmin
    const incidentAdmin = yield* IncidentAdmin
    const sensorAdmin = yield* SensorAdmin
    const userAdmin = yield* UserAdmin
    const incidents = yield* IncidentsRepo
    const rules = yield* IgnoreRulesRepo
    const { page, action, flashTo, readFlash, refused } = kit

    const sensorsOf = (orgId: string) =>
      Effect.map(sensorAdmin.list(orgId), (list) =>
        list.filter((x) => x.revokedAt === null).map((x) => ({ id: x.id, name: x.name })),
      )

    const listRules = page((s) =>
      Effect.gen(function* () {
        const params = yield* query
        let form = EMPTY_IGNORE_FORM
        // "Ignore activity like this": the incident's source and sensor, filled in.
        const from = params.get("incident") ?? ""
        if (isId("incident", from)) {
          const incident = yield* incidents.findById(s.orgId, from)
          if (Option.isSome(incident)) {
            form = {
              ...form,
              source: incident.value.sourceIp,
              sensor: incident.value.sensorId,
              incidentId: incident.value.id,
              closeAs: incident.value.status === "open" ? "authorized_test" : "",
            }
          }
        }
        const creators = Object.fromEntries((yield* userAdmin.list(s.orgId)).map((u) => [u.id, u.email]))
        return html(
          <IgnoreRulesPage
            viewer={s.viewer}
            rules={yield* ignoreAdmin.list(s.orgId)}
            creators={creators}
            sensors={yield* sensorsOf(s.orgId)}
            types={EVENT_TYPE_NAMES}
            form={form}
            flash={yield* readFlash(s)}
            now={new Date()}
          />,
        )
      }),
    )

    const addRule = action((s, fields) =>
      Effect.gen(function* () {
        const { confirmed, ...form } = yield* decodeForm(IgnoreRuleForm)(fields)
        const input = {
          source: form.source,
          sensor: form.sensor,
          port: form.port,
          type: form.type,
          note: form.note,
          expires: form.expires,
        }
        if (!confirmed) {
          // First the rule as it would be stored, to confirm; nothing is written yet.
          const rule = yield* ignoreAdmin.check(s.orgId, input, new Date())
          const sensors = yield* sensorsOf(s.orgId)
          return html(
            <ConfirmIgnorePage
              viewer={s.viewer}
              form={form}
              rule={rule}
              sensorName={sensors.find((x) => x.id === rule.sensorId)?.name}
              now={new Date()}
            />,
          )
        }
        const added = yield* ignoreAdmin.add(s.orgId, input)
        let text = `Ignore rule ${added.id} added: matching events are ignored from now on.`
        if (added.sameAs.length > 0) text += ` ${added.sameAs.join(", ")} already matched the same events.`
        if (form.incidentId !== "" && form.closeAs !== "") {
          const closed = yield* incidentAdmin
            .close(form.incidentId, { reason: form.closeAs, note: `Ignore rule ${added.id} added.` })
            .pipe(
              Effect.as(true),
              Effect.catchTag("NotFound", () => Effect.succeed(false)),
            )
          text += closed ? ` Incident ${form.incidentId} closed.` : ` Incident ${form.incidentId} was not open.`
        }
        return yield* flashTo(s, "/settings/ignore", { kind: "ok", text })
      }).pipe(refused(s, "/settings/ignore")),
    )

    const removeRule = action((s) =>
      Effect.gen(function* () {
        const { id = "" } = yield* HttpRouter.params
        const done = yield* ignoreAdmin.remove(id)
        return yield* flashTo(s, "/settings/ignore", {
          kind: "ok",
          text: `Ignore rule ${done.id} removed: later events are no longer ignored by it.`,
        })
      }).pipe(refused(s, "/settings/ignore")),
    )

    /** Events → Show ignored events: newest first, each with the rule that ignored it. */
    const listIgnoredEvents = page((s) =>
      Effect.gen(function* () {
        const params = yield* query
        const after = decodeAfter(params.get("after"), "event")
        if (params.get("after") !== null && after === undefined) return notFound(s.viewer)
        const rows = yield* rules.ignoredEvents(s.orgId, after, PAGE_SIZE + 1)
        const shown = rows.slice(0, PAGE_SIZE)
        const last = shown[shown.length - 1]
        return html(
          <IgnoredEventsPage
            viewer={s.viewer}
            rows={shown.map((r) => ({
              event: presentEvent(r),
              ruleId: r.ignoreRuleId,
              ruleNote: r.ignoreRuleNote,
            }))}
            next={
              rows.length > PAGE_SIZE && last ? `/events/ignored?after=${last.time.getTime()}.${last.id}` : undefined
            }
            now={new Date()}
          />,
        )
      }),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/settings/ignore", listRules),
      HttpRouter.post("/settings/ignore", addRule),
      HttpRouter.post("/settings/ignore/:id/remove", removeRule),
      HttpRouter.get("/events/ignored", listIgnoredEvents),
    )
  })
