/**
 * An organization's OpenID Connect provider, through `openid-client` (panva's certified relying party library):
 * discovery, the authorization code flow with PKCE (S256), `state` and `nonce`, and the ID token's signature (JWKS),
 * issuer, audience, expiry and nonce checked by the library, not by code of ours. Every request it makes (discovery,
 * keys, token, user info) goes through `pinnedFetch`: the outbound address rule of channel URLs (https, public
 * addresses, the connection pinned to a checked address, no redirects, bounded time and size).
 */
import { createHash } from "node:crypto"
import { Data, Duration, Effect, Redacted } from "effect"
import * as oidc from "openid-client"
import { AppConfig } from "../config.ts"
import { pinnedFetch } from "./pinnedFetch.ts"
import { type AddressPolicy, checkAndResolveWebhookUrl, checkWebhookUrl, systemLookup } from "./urlRule.ts"

/** What the service needs to talk to one organization's provider. */
export interface ProviderSettings {
  readonly issuer: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
}

/**
 * Why the provider could not be used or its answer was refused: a sentence for the page and the log. It never holds a
 * code, token, secret or verifier; text the provider sent (its error description) is data, clipped.
 */
export class ProviderError extends Data.TaggedError("ProviderError")<{ readonly reason: string }> {}

/** The discovery document's endpoints the service uses, each checked by the outbound address rule. */
const CHECKED_ENDPOINTS = ["authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"] as const

/** A provider's configuration is discovered again after this long (its keys are fetched again on an unknown key id). */
const DISCOVERY_TTL = Duration.minutes(10)
const MAX_CACHED = 200

// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const clean = (text: string, max = 300) => text.replace(/[\u0000-\u001f\u007f]/g, " ").slice(0, max)

/** The URL rule's reasons speak of webhooks; here the URL is the provider's. */
const urlReason = (reason: string) => reason.replaceAll("webhook URLs", "URLs").replaceAll("webhook URL", "URL")

/** openid-client's and oauth4webapi's errors as one sentence (their messages carry no token or secret). */
const describe = (error: unknown): string => {
  if (error instanceof oidc.ResponseBodyError) {
    return `the provider answered ${error.status} ${clean(error.error, 80)}${
      error.error_description ? `: ${clean(error.error_description, 200)}` : ""
    }`
  }
  if (error instanceof oidc.AuthorizationResponseError) {
    return `the provider refused: ${clean(error.error, 80)}${
      error.error_description ? `: ${clean(error.error_description, 200)}` : ""
    }`
  }
  if (error instanceof Error) {
    // openid-client wraps oauth4webapi's error in a general one ("invalid response encountered"): the cause says what.
    return clean(error.cause instanceof Error ? error.cause.message : error.message, 200)
  }
  return "unexpected error"
}

export class OpenIdConnect extends Effect.Service<OpenIdConnect>()("OpenIdConnect", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const policy: AddressPolicy = { allowPrivate: config.webhooks.allowPrivate }
    const fetcher = pinnedFetch({ policy, ca: config.webhooks.extraCa, timeoutMs: 5_000, maxResponseBytes: 512 * 1024 })
    const customFetch: oidc.CustomFetch = (url, options) =>
      fetcher(url, {
        method: options.method,
        headers: options.headers,
        body: options.body as string | URLSearchParams | null,
        signal: options.signal ?? null,
      })
    const cache = new Map<string, { readonly at: number; readonly configuration: oidc.Configuration }>()
    const cacheKey = (p: ProviderSettings) =>
      createHash("sha256")
        .update(`${p.issuer}\n${p.clientId}\n${Redacted.value(p.clientSecret)}`)
        .digest("base64url")

    /** The issuer URL by the rule before anything is fetched: https, no credentials, public addresses. */
    const checkIssuer = (issuer: string) =>
      Effect.gen(function* () {
        const syntax = checkWebhookUrl(issuer)
        if (!syntax.ok) return yield* new ProviderError({ reason: `the issuer URL: ${urlReason(syntax.reason)}` })
        if (syntax.url.search !== "") {
          return yield* new ProviderError({ reason: "the issuer URL must not have a query (?…)" })
        }
        const resolved = yield* Effect.promise(() => checkAndResolveWebhookUrl(issuer, systemLookup, policy))
        if (!resolved.ok) return yield* new ProviderError({ reason: `the issuer URL: ${urlReason(resolved.reason)}` })
      })

    const discoverNow = (p: ProviderSettings) =>
      Effect.gen(function* () {
        yield* checkIssuer(p.issuer)
        const configuration = yield* Effect.tryPromise({
          try: () =>
            oidc.discovery(
              new URL(p.issuer),
              p.clientId,
              { client_secret: Redacted.value(p.clientSecret) },
              oidc.ClientSecretBasic(Redacted.value(p.clientSecret)),
              { [oidc.customFetch]: customFetch, timeout: 10 },
            ),
          catch: (error) => new ProviderError({ reason: `discovery failed: ${describe(error)}` }),
        })
        const metadata = configuration.serverMetadata()
        for (const name of CHECKED_ENDPOINTS) {
          const url = metadata[name]
          if (url === undefined) {
            if (name === "userinfo_endpoint") continue
            return yield* new ProviderError({ reason: `the provider's discovery document names no ${name}` })
          }
          const checked = yield* Effect.promise(() => checkAndResolveWebhookUrl(url, systemLookup, policy))
          if (!checked.ok) {
            return yield* new ProviderError({ reason: `the provider's ${name}: ${urlReason(checked.reason)}` })
          }
        }
        if (!(metadata.code_challenge_methods_supported ?? ["S256"]).includes("S256")) {
          return yield* new ProviderError({ reason: "the provider does not support PKCE with S256" })
        }
        // The ID token's signature is checked against the provider's keys even though it came over TLS.
        oidc.enableNonRepudiationChecks(configuration)
        return configuration
      })

    /** The provider's configuration, discovered at most every 10 minutes per (issuer, client, secret). */
    const discover = (p: ProviderSettings) =>
      Effect.gen(function* () {
        const key = cacheKey(p)
        const cached = cache.get(key)
        if (cached !== undefined && Date.now() - cached.at < Duration.toMillis(DISCOVERY_TTL)) {
          return cached.configuration
        }
        const configuration = yield* discoverNow(p)
        if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string)
        cache.set(key, { at: Date.now(), configuration })
        return configuration
      })

    return {
      /** Discovery now (never cached): what saving a provider checks before it is stored. */
      check: (p: ProviderSettings) => Effect.asVoid(discoverNow(p)),
      /** Where to send the browser: the provider's authorization endpoint with PKCE, state, nonce and a login hint. */
      authorizationUrl: (
        p: ProviderSettings,
        request: {
          readonly redirectUri: string
          readonly state: string
          readonly nonce: string
          readonly verifier: string
          readonly loginHint: string | undefined
        },
      ) =>
        Effect.gen(function* () {
          const configuration = yield* discover(p)
          const challenge = yield* Effect.promise(() => oidc.calculatePKCECodeChallenge(request.verifier))
          const parameters: Record<string, string> = {
            redirect_uri: request.redirectUri,
            scope: "openid email profile",
            code_challenge: challenge,
            code_challenge_method: "S256",
            state: request.state,
            nonce: request.nonce,
          }
          if (request.loginHint !== undefined) parameters.login_hint = request.loginHint
          return oidc.buildAuthorizationUrl(configuration, parameters).href
        }),
      /**
       * The callback: the authorization response checked (state, issuer when sent), the code exchanged with the
       * verifier, the ID token checked (signature, issuer, audience, expiry, nonce). The ID token's claims, with the
       * user info's added when the provider has that endpoint.
       */
      finish: (
        p: ProviderSettings,
        callbackUrl: URL,
        expected: { readonly state: string; readonly nonce: string; readonly verifier: string },
      ) =>
        Effect.gen(function* () {
          const configuration = yield* discover(p)
          const tokens = yield* Effect.tryPromise({
            try: () =>
              oidc.authorizationCodeGrant(configuration, callbackUrl, {
                pkceCodeVerifier: expected.verifier,
                expectedState: expected.state,
                expectedNonce: expected.nonce,
                idTokenExpected: true,
              }),
            catch: (error) => new ProviderError({ reason: describe(error) }),
          })
          const idToken = tokens.claims()
          if (idToken === undefined) return yield* new ProviderError({ reason: "the provider sent no ID token" })
          // The user info adds what a provider keeps out of its ID tokens (Keycloak's roles, an email); the ID token's
          // own claims win, and the library checks that the user info is about the same subject. A provider whose
          // user info fails still signs in on its ID token.
          let claims: Record<string, unknown> = { ...idToken }
          if (configuration.serverMetadata().userinfo_endpoint !== undefined) {
            const info = yield* Effect.tryPromise({
              try: () => oidc.fetchUserInfo(configuration, tokens.access_token, idToken.sub),
              catch: (error) => new ProviderError({ reason: `user info: ${describe(error)}` }),
            }).pipe(
              Effect.tapError((e) =>
                Effect.logWarning("provider user info not read").pipe(Effect.annotateLogs({ reason: e.reason })),
              ),
              Effect.option,
            )
            if (info._tag === "Some") claims = { ...info.value, ...idToken }
          }
          return { issuer: idToken.iss, subject: idToken.sub, claims }
        }),
    }
  }),
}) {}
