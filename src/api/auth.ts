import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { KeyAuth } from "../auth/KeyAuth.ts"
import type { Scope } from "../repos/ApiKeysRepo.ts"
import { EventsAuth, IncidentsAuth } from "./definition.ts"
import { databaseProblem } from "./problems.ts"
import { requestFacts } from "./requestContext.ts"

/**
 * The bearer middleware of each group. HttpApiSecurity.bearer only slices the header, so the header is read
 * again here and checked strictly (scheme, one token) by KeyAuth.
 */
const bearerFor = (scope: Scope) =>
  Effect.map(KeyAuth, (auth) => ({
    bearer: () =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        auth.authenticate(request.headers.authorization, scope).pipe(
          Effect.tap((caller) =>
            Effect.sync(() => Object.assign(requestFacts(request), { orgId: caller.orgId, keyId: caller.keyId })),
          ),
          Effect.catchTag("DatabaseError", databaseProblem),
        ),
      ),
  }))

export const IncidentsAuthLive = Layer.effect(IncidentsAuth, bearerFor("incidents:read"))
export const EventsAuthLive = Layer.effect(EventsAuth, bearerFor("events:read"))
