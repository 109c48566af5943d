import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as client from "openid-client"
import { startOidcProvider, type TamperMode, type TestOidcProvider } from "../support/oidcProvider.ts"

/**
 * The test OpenID Connect provider (oidc-provider behind a TLS front on 127.0.0.1) driven by openid-client directly,
 * as the service will drive it: discovery over TLS trusting only the throwaway CA, the code flow with PKCE, state and
 * nonce, and ID tokens the harness forges that openid-client must refuse.
 */

const REDIRECT_URI = "https://127.0.0.1:9/console/auth/callback"
const SCOPE = "openid email profile"

let op: TestOidcProvider

const trustingFetch =
  (ca: string): client.CustomFetch =>
  (url, options) =>
    fetch(url, { ...(options as RequestInit), tls: { ca } })

const discover = async (auth: client.ClientAuth = client.ClientSecretBasic(op.clientSecret)) => {
  const config = await client.discovery(new URL(op.issuer), op.clientId, undefined, auth, {
    [client.customFetch]: trustingFetch(op.caPem),
  })
  client.enableNonRepudiationChecks(config)
  return config
}

/** Starts a code flow, logs in as `login` through the provider's pages, and redeems the code. */
const signIn = async (config: client.Configuration, login: string) => {
  const pkceCodeVerifier = client.randomPKCECodeVerifier()
  const expectedState = client.randomState()
  const expectedNonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: SCOPE,
    code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
    code_challenge_method: "S256",
    state: expectedState,
    nonce: expectedNonce,
  })
  const callback = new URL(await op.loginThrough(url.href, login))
  return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier, expectedState, expectedNonce })
}

/** "<code>: <most specific message>" of the error `promise` rejects with (openid-client codes), or "accepted". */
const refusal = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise
  } catch (error) {
    // openid-client rethrows oauth4webapi's error with a generic message; the specific one is its cause.
    const fields = error as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown; error?: unknown }
    const detail = fields.cause instanceof Error ? fields.cause.message : fields.message
    const oauthError = typeof fields.error === "string" ? ` (${fields.error})` : ""
    return `${String(fields.code ?? fields.name)}: ${String(detail)}${oauthError}`
  }
  return "accepted"
}

beforeAll(async () => {
  op = await startOidcProvider({ redirectUris: [REDIRECT_URI] })
  op.setAccount("alice", {
    sub: "3f6c1a2e-alice",
    email: "alice@example.org",
    email_verified: true,
    name: "Alice Analyst",
    roles: ["console-admin", "analyst"],
    groups: ["soc"],
    decoy_role: "responder",
  })
  op.setAccount("bob", { sub: "bob-7", email: "bob@example.org", email_verified: false })
})

afterAll(async () => {
  await op?.stop()
})

describe("test OpenID Connect provider", () => {
  test("issuer is an https IP literal and the client secret is long enough for the service", () => {
    expect(op.issuer).toMatch(/^https:\/\/127\.0\.0\.1:[0-9]+$/)
    expect(op.clientSecret.length).toBeGreaterThanOrEqual(32)
    expect(op.caPem).toContain("BEGIN CERTIFICATE")
  })

  test("discovery over TLS trusting the throwaway CA gives endpoints under the issuer", async () => {
    const before = op.hits("/.well-known/openid-configuration")
    const config = await discover()
    const metadata = config.serverMetadata()
    expect(metadata.issuer).toBe(op.issuer)
    expect(metadata.authorization_endpoint).toBe(`${op.issuer}/auth`)
    expect(metadata.token_endpoint).toBe(`${op.issuer}/token`)
    expect(metadata.jwks_uri).toBe(`${op.issuer}/jwks`)
    expect(metadata.code_challenge_methods_supported).toEqual(["S256"])
    expect(metadata.token_endpoint_auth_methods_supported).toContain("client_secret_basic")
    expect(op.hits("/.well-known/openid-configuration")).toBe(before + 1)
  })

  test("discovery fails when the CA is not trusted, so the TLS in these tests is real", async () => {
    const attempt = client.discovery(new URL(op.issuer), op.clientId, undefined, client.None())
    expect(await refusal(attempt)).toMatch(/certificate/i)
  })

  test("code flow with PKCE yields a signed ID token carrying the account's claims, custom ones included", async () => {
    const config = await discover()
    const tokensBefore = op.hits("/token")
    const tokens = await signIn(config, "alice")
    const claims = tokens.claims()
    expect(claims).toMatchObject({
      iss: op.issuer,
      aud: op.clientId,
      sub: "3f6c1a2e-alice",
      email: "alice@example.org",
      email_verified: true,
      name: "Alice Analyst",
      roles: ["console-admin", "analyst"],
      groups: ["soc"],
      decoy_role: "responder",
    })
    expect(op.hits("/token")).toBe(tokensBefore + 1)
    expect(op.hits("/jwks")).toBeGreaterThanOrEqual(1)
  })

  test("another account gets its own subject and unverified email", async () => {
    const tokens = await signIn(await discover(), "bob")
    const claims = tokens.claims()
    expect(claims?.sub).toBe("bob-7")
    expect(claims?.email_verified).toBe(false)
    expect(claims?.roles).toBeUndefined()
  })

  test("the callback carries code, state and the issuer, and the code is single-use", async () => {
    const config = await discover()
    const pkceCodeVerifier = client.randomPKCECodeVerifier()
    const expectedState = client.randomState()
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      code_challenge: await client.calculatePKCECodeChallenge(pkceCodeVerifier),
      code_challenge_method: "S256",
      state: expectedState,
    })
    const callback = new URL(await op.loginThrough(url.href, "alice"))
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI)
    expect(callback.searchParams.get("state")).toBe(expectedState)
    expect(callback.searchParams.get("iss")).toBe(op.issuer)
    expect(callback.searchParams.get("code")).toBeTruthy()
    await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier, expectedState, idTokenExpected: true })
    const replay = client.authorizationCodeGrant(config, callback, { pkceCodeVerifier, expectedState })
    expect(await refusal(replay)).toMatch(/^OAUTH_RESPONSE_BODY_ERROR: .*\(invalid_grant\)$/)
  })

  test("client_secret_post is accepted as well as client_secret_basic", async () => {
    const tokens = await signIn(await discover(client.ClientSecretPost(op.clientSecret)), "alice")
    expect(tokens.claims()?.sub).toBe("3f6c1a2e-alice")
  })

  test("a wrong client secret is refused at the token endpoint", async () => {
    const attempt = signIn(await discover(client.ClientSecretBasic(`${op.clientSecret}x`)), "alice")
    const error = await attempt.then(
      () => undefined,
      (reason: unknown) => reason,
    )
    expect(error).toBeInstanceOf(client.WWWAuthenticateChallengeError)
    const challenge = error as client.WWWAuthenticateChallengeError
    expect(challenge.status).toBe(401)
    expect(challenge.cause[0]?.parameters.error).toBe("invalid_client")
  })

  test("an authorization request without PKCE is sent back with invalid_request", async () => {
    const config = await discover()
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: SCOPE, state: "s1" })
    const callback = new URL(await op.loginThrough(url.href, "alice"))
    expect(callback.searchParams.get("error")).toBe("invalid_request")
    expect(callback.searchParams.get("code")).toBeNull()
  })

  test("an unknown login never reaches the client", async () => {
    const config = await discover()
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
      code_challenge_method: "S256",
    })
    expect(await refusal(op.loginThrough(url.href, "mallory"))).toMatch(/no account "mallory"/)
  })

  test("setAccount refuses a claim the provider would not release, so a test cannot silently lose it", () => {
    expect(() => op.setAccount("carol", { sub: "carol", clearance: "top" })).toThrow(/clearance/)
  })
})

describe("forged ID tokens", () => {
  const refusals: ReadonlyArray<readonly [Exclude<TamperMode, "none">, string]> = [
    ["wrong-issuer", 'OAUTH_JWT_CLAIM_COMPARISON_FAILED: unexpected JWT "iss" (issuer) claim value'],
    ["wrong-audience", 'OAUTH_JWT_CLAIM_COMPARISON_FAILED: unexpected JWT "aud" (audience) claim value'],
    ["other-key", "OAUTH_INVALID_RESPONSE: JWT signature verification failed"],
    ["expired", 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED: unexpected JWT "exp" (expiration time) claim value'],
  ]

  for (const [mode, expected] of refusals) {
    test(`${mode} is refused by openid-client because the ID token no longer checks out`, async () => {
      const config = await discover()
      op.tamper(mode)
      try {
        expect(await refusal(signIn(config, "alice"))).toStartWith(expected)
      } finally {
        op.tamper("none")
      }
    })
  }

  test("other-key passes when signature checks are off, which is why they must be enabled", async () => {
    const config = await client.discovery(
      new URL(op.issuer),
      op.clientId,
      undefined,
      client.ClientSecretBasic(op.clientSecret),
      { [client.customFetch]: trustingFetch(op.caPem) },
    )
    op.tamper("other-key")
    try {
      const tokens = await signIn(config, "alice")
      expect(tokens.claims()?.sub).toBe("3f6c1a2e-alice")
    } finally {
      op.tamper("none")
    }
  })

  test("after tampering is switched off the provider's own ID token is accepted again", async () => {
    op.tamper("expired")
    op.tamper("none")
    const tokens = await signIn(await discover(), "alice")
    expect(tokens.claims()?.iss).toBe(op.issuer)
  })
})
