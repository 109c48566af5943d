/**
 * A `fetch` for libraries that take one (openid-client's `customFetch`) whose every request passes the outbound address
 * rule that channel URLs pass: `https://` only, the host resolved and every address checked, the connection pinned to
 * a checked address (no DNS rebinding), TLS verified against the URL's host name with the system roots plus `ca`, no
 * proxy, no redirect followed, no connection reuse, bounded in time (DNS included) and in response size.
 *
 * It is the transport of sendHttps (send.ts, `exchangeHttps`), so it inherits what was measured there in Bun 1.4.4:
 * `node:https` to the checked IP with `servername` and an explicit `Host`, `rejectUnauthorized: true` (which wins over
 * NODE_TLS_REJECT_UNAUTHORIZED=0), `agent: false`, and HTTPS_PROXY ignored.
 *
 * Differences from the global `fetch`, on purpose: GET and POST only; a 3xx is returned as it is whatever `redirect`
 * says; no Accept-Encoding is sent and the body is returned as received; the whole body is read (up to
 * `maxResponseBytes`, more rejects) before the promise resolves; the Response's `url` is "". Any failure to get a
 * complete answer rejects with {@link OutboundRefused}, except an aborted `signal`, which rejects with the signal's
 * reason as `fetch` does (openid-client reads its TimeoutError as OAUTH_TIMEOUT).
 */
import { clip } from "./connection.ts"
import { budgetOf, byteLimitOf, exchangeHttps } from "./send.ts"
import type { AddressPolicy } from "./urlRule.ts"

export interface PinnedFetchOptions {
  readonly policy: AddressPolicy
  /** Extra trusted CA certificates (PEM), in addition to the system roots. */
  readonly ca?: ReadonlyArray<string>
  /** Default `systemLookup` (getaddrinfo). */
  readonly lookup?: (host: string) => Promise<ReadonlyArray<string>>
  /** The whole exchange, DNS included. Default 5000. */
  readonly timeoutMs?: number
  /** Default 1 MiB; a longer response body rejects. */
  readonly maxResponseBytes?: number
}

export interface PinnedFetchInit {
  /** GET (default) or POST, any case. */
  readonly method?: string | undefined
  readonly headers?: Bun.HeadersInit | undefined
  /**
   * ArrayBuffer and ReadableStream are in the type so that the function is an openid-client `CustomFetch` as it is;
   * a ReadableStream is refused (openid-client sends strings and URLSearchParams).
   */
  readonly body?: string | URLSearchParams | Uint8Array | ArrayBuffer | ReadableStream | null | undefined
  readonly signal?: AbortSignal | null | undefined
  /** Accepted for fetch compatibility and ignored: redirects are never followed. */
  readonly redirect?: string | undefined
}

/** A request that got no usable answer; the message says why and never holds a header value or a body. */
export class OutboundRefused extends Error {
  override readonly name = "OutboundRefused"
}

export const DEFAULT_FETCH_TIMEOUT_MS = 5000
export const DEFAULT_FETCH_MAX_RESPONSE_BYTES = 1024 * 1024

/** Set by the transport, or meaningless without a persistent connection, or would change the body's encoding. */
const OWN_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "upgrade",
  "te",
  "trailer",
  "expect",
  "accept-encoding",
])

const FORM = "application/x-www-form-urlencoded;charset=UTF-8"
const TEXT = "text/plain;charset=UTF-8"
/** Statuses whose Response must have a null body. */
const NULL_BODY = new Set([101, 103, 204, 205, 304])

type Headerlike = NonNullable<PinnedFetchInit["headers"]>

/** The caller's headers as pairs, or why they are unusable (values are never shown). */
const headerEntries = (init: Headerlike | undefined): ReadonlyArray<readonly [string, string]> | string => {
  if (init === undefined) return []
  if (init instanceof Headers) return [...init.entries()]
  if (Array.isArray(init)) {
    const pairs: Array<readonly [string, string]> = []
    for (const pair of init as ReadonlyArray<unknown>) {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
        return "request headers must be (name, value) string pairs"
      }
      pairs.push([pair[0], pair[1]])
    }
    return pairs
  }
  const pairs: Array<readonly [string, string]> = []
  for (const [name, value] of Object.entries(init as Record<string, unknown>)) {
    const values: ReadonlyArray<unknown> = Array.isArray(value) ? value : [value]
    for (const one of values) {
      if (typeof one !== "string") return `invalid value for request header ${clip(name, 40)}`
      pairs.push([name, one])
    }
  }
  return pairs
}

/** The body bytes and the Content-Type `fetch` would give them, or why the body is refused. */
const bodyOf = (
  method: "GET" | "POST",
  body: PinnedFetchInit["body"],
): { readonly bytes: Buffer | null; readonly contentType: string | undefined } | string => {
  if (body === undefined || body === null)
    return { bytes: method === "POST" ? Buffer.alloc(0) : null, contentType: undefined }
  if (method === "GET") return "a GET request cannot have a body"
  if (typeof body === "string") return { bytes: Buffer.from(body, "utf8"), contentType: TEXT }
  if (body instanceof URLSearchParams) return { bytes: Buffer.from(body.toString(), "utf8"), contentType: FORM }
  if (body instanceof Uint8Array) return { bytes: Buffer.from(body), contentType: undefined }
  if (body instanceof ArrayBuffer) return { bytes: Buffer.from(new Uint8Array(body)), contentType: undefined }
  return "unsupported request body type (string, URLSearchParams, Uint8Array or ArrayBuffer only)"
}

/** What `fetch` rejects with when its signal aborts: the reason, or an AbortError when there is none. */
const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("This operation was aborted", "AbortError")

const refused = (reason: string): Promise<never> => Promise.reject(new OutboundRefused(reason))

/**
 * A `fetch`-shaped function bound to `options`. It resolves to a standard `Response` (status, status text, response
 * headers, body bounded by `maxResponseBytes`) for any HTTP status, 3xx included; it rejects with
 * {@link OutboundRefused} for a refused URL, address, method, header or body, a TLS or connection failure, a time-out or
 * a body over the limit, and with the signal's reason when `signal` aborts.
 */
export const pinnedFetch =
  (options: PinnedFetchOptions) =>
  async (input: string | URL, init?: PinnedFetchInit): Promise<Response> => {
    const signal = init?.signal ?? undefined
    if (signal?.aborted === true) throw abortReason(signal)
    const url = typeof input === "string" ? input : input.href
    const givenMethod = init?.method ?? "GET"
    const method = givenMethod.toUpperCase()
    if (method !== "GET" && method !== "POST") {
      return refused(`method ${clip(givenMethod, 20)} is not allowed (GET and POST only)`)
    }
    const headers = headerEntries(init?.headers)
    if (typeof headers === "string") return refused(headers)
    const body = bodyOf(method, init?.body)
    if (typeof body === "string") return refused(body)

    const maxResponseBytes = byteLimitOf(options.maxResponseBytes, DEFAULT_FETCH_MAX_RESPONSE_BYTES)
    const exchange = await exchangeHttps({
      url,
      method,
      headers,
      ownHeaders: OWN_HEADERS,
      contentType: { fallback: body.contentType },
      body: body.bytes,
      policy: options.policy,
      lookup: options.lookup,
      ca: options.ca,
      budgetMs: budgetOf(options.timeoutMs, DEFAULT_FETCH_TIMEOUT_MS),
      maxResponseBytes,
      signal,
    })
    if (exchange.aborted && signal !== undefined) throw abortReason(signal)
    if (exchange.error !== null) return refused(exchange.error)
    const { status } = exchange
    if (status === null) return refused("no HTTP status")
    if (exchange.truncated) return refused(`response body larger than ${maxResponseBytes} bytes (HTTP ${status})`)
    if (status < 200 || status > 599) return refused(`unusable HTTP status ${status}`)

    const responseHeaders = new Headers()
    for (const [name, value] of exchange.headers) {
      try {
        responseHeaders.append(name, value)
      } catch {
        return refused(`unusable response header ${clip(name, 40)}`)
      }
    }
    return new Response(NULL_BODY.has(status) ? null : Buffer.concat(exchange.body), {
      status,
      statusText: exchange.statusText,
      headers: responseHeaders,
    })
  }
