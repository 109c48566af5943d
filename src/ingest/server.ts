import { HttpApp, HttpBody, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Effect, Layer, Option } from "effect"
import { ServiceUnavailable } from "../domain/problem.ts"
import { AppConfig } from "../platform/config.ts"
import {
  discardUnreadBody,
  MAX_BODY_BYTES,
  MAX_EVENTS,
  type ParsedBody,
  parseBody,
  SERVER_MAX_BODY_BYTES,
} from "../platform/http/body.ts"
import { draining } from "../platform/http/drain.ts"
import { listening } from "../platform/http/listening.ts"
import { databaseProblem } from "../platform/http/problems.ts"
import { finalizeResponse, logDefects, payloadTooLarge, problem, problemResponse } from "../platform/http/responses.ts"
import type { SensorIdentity } from "./batch.ts"
import { heartbeatRoute } from "./heartbeat.ts"
import {
  HEC_INTERNAL,
  HEC_NOT_FOUND,
  HEC_WWW_AUTHENTICATE,
  hecEventsRoute,
  hecHealthRoute,
  hecPathParameters,
  hecResponse,
} from "./hec.ts"
import { IngestAdmission } from "./IngestAdmission.ts"
import { Ingestor } from "./Ingestor.ts"
import { touchIngestMetrics } from "./metrics.ts"
import { formMessages, isFormBody, unwrapOpenCanaryItem } from "./opencanaryWebhook.ts"
import {
  type BatchMapper,
  type Checked,
  checkMapped,
  countOutcomes,
  eventsToStore,
  mapCowrieLines,
  mapNative,
  mapOpenCanaryLines,
  mergesOf,
  readBodyText,
} from "./pipeline.ts"
import {
  hasPathParameters,
  ingestRouteOfPathParameters,
  logIngestRequest,
  noteOutcomes,
  noteRoute,
  noteSensor,
  routeOf,
} from "./requestLog.ts"
import { INGEST_ROUTE_TABLE, type IngestHandlerKind, type IngestRouteEntry } from "./routes.ts"
import { SensorAuth } from "./SensorAuth.ts"

/**
 * The ingestion listener on INGEST_PORT (never the API's port). One route per format; each answers with one outcome per
 * event (accepted with its ids, duplicate, or rejected with the reason), so one bad event never rejects the batch.
 * Sensors report with their own configuration: the Splunk HEC routes (hec.ts) and OpenCanary's webhook forms on the
 * OpenCanary route. The routes are the table's (routes.ts); every request is logged once and counted on the route the
 * router matched (requestLog.ts).
 */

/** The paths of the non-HEC routes, named by the 404; and the HEC paths that take POST, whose other methods are 405. */
const ROUTE_PATHS: ReadonlyArray<string> = INGEST_ROUTE_TABLE.filter((route) => !route.hec).map((route) => route.path)
const HEC_PATHS: ReadonlyArray<string> = INGEST_ROUTE_TABLE.filter((route) => route.hec && route.method === "POST").map(
  (route) => route.path,
)

const badRequest = (detail: string) => problem(400, "Bad Request", "invalid_request", detail)

/** How a route's body becomes items: the JSON forms, or OpenCanary's webhook forms as well. */
type Framing = (text: string, request: HttpServerRequest.HttpServerRequest) => ParsedBody | { readonly reason: string }

const jsonFraming: Framing = (text) => parseBody(text)

/**
 * OpenCanary's WebhookHandler: a form body `message=<line>`; `{"message": "<line>"}`; a JSON string whose
 * content is the line; or the line itself (and the array and NDJSON of lines).
 */
const openCanaryFraming: Framing = (text, request) => {
  if (isFormBody(request.headers["content-type"])) {
    const form = formMessages(text)
    if (form._tag === "Invalid") return { reason: form.reason }
    if (form.lines.length > MAX_EVENTS) return { _tag: "TooMany", count: form.lines.length }
    return {
      _tag: "Items",
      items: form.lines.map((line) => {
        try {
          return { value: JSON.parse(line) as unknown }
        } catch {
          return { error: "the message field is not a JSON OpenCanary line" }
        }
      }),
    }
  }
  const parsed = parseBody(text)
  if (parsed._tag !== "Items") return parsed
  return {
    _tag: "Items",
    items: parsed.items.map((item) => ("value" in item ? { value: unwrapOpenCanaryItem(item.value) } : item)),
  }
}

const ingestRoute = <R>(mapBatch: BatchMapper<R>, framing: Framing = jsonFraming) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const auth = yield* SensorAuth
    const admission = yield* IngestAdmission
    const sensor = yield* auth.authenticate(request.headers.authorization)
    noteSensor(request, sensor.sensorId)
    const admitted = yield* admission.admit(request, takeIn(request, sensor, mapBatch, framing))
    if (Option.isNone(admitted)) return yield* Effect.fail(ServiceUnavailable.ingestBusy())
    return admitted.value
  }).pipe(
    Effect.catchTag("DatabaseError", databaseProblem),
    // Every failure left is a problem document (401, 500, 503): answer with it.
    Effect.catchAll((e) => Effect.succeed(problemResponse(e))),
  )

/** Reads, maps and stores one authenticated request's events (once IngestAdmission has let it in). */
const takeIn = <R>(
  request: HttpServerRequest.HttpServerRequest,
  sensor: SensorIdentity,
  mapBatch: BatchMapper<R>,
  framing: Framing,
) =>
  Effect.gen(function* () {
    const ingestor = yield* Ingestor
    const body = yield* readBodyText(request)
    if (body._tag === "TooLarge") return payloadTooLarge(`A request body may hold at most ${MAX_BODY_BYTES} bytes.`)
    // Never replace a byte (two different sensorEventIds could become one): refuse the whole body.
    if (body._tag === "NotUtf8") {
      return badRequest(
        `The body is not valid UTF-8: the sequence starting at byte ${body.invalidAt} (counting from 0) is not well-formed UTF-8. Nothing was stored.`,
      )
    }
    const parsed = framing(body.text, request)
    if ("reason" in parsed) return badRequest(`${parsed.reason}. Nothing was stored.`)
    if (parsed._tag === "Empty") return badRequest("The body is empty: send one event, a JSON array, or NDJSON.")
    if (parsed._tag === "TooMany") return payloadTooLarge(`A request may hold at most ${MAX_EVENTS} events.`)
    const indexes: Array<number> = []
    const values: Array<unknown> = []
    const checked: Array<Checked> = []
    for (const [index, item] of parsed.items.entries()) {
      if ("error" in item) checked.push({ index, outcome: { index, status: "rejected", reason: item.error } })
      else {
        indexes.push(index)
        values.push(item.value)
      }
    }
    checked.push(...(yield* checkMapped(yield* mapBatch(sensor, values), indexes)))
    const stored = yield* ingestor.ingest(sensor, eventsToStore(checked), mergesOf(checked))
    const results = [...checked.flatMap((c) => ("outcome" in c ? [c.outcome] : [])), ...stored].sort(
      (a, b) => a.index - b.index,
    )
    const counts = countOutcomes(results)
    noteOutcomes(request, counts)
    return HttpServerResponse.unsafeJson({
      accepted: counts.accepted ?? 0,
      duplicates: counts.duplicate ?? 0,
      rejected: counts.rejected ?? 0,
      merged: counts.merged ?? 0,
      ignored: counts.ignored ?? 0,
      results,
    })
  })

/** Each kind of route's handler (routes.ts names the kind of each route). */
const HANDLERS = {
  native: ingestRoute(mapNative),
  opencanary: ingestRoute(mapOpenCanaryLines, openCanaryFraming),
  cowrie: ingestRoute(mapCowrieLines),
  heartbeat: heartbeatRoute,
  hecEvents: hecEventsRoute,
  hecHealth: hecHealthRoute,
} satisfies Record<IngestHandlerKind, unknown>

type AnyHandler = (typeof HANDLERS)[IngestHandlerKind]

/** A route's handler, wrapped to note the route the router matched on the request (the log line's and metrics'). */
const matched = (
  route: IngestRouteEntry,
  handler: Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    Effect.Effect.Error<AnyHandler>,
    Effect.Effect.Context<AnyHandler>
  >,
) => Effect.zipRight(noteMatched(route), handler)

const noteMatched = (route: IngestRouteEntry) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => noteRoute(request, route))

const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] as const

/**
 * The router, from the table. A route's path with another method is matched too, only to note the route: it is
 * answered as an unrouted request (405 or 404, ingestUnrouted) and counted on that route. HEAD is left to the router
 * on a GET route (it serves HEAD with the GET handler).
 */
const router = HttpRouter.fromIterable(
  INGEST_ROUTE_TABLE.flatMap((route) => [
    HttpRouter.makeRoute(route.method, route.path, matched(route, HANDLERS[route.handler])),
    ...METHODS.filter((method) => method !== route.method && !(method === "HEAD" && route.method === "GET")).map(
      (method) =>
        HttpRouter.makeRoute(
          method,
          route.path,
          matched(
            route,
            Effect.map(HttpServerRequest.HttpServerRequest, (request) => ingestUnrouted(request)),
          ),
        ),
    ),
  ]),
)

/**
 * Path parameters on an ingest route (`/ingest/v1/events;x`, `/services/collector/event/;x`) are refused before
 * routing, in the route family's error shape: the router drops what follows a `;` and would serve the route, so a
 * path the sender wrote otherwise would be stored as the route's. The refusal is logged and counted on the route it
 * was sent to (found from the path here, as the router never sees the request). A `;` on a path that names no route
 * is left to the router.
 */
const pathParameterRefusal = (request: HttpServerRequest.HttpServerRequest) => {
  if (!hasPathParameters(request.url)) return undefined
  const route = ingestRouteOfPathParameters(request.url)
  if (route === undefined) return undefined
  noteRoute(request, route)
  return route.hec
    ? hecResponse(hecPathParameters(route.path))
    : badRequest(
        `Path parameters (;…) are refused on the ingest routes: send the request to ${route.path} without them. Nothing was stored.`,
      )
}

const ingestApp = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const refusal = pathParameterRefusal(request)
  return refusal === undefined ? router : Effect.succeed(refusal)
})

const isHecRoute = (request: HttpServerRequest.HttpServerRequest) =>
  routeOf(request)?.hec === true || (request.url.split("?")[0] ?? "").startsWith("/services/")

// A known path with another method than POST is a 405; anything else a 404 naming the routes.
const ingestUnrouted = (request: HttpServerRequest.HttpServerRequest) => {
  const path = request.url.split("?")[0] ?? ""
  if (HEC_PATHS.includes(path)) {
    return hecResponse({ status: 405, body: { text: "Method not allowed: use POST", code: 405 } }, { allow: "POST" })
  }
  if (isHecRoute(request)) return hecResponse(HEC_NOT_FOUND)
  return ROUTE_PATHS.includes(path)
    ? problem(405, "Method Not Allowed", "method_not_allowed", "Ingestion takes POST.", { allow: "POST" })
    : problem(404, "Not Found", "not_found", `No such endpoint. Sensors post to ${ROUTE_PATHS.join(", ")}.`)
}

/**
 * HEC answers keep HEC's shape and `application/json` (HEC clients read `code`); a defect on a HEC path is HEC's
 * code 8, not a problem document.
 */
const hecFace = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) => {
  if (!isHecRoute(request)) return response
  const base = response.status >= 500 && response.status !== 503 ? hecResponse(HEC_INTERNAL) : response
  const finalized = base === response ? response : finalizeResponse(request, base, ingestUnrouted)
  // The shared edge names the API's Bearer realm on a 401; a HEC client expects Splunk's scheme.
  const fixed =
    finalized.status === 401
      ? HttpServerResponse.setHeader(finalized, "www-authenticate", HEC_WWW_AUTHENTICATE)
      : finalized
  const body = fixed.body
  return body._tag === "Uint8Array"
    ? HttpServerResponse.setBody(fixed, HttpBody.uint8Array(body.body, "application/json; charset=utf-8"))
    : fixed
}

// The handler is added to the request's own fiber (the server runs each request in one), which runs the app and
// then the handlers: cheaper than setting it for the app alone and restoring it after.
const ingestEdge = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.zipRight(
    HttpApp.appendPreResponseHandler((req, res) => {
      const response = hecFace(req, finalizeResponse(req, res, ingestUnrouted))
      discardUnreadBody(req)
      return Effect.as(logIngestRequest(req, response), response)
    }),
    app,
  ).pipe(logDefects)

/**
 * Bun.serve ends a request after its idle time-out even while its body keeps arriving (a sensor's upload a byte a
 * second is cut at 10 s, Bun's default), and a request waiting for room in the listener waits up to ADMISSION_WAIT
 * (10 s) before it is answered busy: with the default the two raced, and a waiting sensor could lose its connection
 * instead of getting its 503. 30 s leaves the wait and a slow upload their time.
 */
export const INGEST_IDLE_TIMEOUT_SECONDS = 30

/**
 * The ingest listener as a layer (its own Bun server, on INGEST_PORT). It needs SensorAuth, the Ingestor, OrgKeys
 * (line-id keys) and CowrieSessionsRepo from outside (main.ts and the demo compose them).
 */
export const IngestServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    draining((track) =>
      HttpServer.serve(ingestApp, (app) => track(ingestEdge(app))).pipe(
        Layer.provide(Layer.effectDiscard(Effect.zipRight(touchIngestMetrics, listening("ingest")))),
        // The listener's own bound on the bodies it works on at once.
        Layer.provide(IngestAdmission.Default),
        // Bun's own limit is set far above ours, so our check answers every oversized body with a problem.
        Layer.provide(
          BunHttpServer.layer({
            port: config.ingestPort,
            hostname: config.host,
            maxRequestBodySize: SERVER_MAX_BODY_BYTES,
            idleTimeout: INGEST_IDLE_TIMEOUT_SECONDS,
          }),
        ),
      ),
    ),
  ),
)
