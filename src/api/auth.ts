import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { RateLimited } from "../domain/problem.ts"
import type { Scope } from "../domain/scopes.ts"
import { RateLimiter, type RateLimiterService } from "../platform/ratelimit/RateLimiter.ts"
import { KeyAuth } from "../repos/KeyAuth.ts"
import { AuditAuth, EventsAuth, IncidentsAuth, IntelAuth } from "./contract/definition.ts"
import { keyBucket } from "./edge.ts"
import { authFailures } from "./problems.ts"
import { requestFacts } from "./requestContext.ts"

/**
 * The checks of one request after the per-IP limit, in the fixed order: key (401), Deception (403), scope (403), then
 * the per-key limit (429). KeyAuth's tagged errors become their 401/403 problems here (api/problems.ts authFailures),
 * and nowhere else. Used by each group's bearer middleware and by the MCP endpoint (mcp/http.ts), which takes any of
 * the read scopes.
 */
export const authenticateRequest = (
  auth: KeyAuth,
  limiter: RateLimiterService,
  request: HttpServerRequest.HttpServerRequest,
  scope: Scope | ReadonlyArray<Scope>,
  options: { readonly basic?: boolean } = {},
) =>
  auth
    .authenticate(
      options.basic === true ? basicAsBearer(request.headers.authorization) : request.headers.authorization,
      scope,
    )
    .pipe(
      authFailures,
      Effect.tap((caller) =>
        Effect.sync(() => Object.assign(requestFacts(request), { orgId: caller.orgId, keyId: caller.keyId })),
      ),
      // The per-key limit comes after key, Deception and scope. The edge turns the decision into headers.
      Effect.tap((caller) =>
        Effect.flatMap(limiter.hit(keyBucket(caller.keyId), requestFacts(request).arrivedMs), (decision) => {
          requestFacts(request).keyLimit = decision
          return decision.allowed
            ? Effect.void
            : Effect.fail(
                RateLimited.of(
                  `More than ${decision.limit} requests with this API key in the rate limit window. Retry after ${decision.retryAfterSeconds} s.`,
                ),
              )
        }),
      ),
    )

/**
 * HTTP Basic with the API key as the password (any user name) read as `Bearer <key>`, for the intelligence readers
 * that can send nothing else (firewalls fetching the blocklist, TAXII clients). Any other header is left as it is;
 * a Basic header whose credentials do not decode stays Basic, which KeyAuth refuses as malformed (401).
 */
export const basicAsBearer = (authorization: string | undefined): string | undefined => {
  const basic = authorization === undefined ? null : /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(authorization)
  if (basic === null || basic[1] === undefined || basic[1].length > 1024) return authorization
  const decoded = Buffer.from(basic[1], "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  const password = colon < 0 ? "" : decoded.slice(colon + 1)
  return password === "" || /\s/.test(password) ? authorization : `Bearer ${password}`
}

/**
 * The bearer middleware of each group. HttpApiSecurity.bearer only slices the header, so the header is read
 * again here and checked strictly (scheme, one token) by KeyAuth.
 */
const bearerFor = (scope: Scope, options: { readonly basic?: boolean } = {}) =>
  Effect.gen(function* () {
    const auth = yield* KeyAuth
    const limiter = yield* RateLimiter
    return {
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          authenticateRequest(auth, limiter, request, scope, options),
        ),
    }
  })

export const IncidentsAuthLive = Layer.effect(IncidentsAuth, bearerFor("incidents:read"))
export const EventsAuthLive = Layer.effect(EventsAuth, bearerFor("events:read"))
export const IntelAuthLive = Layer.effect(IntelAuth, bearerFor("intel:read", { basic: true }))
export const AuditAuthLive = Layer.effect(AuditAuth, bearerFor("audit:read"))
