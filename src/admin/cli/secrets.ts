import { Command } from "@effect/cli"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ChannelAdmin } from "../ChannelAdmin.ts"
import { auditing } from "../common.ts"
import { OrgAdmin } from "../OrgAdmin.ts"
import { SignInProviderAdmin } from "../SignInProviderAdmin.ts"
import { TwoFactor } from "../TwoFactor.ts"
import { asAdmin, json, print, usage } from "./shared.ts"

const reseal = Command.make("reseal", { json }, ({ json }) =>
  asAdmin(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const orgs = yield* OrgAdmin
      const channels = yield* ChannelAdmin
      const twoFactor = yield* TwoFactor
      const providers = yield* SignInProviderAdmin
      const { audited } = yield* auditing
      // Audited like every command: one row, committed with the resealed secrets.
      const { orgKeys, channelSecrets, twoFactorSecrets, providerSecrets } = yield* sql.withTransaction(
        Effect.gen(function* () {
          const orgKeys = yield* orgs.resealFingerprintKeys()
          const channelSecrets = yield* channels.resealSecrets()
          const twoFactorSecrets = yield* twoFactor.resealSecrets()
          const providerSecrets = yield* providers.resealSecrets()
          const unreadable =
            orgKeys.unreadable.length +
            channelSecrets.unreadable.length +
            twoFactorSecrets.unreadable.length +
            providerSecrets.unreadable.length
          yield* audited(
            null,
            "secrets.reseal",
            null,
            `${orgKeys.resealed} fingerprint key(s), ${channelSecrets.resealed} channel secret(s), ${twoFactorSecrets.resealed} two-factor secret(s) and ${providerSecrets.resealed} sign-in provider secret(s) resealed` +
              (unreadable > 0 ? `; ${unreadable} could not be opened` : ""),
          )
          return { orgKeys, channelSecrets, twoFactorSecrets, providerSecrets }
        }),
      )
      const result = { fingerprintKeys: orgKeys, channelSecrets, twoFactorSecrets, providerSecrets }
      const unreadable = [
        ...orgKeys.unreadable,
        ...channelSecrets.unreadable,
        ...twoFactorSecrets.unreadable,
        ...providerSecrets.unreadable,
      ]
      yield* print(
        json,
        result,
        () =>
          `resealed ${orgKeys.resealed} organization fingerprint key(s), ${channelSecrets.resealed} channel secret(s), ${twoFactorSecrets.resealed} two-factor secret(s) and ${providerSecrets.resealed} sign-in provider secret(s)` +
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
