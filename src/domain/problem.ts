import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * Every error is an RFC 9457 problem document `{type, title, status, detail, code}` served as
 * application/problem+json. `type` is "about:blank" (RFC 9457 §4.2.1), so `title` is the HTTP status phrase and
 * the stable snake_case `code` tells the cases apart. `detail` never echoes a secret.
 */
// `status` is a literal per class: it makes the classes distinguishable when the API encodes a failure.
const fields = <const S extends number>(status: S) => ({
  type: Schema.String,
  title: Schema.String,
  status: Schema.Literal(status),
  detail: Schema.String,
  code: Schema.String,
})

const problemFields = <const S extends number>(status: S, title: string, code: string, detail: string) => ({
  type: "about:blank",
  title,
  status,
  detail,
  code,
})

export class InvalidRequest extends Schema.Class<InvalidRequest>("InvalidRequest")(
  fields(400),
  HttpApiSchema.annotations({
    status: 400,
    description: "invalid_request: a parameter is invalid; detail names it and its allowed values",
  }),
) {
  static of(detail: string) {
    return new InvalidRequest(problemFields(400, "Bad Request", "invalid_request", detail))
  }
}

export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(
  fields(401),
  HttpApiSchema.annotations({ status: 401, description: "unauthorized: key missing, wrong, revoked or expired" }),
) {
  static of(detail: string) {
    return new Unauthorized(problemFields(401, "Unauthorized", "unauthorized", detail))
  }
}

export class Forbidden extends Schema.Class<Forbidden>("Forbidden")(
  fields(403),
  HttpApiSchema.annotations({
    status: 403,
    description: "insufficient_scope: the key lacks the endpoint's scope; feature_disabled: Deception is off",
  }),
) {
  static insufficientScope(scope: string) {
    return new Forbidden(
      problemFields(403, "Forbidden", "insufficient_scope", `This endpoint requires a key with the scope ${scope}.`),
    )
  }
  static featureDisabled() {
    return new Forbidden(
      problemFields(403, "Forbidden", "feature_disabled", "The Deception feature is not active for this organization."),
    )
  }
}

export class NotFound extends Schema.Class<NotFound>("NotFound")(
  fields(404),
  HttpApiSchema.annotations({ status: 404, description: "not_found: no such record in the caller's organization" }),
) {
  static of(detail: string) {
    return new NotFound(problemFields(404, "Not Found", "not_found", detail))
  }
}

export class Gone extends Schema.Class<Gone>("Gone")(
  fields(410),
  HttpApiSchema.annotations({
    status: 410,
    description:
      "token_expired: the feed token points before changes the retention purge has deleted; start again with from",
  }),
) {
  static tokenExpired() {
    return new Gone(
      problemFields(
        410,
        "Gone",
        "token_expired",
        "This token points before changes that have been deleted under the retention window (FEED_RETENTION_DAYS, RETENTION_DAYS). Start again with a first call with from (an RFC 3339 time), without after.",
      ),
    )
  }
}

export class RateLimited extends Schema.Class<RateLimited>("RateLimited")(
  fields(429),
  HttpApiSchema.annotations({
    status: 429,
    description: "rate_limited: more than 120 requests a minute; Retry-After says when to try again",
  }),
) {
  static of(detail: string) {
    return new RateLimited(problemFields(429, "Too Many Requests", "rate_limited", detail))
  }
}

export class InternalError extends Schema.Class<InternalError>("InternalError")(
  fields(500),
  HttpApiSchema.annotations({ status: 500, description: "internal: an unexpected error (no detail leaks)" }),
) {
  static of() {
    return new InternalError(
      problemFields(500, "Internal Server Error", "internal", "An unexpected error occurred. It has been logged."),
    )
  }
}

export class ServiceUnavailable extends Schema.Class<ServiceUnavailable>("ServiceUnavailable")(
  fields(503),
  HttpApiSchema.annotations({
    status: 503,
    description:
      "unavailable: the database cannot be reached, or it is busy (no connection free in time, or a query time-out), or the ingest listener had no room for the request in time; Retry-After says when to try again",
  }),
) {
  /** The database cannot be reached (refused, reset, down, starting or shutting down). */
  static of() {
    return new ServiceUnavailable(
      problemFields(503, "Service Unavailable", "unavailable", "The service cannot reach its database. Retry later."),
    )
  }
  /** The ingest listener is working on as much as it takes in at once, and no room came free in time. */
  static ingestBusy() {
    return new ServiceUnavailable(
      problemFields(
        503,
        "Service Unavailable",
        "unavailable",
        "The service is taking in as many events as it holds at once and had no room for this request in time. Nothing of it was read or stored. Retry later.",
      ),
    )
  }
  /** The database is reachable but busy: no connection of the pool came free in time, or a query timed out. */
  static busy() {
    return new ServiceUnavailable(
      problemFields(
        503,
        "Service Unavailable",
        "unavailable",
        "The service's database is busy (no connection free in time, or a query time-out). Retry later.",
      ),
    )
  }
}

/** The Retry-After (seconds) of every 503 `unavailable`. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2

/** A problem body for answers produced outside the HttpApi (unknown route, 405, 413, ...). */
export const problemBody = (status: number, title: string, code: string, detail: string) =>
  problemFields(status, title, code, detail)

/** What every listener adds beyond the HttpApi, documented by the OpenAPI description too. */
/** Longer URLs get 414 here; a request head beyond Bun's own limit gets Bun's 431 before any of our code runs. */
export const MAX_URL_LENGTH = 8192
export const WWW_AUTHENTICATE = 'Bearer realm="incident-api"'
export const PROBLEM_CONTENT_TYPE = "application/problem+json"
export const URI_TOO_LONG = { title: "URI Too Long", code: "uri_too_long" } as const
