import { HttpApiBuilder, HttpMiddleware, HttpRouter } from "@effect/platform"
import { Effect, Layer } from "effect"
import { MAX_URL_LENGTH } from "../domain/problem.ts"
import { AppConfig } from "../platform/config.ts"
import { draining } from "../platform/http/drain.ts"
import { listening } from "../platform/http/listening.ts"
import { nodeServerLayer } from "../platform/http/nodeServer.ts"
import { RateLimiter } from "../platform/ratelimit/RateLimiter.ts"
import { KeyAuth } from "../repos/KeyAuth.ts"
import { ReposLive } from "../repos/layers.ts"
import { AuditHandlers } from "./audit.ts"
import { AuditAuthLive, EventsAuthLive, IncidentsAuthLive, IntelAuthLive } from "./auth.ts"
import { IntelHandlers } from "./blocklist.ts"
import { ChangesRepo } from "./ChangesRepo.ts"
import { IncidentApi } from "./contract/definition.ts"
import { DocsLive } from "./docs.ts"
import { makeEdgeMiddleware } from "./edge.ts"
import { EventsHandlers, IncidentsHandlers } from "./handlers.ts"

/** The read API as a Layer: the HttpApi, its handlers and their authentication. */
export const ApiLive = HttpApiBuilder.api(IncidentApi).pipe(
  Layer.provide([IncidentsHandlers, EventsHandlers, IntelHandlers, AuditHandlers]),
  Layer.provide([IncidentsAuthLive, EventsAuthLive, IntelAuthLive, AuditAuthLive]),
)

/**
 * The API listener on PORT (never the ingest port: sensors have their own listener), with `routes`: other routes served
 * on the same router behind the same edge (main.ts gives it the MCP door's POST /mcp). It needs the rate limiter and a
 * database pool, given by main.ts.
 */
export const apiServer = <E, R>(routes: Layer.Layer<never, E, R>) =>
  Layer.unwrapEffect(
    Effect.map(Effect.all([AppConfig, RateLimiter]), ([config, limiter]) =>
      draining((track) => {
        const edge = makeEdgeMiddleware(config.trustProxy, limiter)
        return HttpApiBuilder.serve((app) => track(edge(app))).pipe(
          // No http.server span per request: nothing exports traces, and building one (URL, headers, attributes) was a
          // visible share of each request's CPU. The edge also turns the SQL spans off.
          HttpMiddleware.withTracerDisabledWhen(() => true),
          Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
          // The reference page, served whole by the service so it works offline (api/docs.ts).
          Layer.provide(DocsLive),
          Layer.provide(routes),
          Layer.provide(ApiLive),
          // The feeds' statements: the API's own (the MCP door reads them through the same queries).
          Layer.provide(ChangesRepo.Default),
          // The router refuses path parameters over 100 characters by default: such an id would get 404 before
          // authentication (401 must come first, so no path reveals whether a record exists). Any id up to the URL
          // limit reaches the handler, which answers 404.
          Layer.provide(HttpRouter.setRouterConfig({ maxParamLength: MAX_URL_LENGTH })),
          Layer.provide(Layer.effectDiscard(listening("api"))),
          // node:http, not Bun.serve: one socket write per response (platform/http/nodeServer.ts). It has no body
          // limit of its own: a body of any size gets our 405 problem (the API is read-only), and POST /mcp reads at
          // most its own bound.
          Layer.provide(nodeServerLayer({ port: config.port, host: config.host })),
        )
      }),
    ),
  ).pipe(
    // One key cache for the API and the routes given to it (the MCP door), and the shared repositories, on the
    // pool main.ts gives this face.
    Layer.provide(KeyAuth.Default),
    Layer.provide(ReposLive),
  )
