import { Command } from "@effect/cli"
import { Effect } from "effect"
import { IgnoreAdmin } from "../IgnoreAdmin.ts"
import { argument, asAdmin, flag, json, optionalFlag, print, required, table } from "./shared.ts"

const org = flag("org", "<org-id>", "the organization")

const add = Command.make(
  "add",
  {
    org,
    source: flag("source", "<ip|cidr>", "the source address or network"),
    sensor: optionalFlag("sensor", "<sensor-id>", "only events of this sensor"),
    port: optionalFlag("port", "<port>", "only events to this port"),
    type: optionalFlag("type", "<event type>", "only events of this type (docs/ingestion.md lists them)"),
    note: optionalFlag("note", "<text>", "why the events are ignored"),
    expires: optionalFlag("expires", "7d|<RFC 3339>", "when the rule stops (default: never)"),
    json,
  },
  ({ org, json, ...rule }) =>
    asAdmin(
      Effect.gen(function* () {
        const added = yield* (yield* IgnoreAdmin).add(yield* required(org, "--org"), {
          ...rule,
          source: yield* required(rule.source, "--source"),
        })
        return yield* print(
          json,
          added,
          () =>
            `ignore rule ${added.id} added: events from ${added.source}` +
            (added.sensorId ? ` on ${added.sensorId}` : "") +
            (added.port !== null ? ` to port ${added.port}` : "") +
            (added.eventType ? ` of type ${added.eventType}` : "") +
            ` are ignored from now on${added.expiresAt ? ` until ${added.expiresAt}` : ""}` +
            (added.sameAs.length > 0 ? `\nnote: ${added.sameAs.join(", ")} already match the same events` : ""),
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "ignore matching events from now on: stored and marked, but no incident, no alert, not in the API, feeds or MCP",
  ),
)

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* IgnoreAdmin).list(yield* required(org, "--org"))
      return yield* print(json, rows, () =>
        table(
          rows.map((r) => ({
            id: r.id,
            source: r.source,
            sensor: r.sensorId ?? "any",
            port: r.port ?? "any",
            type: r.eventType ?? "any",
            hits: r.hitCount,
            lastHit: r.lastHitAt ?? "never",
            expires: r.expiresAt === null ? "never" : `${r.expiresAt}${r.expired ? " (expired)" : ""}`,
            createdBy: r.createdBy,
            note: JSON.stringify(r.note),
            ...(r.sameAs.length > 0 ? { duplicateOf: r.sameAs } : {}),
          })),
        ),
      )
    }),
  ),
).pipe(
  Command.withDescription("the rules, with hits, last hit and expiry; rules that match the same events are marked"),
)

const remove = Command.make("remove", { ruleId: argument("rule-id", "the rule"), json }, ({ ruleId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* IgnoreAdmin).remove(yield* required(ruleId, "<rule-id>"))
      return yield* print(json, done, () => `ignore rule ${done.id} removed; later events are no longer ignored by it`)
    }),
  ),
).pipe(Command.withDescription("stop ignoring from now on (events already ignored stay so)"))

export const ignore = Command.make("ignore").pipe(
  Command.withDescription("ignore rules"),
  Command.withSubcommands([add, list, remove]),
)
