/**
 * One HTTPS POST, for every channel kind that sends over HTTPS: the URL rule is applied again at send time
 * (the host is resolved again and every address checked), then the POST goes to exactly one of the checked addresses,
 * so there is no DNS-rebinding window.
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

/** Headers the sender owns; same-named caller headers (any case) are dropped. */
const OWN_HEADERS = new Set(["host", "content-type", "content-length", "transfer-encoding", "connection"])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters in header values is the point
const BAD_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/

const TLS_CODE =
  /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_)|CERT|UNABLE_TO_|SELF_SIGNED|SIGNATURE|HOSTNAME_MISMATCH|INVALID_CA|PURPOSE/

interface Attempt {
  readonly status: number | null
  readonly responseBody: string
  readonly responseTruncated: boolean
  readonly error: string | null
  readonly nothingSent: boolean
}

interface Target {
  readonly address: string
  readonly port: number
  readonly servername: string | undefined
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
  readonly secureContext: tls.SecureContext
  readonly maxResponseBytes: number
  readonly budgetMs: number
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

/** Caller headers minus the sender's own, validated (names and values are never echoed in full). */
const buildHeaders = (
  given: Readonly<Record<string, string>>,
  host: string,
  body: Buffer,
): { readonly ok: true; readonly headers: Record<string, string> } | { readonly ok: false; readonly error: string } => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(given)) {
    if (!TOKEN.test(name)) return { ok: false, error: `invalid request header name "${clip(name, 40)}"` }
    if (typeof value !== "string" || BAD_VALUE.test(value)) {
      return { ok: false, error: `invalid value for request header ${name}` }
    }
    if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = value
  }
  headers.Host = host
  headers["Content-Type"] = "application/json"
  headers["Content-Length"] = String(body.byteLength)
  return { ok: true, headers }
}

const decodeBody = (chunks: ReadonlyArray<Buffer>, truncated: boolean): string =>
  // A truncated body may end inside a UTF-8 sequence: `stream: true` leaves that partial character out.
  new TextDecoder("utf-8").decode(Buffer.concat(chunks), { stream: truncated })

/** One POST to one checked address; resolves (never rejects) when answered, failed or out of time. */
const post = (target: Target, remainingMs: number): Promise<Attempt> =>
  new Promise<Attempt>((resolve) => {
    let settled = false
    let status: number | null = null
    const chunks: Array<Buffer> = []
    let received = 0
    let truncated = false
    let request: ReturnType<typeof https.request> | undefined

    const finish = (error: string | null, nothingSent = false) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // Always destroy: a time-out or a truncated body leaves the socket open otherwise (agent: false, no reuse).
      request?.destroy()
      resolve({
        status,
        responseBody: decodeBody(chunks, truncated),
        responseTruncated: truncated,
        error,
        nothingSent,
      })
    }
    const timer = setTimeout(() => finish(`timed out after ${target.budgetMs} ms`), Math.max(0, remainingMs))

    const onResponse = (response: IncomingMessage) => {
      status = response.statusCode ?? null
      const incomplete = () => finish("connection closed before the response was complete")
      response.on("data", (chunk: Buffer) => {
        if (settled) return
        const room = target.maxResponseBytes - received
        if (chunk.byteLength > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room))
          received += Math.max(0, room)
          truncated = true
          finish(status === null ? "no HTTP status" : statusError(status))
          return
        }
        chunks.push(chunk)
        received += chunk.byteLength
      })
      response.on("end", () => finish(status === null ? "no HTTP status" : statusError(status)))
      response.on("aborted", incomplete)
      response.on("error", incomplete)
      response.on("close", () => {
        if (response.complete) finish(status === null ? "no HTTP status" : statusError(status))
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
        method: "POST",
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
    request.end(target.body)
  })

const positiveOr = (value: number | undefined, fallback: number, allowZero: boolean): number =>
  value !== undefined && Number.isFinite(value) && (allowZero ? value >= 0 : value > 0) ? value : fallback

/**
 * Sends one HTTPS POST and reports what happened; never rejects. The URL is checked and its host resolved
 * again here: one refused address refuses the send, with no connection made. The checked addresses are tried in
 * resolver order, the next one only when connecting to the previous failed before anything was sent; TLS verifies the
 * URL's host name (system roots plus `ca`). Redirects are never followed; a non-2xx is a failure. `timeoutMs` bounds
 * everything, DNS included; when it runs out the socket is destroyed.
 */
export const sendHttps = async (request: HttpsSendRequest): Promise<SendResult> => {
  const started = performance.now()
  const budgetMs = positiveOr(request.timeoutMs, DEFAULT_SEND_TIMEOUT_MS, false)
  const maxResponseBytes = Math.floor(positiveOr(request.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, true))
  const remaining = () => started + budgetMs - performance.now()
  const failed = (error: string, address: string | null = null) => noAnswer(performance.now() - started, error, address)

  try {
    const syntax = checkWebhookUrl(request.url)
    if (!syntax.ok) return failed(`refused URL: ${syntax.reason}`)
    const resolved = await withDeadline(
      checkAndResolveWebhookUrl(request.url, request.lookup ?? systemLookup, request.policy),
      remaining(),
    )
    if (resolved === TIMED_OUT) return failed(`timed out after ${budgetMs} ms (resolving ${clip(syntax.host, 100)})`)
    if (!resolved.ok) return failed(`refused address: ${resolved.reason}`)

    const body = Buffer.from(request.body, "utf8")
    const headers = buildHeaders(request.headers, resolved.url.host, body)
    if (!headers.ok) return failed(headers.error)
    const servername = isIP(resolved.host) === 0 ? resolved.host.replace(/\.$/, "") : undefined
    const secureContext = secureContextFor(request.ca ?? [])

    let address: string | null = null
    let attempt: Attempt | undefined
    for (const candidate of resolved.addresses) {
      if (remaining() <= 0) break
      address = candidate
      attempt = await post(
        {
          address: candidate,
          port: resolved.port,
          servername,
          path: `${resolved.url.pathname}${resolved.url.search}`,
          headers: headers.headers,
          body,
          secureContext,
          maxResponseBytes,
          budgetMs,
        },
        remaining(),
      )
      if (!attempt.nothingSent) break
    }
    if (attempt === undefined) return failed(`timed out after ${budgetMs} ms`, address)
    const ok = attempt.error === null && attempt.status !== null && attempt.status >= 200 && attempt.status < 300
    return {
      ok,
      status: attempt.status,
      durationMs: Math.round(performance.now() - started),
      responseBody: attempt.responseBody,
      responseTruncated: attempt.responseTruncated,
      error: ok ? null : (attempt.error ?? "no HTTP status"),
      address,
    }
  } catch (error) {
    return failed(`unexpected error: ${errorMessage(error)}`)
  }
}
