import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { constantTimeEqual } from "../domain/crypto.ts"

/** D29: on every console response. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
}

/** What a page component returns: Hono's JSX renders to an already escaped string (D29). */
export interface Rendered {
  toString(): string | Promise<string>
}

/** A page: rendered by Hono's JSX (escaping every string), never cached (D29). Page components are synchronous. */
export const html = (node: Rendered, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(`<!doctype html>${String(node.toString())}`, {
    status,
    contentType: "text/html; charset=utf-8",
    headers: { "cache-control": "no-store", ...headers },
  })

/** D28: after a POST, the browser goes to a page with GET. */
export const seeOther = (location: string) =>
  HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store" } })

/** A same-site path to return to after sign-in, or "/" (never another site: `//host`, `/\host`, a scheme). */
export const safeNext = (next: string | undefined): string =>
  next !== undefined && /^\/(?![/\\])[^\s]*$/.test(next) && next.length <= 1000 ? next : "/"

/**
 * D28: refused when the browser says the request comes from another site: `Sec-Fetch-Site` other than same-origin
 * or none, or an `Origin` that is neither this host nor APP_URL's.
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
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && constantTimeEqual(x, y)
}

/** A form body's fields (the first value of each); a body that is not a form reads as no fields. */
export const formFields = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
  request.urlParamsBody.pipe(
    Effect.map((params) => {
      const fields: Record<string, string> = {}
      for (const [k, v] of params) if (!(k in fields)) fields[k] = v
      return fields
    }),
    Effect.orElseSucceed(() => ({}) as Record<string, string>),
  ),
)

/**
 * A request path as the console logs it: the token of a set-password link is a live credential for 24 h, so its
 * path segment never reaches a log line (D26, D31). Everything else is kept.
 */
export const redactPath = (url: string): string => url.replace(/\/set-password\/[^/?#]*/gi, "/set-password/…")
