import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Metric } from "effect"
import { type IngestOutcome, ingestEventsCounter, ingestRequestsCounter, ingestResultOf } from "./metrics.ts"
import { INGEST_ROUTE_TABLE, type IngestRouteEntry, isEventRoute, UNMATCHED } from "./routes.ts"

/**
 * One INFO line per ingest request (`ingest request`: route, status, the sensor's id once it authenticated, and the
 * events per outcome) and the per-route metrics. Never the token, the raw path or query, a header, nor anything of
 * the body: attacker text stays out of the log. The route is the one the router matched (`noteRoute`, set by the
 * router's wrapper around each route of the table); a handler notes what it learned (`noteSensor`, `noteOutcomes`)
 * on the request; the listener's pre-response handler (`logIngestRequest`) writes the line once the status is known,
 * so every response is counted, refusals and unknown paths included.
 */

interface Note {
  route?: IngestRouteEntry
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

/** The route of the table the request reached (its label is the log's and the metrics' route). */
export const noteRoute = (request: HttpServerRequest.HttpServerRequest, route: IngestRouteEntry): void => {
  noteOf(request).route = route
}

/** The route noted for a request, if it reached one. */
export const routeOf = (request: HttpServerRequest.HttpServerRequest): IngestRouteEntry | undefined =>
  notes.get(keyOf(request))?.route

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

/** A request URL's path as the router reads it: before the query and before a fragment. */
const pathOf = (url: string): string => {
  const end = url.search(/[?#]/)
  return end < 0 ? url : url.slice(0, end)
}

/**
 * Whether a request URL's path carries path parameters (`/ingest/v1/events;x`, `/services;x/collector`). The router
 * would drop what follows the first `;` and serve the route; the listener refuses them instead (server.ts), so a
 * request is never stored under a path its sender did not write. An escaped `%3B` is not one: the
 * router does not unescape it, and such a path is an unknown one (404).
 */
export const hasPathParameters = (url: string): boolean => pathOf(url).includes(";")

/**
 * The route of the table a request URL with path parameters names, or undefined: such a request is refused before
 * routing (server.ts), so the router cannot say it. The router serves a path after decoding its escapes, collapsing
 * repeated slashes and ignoring a trailing slash and the case of fixed parts; this follows the same canonical form.
 * Path parameters are left out of each segment, so the refusal is counted on the route it was sent to.
 */
export const ingestRouteOfPathParameters = (url: string): IngestRouteEntry | undefined => {
  let path: string
  try {
    path = decodeURI(pathOf(url).replace(/;[^/]*/g, ""))
      .replace(/\/{2,}/g, "/")
      .toLowerCase()
  } catch {
    return undefined
  }
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
  return INGEST_ROUTE_TABLE.find((route) => route.path === path)
}

/** The access line and the metrics of one answered request. */
export const logIngestRequest = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse,
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const note = notes.get(keyOf(request)) ?? {}
    notes.delete(keyOf(request))
    const route = note.route?.label ?? UNMATCHED
    const outcomes = note.outcomes ?? {}
    const annotations: Record<string, unknown> = { listener: "ingest", route, status: response.status }
    if (note.sensorId !== undefined) annotations.sensor = note.sensorId
    if (note.outcomes !== undefined) annotations.events = outcomes
    const eventRoute = note.route !== undefined && isEventRoute(note.route) ? note.route.label : undefined
    const counted =
      eventRoute !== undefined
        ? Effect.forEach(
            Object.entries(outcomes) as Array<[IngestOutcome, number]>,
            ([outcome, n]) => (n > 0 ? Metric.incrementBy(ingestEventsCounter(eventRoute, outcome), n) : Effect.void),
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
