import { Command } from "@effect/cli"
import { Effect } from "effect"
import { JudgementAdmin } from "../JudgementAdmin.ts"
import { argument, asAdmin, credential, flag, json, optionalFlag, print, required, table } from "./shared.ts"

const org = flag("org", "<org-id>", "the organization")

const add = Command.make(
  "add",
  {
    org,
    username: flag("username", "<name>", "the planted credential's user name"),
    password: flag("password", "<password|->", "its password; - reads it from standard input"),
    label: optionalFlag("label", "<where it is planted>", "where it is planted"),
    json,
  },
  ({ org, username, password, label, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const orgId = yield* required(org, "--org")
        yield* required(password, "--password")
        const added = yield* (yield* JudgementAdmin).baitAdd(orgId, {
          username,
          password: yield* credential(password, "--password"),
          label,
        })
        return yield* print(
          json,
          added,
          () => `bait credential ${added.id} registered for username ${JSON.stringify(added.username)}`,
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "register a planted credential: a login with it makes a critical incident; only the password's keyed " +
      "fingerprint is stored (- reads it from standard input, out of shell history and ps)",
  ),
)

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* JudgementAdmin).baitList(yield* required(org, "--org"))
      return yield* print(json, rows, () =>
        table(
          rows.map((r) => ({ id: r.id, username: JSON.stringify(r.username), label: r.label, created: r.createdAt })),
        ),
      )
    }),
  ),
).pipe(Command.withDescription("the registered bait credentials (never a password)"))

const remove = Command.make(
  "remove",
  { baitId: argument("bait-id", "the bait credential"), json },
  ({ baitId, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const done = yield* (yield* JudgementAdmin).baitRemove(yield* required(baitId, "<bait-id>"))
        return yield* print(json, done, () => `bait credential ${done.id} removed`)
      }),
    ),
).pipe(Command.withDescription("stop recognising it"))

export const bait = Command.make("bait").pipe(
  Command.withDescription("bait credentials"),
  Command.withSubcommands([add, list, remove]),
)
