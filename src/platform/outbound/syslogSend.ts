/**
 * One syslog delivery: RFC 5424 messages over TLS (RFC 5425), octet-counted framing, under the webhooks' address rule.
 *
 * Destination: the canonical form is `syslog+tls://host[:port]` (port 6514 by default, RFC 5425's). The host follows
 * the webhook URL's host rules (checkWebhookUrl: no credentials, dotted-decimal IPv4 or bracketed IPv6 literals, no
 * localhost/.local/.internal/single-label names), every address it resolves to must pass isPublicAddress (private
 * ones only through the allowPrivate CIDRs), and the connection goes to one of exactly those addresses (pinned: no
 * second lookup, so no DNS-rebinding window). There is no plain-TCP or UDP form: syslog always goes over TLS.
 *
 * Transport: `node:tls` `connect` to the checked IP with `servername` = the host name (SNI, and the name the
 * certificate is checked against; an IP destination is checked against the certificate's IP addresses),
 * `rejectUnauthorized: true` always, trust = system roots plus `ca` (SYSLOG_CA_FILE, for a private PKI). One
 * connection per message: a delivery is a single, rare alert, so connection reuse is not worth its state (half-open
 * sockets, reconnects); the frame is written with end() (TLS close_notify, then FIN) and the send resolves only when
 * the write was flushed and the socket closed. Bun 1.4.4's TLS client does not stay half-open after end() (measured:
 * it closes without waiting for the receiver's own close), so "sent" means "flushed to the kernel on a verified
 * connection"; a receiver that resets it afterwards is not seen. RFC 5425 has no acknowledgement to wait for anyway.
 * `timeoutMs` (5 s) bounds all of it.
 */
import { isIP } from "node:net"
import tls from "node:tls"
import { clip, errorCode, errorMessage, NOTHING_SENT, secureContextFor, TIMED_OUT, withDeadline } from "./connection.ts"
import { noAnswer, type SendResult } from "./send.ts"
import { type AddressPolicy, checkWebhookUrl, resolveAndCheck, systemLookup } from "./urlRule.ts"

export const SYSLOG_SCHEME = "syslog+tls://"
/** RFC 5425 section 4.1: syslog over TLS. */
export const SYSLOG_TLS_DEFAULT_PORT = 6514
export const DEFAULT_SYSLOG_TIMEOUT_MS = 5000
const MAX_DESTINATION_LENGTH = 300

export type SyslogDestinationSyntax =
  | {
      readonly ok: true
      readonly host: string
      /** The host as written (`ξ.example`, not its `xn--` form), for messages only. */
      readonly given: string
      readonly port: number
      readonly canonical: string
    }
  | { readonly ok: false; readonly reason: string }

export type SyslogDestinationCheck =
  | {
      readonly ok: true
      readonly host: string
      readonly given: string
      readonly port: number
      readonly canonical: string
      readonly addresses: ReadonlyArray<string>
    }
  | { readonly ok: false; readonly reason: string }

const refuse = (reason: string): { readonly ok: false; readonly reason: string } => ({ ok: false, reason })

/**
 * Syntax and host-name rules of a syslog destination (no DNS): `syslog+tls://host[:port]`, nothing after the
 * authority. `canonical` is the form to store (lower-case host, explicit port).
 */
export const parseSyslogDestination = (raw: string): SyslogDestinationSyntax => {
  if (raw.length === 0) return refuse("the syslog destination is empty")
  if (raw.length > MAX_DESTINATION_LENGTH) {
    return refuse(`the syslog destination is longer than ${MAX_DESTINATION_LENGTH} characters`)
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u0020\u007f]/.test(raw)) {
    return refuse("the syslog destination must not contain spaces or control characters")
  }
  if (raw.slice(0, SYSLOG_SCHEME.length).toLowerCase() !== SYSLOG_SCHEME) {
    return refuse(`a syslog destination must look like ${SYSLOG_SCHEME}host:${SYSLOG_TLS_DEFAULT_PORT} (TLS only)`)
  }
  const authority = raw.slice(SYSLOG_SCHEME.length)
  if (authority === "") return refuse("the syslog destination has no host")
  if (/[/?#\\]/.test(authority)) return refuse("a syslog destination has no path, query or fragment: host:port only")
  if (authority.includes("@")) return refuse("credentials (user@) in the syslog destination are not allowed")
  const portText = /(?:^\[[^\]]*\]|^[^:[\]]*):(.*)$/.exec(authority)?.[1]
  if (portText === "") return refuse("the syslog destination has an empty port")
  if (portText !== undefined && (!/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535)) {
    return refuse(`port ${portText.slice(0, 16)} is not allowed (1-65535)`)
  }
  // The host part follows the webhook URL's rules exactly (literal forms, refused names).
  const syntax = checkWebhookUrl(`https://${authority}/`)
  if (!syntax.ok) return refuse(syntax.reason.replaceAll("the webhook URL", "the syslog destination"))
  const port = portText === undefined ? SYSLOG_TLS_DEFAULT_PORT : syntax.port
  const bare = syntax.host.toLowerCase()
  const shown = isIP(bare) === 6 ? `[${bare}]` : bare
  return { ok: true, host: bare, given: syntax.given, port, canonical: `${SYSLOG_SCHEME}${shown}:${port}` }
}

/**
 * The address rule for a syslog destination: the syntax rules, then every address of the host checked (one refused
 * address refuses it); `addresses` are the ones to connect to. Used when a channel is saved and again at every send.
 */
export const checkSyslogDestination = async (
  raw: string,
  lookup: (host: string) => Promise<ReadonlyArray<string>>,
  policy: AddressPolicy,
): Promise<SyslogDestinationCheck> => {
  const syntax = parseSyslogDestination(raw)
  if (!syntax.ok) return syntax
  const resolved = await resolveAndCheck(syntax.host, lookup, policy, syntax.given)
  if (!resolved.ok) return resolved
  return { ...syntax, addresses: resolved.addresses }
}

/** RFC 5425 section 4.3 octet counting: `MSG-LEN SP SYSLOG-MSG`, the length in bytes. */
export const octetCountedFrame = (message: string): Buffer => {
  const body = Buffer.from(message, "utf8")
  return Buffer.concat([Buffer.from(`${body.byteLength} `, "ascii"), body])
}

export interface SyslogSendRequest {
  /** `syslog+tls://host[:port]`. */
  readonly destination: string
  /** One RFC 5424 message (syslogMessage), unframed. */
  readonly message: string
  readonly policy: AddressPolicy
  /** Default `systemLookup`. */
  readonly lookup?: (host: string) => Promise<ReadonlyArray<string>>
  /** Extra trusted CA certificates (PEM; SYSLOG_CA_FILE), in addition to the system roots. */
  readonly ca?: string | ReadonlyArray<string>
  /** The whole send: lookup, connect, TLS, write and close. Default 5000. */
  readonly timeoutMs?: number
}

const CERTIFICATE_CODE = /CERT|UNABLE_TO_|SELF_SIGNED|SIGNATURE|HOSTNAME_MISMATCH|INVALID_CA|PURPOSE|ALTNAME/
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|ERR_OSSL_)/

const describe = (error: unknown): string => {
  const code = errorCode(error)
  const message = errorMessage(error)
  const withCode = `${message}${code === "" || message.includes(code) ? "" : ` (${code})`}`
  if (CERTIFICATE_CODE.test(code)) return `TLS: the receiver's certificate was refused: ${withCode}`
  if (TLS_CODE.test(code) || /ssl|tls|handshake|wrong version/i.test(message)) return `TLS: ${withCode}`
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused"
    case "ECONNRESET":
    case "EPIPE":
      return "connection reset by the receiver"
    case "ENETUNREACH":
      return "network unreachable"
    case "EHOSTUNREACH":
      return "host unreachable"
    default:
      return `connection error: ${code === "" ? message : withCode}`
  }
}

interface Attempt {
  readonly error: string | null
  readonly nothingSent: boolean
}

/** One TLS connection to one checked address: handshake, write the frame, end, wait for the close. Never rejects. */
const deliver = (
  target: {
    readonly address: string
    readonly port: number
    readonly servername: string | undefined
    readonly secureContext: tls.SecureContext
    readonly frame: Buffer
    readonly budgetMs: number
  },
  remainingMs: number,
): Promise<Attempt> =>
  new Promise<Attempt>((resolve) => {
    let settled = false
    let written = false
    let flushed = false
    let socket: tls.TLSSocket | undefined
    const finish = (error: string | null, nothingSent = false) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (error !== null) socket?.destroy()
      resolve({ error, nothingSent })
    }
    const timer = setTimeout(
      () =>
        finish(
          flushed
            ? `timed out after ${target.budgetMs} ms waiting for the connection to close (the message may have arrived)`
            : written
              ? `timed out after ${target.budgetMs} ms while writing`
              : `timed out after ${target.budgetMs} ms before the TLS handshake completed`,
        ),
      Math.max(0, remainingMs),
    )
    try {
      socket = tls.connect({
        host: target.address,
        port: target.port,
        ...(target.servername === undefined ? {} : { servername: target.servername }),
        secureContext: target.secureContext,
        // Verification always on, whatever NODE_TLS_REJECT_UNAUTHORIZED says.
        rejectUnauthorized: true,
      })
    } catch (error) {
      finish(`invalid connection (${errorCode(error) || "unknown"})`)
      return
    }
    const connected = socket
    connected.on("error", (error) => {
      finish(describe(error), !written && NOTHING_SENT.has(errorCode(error)))
    })
    connected.once("secureConnect", () => {
      // rejectUnauthorized already refused an unverified peer; this is a second lock, never expected to open.
      if (!connected.authorized) {
        finish(`TLS: the receiver's certificate was refused: ${String(connected.authorizationError)}`)
        return
      }
      written = true
      connected.end(target.frame, () => {
        flushed = true
      })
    })
    // A receiver does not talk back in RFC 5425; what it sends is read and ignored so the close can complete.
    connected.on("data", () => {})
    connected.once("close", () => {
      if (!written) finish("connection closed before the TLS handshake completed")
      else if (!flushed) finish("connection closed before the message was written")
      else finish(null)
    })
  })

/**
 * Sends one syslog message and reports what happened in the HTTPS send's shape (`status` always null,
 * `responseBody` ""); never rejects. The destination is checked and resolved again here; the checked addresses are
 * tried in resolver order, the next only when connecting to the previous failed before anything was sent.
 */
export const sendSyslog = async (request: SyslogSendRequest): Promise<SendResult> => {
  const started = performance.now()
  const budgetMs =
    request.timeoutMs !== undefined && Number.isFinite(request.timeoutMs) && request.timeoutMs > 0
      ? request.timeoutMs
      : DEFAULT_SYSLOG_TIMEOUT_MS
  const remaining = () => started + budgetMs - performance.now()
  // Syslog has no answer: a message written and flushed within the budget is the success.
  const result = (error: string | null, address: string | null) => noAnswer(performance.now() - started, error, address)
  try {
    const syntax = parseSyslogDestination(request.destination)
    if (!syntax.ok) return result(`refused destination: ${syntax.reason}`, null)
    const checked = await withDeadline(
      checkSyslogDestination(request.destination, request.lookup ?? systemLookup, request.policy),
      remaining(),
    )
    if (checked === TIMED_OUT)
      return result(`timed out after ${budgetMs} ms (resolving ${clip(syntax.host, 100)})`, null)
    if (!checked.ok) return result(`refused address: ${checked.reason}`, null)

    const extra = request.ca === undefined ? [] : typeof request.ca === "string" ? [request.ca] : [...request.ca]
    const secureContext = secureContextFor(extra)
    const servername = isIP(checked.host) === 0 ? checked.host.replace(/\.$/, "") : undefined
    const frame = octetCountedFrame(request.message)

    let address: string | null = null
    let attempt: Attempt | undefined
    for (const candidate of checked.addresses) {
      if (remaining() <= 0) break
      address = candidate
      attempt = await deliver(
        { address: candidate, port: checked.port, servername, secureContext, frame, budgetMs },
        remaining(),
      )
      if (!attempt.nothingSent) break
    }
    if (attempt === undefined) return result(`timed out after ${budgetMs} ms`, address)
    return result(attempt.error, address)
  } catch (error) {
    return result(`unexpected error: ${errorMessage(error)}`, null)
  }
}
