import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { RateLimited } from "../domain/problem.ts"
import type { Scope } from "../domain/scopes.ts"
import { RateLimiter, type RateLimiterService } from "../platform/ratelimit/RateLimiter.ts"
import { KeyAuth } from "../repos/KeyAuth.ts"
import { EventsAuth, IncidentsAuth } from "./contract/definition.ts"
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
) =>
  auth.authenticate(request.headers.authorization, scope).pipe(
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
 * The bearer middleware of each group. HttpApiSecurity.bearer only slices the header, so the header is read
 * again here and checked strictly (scheme, one token) by KeyAuth.
 */
const bearerFor = (scope: Scope) =>
  Effect.gen(function* () {
    const auth = yield* KeyAuth
    const limiter = yield* RateLimiter
    return {
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          authenticateRequest(auth, limiter, request, scope),
        ),
    }
  })

export const IncidentsAuthLive = Layer.effect(IncidentsAuth, bearerFor("incidents:read"))
export const EventsAuthLive = Layer.effect(EventsAuth, bearerFor("events:read"))
