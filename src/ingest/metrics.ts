import { Effect, Metric } from "effect"
import { INGEST_EVENT_ROUTES, INGEST_ROUTES, type IngestEventRoute, type IngestRoute } from "./routes.ts"

/**
 * The ingest listener's figures (served with every other metric by the operations listener at /metrics). Its route
 * labels are this face's own, from the route table (routes.ts). Labels are bounded sets: a raw path never becomes a
 * label.
 */

export const ingestedEvents = Metric.counter("ingest_events_total", {
  description: "Events received from sensors by route and outcome (accepted, duplicate, rejected, merged, ignored)",
  incremental: true,
})

export const ingestRequests = Metric.counter("ingest_requests_total", {
  description:
    "Requests to the ingest listener by route and result (ok, bad_request, unauthorized, too_large, unavailable, error)",
  incremental: true,
})

/** Per-event outcomes. */
export const INGEST_OUTCOMES = ["accepted", "duplicate", "rejected", "merged", "ignored"] as const
export type IngestOutcome = (typeof INGEST_OUTCOMES)[number]
/** Per-request results, from the status answered. */
export const INGEST_RESULTS = ["ok", "bad_request", "unauthorized", "too_large", "unavailable", "error"] as const
export type IngestResult = (typeof INGEST_RESULTS)[number]

export const ingestResultOf = (status: number): IngestResult =>
  status < 400
    ? "ok"
    : status === 401 || status === 403
      ? "unauthorized"
      : status === 413
        ? "too_large"
        : status === 503
          ? "unavailable"
          : status < 500
            ? "bad_request"
            : "error"

export const ingestEventsCounter = (route: IngestEventRoute, outcome: IngestOutcome) =>
  Metric.tagged(Metric.tagged(ingestedEvents, "route", route), "outcome", outcome)

export const ingestRequestsCounter = (route: IngestRoute, result: IngestResult) =>
  Metric.tagged(Metric.tagged(ingestRequests, "route", route), "result", result)

/**
 * Counters appear once touched: every ingest series is touched at start-up (by 0), so a dashboard sees 0 rather than
 * no series before the first request.
 */
export const touchIngestMetrics = Effect.forEach(
  [
    ...INGEST_EVENT_ROUTES.flatMap((route) => INGEST_OUTCOMES.map((outcome) => ingestEventsCounter(route, outcome))),
    ...INGEST_ROUTES.flatMap((route) => INGEST_RESULTS.map((result) => ingestRequestsCounter(route, result))),
  ],
  (counter) => Metric.incrementBy(counter, 0),
  { discard: true },
)
