/**
 * Webhook signature verification for receivers (the receiver SDK).
 *
 * Self-contained on purpose: it imports nothing from the service and no npm package, only `node:crypto`
 * (available in Node, Bun and Deno), so it can be copied or published as is.
 *
 * The header is Stripe-style (spec "Webhook signature"), so a Stripe-style verifier works as well as this one:
 *
 *     X-Service-Signature: t=<unix seconds>,v1=<lowercase hex HMAC-SHA256>[,v1=<…>]
 *
 * `v1` is HMAC-SHA256 keyed with the exact UTF-8 bytes of the signing secret (the `whsec_…` string itself, not a
 * decoding of it) over the bytes of `t`, a full stop, then the raw request body. During a secret rotation grace period
 * the header carries two `v1` values (new secret first); the request is genuine when any one of them matches.
 *
 * Decisions made here (all documented in the results):
 * - `t` must be 1 to 12 ASCII digits (unix seconds; no sign, no fraction, no exponent). A header with several `t`
 *   parts is accepted only if they are all identical (a proxy may join a duplicated header with ", ").
 * - The clock check is done in whole seconds, `|floor(now / 1000) - t| <= tolerance`: exactly 300 s off in either
 *   direction is accepted, 301 s is refused.
 * - `v1` comparison is case-sensitive: the spec says lowercase hex, so an uppercase-hex `v1` is a mismatch. A `v1`
 *   that is not exactly 64 lowercase hex characters is simply a mismatch.
 * - Unknown parts (`v0=…`, `foo=bar`) and empty parts (`,,`) are ignored; a part without `=` or with an empty key
 *   makes the header malformed.
 * - Passing an empty secret, or a body that is not a string / Uint8Array / ArrayBuffer (for example an already parsed
 *   JSON object), throws a TypeError: those are programming errors, and an empty key would accept forged requests.
 *
 * @example A complete Bun.serve receiver
 * ```ts
 * import { SIGNATURE_HEADER, verifyWebhook } from "./verify.ts"
 *
 * const secret = process.env.WEBHOOK_SECRET // "whsec_…", shown once when the channel was created
 * if (!secret) throw new Error("WEBHOOK_SECRET is not set")
 *
 * const seen = new Set<string>() // use a persistent store in production
 *
 * Bun.serve({
 *   port: 8443,
 *   tls: { cert: Bun.file("cert.pem"), key: Bun.file("key.pem") }, // the service only delivers to https:// URLs
 *   async fetch(req) {
 *     if (req.method !== "POST") return new Response(null, { status: 405 })
 *     // 1. Read the RAW bytes; never JSON.parse + JSON.stringify before verifying.
 *     const raw = new Uint8Array(await req.arrayBuffer())
 *     // 2. Verify the signature and the timestamp (300 s tolerance by default).
 *     const result = verifyWebhook(raw, req.headers.get(SIGNATURE_HEADER), secret)
 *     if (!result.ok) return new Response(`invalid signature: ${result.reason}`, { status: 400 })
 *     // 3. Only now parse. The event id is the same on every retry: use it to drop duplicates and replays.
 *     const event = JSON.parse(new TextDecoder().decode(raw)) as { id: string; type: string; incident?: unknown }
 *     if (seen.has(event.id)) return new Response(null, { status: 204 })
 *     seen.add(event.id)
 *     // 4. Answer 2xx quickly (the service times out after 5 s) and process asynchronously.
 *     queueMicrotask(() => console.log("received", event.type, event.id))
 *     return new Response(null, { status: 204 })
 *   },
 * })
 * ```
 */
import { createHmac, timingSafeEqual } from "node:crypto"

export const SIGNATURE_HEADER = "X-Service-Signature"

/** Default accepted clock difference between the signer and the receiver, in seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300

export interface VerifyOptions {
  /** Maximum accepted difference between `t` and the receiver's clock, in seconds, both directions. Default 300. */
  readonly toleranceSeconds?: number
  /** The receiver's clock in milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number
}

export type VerifyFailureReason =
  | "missing_header"
  | "malformed_header"
  | "missing_timestamp"
  | "invalid_timestamp"
  | "missing_signature"
  | "timestamp_out_of_tolerance"
  | "signature_mismatch"

export type VerifyResult =
  | { readonly ok: true; readonly timestamp: number }
  | { readonly ok: false; readonly reason: VerifyFailureReason }

const MAX_HEADER_LENGTH = 8192
const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/
const HEX_SIGNATURE_PATTERN = /^[0-9a-f]{64}$/

const encoder = new TextEncoder()

const bodyBytes = (rawBody: string | Uint8Array | ArrayBuffer): Uint8Array => {
  if (typeof rawBody === "string") return encoder.encode(rawBody)
  if (rawBody instanceof Uint8Array) return rawBody
  if (rawBody instanceof ArrayBuffer) return new Uint8Array(rawBody)
  throw new TypeError("rawBody must be the raw request body (string, Uint8Array or ArrayBuffer), not a parsed value")
}

const fail = (reason: VerifyFailureReason): VerifyResult => ({ ok: false, reason })

/**
 * Verifies a webhook request. `rawBody` must be the exact bytes received (a string is encoded as UTF-8), `header` the
 * value of the `X-Service-Signature` header, `secret` the channel's signing secret (`whsec_…`).
 * Returns `{ ok: true, timestamp }` (the signed `t`, unix seconds) or `{ ok: false, reason }`.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  header: string | null | undefined,
  secret: string,
  options?: VerifyOptions,
): VerifyResult {
  if (typeof secret !== "string" || secret.length === 0) throw new TypeError("secret must be a non-empty string")
  const tolerance = options?.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  if (!Number.isFinite(tolerance) || tolerance < 0)
    throw new RangeError("toleranceSeconds must be a finite number >= 0")
  const body = bodyBytes(rawBody)

  if (header === null || header === undefined) return fail("missing_header")
  if (typeof header !== "string" || header.length > MAX_HEADER_LENGTH) return fail("malformed_header")
  if (header.trim() === "") return fail("missing_header")

  let timestamp: string | undefined
  const signatures: Array<string> = []
  for (const rawPart of header.split(",")) {
    const part = rawPart.trim()
    if (part === "") continue
    const eq = part.indexOf("=")
    if (eq <= 0) return fail("malformed_header")
    const key = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (key === "") return fail("malformed_header")
    if (key === "t") {
      if (timestamp !== undefined && timestamp !== value) return fail("malformed_header")
      timestamp = value
    } else if (key === "v1") {
      signatures.push(value)
    }
    // Unknown keys (v0, future schemes) are ignored.
  }

  if (timestamp === undefined) return fail("missing_timestamp")
  if (!TIMESTAMP_PATTERN.test(timestamp)) return fail("invalid_timestamp")
  if (signatures.length === 0) return fail("missing_signature")

  const t = Number(timestamp)
  const nowSeconds = Math.floor((options?.now ?? Date.now)() / 1000)
  if (!(Math.abs(nowSeconds - t) <= tolerance)) return fail("timestamp_out_of_tolerance")

  // The signed payload is the header's own `t` text, a full stop, then the raw body bytes.
  const expected = encoder.encode(
    createHmac("sha256", encoder.encode(secret))
      .update(encoder.encode(`${timestamp}.`))
      .update(body)
      .digest("hex"),
  )
  let matched = false
  for (const candidate of signatures) {
    // Not 64 lowercase hex characters: a mismatch (also keeps timingSafeEqual on equal lengths).
    if (!HEX_SIGNATURE_PATTERN.test(candidate)) continue
    if (timingSafeEqual(encoder.encode(candidate), expected)) matched = true
  }
  return matched ? { ok: true, timestamp: t } : fail("signature_mismatch")
}

const MESSAGES: Readonly<Record<VerifyFailureReason, string>> = {
  missing_header: `the ${SIGNATURE_HEADER} header is missing`,
  malformed_header: `the ${SIGNATURE_HEADER} header is malformed`,
  missing_timestamp: `the ${SIGNATURE_HEADER} header has no t= part`,
  invalid_timestamp: "the signature timestamp t is not an integer number of seconds",
  missing_signature: `the ${SIGNATURE_HEADER} header has no v1= part`,
  timestamp_out_of_tolerance: "the signature timestamp is too far from the current time",
  signature_mismatch: "no v1 signature matches the body and the signing secret",
}

export class WebhookVerificationError extends Error {
  readonly reason: VerifyFailureReason

  constructor(reason: VerifyFailureReason) {
    super(`Webhook verification failed: ${MESSAGES[reason]} (${reason})`)
    this.name = "WebhookVerificationError"
    this.reason = reason
  }
}

/** Like {@link verifyWebhook}, but returns the signed timestamp `t` or throws a {@link WebhookVerificationError}. */
export function verifyWebhookOrThrow(
  rawBody: string | Uint8Array | ArrayBuffer,
  header: string | null | undefined,
  secret: string,
  options?: VerifyOptions,
): number {
  const result = verifyWebhook(rawBody, header, secret, options)
  if (!result.ok) throw new WebhookVerificationError(result.reason)
  return result.timestamp
}
