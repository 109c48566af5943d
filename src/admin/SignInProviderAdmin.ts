import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { type ConsoleRole, isRoleClaimName, parseDomains } from "../domain/signInProvider.ts"
import { AppConfig } from "../platform/config.ts"
import { Keys } from "../platform/keys.ts"
import { OpenIdConnect } from "../platform/outbound/openIdConnect.ts"
import { type SignInProviderRow, SignInProvidersRepo } from "../repos/SignInProvidersRepo.ts"
import { requireAdmin } from "./actor.ts"
import { auditing } from "./common.ts"
import { invalid, missing } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"

/** Where a provider sends the browser back: the one redirect URL every organization registers at its provider. */
export const PROVIDER_CALLBACK_PATH = "/sign-in/sso/callback"

const CLIENT_ID = /^[\x21-\x7e]{1,255}$/
const MAX_SECRET = 1024

/** What an admin gives; `clientSecret` undefined keeps the stored one (a change of anything else). */
export interface ProviderInput {
  readonly issuer: string | undefined
  readonly clientId: string | undefined
  readonly clientSecret: string | undefined
  readonly domains: string | undefined
  readonly roleClaim: string | undefined
  readonly defaultRole: string | undefined
  readonly passwordSignIn: string | undefined
}

/** A provider as an admin sees it: never the client secret. */
export const shownProvider = (row: SignInProviderRow, appUrl: string) => ({
  orgId: row.orgId,
  issuer: row.issuer,
  clientId: row.clientId,
  clientSecret: "(sealed)",
  allowedDomains: row.allowedDomains,
  roleClaim: row.roleClaim,
  defaultRole: row.defaultRole,
  passwordSignIn: row.passwordAllowed ? "allowed" : "off",
  redirectUrl: `${appUrl}${PROVIDER_CALLBACK_PATH}`,
  updatedAt: row.updatedAt.toISOString(),
})

/**
 * An organization's OpenID Connect provider, set by its administrators (console Settings → Sign-in, or the CLI):
 * the issuer (discovered, and each URL it names checked by the outbound address rule, before anything is stored),
 * the client id and secret (sealed under SECRET_KEY, never shown again), the email domains it admits, the claim
 * that carries the console role or a default role, and whether passwords still sign in. Audited, without the secret.
 */
export class SignInProviderAdmin extends Effect.Service<SignInProviderAdmin>()("SignInProviderAdmin", {
  effect: Effect.gen(function* () {
    const providers = yield* SignInProvidersRepo
    const orgAdmin = yield* OrgAdmin
    const openId = yield* OpenIdConnect
    const { sealer } = yield* Keys
    const { appUrl } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing

    const get = Effect.fn("SignInProviderAdmin.get")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      const row = yield* providers.forOrg(orgId)
      return Option.map(row, (r) => shownProvider(r, appUrl))
    })

    const set = Effect.fn("SignInProviderAdmin.set")(function* (org: string, input: ProviderInput) {
      yield* requireAdmin
      const orgId: OrgId = (yield* orgAdmin.require(org)).id
      const existing = Option.getOrUndefined(yield* providers.forOrg(orgId))

      const issuer = (input.issuer ?? existing?.issuer)?.trim()
      if (issuer === undefined || issuer === "") return yield* missing("issuer")
      const clientId = (input.clientId ?? existing?.clientId)?.trim()
      if (clientId === undefined || clientId === "") return yield* missing("clientId")
      if (!CLIENT_ID.test(clientId)) {
        return yield* invalid({ field: "clientId", reason: "malformed", rule: "must be 1 to 255 visible characters" })
      }
      let secret: string
      if (input.clientSecret !== undefined && input.clientSecret !== "") {
        if (input.clientSecret.length > MAX_SECRET || /[\p{Cc}]/u.test(input.clientSecret)) {
          return yield* invalid({
            field: "clientSecret",
            reason: "malformed",
            rule: `must be at most ${MAX_SECRET} characters without control characters`,
          })
        }
        secret = input.clientSecret
      } else if (existing !== undefined) {
        const opened = sealer.open(existing.clientSecretSealed)
        if (opened === undefined) return yield* missing("clientSecret")
        secret = new TextDecoder().decode(opened)
      } else {
        return yield* missing("clientSecret")
      }

      const domainsText = input.domains ?? existing?.allowedDomains.join(", ")
      if (domainsText === undefined) return yield* missing("domains")
      const domains = parseDomains(domainsText)
      if (!domains.ok) return yield* invalid({ field: "domains", reason: "malformed", rule: domains.rule })

      const roleClaimText = input.roleClaim === undefined ? existing?.roleClaim : input.roleClaim.trim()
      const roleClaim = roleClaimText === undefined || roleClaimText === "" ? null : roleClaimText
      if (roleClaim !== null && !isRoleClaimName(roleClaim)) {
        return yield* invalid({
          field: "roleClaim",
          reason: "malformed",
          rule: "must be a claim name of 1 to 100 letters, digits and _ : / . - (a dotted name reads a nested claim)",
        })
      }
      const defaultText = input.defaultRole === undefined ? (existing?.defaultRole ?? "none") : input.defaultRole
      if (!["admin", "analyst", "viewer", "none"].includes(defaultText)) {
        return yield* invalid({
          field: "defaultRole",
          reason: "malformed",
          rule: "must be viewer, analyst, admin or none",
        })
      }
      const defaultRole = defaultText === "none" ? null : (defaultText as ConsoleRole)
      if (roleClaim === null && defaultRole === null) {
        return yield* invalid({
          field: "defaultRole",
          reason: "required",
          detail: "Give the claim that carries the role, a default role, or both: otherwise nobody could sign in.",
        })
      }
      const passwordText = input.passwordSignIn ?? (existing === undefined || existing.passwordAllowed ? "on" : "off")
      if (passwordText !== "on" && passwordText !== "off") {
        return yield* invalid({ field: "passwordSignIn", reason: "malformed", rule: "must be on or off" })
      }

      const taken = yield* providers.domainTakenElsewhere(orgId, domains.domains)
      if (taken !== undefined) {
        return yield* invalid({
          field: "domains",
          reason: "taken",
          detail: `${taken} is admitted by another organization's provider already; an email domain signs in to one organization.`,
        })
      }
      // The provider is asked before anything is stored: a typo, a private address or a wrong client id shows now.
      yield* openId
        .check({ issuer, clientId, clientSecret: Redacted.make(secret) })
        .pipe(
          Effect.catchTag("ProviderError", (e) =>
            Effect.fail(
              invalid({ field: "issuer", reason: "refused", detail: `The provider cannot be used: ${e.reason}.` }),
            ),
          ),
        )
      const at = new Date()
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* providers.upsert(
            {
              orgId,
              issuer,
              clientId,
              clientSecretSealed: sealer.seal(new TextEncoder().encode(secret)),
              allowedDomains: domains.domains,
              roleClaim,
              defaultRole,
              passwordAllowed: passwordText === "on",
            },
            at,
          )
          const secretNote = input.clientSecret !== undefined && input.clientSecret !== "" ? ", new client secret" : ""
          yield* audited(
            orgId,
            existing === undefined ? "org.sign_in_provider_set" : "org.sign_in_provider_changed",
            orgId,
            `${issuer} (client ${clientId}; domains ${domains.domains.join(", ")}; role claim ${roleClaim ?? "none"}; ` +
              `default role ${defaultRole ?? "none"}; password sign-in ${passwordText}${secretNote})`,
          )
        }),
      )
      return shownProvider(Option.getOrThrow(yield* providers.forOrg(orgId)), appUrl)
    })

    /** Passwords on or off alone (no provider call): how an operator lets people back in when the provider is down. */
    const setPasswordSignIn = Effect.fn("SignInProviderAdmin.setPasswordSignIn")(function* (
      org: string,
      state: string | undefined,
    ) {
      yield* requireAdmin
      const orgId = (yield* orgAdmin.require(org)).id
      if (state !== "on" && state !== "off") {
        return yield* invalid({ field: "passwordSignIn", reason: "malformed", rule: "must be on or off" })
      }
      if (!(yield* providers.setPasswordAllowed(orgId, state === "on", new Date()))) {
        return yield* invalid({
          field: "passwordSignIn",
          reason: "state",
          detail: "This organization has no sign-in provider: passwords are its only sign-in.",
        })
      }
      yield* audited(orgId, "org.password_sign_in", orgId, state)
      return { id: orgId, passwordSignIn: state }
    }, sql.withTransaction)

    const remove = Effect.fn("SignInProviderAdmin.remove")(function* (org: string) {
      yield* requireAdmin
      const orgId = (yield* orgAdmin.require(org)).id
      const removed = yield* providers.remove(orgId)
      if (removed) yield* audited(orgId, "org.sign_in_provider_removed", orgId, null)
      return { id: orgId, removed }
    }, sql.withTransaction)

    /** After a SECRET_KEY rotation: every client secret sealed under the current key (in the caller's transaction). */
    const resealSecrets = Effect.fn("SignInProviderAdmin.resealSecrets")(function* () {
      const unreadable: Array<string> = []
      let resealed = 0
      for (const row of yield* providers.sealedSecrets()) {
        if (sealedKeyId(row.clientSecretSealed) === sealer.keyId) continue
        const opened = sealer.open(row.clientSecretSealed)
        if (opened === undefined) {
          unreadable.push(`sign-in provider of ${row.orgId}`)
          continue
        }
        yield* providers.setSealedSecret(row.orgId, sealer.seal(opened))
        resealed++
      }
      return { resealed, unreadable }
    })

    return { get, set, setPasswordSignIn, remove, resealSecrets } as const
  }),
}) {}
