import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Metric } from "effect"
import {
  type IngestEventRoute,
  type IngestOutcome,
  type IngestRoute,
  ingestEventsCounter,
  ingestRequestsCounter,
  ingestResultOf,
} from "./metrics.ts"

/**
 * One INFO line per ingest request (`ingest request`: route, status, the sensor's id once it authenticated, and the
 * events per outcome) and the per-route metrics. Never the token, the raw path or query, a header, nor anything of
 * the body: attacker text stays out of the log. A handler notes what it learned (`noteSensor`, `noteOutcomes`) on the
 * request; the listener's pre-response handler (`logIngestRequest`) writes the line once the status is known, so
 * every response is counted, refusals and unknown paths included.
 */

interface Note {
  sensorId?: string
  outcomes?: Partial<Record<IngestOutcome, number>>
}

// Keyed by the request object of the server (Bun's Request), the same for the handler and the pre-response handler.
const notes = new WeakMap<object, Note>()
const keyOf = (request: HttpServerRequest.HttpServerRequest): object => request.source as object

const noteOf = (request: HttpServerRequest.HttpServerRequest): Note => {
  const key = keyOf(request)
  let note = notes.get(key)
  if (note === undefined) {
    note = {}
    notes.set(key, note)
  }
  return note
}

/** The request authenticated as this sensor (its id: ours, never the token). */
export const noteSensor = (request: HttpServerRequest.HttpServerRequest, sensorId: string): void => {
  noteOf(request).sensorId = sensorId
}

/** The request's events by outcome. */
export const noteOutcomes = (
  request: HttpServerRequest.HttpServerRequest,
  outcomes: Partial<Record<IngestOutcome, number>>,
): void => {
  noteOf(request).outcomes = outcomes
}

const ROUTES: ReadonlyArray<readonly [string, IngestRoute]> = [
  ["/ingest/v1/events", "events"],
  ["/ingest/v1/opencanary", "opencanary"],
  ["/ingest/v1/cowrie", "cowrie"],
  ["/ingest/v1/heartbeat", "heartbeat"],
  ["/services/collector", "hec"],
  ["/services/collector/event", "hec"],
  ["/services/collector/event/1.0", "hec"],
  ["/services/collector/health", "hec_health"],
  ["/services/collector/health/1.0", "hec_health"],
]

/** A request URL's path as the router reads it: before the query and before a fragment. */
const pathOf = (url: string): string => {
  const end = url.search(/[?#]/)
  return end < 0 ? url : url.slice(0, end)
}

/**
 * Whether a request URL's path carries path parameters (`/ingest/v1/events;x`, `/services;x/collector`). The router
 * would drop what follows the first `;` and serve the route; the listener refuses them instead (server.ts), so a
 * request is never stored under a path the log and the metrics do not name. An escaped `%3B` is not one: the
 * router does not unescape it, and such a path is an unknown one (404).
 */
export const hasPathParameters = (url: string): boolean => pathOf(url).includes(";")

/**
 * The route path a request URL names (`/ingest/v1/events`), or undefined. The router serves a path after decoding
 * its escapes, collapsing repeated slashes and ignoring a trailing slash and the case of fixed parts; this follows
 * the same canonical form. Path parameters are left out of each segment, so a request refused for carrying them is
 * counted on the route it was sent to.
 */
export const ingestPathOf = (url: string): string | undefined => {
  let path: string
  try {
    path = decodeURI(pathOf(url).replace(/;[^/]*/g, ""))
      .replace(/\/{2,}/g, "/")
      .toLowerCase()
  } catch {
    return undefined
  }
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
  return ROUTES.find(([p]) => p === path)?.[0]
}

/** The route label of a request URL (ingestPathOf's route), `unmatched` for any other path. */
export const ingestRouteOf = (url: string): IngestRoute => {
  const path = ingestPathOf(url)
  return ROUTES.find(([p]) => p === path)?.[1] ?? "unmatched"
}

const isEventRoute = (route: IngestRoute): route is IngestEventRoute =>
  route === "events" || route === "opencanary" || route === "cowrie" || route === "hec"

/** The access line and the metrics of one answered request. */
export const logIngestRequest = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse,
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const route = ingestRouteOf(request.url)
    const note = notes.get(keyOf(request)) ?? {}
    notes.delete(keyOf(request))
    const outcomes = note.outcomes ?? {}
    const annotations: Record<string, unknown> = { listener: "ingest", route, status: response.status }
    if (note.sensorId !== undefined) annotations.sensor = note.sensorId
    if (note.outcomes !== undefined) annotations.events = outcomes
    const counted = isEventRoute(route)
      ? Effect.forEach(
          Object.entries(outcomes) as Array<[IngestOutcome, number]>,
          ([outcome, n]) => (n > 0 ? Metric.incrementBy(ingestEventsCounter(route, outcome), n) : Effect.void),
          { discard: true },
        )
      : Effect.void
    return Effect.all(
      [
        Metric.increment(ingestRequestsCounter(route, ingestResultOf(response.status))),
        counted,
        Effect.logInfo("ingest request").pipe(Effect.annotateLogs(annotations)),
      ],
      { discard: true },
    )
  })
