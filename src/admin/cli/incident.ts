import { Command } from "@effect/cli"
import { Effect } from "effect"
import { IncidentAdmin } from "../IncidentAdmin.ts"
import { argument, asAdmin, json, optionalFlag, print, required, switchFlag, usage } from "./shared.ts"

const incidentId = argument("incident-id", "the incident")
const note = optionalFlag("note", "<text>", "a note kept with the close, shown in the incident's history")

const close = Command.make(
  "close",
  {
    incidentId,
    org: optionalFlag("org", "<org-id>", "a bulk close: the organization whose open incidents the filter matches"),
    sensor: optionalFlag("sensor", "<sensor-id>", "a bulk close: incidents of this sensor"),
    source: optionalFlag("source", "<ip>", "a bulk close: incidents of this source address"),
    olderThan: optionalFlag("older-than", "7d|<date>", "a bulk close: incidents last seen before then"),
    reason: optionalFlag("reason", "<reason>", "resolved, false_positive, authorized_test or other"),
    note,
    dryRun: switchFlag("dry-run", "a bulk close: only count the incidents it would close"),
    json,
  },
  (input) =>
    asAdmin(
      Effect.gen(function* () {
        const incidents = yield* IncidentAdmin
        const { json } = input
        const filter = { sensor: input.sensor, source: input.source, olderThan: input.olderThan }
        const filterFlags = [
          input.org !== undefined && "--org",
          filter.sensor !== undefined && "--sensor",
          filter.source !== undefined && "--source",
          filter.olderThan !== undefined && "--older-than",
          input.dryRun && "--dry-run",
        ].filter((f): f is string => typeof f === "string")
        if (input.incidentId !== undefined && filterFlags.length > 0) {
          // An id closes that one incident: a filter beside it would be silently dropped, so the two are refused.
          return yield* usage(
            `an <incident-id> closes that one incident: ${filterFlags.join(", ")} cannot go with it (a bulk close is --org and a filter, without an id)`,
          )
        }
        if (
          input.incidentId === undefined &&
          (input.org !== undefined || Object.values(filter).some((v) => v !== undefined))
        ) {
          const orgId = yield* required(input.org, "--org")
          if (input.dryRun) {
            const preview = yield* incidents.previewBulk(orgId, filter)
            return yield* print(
              json,
              { matching: preview.matching, wouldClose: preview.wouldClose },
              () => `${preview.matching} open incident(s) match; a close would close ${preview.wouldClose}`,
            )
          }
          yield* required(input.reason, "--reason")
          const result = yield* incidents.closeBulk(orgId, filter, { reason: input.reason, note: input.note })
          // Without a previewed count the close never stops for a changed count.
          if (result._tag !== "Closed") return yield* usage("the matching incidents changed: run it again")
          const { _tag, ...done } = result
          return yield* print(
            json,
            done,
            () =>
              `${done.closed} incident(s) closed (${done.reason})` +
              (done.remaining > 0 ? `; ${done.remaining} still match: run it again` : ""),
          )
        }
        const id = yield* required(input.incidentId, "<incident-id>")
        yield* required(input.reason, "--reason")
        const result = yield* incidents.close(id, { reason: input.reason, note: input.note })
        return yield* print(
          json,
          result,
          () => `incident ${result.id} closed at ${result.resolvedAt} (${result.reason})`,
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "close an open incident (resolvedAt is set); or, with --org and a filter instead of an id, close every open " +
      "incident the filter matches (at most 10000 at once; --dry-run only counts them)",
  ),
)

const addNote = Command.make("note", { incidentId, note, json }, ({ incidentId, note, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const id = yield* required(incidentId, "<incident-id>")
      const added = yield* (yield* IncidentAdmin).addNote(id, yield* required(note, "--note"))
      return yield* print(json, added, () => `note ${added.id} added to ${added.incidentId}`)
    }),
  ),
).pipe(Command.withDescription("add a note to an incident"))

export const incident = Command.make("incident").pipe(
  Command.withDescription("incidents"),
  Command.withSubcommands([close, addNote]),
)
