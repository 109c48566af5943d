import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { KeyAuth } from "../auth/KeyAuth.ts"
import { RateLimited } from "../domain/problem.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { Scope } from "../repos/ApiKeysRepo.ts"
import { EventsAuth, IncidentsAuth } from "./definition.ts"
import { keyBucket } from "./edge.ts"
import { authFailures } from "./problems.ts"
import { requestFacts } from "./requestContext.ts"

/**
 * The bearer middleware of each group. HttpApiSecurity.bearer only slices the header, so the header is read
 * again here and checked strictly (scheme, one token) by KeyAuth. This is the API edge of authentication: KeyAuth's
 * tagged errors become their 401/403 problems here (api/problems.ts authFailures), and nowhere else.
 */
const bearerFor = (scope: Scope) =>
  Effect.gen(function* () {
    const auth = yield* KeyAuth
    const limiter = yield* RateLimiter
    return {
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          auth.authenticate(request.headers.authorization, scope).pipe(
            authFailures,
            Effect.tap((caller) =>
              Effect.sync(() => Object.assign(requestFacts(request), { orgId: caller.orgId, keyId: caller.keyId })),
            ),
            // D10: the per-key limit comes after key, Deception and scope. The edge turns the decision into headers.
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
          ),
        ),
    }
  })

export const IncidentsAuthLive = Layer.effect(IncidentsAuth, bearerFor("incidents:read"))
export const EventsAuthLive = Layer.effect(EventsAuth, bearerFor("events:read"))
