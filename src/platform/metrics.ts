import { Effect, Metric, MetricBoundaries } from "effect"

/**
 * The service's figures as Effect metrics (served by the operations listener at /metrics). Labels are bounded
 * sets: a route pattern (never a raw path), a status code, an outcome.
 */

export const httpRequests = Metric.counter("http_requests_total", {
  description: "Read API requests by route pattern and status (401, 403 and 429 included)",
  incremental: true,
})

export const httpRequestDuration = Metric.histogram(
  "http_request_duration_seconds",
  MetricBoundaries.fromIterable([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]),
  "Read API request latency by route pattern",
)

export const ingestedEvents = Metric.counter("ingest_events_total", {
  description: "Events received from sensors by route and outcome (accepted, duplicate, rejected, merged, ignored)",
  incremental: true,
})

export const ingestRequests = Metric.counter("ingest_requests_total", {
  description:
    "Requests to the ingest listener by route and result (ok, bad_request, unauthorized, too_large, unavailable, error)",
  incremental: true,
})

/** The ingest listener's route labels (a bounded set: a raw path never becomes a label). */
export const INGEST_ROUTES = ["events", "opencanary", "cowrie", "hec", "hec_health", "heartbeat", "unmatched"] as const
export type IngestRoute = (typeof INGEST_ROUTES)[number]
/** The routes that carry events (ingest_events_total). */
export const INGEST_EVENT_ROUTES = ["events", "opencanary", "cowrie", "hec"] as const
export type IngestEventRoute = (typeof INGEST_EVENT_ROUTES)[number]
/** Per-event outcomes (D22, D42). */
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

export const incidentTransitions = Metric.counter("incident_transitions_total", {
  description: "Incident state changes by kind (created, escalated, reopened, closed)",
  incremental: true,
})

export const webhookAttempts = Metric.counter("webhook_delivery_attempts_total", {
  description: "Webhook delivery attempts by outcome (succeeded, failed: will retry, dead)",
  incremental: true,
})

export const webhookQueueDepth = Metric.gauge("webhook_queue_depth", {
  description: "Webhook deliveries waiting to be sent (pending or awaiting a retry), read at scrape time",
})

export const webhookOldestDueAge = Metric.gauge("webhook_oldest_due_age_seconds", {
  description: "Age of the oldest due webhook delivery not yet sent (0 when none), read at scrape time",
})

/** D43: sensors of every organization by status, set by each silent-detection sweep (SENSOR_SWEEP_INTERVAL). */
export const sensorsByState = Metric.gauge("sensors", {
  description: "Sensors by state (alive, silent, unknown, revoked), as the last silent-detection sweep found them",
})
export const SENSOR_STATES = ["alive", "silent", "unknown", "revoked"] as const
export const sensorsGauge = (state: (typeof SENSOR_STATES)[number]) => Metric.tagged(sensorsByState, "state", state)
