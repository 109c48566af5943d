import { HttpApp, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Clock, Duration, Effect, Either, Layer, Metric } from "effect"
import { finalizeResponse, logDefects, problem, problemResponse } from "../api/edge.ts"
import { databaseProblem } from "../api/problems.ts"
import { SensorAuth } from "../auth/SensorAuth.ts"
import { AppConfig } from "../config.ts"
import { cowrieSessionsToLookUp, mapCowrieBatch } from "../ingest/formats/cowrie.ts"
import type { MapResult, NativeEventInput } from "../ingest/formats/native.ts"
import { mapOpenCanary } from "../ingest/formats/opencanary.ts"
import { Lifecycle } from "../ops/Lifecycle.ts"
import { ingestedEvents } from "../ops/metrics.ts"
import { CowrieSessionsRepo } from "../repos/CowrieSessionsRepo.ts"
import type { DatabaseError } from "../repos/errors.ts"
import { decodeUtf8, MAX_BODY_BYTES, MAX_EVENTS, parseBody, readBodyCapped, SERVER_MAX_BODY_BYTES } from "./body.ts"
import { HEARTBEAT_PATH, heartbeatRoute } from "./heartbeat.ts"
import { type EventOutcome, Ingestor, type SensorIdentity } from "./Ingestor.ts"
import { OrgKeys } from "./OrgKeys.ts"
import { type ValidEvent, validateEvent } from "./validate.ts"

/**
 * D22: the ingestion listener on INGEST_PORT (never the API's port). One route per format; each answers with one
 * outcome per event (accepted with its ids, duplicate, or rejected with the reason), so one bad event never
 * rejects the batch.
 */

/** Maps one request's items (the values of its JSON items, in order) to native events: one result per value. */
type BatchMapper<R> = (
  sensor: SensorIdentity,
  values: ReadonlyArray<unknown>,
) => Effect.Effect<ReadonlyArray<MapResult>, DatabaseError, R>

// Native events need no mapping: validateEvent checks them as they are.
const native: BatchMapper<never> = (_sensor, values) =>
  Effect.succeed(values.map((value) => ({ _tag: "Mapped", event: value as NativeEventInput }) as const))

const openCanary: BatchMapper<OrgKeys> = (sensor, values) =>
  Effect.map(
    Effect.flatMap(OrgKeys, (keys) => keys.lineIdKey(sensor.orgId)),
    (key) => values.map((value) => mapOpenCanary(value, key)),
  )

/**
 * Cowrie: a line takes its session's protocol and ports from the session's connect line, in this request or
 * remembered from an earlier one (CowrieSessionsRepo, looked up only for sessions without a connect here); this
 * request's connects are remembered for the next ones. A session known from neither keeps the defaults (ssh, source
 * port 0, the type's default port).
 */
const cowrie: BatchMapper<OrgKeys | CowrieSessionsRepo> = (sensor, values) =>
  Effect.gen(function* () {
    const key = yield* Effect.flatMap(OrgKeys, (keys) => keys.lineIdKey(sensor.orgId))
    const sessions = yield* CowrieSessionsRepo
    const remembered = yield* sessions.find(sensor.orgId, sensor.sensorId, cowrieSessionsToLookUp(values))
    const batch = mapCowrieBatch(values, key, remembered)
    const now = new Date(yield* Clock.currentTimeMillis)
    yield* sessions.remember(sensor.orgId, sensor.sensorId, batch.connects, now)
    return batch.results
  })

const ROUTE_PATHS = ["/ingest/v1/events", "/ingest/v1/opencanary", "/ingest/v1/cowrie", HEARTBEAT_PATH]

const tooLarge = (detail: string) => problem(413, "Content Too Large", "payload_too_large", detail)

const ingestRoute = <R>(format: string, mapBatch: BatchMapper<R>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const auth = yield* SensorAuth
    const ingestor = yield* Ingestor
    const sensor = yield* auth.authenticate(request.headers.authorization)
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > MAX_BODY_BYTES) return tooLarge(`A request body may hold at most ${MAX_BODY_BYTES} bytes.`)
    // Read as it streams, up to the limit: a chunked body of any size gets the 413 problem too (D22).
    const hasBody = (request.source as { body?: unknown }).body != null
    const bytes = hasBody
      ? yield* readBodyCapped(request.stream, MAX_BODY_BYTES).pipe(Effect.orElseSucceed(() => undefined))
      : new Uint8Array(0)
    if (bytes === undefined) return tooLarge(`A request body may hold at most ${MAX_BODY_BYTES} bytes.`)
    // D22: never replace a byte (two different sensorEventIds could become one): refuse the whole body.
    const decoded = decodeUtf8(bytes)
    if ("invalidAt" in decoded) {
      return problem(
        400,
        "Bad Request",
        "invalid_request",
        `The body is not valid UTF-8: the sequence starting at byte ${decoded.invalidAt} (counting from 0) is not well-formed UTF-8. Nothing was stored.`,
      )
    }
    const parsed = parseBody(decoded.text)
    if (parsed._tag === "Empty") {
      return problem(
        400,
        "Bad Request",
        "invalid_request",
        "The body is empty: send one event, a JSON array, or NDJSON.",
      )
    }
    if (parsed._tag === "TooMany") return tooLarge(`A request may hold at most ${MAX_EVENTS} events.`)
    const mappedAll = yield* mapBatch(
      sensor,
      parsed.items.flatMap((item) => ("value" in item ? [item.value] : [])),
    )
    const now = yield* Clock.currentTimeMillis
    const maxClockSkewMs = Duration.toMillis((yield* AppConfig).maxClockSkew)
    const outcomes: Array<EventOutcome> = []
    const valid: Array<{ index: number; event: ValidEvent }> = []
    let next = 0
    for (const [index, item] of parsed.items.entries()) {
      if ("error" in item) {
        outcomes.push({ index, status: "rejected", reason: item.error })
        continue
      }
      const mapped = mappedAll[next++] ?? { _tag: "Rejected", reason: "the event could not be mapped" }
      if (mapped._tag === "Rejected") {
        outcomes.push({ index, status: "rejected", reason: mapped.reason })
        continue
      }
      const checked = validateEvent(mapped.event, now, maxClockSkewMs)
      if (Either.isLeft(checked)) outcomes.push({ index, status: "rejected", reason: checked.left })
      else valid.push({ index, event: checked.right })
    }
    const stored = yield* ingestor.ingest(sensor, valid)
    const results = [...outcomes, ...stored].sort((a, b) => a.index - b.index)
    const count = (status: EventOutcome["status"]) => results.filter((r) => r.status === status).length
    for (const outcome of ["accepted", "duplicate", "rejected"] as const) {
      yield* Metric.incrementBy(Metric.tagged(ingestedEvents, "outcome", outcome), count(outcome))
    }
    yield* Effect.annotateCurrentSpan({ format, sensor: sensor.sensorId })
    return HttpServerResponse.unsafeJson({
      accepted: count("accepted"),
      duplicates: count("duplicate"),
      rejected: count("rejected"),
      results,
    })
  }).pipe(
    Effect.catchTag("DatabaseError", databaseProblem),
    // Every failure left is a problem document (401, 500, 503): answer with it.
    Effect.catchAll((e) => Effect.succeed(problemResponse(e))),
  )

const router = HttpRouter.empty.pipe(
  HttpRouter.post("/ingest/v1/events", ingestRoute("events", native)),
  HttpRouter.post("/ingest/v1/opencanary", ingestRoute("opencanary", openCanary)),
  HttpRouter.post("/ingest/v1/cowrie", ingestRoute("cowrie", cowrie)),
  HttpRouter.post(HEARTBEAT_PATH, heartbeatRoute),
)

// A known path with another method than POST is a 405; anything else a 404 naming the routes.
const ingestUnrouted = (request: HttpServerRequest.HttpServerRequest) =>
  ROUTE_PATHS.includes(request.url.split("?")[0] ?? "")
    ? problem(405, "Method Not Allowed", "method_not_allowed", "Ingestion takes POST.", { allow: "POST" })
    : problem(404, "Not Found", "not_found", `No such endpoint. Sensors post to ${ROUTE_PATHS.join(", ")}.`)

const ingestEdge = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  HttpApp.withPreResponseHandler(app, (req, res) => Effect.succeed(finalizeResponse(req, res, ingestUnrouted))).pipe(
    logDefects,
  )

const logAddress = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  if (server.address._tag === "TcpAddress") {
    yield* Effect.logInfo("ingest listening").pipe(
      Effect.annotateLogs({ listener: "ingest", port: server.address.port }),
    )
    yield* Effect.flatMap(Lifecycle, (lifecycle) => lifecycle.listening("ingest"))
  }
})

/**
 * The ingest listener as a layer (its own Bun server, on INGEST_PORT). It needs SensorAuth, the Ingestor, OrgKeys
 * (line-id keys) and CowrieSessionsRepo from outside (main.ts and the demo compose them).
 */
export const IngestServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    HttpServer.serve(router, ingestEdge).pipe(
      Layer.provide(Layer.effectDiscard(logAddress)),
      // Bun's own limit is set far above ours, so our check answers every oversized body with a problem (D22).
      Layer.provide(
        BunHttpServer.layer({
          port: config.ingestPort,
          hostname: config.host,
          maxRequestBodySize: SERVER_MAX_BODY_BYTES,
        }),
      ),
    ),
  ),
)
