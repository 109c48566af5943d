import { Command } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ChannelAdmin } from "../ChannelAdmin.ts"
import { auditing } from "../common.ts"
import { OrgAdmin } from "../OrgAdmin.ts"
import { asAdmin, json, print, usage } from "./shared.ts"

const reseal = Command.make("reseal", { json }, ({ json }) =>
  asAdmin(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const orgs = yield* OrgAdmin
      const channels = yield* ChannelAdmin
      const { audited } = yield* auditing
      // Audited like every command: one row, committed with the resealed secrets.
      const { orgKeys, channelSecrets } = yield* sql.withTransaction(
        Effect.gen(function* () {
          const orgKeys = yield* orgs.resealFingerprintKeys()
          const channelSecrets = yield* channels.resealSecrets()
          const unreadable = orgKeys.unreadable.length + channelSecrets.unreadable.length
          yield* audited(
            null,
            "secrets.reseal",
            null,
            `${orgKeys.resealed} fingerprint key(s) and ${channelSecrets.resealed} channel secret(s) resealed` +
              (unreadable > 0 ? `; ${unreadable} could not be opened` : ""),
          )
          return { orgKeys, channelSecrets }
        }),
      )
      const result = { fingerprintKeys: orgKeys, channelSecrets }
      const unreadable = [...orgKeys.unreadable, ...channelSecrets.unreadable]
      yield* print(
        json,
        result,
        () =>
          `resealed ${orgKeys.resealed} organization fingerprint key(s) and ${channelSecrets.resealed} channel secret(s)` +
          (unreadable.length > 0
            ? `\ncannot open (set SECRET_KEY_PREVIOUS to their key): ${unreadable.join(", ")}`
            : ""),
      )
      if (unreadable.length > 0) return yield* usage("some secrets could not be opened")
    }),
  ),
).pipe(
  Command.withDescription(
    "after a SECRET_KEY rotation (old key in SECRET_KEY_PREVIOUS): seal every stored secret under the current SECRET_KEY",
  ),
)

export const secrets = Command.make("secrets").pipe(
  Command.withDescription("stored secrets"),
  Command.withSubcommands([reseal]),
)
