import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Data, Effect } from "effect"
import { constantTimeEqualText } from "../domain/crypto.ts"
import { readBodyCapped } from "../platform/http/body.ts"

/** On every console response: a strict CSP, so even an escaping bug could not run injected script. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
}

/** What a page component returns: Hono's JSX renders to an already escaped string. */
export interface Rendered {
  toString(): string | Promise<string>
}

/** A page: rendered by Hono's JSX (escaping every string), never cached. Page components are synchronous. */
export const html = (node: Rendered, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(`<!doctype html>${String(node.toString())}`, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: { "cache-control": "no-store", ...headers },
  })

/**
 * A same-origin path: `/` then printable ASCII without space, quotes, angle brackets or backslash. A header value
 * holds only such characters, so a Location built from one can always be sent (a character above U+00FF made the
 * response itself fail).
 */
const SAFE_PATH = /^\/(?![/\\])[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*$/
const MAX_NEXT_CHARS = 1000

/**
 * After a POST, the browser goes to a page with GET, so a reload never repeats the action; anything but a safe
 * same-origin path goes to `/`.
 */
export const seeOther = (location: string) =>
  HttpServerResponse.empty({
    status: 303,
    headers: { location: SAFE_PATH.test(location) ? location : "/", "cache-control": "no-store" },
  })

/**
 * To an organization's sign-in provider: the one redirect to another site, to a URL the provider's own discovery
 * document named (its authorization endpoint, checked by the outbound address rule) with our parameters.
 */
export const toProviderAt = (url: string) =>
  HttpServerResponse.empty({
    status: 303,
    headers: { location: url.startsWith("https://") ? url : "/", "cache-control": "no-store" },
  })

/**
 * A same-site path to return to after sign-in, or "/" (never another site: `//host`, `/\host`, a scheme; never a
 * character outside SAFE_PATH's).
 */
export const safeNext = (next: string | undefined): string =>
  next !== undefined && next.length <= MAX_NEXT_CHARS && SAFE_PATH.test(next) ? next : "/"

/**
 * Refused (before anything runs) when the browser says the request comes from another site: `Sec-Fetch-Site` other than
 * same-origin or none, or an `Origin` that is neither this host nor APP_URL's.
 */
export const isCrossSite = (headers: Readonly<Record<string, string | undefined>>, appOrigin: string): boolean => {
  const site = headers["sec-fetch-site"]
  if (site !== undefined && site !== "same-origin" && site !== "none") return true
  const origin = headers.origin
  if (origin === undefined) return false
  if (origin === "null") return true
  try {
    const url = new URL(origin)
    return url.host !== headers.host && url.origin !== appOrigin
  } catch {
    return true
  }
}

export const tokensEqual = (a: string | undefined, b: string | undefined): boolean => {
  if (a === undefined || b === undefined || a === "" || b === "") return false
  return constantTimeEqualText(a, b)
}

/**
 * The console's body limit: its forms are a few KiB. Enforced as the body is read (the declared Content-Length
 * first, then counted as it streams), so a refused body is never held whole.
 */
export const MAX_BODY_BYTES = 64 * 1024
/** Bun's own cut-off for the console listener, far below its 128 MiB default (a bare 413 and a closed connection). */
export const SERVER_MAX_BODY_BYTES = 8 * 1024 * 1024
/** Longest request URL the console reads, and longest query or form value. */
export const MAX_URL_CHARS = 8192
export const MAX_VALUE_CHARS = 4096

/** A body over MAX_BODY_BYTES: 413. */
export class BodyTooLarge extends Data.TaggedError("BodyTooLarge") {}
/** An input the console never accepts (control characters, over-long values, a body it cannot read): 400. */
export class BadInput extends Data.TaggedError("BadInput") {}

// Unpaired surrogates only: a valid pair (an emoji) is a character like any other.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
/**
 * A value the console reads: control characters (NUL included) and unpaired surrogates are never part of what a
 * person typed, and PostgreSQL refuses NUL in text.
 */
export const isSafeValue = (value: string, max: number = MAX_VALUE_CHARS): boolean =>
  value.length <= max && !/\p{Cc}/u.test(value) && !LONE_SURROGATE.test(value)

/** The body is over the limit by its declared length alone (no byte of it read). */
export const declaredTooLarge = (headers: Readonly<Record<string, string | undefined>>): boolean => {
  const declared = headers["content-length"]
  return declared !== undefined && !(Number(declared) <= MAX_BODY_BYTES)
}

/**
 * The query of a request URL as the console reads it: the text after the first `?`, parsed as a form would be. Never
 * throws (a URL parser does, on a protocol-relative path such as `//[/x`).
 */
export const searchParamsOf = (url: string): URLSearchParams => {
  const q = url.indexOf("?")
  return new URLSearchParams(q === -1 ? "" : url.slice(q + 1))
}

/**
 * The checks every console request passes before any route runs: the URL's length, and the path as the router sees
 * it (the request URL up to `?`, decoded) and every query key and value (no control character, no unpaired surrogate,
 * no value over MAX_VALUE_CHARS). A path that does not start with one `/` (`//host/p`, `/\host/p`) is no console
 * page: refused here, so no later parse of the URL reads it as another host. Never throws.
 */
export const checkRequest = (request: HttpServerRequest.HttpServerRequest): "ok" | "too-large" | "bad" => {
  if (declaredTooLarge(request.headers)) return "too-large"
  const url = request.url
  if (url.length > MAX_URL_CHARS) return "bad"
  const q = url.indexOf("?")
  const rawPath = q === -1 ? url : url.slice(0, q)
  if (!/^\/(?![/\\])/.test(rawPath)) return "bad"
  let path: string
  try {
    path = decodeURIComponent(rawPath)
  } catch {
    return "bad"
  }
  if (!isSafeValue(path)) return "bad"
  for (const [k, v] of searchParamsOf(url)) if (!isSafeValue(k) || !isSafeValue(v)) return "bad"
  return "ok"
}

/**
 * Form fields written in a textarea, whose line breaks are kept, with the most characters each may hold. A note is
 * an ordinary value; the list of an organization's networks (Settings → Networks, up to 500 lines) is bounded by the
 * body limit alone, and a tab in it (a list pasted from a spreadsheet) is kept for its parser to read as a space; so
 * are an email channel's recipients.
 */
const MULTILINE_FIELDS: ReadonlyMap<string, { readonly max: number; readonly tabs: boolean }> = new Map([
  ["note", { max: MAX_VALUE_CHARS, tabs: false }],
  ["networks", { max: MAX_BODY_BYTES, tabs: true }],
  // An email channel's recipients, one a line or separated by commas (at most 20 addresses of 254 characters).
  ["recipients", { max: 6000, tabs: true }],
])

const readForm = (
  request: HttpServerRequest.HttpServerRequest,
): Effect.Effect<ReadonlyArray<readonly [string, string]>, BodyTooLarge | BadInput> =>
  Effect.gen(function* () {
    if (declaredTooLarge(request.headers)) return yield* new BodyTooLarge()
    const hasBody = (request.source as { body?: unknown }).body != null
    const bytes = hasBody
      ? yield* readBodyCapped(request.stream, MAX_BODY_BYTES).pipe(Effect.mapError(() => new BadInput()))
      : new Uint8Array(0)
    if (bytes === undefined) return yield* new BodyTooLarge()
    // A body that is not a form reads as no fields.
    if (!(request.headers["content-type"] ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded")) {
      return []
    }
    let text: string
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    } catch {
      return yield* new BadInput()
    }
    const entries = [...new URLSearchParams(text)].map(([k, v]) =>
      // A textarea's line breaks (CRLF as browsers send them) are part of what a person typed; nothing else is.
      MULTILINE_FIELDS.has(k) ? ([k, v.replace(/\r\n?/g, "\n")] as const) : ([k, v] as const),
    )
    for (const [k, v] of entries) {
      const multiline = MULTILINE_FIELDS.get(k)
      const checked = multiline === undefined ? v : v.replace(multiline.tabs ? /[\n\t]/g : /\n/g, "")
      if (!isSafeValue(k) || !isSafeValue(checked, multiline?.max) || v.length > (multiline?.max ?? MAX_VALUE_CHARS)) {
        return yield* new BadInput()
      }
    }
    return entries
  })

// A body can be read once: each request's form is read on first use and kept for the rest of the request.
const formsRead = new WeakMap<
  object,
  Effect.Effect<ReadonlyArray<readonly [string, string]>, BodyTooLarge | BadInput>
>()

/** A form body's entries in order (a key may repeat), read within the console's body limit and checked. */
export const formEntries = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  let read = formsRead.get(request.source as object)
  if (read === undefined) {
    read = Effect.runSync(Effect.cached(readForm(request)))
    formsRead.set(request.source as object, read)
  }
  return read
})

/** A form body's fields (the first value of each). */
export const formFields = Effect.map(formEntries, (entries) => {
  const fields: Record<string, string> = {}
  for (const [k, v] of entries) if (!(k in fields)) fields[k] = v
  return fields
})

/**
 * A request path as the console logs it: the token of a set-password link is a live credential for 24 h, and an email
 * confirmation link's for 7 days, so their path segment never reaches a log line. Everything else is kept.
 */
export const redactPath = (url: string): string =>
  url.replace(/\/(set-password|email\/confirm)\/[^/?#]*/gi, (_m, path: string) => `/${path}/…`)
