import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Context, Effect, type Fiber, FiberRef, Metric, MetricLabel, Option } from "effect"
import { MAX_URL_LENGTH, URI_TOO_LONG } from "../domain/problem.ts"
import { type Cidr, clientIp } from "../platform/http/clientIp.ts"
import { API_CSP, finalizeResponse, logDefects, problem, secureWith } from "../platform/http/responses.ts"
import { logInfoLine } from "../platform/logging.ts"
import { httpRequestDuration, httpRequests } from "../platform/metrics.ts"
import { addressBucketKey } from "../platform/ratelimit/core.ts"
import { type RateDecision, type RateLimiterService, rateLimitHeaders } from "../platform/ratelimit/RateLimiter.ts"
import { type RequestFacts, requestFacts } from "./requestContext.ts"

/**
 * The outermost HTTP layer of the read API: what every response gets, whatever produced it.
 * - Security headers (JSON, nosniff, CSP, no-store) on every response, errors included, so no browser renders attacker
 *   text as HTML.
 * - Problem documents for what the HttpApi does not answer itself: unknown paths (404), other methods than
 *   GET/HEAD (405: the API is read-only), and defects (500 without a stack or SQL).
 * - Errors carry `application/problem+json`, JSON successes `application/json; charset=utf-8`.
 */

// The reference page at /docs runs the Scalar script and styles inlined by the service itself (nothing from
// another host); its WebAssembly needs 'wasm-unsafe-eval'. It shows no attacker data. Only that exact path gets it.
const DOCS_CSP =
  "default-src 'none'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
const isDocsPath = (url: string) => (url.split("?")[0] ?? "") === "/docs"
/**
 * Another spelling of /docs that the router serves as it (`/docs/`, `/DOCS`, `//docs`, `/%64ocs`, `/docs;x`): the
 * page would get the API's CSP, under which it cannot run, so the edge redirects it to /docs.
 */
export const isDocsAlias = (url: string): boolean => {
  const raw = url.split("?")[0] ?? ""
  if (raw === "/docs") return false
  try {
    const path = decodeURIComponent(raw.split(";")[0] ?? "").replace(/\/{2,}/g, "/")
    return /^\/docs\/?$/i.test(path)
  } catch {
    return false
  }
}

export const ALLOWED_METHODS = "GET, HEAD"

/**
 * The API's security headers: its CSP, and the reference page's own CSP on the exact path /docs. The blocklist's
 * answers (200 and 304) may be kept by a cache that asks again before each use (no-cache): a firewall polling it keeps
 * the ETag and gets 304 while nothing changed. Every other answer is no-store.
 */
const secureAll = secureWith((url) => (isDocsPath(url) ? DOCS_CSP : API_CSP))
const secure = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) => {
  const secured = secureAll(request, response)
  return (response.status === 200 || response.status === 304) && routeOf(request.url) === "/v1/blocklist.txt"
    ? HttpServerResponse.setHeader(secured, "cache-control", "no-cache")
    : secured
}

const apiUnrouted = () => problem(404, "Not Found", "not_found", "No such endpoint. See /openapi.json.")

/**
 * The route pattern of a path, for the access log and metrics: raw paths may carry attacker-chosen text. The
 * router (find-my-way) serves a path after decoding its percent-escapes, collapsing repeated slashes, ignoring a
 * trailing slash and the case of the fixed parts, so `/v1//incidents` and `/v1/%69ncidents` ARE `/v1/incidents`;
 * the label follows the same canonical form, so what is served is never counted as "unmatched".
 */
const ROUTES: ReadonlyArray<[RegExp, string]> = [
  [/^\/v1\/incidents\/?$/i, "/v1/incidents"],
  [/^\/v1\/incidents\/changes\/?$/i, "/v1/incidents/changes"],
  [/^\/v1\/incidents\/[^/]+\/?$/i, "/v1/incidents/:id"],
  [/^\/v1\/events\/?$/i, "/v1/events"],
  [/^\/v1\/events\/changes\/?$/i, "/v1/events/changes"],
  [/^\/v1\/events\/[^/]+\/?$/i, "/v1/events/:id"],
  [/^\/v1\/blocklist\.txt\/?$/i, "/v1/blocklist.txt"],
  [/^\/openapi\.json\/?$/i, "/openapi.json"],
  [/^\/docs\/?$/i, "/docs"],
  [/^\/mcp\/?$/i, "/mcp"],
]
const canonicalPath = (url: string): string | undefined => {
  const raw = url.split("?")[0] ?? ""
  try {
    return decodeURI(raw).replace(/\/{2,}/g, "/")
  } catch {
    return undefined // a malformed escape: the router does not serve it either
  }
}
export const routeOf = (url: string): string => {
  const path = canonicalPath(url)
  if (path === undefined) return "unmatched"
  return ROUTES.find(([pattern]) => pattern.test(path))?.[1] ?? "unmatched"
}

/**
 * One JSON line per request (time, method, route, status, duration, organization, key id, client IP). Never the
 * Authorization header, a key, or the query string (cursors and filters stay out of logs). Written from the request's
 * fiber as it ends, with the request metrics, in one step.
 */
const accessLog = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  request: HttpServerRequest.HttpServerRequest,
  facts: RequestFacts,
  status: number,
  startedMs: number,
  client: string,
): void => {
  const route = routeOf(request.url)
  const seconds = (performance.now() - startedMs) / 1000
  logInfoLine(fiber, "request", {
    method: request.method,
    route,
    status,
    durationMs: Math.round(seconds * 100_000) / 100,
    orgId: facts.orgId ?? null,
    keyId: facts.keyId ?? null,
    clientIp: client,
  })
  const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
  requestsCounter(route, status).unsafeUpdate(1, labels)
  durationHistogram(route).unsafeUpdate(seconds, labels)
}

// The tagged metrics of each route (and status), made once, each with ONE label array, and updated in the same step
// as the line: a metric keeps the registry entry of a label array it has seen (by identity), while tagging twice joins
// two arrays into a new one, and so builds and hashes a new key, on every update. Routes and statuses are bounded sets.
const taggedCounters = new Map<string, Metric.Metric.Counter<number>>()
const requestsCounter = (route: string, status: number) => {
  const name = `${route} ${status}`
  let counter = taggedCounters.get(name)
  if (counter === undefined) {
    counter = Metric.taggedWithLabels(httpRequests, [
      MetricLabel.make("route", route),
      MetricLabel.make("status", String(status)),
    ])
    taggedCounters.set(name, counter)
  }
  return counter
}
const taggedHistograms = new Map<string, typeof httpRequestDuration>()
const durationHistogram = (route: string) => {
  let histogram = taggedHistograms.get(route)
  if (histogram === undefined) {
    histogram = Metric.taggedWithLabels(httpRequestDuration, [MetricLabel.make("route", route)])
    taggedHistograms.set(route, histogram)
  }
  return histogram
}

/** The bucket names of the two rate limits. */
/** Per client address; an IPv6 client counts per /64 (it can rotate through its /64 at will). */
export const ipBucket = (client: string) => `ip:${addressBucketKey(client)}`
export const keyBucket = (keyId: string) => `key:${keyId}`

/** The decision the RateLimit header reports: the tighter of the two limits (fewer remaining, then later reset). */
const tighter = (ip: RateDecision, key: RateDecision | undefined): RateDecision => {
  if (key === undefined) return ip
  if (!key.allowed) return key
  if (key.remaining !== ip.remaining) return key.remaining < ip.remaining ? key : ip
  return key.resetSeconds > ip.resetSeconds ? key : ip
}

const tooManyFromAddress = (limiter: RateLimiterService, decision: RateDecision) =>
  problem(
    429,
    "Too Many Requests",
    "rate_limited",
    `More than ${decision.limit} requests from this address in the rate limit window. Retry after ${decision.retryAfterSeconds} s.`,
    rateLimitHeaders(limiter, decision),
  )

/**
 * The API edge, in the fixed check order: the per-IP limit first, so unauthenticated floods are limited (every request
 * counts, 401s and unknown paths included; a 429 does not), then the URL and method checks; the HttpApi then runs key
 * auth, scope and the per-key limit. Every response leaves with the security headers and the RateLimit headers.
 */
export const makeEdgeMiddleware =
  (trustProxy: ReadonlyArray<Cidr>, limiter: RateLimiterService) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.zipRight(
      // No spans on the request path (the SQL client opens one per statement): nothing exports traces, and a disabled
      // tracer makes them no-op spans. Set on the request's own fiber (the server runs each request in a fiber of its
      // own), which costs less than setting it for the edge and restoring it after.
      FiberRef.set(FiberRef.currentTracerEnabled, false),
      Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>(
        (fiber) => {
          const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
          const started = performance.now()
          const facts = requestFacts(request)
          const client = clientIp(
            Option.getOrUndefined(request.remoteAddress),
            request.headers["x-forwarded-for"],
            trustProxy,
          )
          const bucket = ipBucket(client)
          const arrivedMs = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
          facts.arrivedMs = arrivedMs
          return Effect.flatMap(limiter.hit(bucket, arrivedMs), (ipLimit) => {
            const withLimits = (response: HttpServerResponse.HttpServerResponse, decision: RateDecision) =>
              HttpServerResponse.setHeaders(secure(request, response), rateLimitHeaders(limiter, decision))
            // An answer of the edge itself: logged on the spot, from this fiber.
            const answer = (response: HttpServerResponse.HttpServerResponse) => {
              const final = withLimits(response, ipLimit)
              accessLog(fiber, request, facts, final.status, started, client)
              return Effect.succeed(final)
            }
            // The answer of the app, as it leaves (after the HttpApi's own pre-response handlers, if any).
            const leaving = (req: HttpServerRequest.HttpServerRequest, res: HttpServerResponse.HttpServerResponse) =>
              Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse>((current) => {
                const final = withLimits(
                  finalizeResponse(req, res, apiUnrouted, secure),
                  tighter(ipLimit, facts.keyLimit),
                )
                accessLog(current, request, facts, final.status, started, client)
                return Effect.succeed(final)
              })

            if (!ipLimit.allowed) return answer(tooManyFromAddress(limiter, ipLimit))
            if (request.url.length > MAX_URL_LENGTH) {
              return answer(
                problem(
                  414,
                  URI_TOO_LONG.title,
                  URI_TOO_LONG.code,
                  `A request URL may hold at most ${MAX_URL_LENGTH} characters.`,
                ),
              )
            }
            // POST /mcp is the one writing method (the MCP door); the MCP route itself answers its other methods.
            // The TAXII server answers its other methods itself too (a TAXII error message, its own content type).
            const path = request.url.split("?")[0] ?? ""
            const mcp = path === "/mcp" || path === "/taxii2" || path.startsWith("/taxii2/")
            if (request.method !== "GET" && request.method !== "HEAD" && !mcp) {
              return answer(
                problem(
                  405,
                  "Method Not Allowed",
                  "method_not_allowed",
                  `The API is read-only: only ${ALLOWED_METHODS} are allowed.`,
                  { allow: ALLOWED_METHODS },
                ),
              )
            }
            if (isDocsAlias(request.url)) {
              return answer(HttpServerResponse.empty({ status: 308, headers: { location: "/docs" } }))
            }
            // The handler is added to this request's fiber, which runs the app and then the handlers: no need to set
            // it for the app alone and restore it after.
            return Effect.zipRight(
              HttpApp.appendPreResponseHandler((req, res) => {
                const keyLimit = facts.keyLimit
                // Refused by the per-key limit: the request does not count against the address either (a 429 counts
                // nowhere).
                return keyLimit !== undefined && !keyLimit.allowed
                  ? Effect.zipRight(limiter.release(bucket, ipLimit), leaving(req, res))
                  : leaving(req, res)
              }),
              app,
            ).pipe(logDefects)
          })
        },
      ),
    )
