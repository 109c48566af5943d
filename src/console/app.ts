import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { DatabaseError } from "../platform/db/errors.ts"
import { accountRoutes } from "./account/routes.tsx"
import { confirmationRoutes } from "./alerts/confirmation.tsx"
import { alertRoutes } from "./alerts/routes.tsx"
import { ASSETS } from "./assets.ts"
import { authRoutes } from "./auth/routes.tsx"
import { eventRoutes } from "./events/routes.tsx"
import { checkRequest, redactPath } from "./http.ts"
import { ignoreRoutes } from "./ignore/routes.tsx"
import { incidentListRoutes } from "./incidents/listRoutes.tsx"
import { incidentRoutes } from "./incidents/routes.tsx"
import { makeKit } from "./kit.ts"
import { overviewRoutes } from "./overview/routes.tsx"
import { badRequest, notFound, serverError, tooLarge } from "./responses.tsx"
import { tableMismatches } from "./routeRoles.ts"
import { sensorRoutes } from "./sensors/routes.tsx"
import { request, type SignedIn } from "./session.ts"
import { settingsRoutes } from "./settings/routes.tsx"
import { sourceRoutes } from "./sources/routes.tsx"

/**
 * The console as one request handler: every area's routes (each area a folder: its routes.tsx and its pages), the
 * static assets, the checks at the edge and the answer to anything that fails (404, 413, 400, 499, 500 pages).
 */
/**
 * A statement PostgreSQL cancelled at our own request (57014, "canceling statement due to user request"): the driver
 * cancels a query whose request was interrupted, which can surface as the query's failure before the interruption.
 * A statement time-out has the same code with another message, and stays an error.
 */
const cancelledStatement = (failure: Option.Option<unknown>): boolean => {
  if (Option.isNone(failure) || !(failure.value instanceof DatabaseError)) return false
  const driver = (failure.value.cause as { readonly cause?: { readonly code?: unknown; readonly message?: unknown } })
    .cause
  return driver?.code === "57014" && /user request/.test(String(driver.message))
}

/** The client closed the connection before the answer (Bun aborts the request's signal). */
const clientGone = (req: HttpServerRequest.HttpServerRequest): boolean =>
  (req.source as { readonly signal?: AbortSignal } | undefined)?.signal?.aborted === true

/**
 * The routes (method and path as registered) of the console this process built last: what the role table's test
 * compares the table with (routeRoles.ts).
 */
export const registeredRoutes: Array<{ readonly method: string; readonly path: string }> = []

export const makeConsoleApp = Effect.gen(function* () {
  const kit = yield* makeKit
  const routes = HttpRouter.concatAll(
    yield* authRoutes(kit),
    yield* overviewRoutes(kit),
    yield* incidentListRoutes(kit),
    yield* incidentRoutes(kit),
    yield* eventRoutes(kit),
    yield* settingsRoutes(kit),
    yield* ignoreRoutes(kit),
    yield* sourceRoutes(kit),
    yield* alertRoutes(kit),
    yield* confirmationRoutes(kit),
    yield* sensorRoutes(kit),
    yield* accountRoutes(kit),
  )
  let withAssets = routes
  for (const asset of ASSETS) {
    withAssets = HttpRouter.get(
      withAssets,
      asset.path as `/${string}`,
      Effect.succeed(
        HttpServerResponse.uint8Array(asset.body, {
          contentType: asset.contentType,
          headers: { "cache-control": "public, max-age=31536000, immutable" },
        }),
      ),
    )
  }
  registeredRoutes.splice(
    0,
    registeredRoutes.length,
    ...Array.from(withAssets.routes, (r) => ({ method: r.method, path: r.path })),
  )
  // A route missing from the role table is refused to everyone (session.ts); the log says which, at start-up.
  const mismatches = tableMismatches(registeredRoutes)
  if (mismatches.length > 0) {
    yield* Effect.logError("console routes and the role table disagree").pipe(Effect.annotateLogs({ mismatches }))
  }

  // A plain Effect, not a router value: the Bun server serves a router value through Bun's own routes, without the
  // middleware and this handler; as an Effect every request goes through the security headers and the 404 page.
  // Every input is checked at the edge, before any route (and so any database work) runs: the body's declared size,
  // the URL, the decoded path and every query value. Form bodies are checked as they are read (http.ts).
  const checked = Effect.flatMap(request, (req) => {
    const verdict = checkRequest(req)
    if (verdict === "too-large") return Effect.succeed(tooLarge())
    if (verdict === "bad") return Effect.succeed(badRequest())
    return withAssets
  })
  const app: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest> =
    Effect.catchAllCause(checked, (cause) =>
      Effect.gen(function* () {
        const req = yield* request
        const failure = Cause.failureOption(cause)
        const tag = Option.isSome(failure) ? (failure.value as { _tag?: string })._tag : undefined
        if (tag === "RouteNotFound") {
          const session = yield* Effect.orElseSucceed(kit.currentSession, () => Option.none<SignedIn>())
          return notFound(Option.getOrUndefined(session)?.viewer)
        }
        if (tag === "BodyTooLarge") return tooLarge()
        if (tag === "BadInput") return badRequest()
        // A client that went away (an aborted sign-in, a closed tab) is not an error of ours: the request fiber is
        // interrupted, or a statement cancelled for it fails first (PostgreSQL's "canceling statement due to user
        // request") while the request's own signal already says the client is gone.
        if (Cause.isInterruptedOnly(cause) || clientGone(req) || cancelledStatement(failure)) {
          yield* Effect.logDebug("console request interrupted").pipe(Effect.annotateLogs({ path: redactPath(req.url) }))
          return HttpServerResponse.empty({ status: 499 })
        }
        yield* Effect.logError("console request failed", cause).pipe(Effect.annotateLogs({ path: redactPath(req.url) }))
        return serverError()
      }),
    )
  return app
})
