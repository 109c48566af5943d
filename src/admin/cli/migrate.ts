import { Command } from "@effect/cli"
import { Effect } from "effect"
import { asAdmin, json, print } from "./shared.ts"

/** Every command applies the pending migrations first; this one does only that. */
export const migrate = Command.make("migrate", { json }, ({ json }) =>
  asAdmin(Effect.void).pipe(Effect.zipRight(print(json, { migrated: true }, () => "migrations are up to date"))),
).pipe(Command.withDescription("apply pending SQL migrations"))
