import { HttpBody, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Chunk, Effect } from "effect"
import {
  PROBLEM_CONTENT_TYPE,
  problemBody,
  UNAVAILABLE_RETRY_AFTER_SECONDS,
  WWW_AUTHENTICATE,
} from "../../domain/problem.ts"

/**
 * What every JSON listener's responses get, whatever produced them (API, MCP, ingest, ops): security headers on
 * every response, errors included, so no browser renders attacker text as HTML; problem documents (RFC 9457) for what
 * the router answers itself (unknown paths, defects: 500 without a stack or SQL); errors typed
 * `application/problem+json`, JSON successes `application/json; charset=utf-8`.
 */

/** The CSP of a JSON answer: nothing may load or frame it. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'"

export const problem = (
  status: number,
  title: string,
  code: string,
  detail: string,
  headers: Record<string, string> = {},
) => HttpServerResponse.unsafeJson(problemBody(status, title, code, detail), { status, headers })

/** 413: a body over a listener's bound. The detail names the bound; a listener adds the headers it needs. */
export const payloadTooLarge = (detail: string, headers: Record<string, string> = {}) =>
  problem(413, "Content Too Large", "payload_too_large", detail, headers)

/** A problem document (one of the classes in domain/problem.ts) as a response. */
export const problemResponse = (p: {
  readonly status: number
  readonly title: string
  readonly code: string
  readonly detail: string
}) => problem(p.status, p.title, p.code, p.detail)

export type Secure = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse,
) => HttpServerResponse.HttpServerResponse

/** Security headers with the CSP a listener gives each URL. */
export const secureWith =
  (cspFor: (url: string) => string): Secure =>
  (request, response) => {
    const body = response.body
    const headers: Record<string, string> = {
      "x-content-type-options": "nosniff",
      "content-security-policy": cspFor(request.url),
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    }
    // A route with its own challenge (the TAXII server's Basic realm) keeps it.
    if (response.status === 401 && response.headers["www-authenticate"] === undefined) {
      headers["www-authenticate"] = WWW_AUTHENTICATE
    }
    // A 503 (database unreachable or busy) says when to try again.
    if (response.status === 503 && response.headers["retry-after"] === undefined) {
      headers["retry-after"] = String(UNAVAILABLE_RETRY_AFTER_SECONDS)
    }
    const secured = HttpServerResponse.setHeaders(response, headers)
    // The content type lives on the body (a response copy re-derives the header from it), so re-type the body.
    if (body._tag === "Uint8Array" && body.contentType.startsWith("application/json")) {
      const type = response.status >= 400 ? `${PROBLEM_CONTENT_TYPE}; charset=utf-8` : "application/json; charset=utf-8"
      return HttpServerResponse.setBody(secured, HttpBody.uint8Array(body.body, type))
    }
    return secured
  }

/** Security headers with the JSON CSP on every URL. */
export const secure: Secure = secureWith(() => API_CSP)

/**
 * Empty 404/500 answers come from the router (unknown path) and from defects; they get problem bodies here.
 * Runs as a pre-response handler because the app hands its response to the server before middleware returns.
 * Each listener says what an unrouted request gets.
 */
export const finalizeResponse = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse,
  unrouted: (request: HttpServerRequest.HttpServerRequest) => HttpServerResponse.HttpServerResponse,
  secureResponse: Secure = secure,
) => {
  if (response.body._tag === "Empty" && response.status === 404) return secureResponse(request, unrouted(request))
  if (response.body._tag === "Empty" && response.status >= 500) {
    return secureResponse(
      request,
      problem(500, "Internal Server Error", "internal", "An unexpected error occurred. It has been logged."),
    )
  }
  return secureResponse(request, response)
}

/**
 * Logs a request's defects at ERROR, except the router's own way of answering an unknown path: it dies with the empty
 * 404 response itself, which finalizeResponse turns into a problem body (not an error of ours).
 */
export const logDefects = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.tapDefect(self, (cause) =>
    Chunk.every(Cause.defects(cause), HttpServerResponse.isServerResponse)
      ? Effect.void
      : Effect.logError("unhandled defect", cause),
  )
