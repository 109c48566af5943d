import { Command } from "@effect/cli"
import { Effect } from "effect"
import { OrgAdmin } from "../OrgAdmin.ts"
import { TwoFactor } from "../TwoFactor.ts"
import { argument, asAdmin, flag, json, print, required, switchFlag, table } from "./shared.ts"

const create = Command.make(
  "create",
  {
    name: flag("name", "<name>", "the organization's name, 1 to 200 printable characters"),
    allowDuplicateName: switchFlag("allow-duplicate-name", "create it even if another organization has the name"),
    json,
  },
  ({ name, allowDuplicateName, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const org = yield* (yield* OrgAdmin).create(name, { allowDuplicate: allowDuplicateName })
        return yield* print(json, org, () => `organization ${org.id} created (Deception on)`)
      }),
    ),
).pipe(
  Command.withDescription(
    "create an organization (Deception on); a name another organization has is refused unless --allow-duplicate-name",
  ),
)

const deception = Command.make(
  "deception",
  { orgId: argument("org-id", "the organization"), state: argument("on|off", "on or off"), json },
  ({ orgId, state, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const result = yield* (yield* OrgAdmin).setDeception(
          yield* required(orgId, "<org-id>"),
          yield* required(state, "on|off"),
        )
        return yield* print(json, result, () => `Deception ${result.deception} for ${result.id}`)
      }),
    ),
).pipe(Command.withDescription("switch the Deception feature"))

const retention = Command.make(
  "retention",
  {
    orgId: argument("org-id", "the organization"),
    days: argument("days|default", "days to keep its events, or default: RETENTION_DAYS"),
    json,
  },
  ({ orgId, days, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const result = yield* (yield* OrgAdmin).setRetention(
          yield* required(orgId, "<org-id>"),
          yield* required(days, "<days|default>"),
        )
        return yield* print(
          json,
          result,
          () =>
            `${result.id} keeps its events ${result.retentionDays === null ? "for RETENTION_DAYS (the default)" : `${result.retentionDays} days`}`,
        )
      }),
    ),
).pipe(Command.withDescription("keep its events this many days; default: RETENTION_DAYS"))

const tlp = Command.make(
  "tlp",
  {
    orgId: flag("org", "<org-id>", "the organization"),
    level: argument("level", "clear, green, amber, amber+strict or red"),
    json,
  },
  ({ orgId, level, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const result = yield* (yield* OrgAdmin).setTlp(orgId, yield* required(level, "<level>"))
        return yield* print(
          json,
          result,
          () => `${result.id} marks its STIX/TAXII objects TLP:${result.tlp.toUpperCase()}`,
        )
      }),
    ),
).pipe(
  Command.withDescription("the TLP 2.0 marking of its STIX objects (TAXII): clear, green, amber, amber+strict or red"),
)

const twoFactor = Command.make(
  "two-factor",
  {
    orgId: flag("org", "<org-id>", "the organization"),
    state: argument("on|off", "on: every user signs in with a two-factor code; off: each user chooses"),
    json,
  },
  ({ orgId, state, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const result = yield* (yield* TwoFactor).setRequired(orgId, yield* required(state, "on|off"))
        return yield* print(json, result, () =>
          result.twoFactor === "on"
            ? `${result.id} requires two-factor codes (users without them set them up at their next sign-in)`
            : `${result.id} does not require two-factor codes`,
        )
      }),
    ),
).pipe(Command.withDescription("require two-factor codes (TOTP) of every console user: on or off"))

const list = Command.make("list", { json }, ({ json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* OrgAdmin).list()
      return yield* print(json, rows, () => table(rows))
    }),
  ),
).pipe(Command.withDescription("the organizations"))

export const org = Command.make("org").pipe(
  Command.withDescription("organizations"),
  Command.withSubcommands([create, deception, retention, tlp, twoFactor, list]),
)
