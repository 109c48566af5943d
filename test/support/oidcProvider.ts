import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose"
import type { Configuration } from "oidc-provider"
import { issueCertificate, makeTestCa } from "./tls.ts"

/**
 * A real OpenID Connect provider on loopback for tests: `oidc-provider` on a plain-HTTP port that only this process
 * knows, behind a TLS front (`Bun.serve`, a certificate for IP 127.0.0.1 from a throwaway CA) whose address is the
 * issuer. The front counts requests per path, and can replace the ID token of token responses with one the harness
 * re-signs (wrong issuer, wrong audience, a different key under the same `kid`, or already expired).
 *
 * The provider's own signing key is made here (RS256) and handed to oidc-provider, so a re-signed token is signed
 * exactly as the provider would have signed it, except for the one thing a tamper mode changes.
 *
 * The client is confidential and registered for `client_secret_basic`; the front also accepts `client_secret_post`
 * at the token endpoint by moving `client_id`/`client_secret` from the form body into a Basic Authorization header
 * (oidc-provider itself accepts exactly one method per client).
 */

export type TamperMode = "none" | "wrong-issuer" | "wrong-audience" | "other-key" | "expired"

export interface AccountClaimsInput {
  readonly sub: string
  readonly email?: string
  readonly email_verified?: boolean
  readonly [claim: string]: unknown
}

export interface TestOidcProvider {
  /** `https://127.0.0.1:<port>`: an IP literal, never "localhost". */
  readonly issuer: string
  /** The CA that signed the provider's certificate (PEM). */
  readonly caPem: string
  readonly clientId: string
  /** A random 43-character secret. */
  readonly clientSecret: string
  /** An account the login form accepts by `login` (any password); its claims appear in the ID token. */
  setAccount(login: string, claims: AccountClaimsInput): void
  /** How the following token responses' ID token is forged (re-signed by the harness): "none" leaves it as made. */
  tamper(mode: TamperMode): void
  /**
   * Follows an authorization URL through the provider's login and consent pages as `login` (HTTP only, cookies kept
   * for this call) and returns the redirect back to the client (callback URL with code, state, iss) unfollowed.
   */
  loginThrough(authorizationUrl: string, login: string): Promise<string>
  /** How many requests each path got (e.g. "/token", "/jwks", "/.well-known/openid-configuration"). */
  hits(path: string): number
  stop(): Promise<void>
}

export interface OidcProviderOptions {
  readonly redirectUris: ReadonlyArray<string>
  /** Default "console-test-client". */
  readonly clientId?: string
  /** Claim names released under the `openid` scope besides the built-in custom ones (see `CUSTOM_CLAIMS`). */
  readonly extraClaims?: ReadonlyArray<string>
}

/** Custom claims released in every ID token (under the `openid` scope) when the account has them. */
export const CUSTOM_CLAIMS = ["roles", "groups", "decoy_role", "role", "department"] as const
const EMAIL_CLAIMS = ["email", "email_verified"] as const
const PROFILE_CLAIMS = [
  "name",
  "preferred_username",
  "given_name",
  "family_name",
  "nickname",
  "locale",
  "zoneinfo",
  "updated_at",
] as const

const ISSUER_HOST = "127.0.0.1"
const MAX_LOGIN_STEPS = 12
const SIGNING_ALG = "RS256"

/** oidc-provider prints development notices (Bun is "unsupported", dev interactions, memory adapter) on purpose. */
const withoutProviderNotices = async <A>(use: () => Promise<A>): Promise<A> => {
  const { warn, info } = console
  const quiet =
    (original: (...args: Array<unknown>) => void) =>
    (...args: Array<unknown>): void => {
      const first = args[0]
      if (typeof first === "string" && first.startsWith("oidc-provider ")) return
      original(...args)
    }
  console.warn = quiet(warn)
  console.info = quiet(info)
  try {
    return await use()
  } finally {
    console.warn = warn
    console.info = info
  }
}

const randomSecret = (): string => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"])

/** Form-body client credentials become a Basic header (RFC 6749 §2.3.1 encoding); other bodies pass unchanged. */
const basicFromPostedCredentials = (headers: Headers, body: ArrayBuffer): ArrayBuffer => {
  if (headers.has("authorization")) return body
  if (!(headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded")) return body
  const form = new URLSearchParams(new TextDecoder().decode(body))
  const id = form.get("client_id")
  const secret = form.get("client_secret")
  if (id === null || secret === null) return body
  form.delete("client_id")
  form.delete("client_secret")
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, "+")
  headers.set("authorization", `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString("base64")}`)
  return new TextEncoder().encode(form.toString()).buffer as ArrayBuffer
}

interface Jar {
  readonly cookies: Map<string, string>
}

const storeCookies = (jar: Jar, response: Response): void => {
  for (const line of response.headers.getSetCookie()) {
    const [pair = "", ...attributes] = line.split(";")
    const eq = pair.indexOf("=")
    if (eq <= 0) continue
    const name = pair.slice(0, eq).trim()
    const value = pair.slice(eq + 1).trim()
    const expired = attributes.some((attribute) => {
      const [key = "", val = ""] = attribute.split("=").map((part) => part.trim())
      if (key.toLowerCase() === "max-age") return Number(val) <= 0
      if (key.toLowerCase() === "expires") return Date.parse(val) <= Date.now()
      return false
    })
    if (expired || value === "") jar.cookies.delete(name)
    else jar.cookies.set(name, value)
  }
}

const cookieHeader = (jar: Jar): string => [...jar.cookies].map(([name, value]) => `${name}=${value}`).join("; ")

const decodeHtml = (text: string): string =>
  text
    .replace(/&amp;/g, "&")
    .replace(/&#x2F;/gi, "/")
    .replace(/&#x3D;/gi, "=")
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')

export const startOidcProvider = async (options: OidcProviderOptions): Promise<TestOidcProvider> => {
  if (options.redirectUris.length === 0) throw new Error("startOidcProvider: give at least one redirect URI")
  const clientId = options.clientId ?? "console-test-client"
  const clientSecret = randomSecret()
  const customClaims = [...CUSTOM_CLAIMS, ...(options.extraClaims ?? [])]
  const released = new Set<string>(["sub", ...customClaims, ...EMAIL_CLAIMS, ...PROFILE_CLAIMS])

  const ca = makeTestCa("Throwaway OIDC Provider Test CA")
  const certificate = issueCertificate(ca, { ipAddresses: [ISSUER_HOST] })

  const kid = `test-${randomSecret().slice(0, 12)}`
  const signing = await generateKeyPair(SIGNING_ALG, { extractable: true })
  const other = await generateKeyPair(SIGNING_ALG, { extractable: true })
  const privateJwk: JWK = { ...(await exportJWK(signing.privateKey)), kid, alg: SIGNING_ALG, use: "sig" }

  const accounts = new Map<string, AccountClaimsInput>()
  const hitCounts = new Map<string, number>()
  let tamperMode: TamperMode = "none"
  let innerPort = 0

  /**
   * oidc-provider's login page makes whatever was typed the session's account id, which is also the ID token's `sub`
   * (and the grant's owner), so a login form post for a known login is passed on with that account's `sub` instead.
   */
  const subjectForLogin = (headers: Headers, body: ArrayBuffer): ArrayBuffer => {
    if (!(headers.get("content-type") ?? "").startsWith("application/x-www-form-urlencoded")) return body
    const form = new URLSearchParams(new TextDecoder().decode(body))
    const account = accounts.get(form.get("login") ?? "")
    if (form.get("prompt") !== "login" || account === undefined) return body
    form.set("login", account.sub)
    return new TextEncoder().encode(form.toString()).buffer as ArrayBuffer
  }

  const forge = async (idToken: string, mode: Exclude<TamperMode, "none">): Promise<string> => {
    const header = decodeProtectedHeader(idToken)
    const payload = { ...decodeJwt(idToken) }
    let key = signing.privateKey
    switch (mode) {
      case "wrong-issuer":
        payload.iss = "https://evil.example"
        break
      case "wrong-audience":
        payload.aud = "someone-else"
        break
      case "other-key":
        key = other.privateKey
        break
      case "expired": {
        const past = Math.floor(Date.now() / 1000) - 20 * 60
        payload.iat = past
        payload.exp = past
        break
      }
    }
    return new SignJWT(payload).setProtectedHeader({ ...header, alg: header.alg ?? SIGNING_ALG }).sign(key)
  }

  const front = Bun.serve({
    port: 0,
    hostname: ISSUER_HOST,
    tls: { cert: certificate.cert, key: certificate.key },
    idleTimeout: 30,
    async fetch(req) {
      const url = new URL(req.url)
      hitCounts.set(url.pathname, (hitCounts.get(url.pathname) ?? 0) + 1)
      const headers = new Headers()
      for (const [name, value] of req.headers) {
        if (!HOP_BY_HOP.has(name) && name !== "host" && name !== "accept-encoding") headers.append(name, value)
      }
      headers.set("accept-encoding", "identity")
      headers.set("x-forwarded-proto", "https")
      headers.set("x-forwarded-host", url.host)
      headers.set("x-forwarded-for", ISSUER_HOST)
      let body: ArrayBuffer | undefined
      if (req.method !== "GET" && req.method !== "HEAD") {
        body = await req.arrayBuffer()
        if (url.pathname === "/token") body = basicFromPostedCredentials(headers, body)
        else if (url.pathname.startsWith("/interaction/")) body = subjectForLogin(headers, body)
      }
      const upstream = await fetch(`http://${ISSUER_HOST}:${innerPort}${url.pathname}${url.search}`, {
        method: req.method,
        headers,
        redirect: "manual",
        ...(body === undefined ? {} : { body }),
      })
      const responseHeaders = new Headers()
      for (const [name, value] of upstream.headers) {
        if (!HOP_BY_HOP.has(name) && name !== "content-encoding" && name !== "set-cookie") {
          responseHeaders.append(name, value)
        }
      }
      for (const cookie of upstream.headers.getSetCookie()) responseHeaders.append("set-cookie", cookie)
      const mode = tamperMode
      if (url.pathname === "/token" && mode !== "none" && upstream.status === 200) {
        const json = (await upstream.json()) as Record<string, unknown>
        if (typeof json.id_token === "string") json.id_token = await forge(json.id_token, mode)
        return new Response(JSON.stringify(json), { status: upstream.status, headers: responseHeaders })
      }
      return new Response(upstream.body, { status: upstream.status, headers: responseHeaders })
    },
  })
  const issuer = `https://${ISSUER_HOST}:${front.port}`

  const configuration: Configuration = {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [...options.redirectUris],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
        id_token_signed_response_alg: SIGNING_ALG,
      },
    ],
    jwks: { keys: [privateJwk] },
    cookies: { keys: [randomSecret(), randomSecret()] },
    claims: {
      openid: ["sub", ...customClaims],
      email: [...EMAIL_CLAIMS],
      profile: [...PROFILE_CLAIMS],
    },
    scopes: ["openid", "email", "profile"],
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      rpInitiatedLogout: { enabled: false },
      introspection: { enabled: false },
      revocation: { enabled: false },
    },
    // Account ids are subjects: the front turns the login typed into the form into the account's `sub`.
    findAccount: (_ctx, id) => {
      const claims = [...accounts.values()].find((account) => account.sub === id)
      if (claims === undefined) return undefined
      return { accountId: id, claims: () => ({ ...claims }) }
    },
    clientBasedCORS: () => false,
    renderError: (ctx, out) => {
      ctx.type = "text/plain"
      ctx.body = `${out.error}${out.error_description === undefined ? "" : `: ${out.error_description}`}`
    },
    ttl: {
      AccessToken: 600,
      AuthorizationCode: 60,
      IdToken: 600,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
    },
  }

  const inner = await withoutProviderNotices(async () => {
    const { Provider } = await import("oidc-provider")
    const provider = new Provider(issuer, configuration)
    provider.proxy = true
    const server: Server = createServer(provider.callback())
    await new Promise<void>((resolve) => server.listen(0, ISSUER_HOST, () => resolve()))
    return server
  })
  innerPort = (inner.address() as AddressInfo).port

  const loginThrough = async (authorizationUrl: string, login: string): Promise<string> => {
    if (!accounts.has(login)) throw new Error(`loginThrough: no account "${login}" (call setAccount first)`)
    const jar: Jar = { cookies: new Map() }
    const tls = { ca: ca.caCert }
    let next = new URL(authorizationUrl)
    let method: "GET" | "POST" = "GET"
    let form: URLSearchParams | undefined
    for (let step = 0; step < MAX_LOGIN_STEPS; step++) {
      if (next.origin !== issuer) return next.href
      const headers: Record<string, string> = { cookie: cookieHeader(jar) }
      if (form !== undefined) headers["content-type"] = "application/x-www-form-urlencoded"
      const response = await fetch(next, {
        method,
        headers,
        redirect: "manual",
        tls,
        ...(form === undefined ? {} : { body: form.toString() }),
      })
      storeCookies(jar, response)
      const sent = method
      method = "GET"
      form = undefined
      const location = response.headers.get("location")
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel()
        next = new URL(location, next)
        continue
      }
      const page = await response.text()
      if (response.status !== 200) {
        throw new Error(`loginThrough: ${sent} ${next.pathname} answered ${response.status}`)
      }
      const action = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(page)?.[1]
      const prompt = /name="prompt" value="([a-z]+)"/.exec(page)?.[1]
      if (action === undefined || prompt === undefined) {
        throw new Error(`loginThrough: ${next.pathname} is neither a redirect nor a login or consent form`)
      }
      next = new URL(decodeHtml(action), next)
      method = "POST"
      form =
        prompt === "login"
          ? new URLSearchParams({ prompt, login, password: "any password" })
          : new URLSearchParams({ prompt })
    }
    throw new Error(`loginThrough: no redirect to the client after ${MAX_LOGIN_STEPS} steps`)
  }

  return {
    issuer,
    caPem: ca.caCert,
    clientId,
    clientSecret,
    setAccount: (login, claims) => {
      const unreleased = Object.keys(claims).filter((name) => !released.has(name))
      if (unreleased.length > 0) {
        throw new Error(`setAccount: claims ${unreleased.join(", ")} are not released; add them to extraClaims`)
      }
      accounts.set(login, { ...claims })
    },
    tamper: (mode) => {
      tamperMode = mode
    },
    loginThrough,
    hits: (path) => hitCounts.get(path) ?? 0,
    stop: async () => {
      await front.stop(true)
      inner.closeAllConnections()
      await new Promise<void>((resolve) => inner.close(() => resolve()))
    },
  }
}
