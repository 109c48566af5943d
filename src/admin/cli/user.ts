import { Command } from "@effect/cli"
import { Effect } from "effect"
import { UserAdmin } from "../UserAdmin.ts"
import { argument, asAdmin, flag, json, print, required, table } from "./shared.ts"

const org = flag("org", "<org-id>", "the organization")
const userId = argument("user-id", "the user")

const create = Command.make(
  "create",
  {
    org,
    email: flag("email", "<email>", "the user's address"),
    role: flag(
      "role",
      "admin|analyst|viewer",
      "an administrator changes settings; an analyst reads and triages; a viewer reads only",
    ),
    json,
  },
  ({ org, email, role, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const created = yield* (yield* UserAdmin).create({
          orgId: yield* required(org, "--org"),
          email: yield* required(email, "--email"),
          role: yield* required(role, "--role"),
        })
        return yield* print(
          json,
          created,
          () =>
            `user ${created.id} (${created.email}, ${created.role}) created. One-time link to set a password, valid until ${created.linkExpiresAt}:\n${created.link}`,
        )
      }),
    ),
).pipe(Command.withDescription("create a console user; prints a one-time link (24 h) to set a password"))

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* UserAdmin).list(yield* required(org, "--org"))
      return yield* print(json, rows, () => table(rows))
    }),
  ),
).pipe(Command.withDescription("console users (never a password)"))

const disable = Command.make("disable", { userId, json }, ({ userId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const result = yield* (yield* UserAdmin).disable(yield* required(userId, "<user-id>"))
      return yield* print(json, result, () => `user ${result.id} disabled; their sessions ended`)
    }),
  ),
).pipe(Command.withDescription("disable a user; their sessions end"))

const reset = Command.make("reset", { userId, json }, ({ userId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* UserAdmin).reset(yield* required(userId, "<user-id>"))
      return yield* print(
        json,
        done,
        () =>
          `sessions of ${done.email} ended. One-time link to set a new password, valid until ${done.linkExpiresAt}:\n${done.link}`,
      )
    }),
  ),
).pipe(Command.withDescription("new set-password link; all their sessions end"))

const endSessions = Command.make("end-sessions", { userId, json }, ({ userId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* UserAdmin).endSessions(yield* required(userId, "<user-id>"))
      return yield* print(json, done, () => `${done.ended} session(s) of ${done.email} ended`)
    }),
  ),
).pipe(Command.withDescription("end every console session of a user (they sign in again)"))

const unlock = Command.make("unlock", { email: argument("email", "the address"), json }, ({ email, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const unlocked = yield* (yield* UserAdmin).unlock(yield* required(email, "<email>"))
      return yield* print(
        json,
        unlocked,
        () => `${unlocked.email}: ${unlocked.cleared} failed sign-in(s) forgotten; every address may sign in again`,
      )
    }),
  ),
).pipe(Command.withDescription("forget the failed sign-ins of this email (its sign-in lock)"))

export const user = Command.make("user").pipe(
  Command.withDescription("console users"),
  Command.withSubcommands([create, list, disable, reset, endSessions, unlock]),
)
