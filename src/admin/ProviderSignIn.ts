import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted } from "effect"
import { constantTimeEqualText } from "../domain/crypto.ts"
import { isId, newId, type OrgId, type UserId } from "../domain/ids.ts"
import { emailDomain, roleFromClaims } from "../domain/signInProvider.ts"
import { AppConfig } from "../platform/config.ts"
import { Keys } from "../platform/keys.ts"
import { OpenIdConnect, type ProviderSettings } from "../platform/outbound/openIdConnect.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { ConsoleUsersRepo, type UserRow } from "../repos/ConsoleUsersRepo.ts"
import { type SignInProviderRow, SignInProvidersRepo } from "../repos/SignInProvidersRepo.ts"
import { hashToken, newToken, normalizeEmail, SignIn, type SignInResult } from "./SignIn.ts"
import { PROVIDER_CALLBACK_PATH } from "./SignInProviderAdmin.ts"

/** How long a sign-in may stay at the provider before its return is refused. */
export const PROVIDER_REQUEST_MS = 10 * 60_000
/**
 * Sign-ins of one organization at its provider at once. Starting one needs no account (the start link is public),
 * so a flood of starts would otherwise store rows without end; past this, starts are refused until some expire.
 */
export const MAX_REQUESTS_IN_FLIGHT = 2_000

export type ProviderStart =
  /** Send the browser to `url`; the browser keeps `state` (its cookie) for the return. */
  | { readonly _tag: "Redirect"; readonly url: string; readonly state: string }
  /** No organization's provider admits that email domain, or that organization has none. */
  | { readonly _tag: "NoProvider" }
  | { readonly _tag: "Unavailable"; readonly reason: string }

export type ProviderFinish =
  | Extract<SignInResult, { _tag: "SignedIn" }>
  /** Refused: `reason` is what the page says (it holds no token, code or secret). */
  | { readonly _tag: "Refused"; readonly reason: string }

/**
 * Sign-in through an organization's OpenID Connect provider. The start stores what the return must match (the hash
 * of a random `state`, the sealed PKCE verifier, the `nonce`) for 10 minutes and the browser keeps the state in a
 * cookie; the return must bring the same state in the same browser, spends it (a replay finds nothing), and the
 * provider's answer is checked by openid-client (OpenIdConnect). Then the service's own rules: an email the
 * provider does not call unverified, in one of the organization's domains, and a role from the role claim or the
 * default. A user is found by the provider's (issuer, subject), else by email within the organization, else created;
 * a disabled user stays out. Every refusal is audited (`signin.failed`) with its reason.
 */
export class ProviderSignIn extends Effect.Service<ProviderSignIn>()("ProviderSignIn", {
  effect: Effect.gen(function* () {
    const providers = yield* SignInProvidersRepo
    const users = yield* ConsoleUsersRepo
    const audit = yield* AuditRepo
    const signIn = yield* SignIn
    const openId = yield* OpenIdConnect
    const { sealer } = yield* Keys
    const { appUrl } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const redirectUri = `${appUrl}${PROVIDER_CALLBACK_PATH}`

    const settingsOf = (row: SignInProviderRow): Option.Option<ProviderSettings> => {
      const opened = sealer.open(row.clientSecretSealed)
      return opened === undefined
        ? Option.none()
        : Option.some({
            issuer: row.issuer,
            clientId: row.clientId,
            clientSecret: Redacted.make(new TextDecoder().decode(opened)),
          })
    }

    /** By an organization's id (its start link) or by a work email (the sign-in page's single sign-on form). */
    const start = Effect.fn("ProviderSignIn.start")(
      function* (by: { readonly org: string } | { readonly email: string }) {
        const email = "email" in by ? normalizeEmail(by.email).slice(0, 320) : undefined
        const found =
          "org" in by
            ? isId("organization", by.org)
              ? yield* providers.forOrg(by.org)
              : Option.none<SignInProviderRow>()
            : yield* providers.forDomain(emailDomain(email ?? ""))
        if (Option.isNone(found)) return { _tag: "NoProvider" } as ProviderStart
        const row = found.value
        const settings = settingsOf(row)
        if (Option.isNone(settings)) {
          return {
            _tag: "Unavailable",
            reason: "its client secret cannot be opened (SECRET_KEY changed)",
          } as ProviderStart
        }
        if (
          (yield* providers.requestsInFlight(row.orgId, new Date(), MAX_REQUESTS_IN_FLIGHT)) >= MAX_REQUESTS_IN_FLIGHT
        ) {
          return {
            _tag: "Unavailable",
            reason: "too many sign-ins are in progress; try again in a few minutes",
          } as ProviderStart
        }
        const state = newToken()
        const nonce = newToken()
        const verifier = newToken()
        const url = yield* openId.authorizationUrl(settings.value, {
          redirectUri,
          state,
          nonce,
          verifier,
          loginHint: email?.includes("@") ? email : undefined,
        })
        const at = new Date()
        yield* providers.insertRequest({
          stateHash: hashToken(state),
          orgId: row.orgId,
          verifierSealed: sealer.seal(new TextEncoder().encode(verifier)),
          nonce,
          at,
          expiresAt: new Date(at.getTime() + PROVIDER_REQUEST_MS),
        })
        return { _tag: "Redirect", url, state } as ProviderStart
      },
      Effect.catchTag("ProviderError", (e) =>
        Effect.succeed({ _tag: "Unavailable", reason: e.reason } as ProviderStart),
      ),
    )

    const refuse = (orgId: OrgId | null, user: UserRow | undefined, ip: string, reason: string) =>
      Effect.gen(function* () {
        yield* audit.record({
          orgId,
          actor: user?.id ?? "unknown",
          action: "signin.failed",
          target: user?.id ?? null,
          ip,
          detail: `through the organization's provider: ${reason}`.slice(0, 500),
        })
        yield* Effect.logWarning("console sign-in through a provider refused").pipe(
          Effect.annotateLogs({ orgId, userId: user?.id ?? null, ip }),
        )
        return { _tag: "Refused", reason } as ProviderFinish
      })

    /** The user the provider vouched for, created on a first sign-in; or why nobody is signed in. */
    const userFor = (
      row: SignInProviderRow,
      issuer: string,
      subject: string,
      email: string,
      given: { readonly role: UserRow["role"]; readonly fromClaim: boolean },
    ) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const at = new Date()
          const linked = yield* providers.userOfIdentity(issuer, subject)
          let user: UserRow | undefined
          if (Option.isSome(linked)) {
            user = Option.getOrUndefined(yield* users.findById(linked.value))
          } else {
            user = Option.getOrUndefined(yield* users.findByEmail(email))
            if (user === undefined) {
              const id: UserId = newId("consoleUser", at.getTime())
              const role = given.role
              yield* users.insertUser({ id, orgId: row.orgId, email, role, createdAt: at })
              yield* audit.record({
                orgId: row.orgId,
                actor: id,
                action: "user.create",
                target: id,
                ip: null,
                detail: `${email} (${role}) on first sign-in through ${issuer.slice(0, 200)}`,
              })
              user = Option.getOrUndefined(yield* users.findById(id))
            }
          }
          if (user === undefined || user.orgId !== row.orgId) return { refused: "this account belongs elsewhere" }
          if (user.disabledAt !== null) return { refused: "this user is disabled", user }
          yield* providers.linkIdentity({ issuer, subject, userId: user.id, at })
          // The claim decides the role at every sign-in; the default role was only for the user's creation.
          const role = given.role
          if (given.fromClaim && user.role !== role) {
            yield* users.setRole(user.id, role)
            yield* audit.record({
              orgId: row.orgId,
              actor: user.id,
              action: "user.role",
              target: user.id,
              ip: null,
              detail: `${user.role} -> ${role} (from the provider's claims)`,
            })
            user = { ...user, role }
          }
          return { user }
        }),
      )

    /**
     * The provider's return: `query` is the callback's query string as received, `cookieState` the state this
     * browser kept.
     */
    const finish = Effect.fn("ProviderSignIn.finish")(function* (
      query: string,
      cookieState: string | undefined,
      ip: string,
      previousToken: string | undefined,
      userAgent: string | undefined,
    ) {
      const params = new URLSearchParams(query)
      const state = params.get("state") ?? ""
      const bad = (reason: string) => refuse(null, undefined, ip, reason)
      if (state === "" || state.length > 100) return yield* bad("the provider's answer has no valid state")
      if (cookieState === undefined || !constantTimeEqualText(cookieState, state)) {
        return yield* bad("this sign-in was not started in this browser (or its 10 minutes passed)")
      }
      const request = yield* providers.takeRequest(hashToken(state), new Date())
      if (Option.isNone(request)) return yield* bad("this sign-in was already used or is older than 10 minutes")
      const orgId = request.value.orgId
      const found = yield* providers.forOrg(orgId)
      if (Option.isNone(found)) return yield* refuse(orgId, undefined, ip, "the organization has no provider any more")
      const row = found.value
      const settings = settingsOf(row)
      const verifier = sealer.open(request.value.verifierSealed)
      if (Option.isNone(settings) || verifier === undefined) {
        return yield* refuse(orgId, undefined, ip, "the provider's client secret cannot be opened")
      }
      const answer = yield* openId
        .finish(settings.value, new URL(`${redirectUri}?${params.toString()}`), {
          state,
          nonce: request.value.nonce,
          verifier: new TextDecoder().decode(verifier),
        })
        .pipe(Effect.either)
      if (answer._tag === "Left") return yield* refuse(orgId, undefined, ip, answer.left.reason)
      const { issuer, subject, claims } = answer.right
      const rawEmail = typeof claims.email === "string" ? claims.email : ""
      const email = normalizeEmail(rawEmail).slice(0, 320)
      if (email === "" || !email.includes("@")) return yield* refuse(orgId, undefined, ip, "the provider sent no email")
      if (claims.email_verified === false || claims.email_verified === "false") {
        return yield* refuse(orgId, undefined, ip, `the provider has not verified ${email}`)
      }
      if (!row.allowedDomains.includes(emailDomain(email))) {
        return yield* refuse(orgId, undefined, ip, `${email} is not in one of the organization's email domains`)
      }
      const role = roleFromClaims(claims, row.roleClaim, row.defaultRole)
      if (role === undefined) {
        return yield* refuse(orgId, undefined, ip, `the provider's claims give ${email} no console role`)
      }
      const chosen = yield* userFor(row, issuer, subject, email, role)
      if ("refused" in chosen) return yield* refuse(orgId, chosen.user, ip, chosen.refused)
      return yield* signIn.providerSession(chosen.user, issuer, ip, previousToken, userAgent)
    })

    return { start, finish } as const
  }),
}) {}
