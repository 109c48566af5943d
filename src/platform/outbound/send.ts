/**
 * One HTTPS POST, for every channel kind that sends over HTTPS: the URL rule is applied again at send time
 * (the host is resolved again and every address checked), then the POST goes to exactly one of the checked addresses,
 * so there is no DNS-rebinding window. The transport underneath, `exchangeHttps` (one GET or POST, status not judged),
 * is also what pinnedFetch.ts (the `fetch` given to openid-client) sends through.
 *
 * Transport: `node:https` `request` with `host: <checked IP>`, `servername: <URL host name>`, an explicit `Host` header,
 * `secureContext` (a cached `tls.createSecureContext({ ca: [...tls.rootCertificates, ...extra] })`, one per distinct
 * `extra`), `rejectUnauthorized: true` and `agent: false`. Measured in Bun 1.4.4
 * (test/webhooks/send.test.ts): it connects to the IP without any DNS lookup, sends the URL's host name as SNI and
 * checks the certificate against that name (a certificate for the name only is accepted, one for the IP only or another
 * name is refused before a byte of the request is written). Like Node, Bun would derive SNI from the Host header if
 * `servername` were left out; it is given explicitly anyway. Bun's `fetch` with `tls: { serverName, ca }` checks the name
 * just as well, but it was not chosen: it honours HTTPS_PROXY (the proxy would resolve and connect on its own), it
 * obeys NODE_TLS_REJECT_UNAUTHORIZED=0 whereas an explicit `rejectUnauthorized: true` here wins over it, it pools
 * connections and it adds Accept-Encoding and decompresses.
 */
import type { IncomingMessage } from "node:http"
import https from "node:https"
import { isIP } from "node:net"
import type tls from "node:tls"
import { clip, errorCode, errorMessage, NOTHING_SENT, secureContextFor, TIMED_OUT, withDeadline } from "./connection.ts"
import { type AddressPolicy, checkAndResolveWebhookUrl, checkWebhookUrl, systemLookup } from "./urlRule.ts"

export interface HttpsSendRequest {
  /** The channel's https URL. */
  readonly url: string
  /** The exact bytes to POST (already signed by the caller). */
  readonly body: string
  /** X-Service-Signature etc. Host, Content-Type (application/json), Content-Length are set here and override these. */
  readonly headers: Readonly<Record<string, string>>
  readonly policy: AddressPolicy
  /** Default `systemLookup`. */
  readonly lookup?: (host: string) => Promise<ReadonlyArray<string>>
  /** Extra trusted CA certificates (PEM), in addition to the system roots. */
  readonly ca?: ReadonlyArray<string>
  /** The whole send: lookup, connect, TLS, request and response. Default 5000. */
  readonly timeoutMs?: number
  /** Default 65536. */
  readonly maxResponseBytes?: number
}

export interface SendResult {
  /** True only for a 2xx received within the time budget. */
  readonly ok: boolean
  /** The HTTP status when a response head arrived. */
  readonly status: number | null
  readonly durationMs: number
  /** At most `maxResponseBytes` bytes of the response body, decoded as UTF-8 (lossy); "" if none. */
  readonly responseBody: string
  readonly responseTruncated: boolean
  /** A short reason for a failure; never includes the request body, its headers' values or the response body. */
  readonly error: string | null
  /** The checked IP that was connected to (the last one tried), or null when no connection was attempted. */
  readonly address: string | null
}

/** A send that got no HTTP answer: refused before sending, no connection, or no response head in time. */
export const noAnswer = (durationMs: number, error: string | null, address: string | null): SendResult => ({
  ok: error === null,
  status: null,
  durationMs: Math.round(durationMs),
  responseBody: "",
  responseTruncated: false,
  error,
  address,
})

export const DEFAULT_SEND_TIMEOUT_MS = 5000
export const DEFAULT_MAX_RESPONSE_BYTES = 65536

/** Headers the transport owns or that would change how the connection is used; same-named caller headers are dropped. */
const TRANSPORT_HEADERS = ["host", "content-length", "transfer-encoding", "connection"]
/** sendHttps also owns Content-Type (always application/json). */
const SEND_OWN_HEADERS: ReadonlySet<string> = new Set([...TRANSPORT_HEADERS, "content-type"])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters in header values is the point
const BAD_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/

const TLS_CODE =
  /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_)|CERT|UNABLE_TO_|SELF_SIGNED|SIGNATURE|HOSTNAME_MISMATCH|INVALID_CA|PURPOSE/

/**
 * One HTTPS request, as {@link exchangeHttps} takes it: what sendHttps and pinnedFetch (pinnedFetch.ts) share.
 * The URL rule, DNS check, pinning, TLS, time budget and size bound are the transport's; the caller only says what to
 * send and how to read the answer.
 */
export interface HttpsExchangeRequest {
  readonly url: string
  readonly method: "GET" | "POST"
  /** Caller headers, validated (token names, no control characters in values); never echoed but by name. */
  readonly headers: Iterable<readonly [string, string]>
  /** Lower-case names dropped from `headers` (Host and Content-Length are always set by the transport). */
  readonly ownHeaders: ReadonlySet<string>
  /** `force`: this Content-Type is always sent; `fallback`: sent only when `headers` has none (undefined: none). */
  readonly contentType: { readonly force: string } | { readonly fallback: string | undefined }
  /** The exact bytes to send; null sends no body and no Content-Length. */
  readonly body: Buffer | null
  readonly policy: AddressPolicy
  readonly lookup?: ((host: string) => Promise<ReadonlyArray<string>>) | undefined
  readonly ca?: ReadonlyArray<string> | undefined
  /** The whole exchange, DNS included. */
  readonly budgetMs: number
  readonly maxResponseBytes: number
  /** Aborting it ends the exchange (the socket is destroyed) with `aborted: true`. */
  readonly signal?: AbortSignal | null | undefined
}

/** What {@link exchangeHttps} got; the status is not judged here. */
export interface HttpsExchange {
  /** The HTTP status when a response head arrived. */
  readonly status: number | null
  readonly statusText: string
  /** The response headers as received (name, value) pairs, repeated names kept. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  /** At most `maxResponseBytes` bytes of the response body. */
  readonly body: ReadonlyArray<Buffer>
  /** The body had more than `maxResponseBytes` bytes; reading stopped there and the socket was destroyed. */
  readonly truncated: boolean
  /**
   * Why no complete answer arrived (refused URL or address, bad header, connection, TLS, time-out, cut-off body,
   * abort), or null for a complete (or truncated) response. Never includes the request body, header values or the
   * response body.
   */
  readonly error: string | null
  /** The caller's signal ended the exchange. */
  readonly aborted: boolean
  /** The checked IP that was connected to (the last one tried), or null when no connection was attempted. */
  readonly address: string | null
}

interface Attempt {
  readonly status: number | null
  readonly statusText: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: ReadonlyArray<Buffer>
  readonly truncated: boolean
  readonly error: string | null
  readonly aborted: boolean
  readonly nothingSent: boolean
}

interface Target {
  readonly address: string
  readonly port: number
  readonly servername: string | undefined
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer | null
  readonly secureContext: tls.SecureContext
  readonly maxResponseBytes: number
  readonly budgetMs: number
  readonly signal: AbortSignal | undefined
}

const describeConnectionError = (error: unknown): string => {
  const code = errorCode(error)
  const message = errorMessage(error)
  if (TLS_CODE.test(code)) return `TLS: ${message}${message.includes(code) ? "" : ` (${code})`}`
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused"
    case "ECONNRESET":
    case "EPIPE":
      return "connection closed before a response arrived"
    case "ENETUNREACH":
      return "network unreachable"
    case "EHOSTUNREACH":
      return "host unreachable"
    case "ETIMEDOUT":
      return "connection timed out"
    default:
      return `connection error: ${code === "" ? message : `${code} ${message}`}`
  }
}

const statusError = (status: number): string | null => {
  if (status >= 200 && status < 300) return null
  if (status >= 300 && status < 400) return `redirect not followed (${status})`
  return `HTTP ${status}`
}

/**
 * Caller headers minus the transport's own, validated (values are never echoed), then Host, Content-Type and
 * Content-Length. A name given more than once (in any case) is sent once, its values joined with ", ", under its first
 * spelling.
 */
const buildHeaders = (
  given: Iterable<readonly [string, string]>,
  ownHeaders: ReadonlySet<string>,
  contentType: HttpsExchangeRequest["contentType"],
  host: string,
  body: Buffer | null,
): { readonly ok: true; readonly headers: Record<string, string> } | { readonly ok: false; readonly error: string } => {
  const headers: Record<string, string> = {}
  const spelling = new Map<string, string>()
  for (const [name, value] of given) {
    if (typeof name !== "string" || !TOKEN.test(name)) {
      return { ok: false, error: `invalid request header name "${clip(String(name), 40)}"` }
    }
    if (typeof value !== "string" || BAD_VALUE.test(value)) {
      return { ok: false, error: `invalid value for request header ${name}` }
    }
    const lower = name.toLowerCase()
    if (ownHeaders.has(lower) || lower === "host" || lower === "content-length") continue
    const first = spelling.get(lower)
    if (first === undefined) {
      spelling.set(lower, name)
      headers[name] = value
    } else {
      headers[first] = `${headers[first] ?? ""}, ${value}`
    }
  }
  headers.Host = host
  if ("force" in contentType) headers["Content-Type"] = contentType.force
  else if (contentType.fallback !== undefined && !spelling.has("content-type")) {
    headers["Content-Type"] = contentType.fallback
  }
  if (body !== null) headers["Content-Length"] = String(body.byteLength)
  return { ok: true, headers }
}

const decodeBody = (chunks: ReadonlyArray<Buffer>, truncated: boolean): string =>
  // A truncated body may end inside a UTF-8 sequence: `stream: true` leaves that partial character out.
  new TextDecoder("utf-8").decode(Buffer.concat(chunks), { stream: truncated })

/** Raw header lines as pairs (`rawHeaders` alternates name and value). */
const headerPairs = (raw: ReadonlyArray<string>): Array<readonly [string, string]> => {
  const pairs: Array<readonly [string, string]> = []
  for (let index = 0; index + 1 < raw.length; index += 2) pairs.push([raw[index] ?? "", raw[index + 1] ?? ""])
  return pairs
}

/** One request to one checked address; resolves (never rejects) when answered, failed, aborted or out of time. */
const exchangeOnce = (target: Target, remainingMs: number): Promise<Attempt> =>
  new Promise<Attempt>((resolve) => {
    let settled = false
    let status: number | null = null
    let statusText = ""
    let headers: ReadonlyArray<readonly [string, string]> = []
    const chunks: Array<Buffer> = []
    let received = 0
    let truncated = false
    let request: ReturnType<typeof https.request> | undefined

    const finish = (error: string | null, nothingSent = false, aborted = false) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      target.signal?.removeEventListener("abort", onAbort)
      // Always destroy: a time-out or a truncated body leaves the socket open otherwise (agent: false, no reuse).
      request?.destroy()
      resolve({ status, statusText, headers, body: chunks, truncated, error, aborted, nothingSent })
    }
    const onAbort = () => finish("aborted", false, true)
    const timer = setTimeout(() => finish(`timed out after ${target.budgetMs} ms`), Math.max(0, remainingMs))
    if (target.signal?.aborted === true) {
      onAbort()
      return
    }
    target.signal?.addEventListener("abort", onAbort, { once: true })

    const onResponse = (response: IncomingMessage) => {
      status = response.statusCode ?? null
      statusText = response.statusMessage ?? ""
      headers = headerPairs(response.rawHeaders)
      const complete = () => finish(status === null ? "no HTTP status" : null)
      const incomplete = () => finish("connection closed before the response was complete")
      response.on("data", (chunk: Buffer) => {
        if (settled) return
        const room = target.maxResponseBytes - received
        if (chunk.byteLength > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room))
          received += Math.max(0, room)
          truncated = true
          complete()
          return
        }
        chunks.push(chunk)
        received += chunk.byteLength
      })
      response.on("end", complete)
      response.on("aborted", incomplete)
      response.on("error", incomplete)
      response.on("close", () => {
        if (response.complete) complete()
        else incomplete()
      })
    }

    try {
      // `secureContext` is a tls.connect option that https.request passes on; @types/node leaves it out of RequestOptions.
      const options: https.RequestOptions & Pick<tls.ConnectionOptions, "secureContext"> = {
        host: target.address,
        port: target.port,
        family: isIP(target.address),
        ...(target.servername === undefined ? {} : { servername: target.servername }),
        method: target.method,
        path: target.path,
        headers: target.headers,
        secureContext: target.secureContext,
        rejectUnauthorized: true,
        agent: false,
      }
      request = https.request(options, onResponse)
    } catch (error) {
      finish(`invalid request (${errorCode(error) || "unknown"})`)
      return
    }
    request.on("error", (error) => {
      const code = errorCode(error)
      finish(describeConnectionError(error), status === null && NOTHING_SENT.has(code))
    })
    if (target.body === null) request.end()
    else request.end(target.body)
  })

const ABORTED: unique symbol = Symbol("aborted")

/** Resolves to ABORTED when `signal` aborts (never, without one); `dispose` removes the listener. */
const abortOf = (signal: AbortSignal | undefined) => {
  let dispose = () => {}
  const promise = new Promise<typeof ABORTED>((resolve) => {
    if (signal === undefined) return
    if (signal.aborted) {
      resolve(ABORTED)
      return
    }
    const listener = () => resolve(ABORTED)
    signal.addEventListener("abort", listener, { once: true })
    dispose = () => signal.removeEventListener("abort", listener)
  })
  return { promise, dispose }
}

const positiveOr = (value: number | undefined, fallback: number, allowZero: boolean): number =>
  value !== undefined && Number.isFinite(value) && (allowZero ? value >= 0 : value > 0) ? value : fallback

/** `timeoutMs` as a budget: positive and finite, otherwise `fallback`. */
export const budgetOf = (timeoutMs: number | undefined, fallback: number): number =>
  positiveOr(timeoutMs, fallback, false)

/** `maxResponseBytes` as a byte count: zero or more, otherwise `fallback`. */
export const byteLimitOf = (maxResponseBytes: number | undefined, fallback: number): number =>
  Math.floor(positiveOr(maxResponseBytes, fallback, true))

/**
 * One HTTPS request under the outbound address rule; never rejects. The URL is checked and its host resolved here:
 * one refused address refuses the request, with no connection made. The checked addresses are tried in resolver
 * order, the next one only when connecting to the previous failed before anything was sent; TLS verifies the URL's
 * host name (system roots plus `ca`). Redirects are never followed. `budgetMs` bounds everything, DNS included; when it
 * runs out (or `signal` aborts) the socket is destroyed.
 */
export const exchangeHttps = async (request: HttpsExchangeRequest): Promise<HttpsExchange> => {
  const started = performance.now()
  const { budgetMs } = request
  const remaining = () => started + budgetMs - performance.now()
  const signal = request.signal ?? undefined
  const failed = (error: string, address: string | null = null, aborted = false): HttpsExchange => ({
    status: null,
    statusText: "",
    headers: [],
    body: [],
    truncated: false,
    error,
    aborted,
    address,
  })

  const abort = abortOf(signal)
  try {
    if (signal?.aborted === true) return failed("aborted", null, true)
    const syntax = checkWebhookUrl(request.url)
    if (!syntax.ok) return failed(`refused URL: ${syntax.reason}`)
    const headers = buildHeaders(
      request.headers,
      request.ownHeaders,
      request.contentType,
      syntax.url.host,
      request.body,
    )
    if (!headers.ok) return failed(headers.error)
    const resolved = await withDeadline(
      Promise.race([
        checkAndResolveWebhookUrl(request.url, request.lookup ?? systemLookup, request.policy),
        abort.promise,
      ]),
      remaining(),
    )
    if (resolved === ABORTED) return failed("aborted", null, true)
    if (resolved === TIMED_OUT) return failed(`timed out after ${budgetMs} ms (resolving ${clip(syntax.host, 100)})`)
    if (!resolved.ok) return failed(`refused address: ${resolved.reason}`)

    const servername = isIP(resolved.host) === 0 ? resolved.host.replace(/\.$/, "") : undefined
    const secureContext = secureContextFor(request.ca ?? [])

    let address: string | null = null
    let attempt: Attempt | undefined
    for (const candidate of resolved.addresses) {
      if (remaining() <= 0) break
      address = candidate
      attempt = await exchangeOnce(
        {
          address: candidate,
          port: resolved.port,
          servername,
          method: request.method,
          path: `${resolved.url.pathname}${resolved.url.search}`,
          headers: headers.headers,
          body: request.body,
          secureContext,
          maxResponseBytes: request.maxResponseBytes,
          budgetMs,
          signal,
        },
        remaining(),
      )
      if (!attempt.nothingSent) break
    }
    if (attempt === undefined) return failed(`timed out after ${budgetMs} ms`, address)
    return {
      status: attempt.status,
      statusText: attempt.statusText,
      headers: attempt.headers,
      body: attempt.body,
      truncated: attempt.truncated,
      error: attempt.error,
      aborted: attempt.aborted,
      address,
    }
  } catch (error) {
    return failed(`unexpected error: ${errorMessage(error)}`)
  } finally {
    abort.dispose()
  }
}

/**
 * Sends one HTTPS POST and reports what happened; never rejects. The URL is checked and its host resolved
 * again here: one refused address refuses the send, with no connection made. The checked addresses are tried in
 * resolver order, the next one only when connecting to the previous failed before anything was sent; TLS verifies the
 * URL's host name (system roots plus `ca`). Redirects are never followed; a non-2xx is a failure. `timeoutMs` bounds
 * everything, DNS included; when it runs out the socket is destroyed.
 */
export const sendHttps = async (request: HttpsSendRequest): Promise<SendResult> => {
  const started = performance.now()
  const exchange = await exchangeHttps({
    url: request.url,
    method: "POST",
    headers: Object.entries(request.headers),
    ownHeaders: SEND_OWN_HEADERS,
    contentType: { force: "application/json" },
    body: Buffer.from(request.body, "utf8"),
    policy: request.policy,
    lookup: request.lookup,
    ca: request.ca,
    budgetMs: budgetOf(request.timeoutMs, DEFAULT_SEND_TIMEOUT_MS),
    maxResponseBytes: byteLimitOf(request.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES),
  })
  const durationMs = performance.now() - started
  const { status } = exchange
  if (status === null) return noAnswer(durationMs, exchange.error ?? "no HTTP status", exchange.address)
  const error = exchange.error ?? statusError(status)
  return {
    ok: error === null,
    status,
    durationMs: Math.round(durationMs),
    responseBody: decodeBody(exchange.body, exchange.truncated),
    responseTruncated: exchange.truncated,
    error,
    address: exchange.address,
  }
}
