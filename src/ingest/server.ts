import { HttpApp, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Clock, Effect, Either, Layer, Metric } from "effect"
import { finalizeResponse, problem, problemResponse } from "../api/edge.ts"
import { databaseProblem } from "../api/problems.ts"
import { SensorAuth } from "../auth/SensorAuth.ts"
import { AppConfig } from "../config.ts"
import { mapCowrie } from "../ingest/formats/cowrie.ts"
import type { MapResult, NativeEventInput } from "../ingest/formats/native.ts"
import { mapOpenCanary } from "../ingest/formats/opencanary.ts"
import { Lifecycle } from "../ops/Lifecycle.ts"
import { ingestedEvents } from "../ops/metrics.ts"
import { MAX_BODY_BYTES, MAX_EVENTS, parseBody } from "./body.ts"
import { type EventOutcome, Ingestor } from "./Ingestor.ts"
import { type ValidEvent, validateEvent } from "./validate.ts"

/**
 * D22: the ingestion listener on INGEST_PORT (never the API's port). One route per format; each answers with one
 * outcome per event (accepted with its ids, duplicate, or rejected with the reason), so one bad event never
 * rejects the batch.
 */
type Mapper = (value: unknown) => MapResult
// Native events need no mapping: validateEvent checks them as they are.
const native: Mapper = (value) => ({ _tag: "Mapped", event: value as NativeEventInput })
const ROUTE_PATHS = ["/ingest/v1/events", "/ingest/v1/opencanary", "/ingest/v1/cowrie"]

const tooLarge = (detail: string) => problem(413, "Content Too Large", "payload_too_large", detail)

const ingestRoute = (format: string, mapper: Mapper) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const auth = yield* SensorAuth
    const ingestor = yield* Ingestor
    const sensor = yield* auth.authenticate(request.headers.authorization)
    const declared = Number(request.headers["content-length"] ?? "0")
    if (declared > MAX_BODY_BYTES) return tooLarge(`A request body may hold at most ${MAX_BODY_BYTES} bytes.`)
    const bytes = yield* request.arrayBuffer.pipe(Effect.orElseSucceed(() => new ArrayBuffer(MAX_BODY_BYTES + 1)))
    if (bytes.byteLength > MAX_BODY_BYTES) return tooLarge(`A request body may hold at most ${MAX_BODY_BYTES} bytes.`)
    const parsed = parseBody(new TextDecoder("utf-8", { fatal: false }).decode(bytes))
    if (parsed._tag === "Empty") {
      return problem(
        400,
        "Bad Request",
        "invalid_request",
        "The body is empty: send one event, a JSON array, or NDJSON.",
      )
    }
    if (parsed._tag === "TooMany") return tooLarge(`A request may hold at most ${MAX_EVENTS} events.`)
    const now = yield* Clock.currentTimeMillis
    const outcomes: Array<EventOutcome> = []
    const valid: Array<{ index: number; event: ValidEvent }> = []
    for (const [index, item] of parsed.items.entries()) {
      if ("error" in item) {
        outcomes.push({ index, status: "rejected", reason: item.error })
        continue
      }
      const mapped = mapper(item.value)
      if (mapped._tag === "Rejected") {
        outcomes.push({ index, status: "rejected", reason: mapped.reason })
        continue
      }
      const checked = validateEvent(mapped.event, now)
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
  HttpRouter.post("/ingest/v1/opencanary", ingestRoute("opencanary", mapOpenCanary)),
  HttpRouter.post("/ingest/v1/cowrie", ingestRoute("cowrie", mapCowrie)),
)

// A known path with another method than POST is a 405; anything else a 404 naming the routes.
const ingestUnrouted = (request: HttpServerRequest.HttpServerRequest) =>
  ROUTE_PATHS.includes(request.url.split("?")[0] ?? "")
    ? problem(405, "Method Not Allowed", "method_not_allowed", "Ingestion takes POST.", { allow: "POST" })
    : problem(404, "Not Found", "not_found", `No such endpoint. Sensors post to ${ROUTE_PATHS.join(", ")}.`)

const ingestEdge = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  HttpApp.withPreResponseHandler(app, (req, res) => Effect.succeed(finalizeResponse(req, res, ingestUnrouted))).pipe(
    Effect.tapDefect((defect) => Effect.logError("unhandled defect", defect)),
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

/** The ingest listener as a layer (its own Bun server, on INGEST_PORT). */
export const IngestServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    HttpServer.serve(router, ingestEdge).pipe(
      Layer.provide(Layer.effectDiscard(logAddress)),
      // Bun refuses anything over twice our limit outright; our own check answers 413 with a problem body.
      Layer.provide(
        BunHttpServer.layer({ port: config.ingestPort, hostname: config.host, maxRequestBodySize: 2 * MAX_BODY_BYTES }),
      ),
    ),
  ),
)
