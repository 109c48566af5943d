/**
 * What the edge (api/edge.ts) adds beyond the HttpApi, also documented by api/openapi.ts. A module of its own so that
 * the HttpApi definition, and so the client built from it (D34), does not pull in the edge's rate limiter and config.
 */

/** Longer URLs get 414 here; a request head beyond Bun's own limit gets Bun's 431 before any of our code runs. */
export const MAX_URL_LENGTH = 8192
export const WWW_AUTHENTICATE = 'Bearer realm="incident-api"'
export const PROBLEM_CONTENT_TYPE = "application/problem+json"
export const URI_TOO_LONG = { title: "URI Too Long", code: "uri_too_long" } as const
