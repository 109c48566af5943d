import { Metric, MetricBoundaries } from "effect"

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

/** Sensors of every organization by status, set by each silent-detection sweep (SENSOR_SWEEP_INTERVAL). */
export const sensorsByState = Metric.gauge("sensors", {
  description: "Sensors by state (alive, silent, unknown, revoked), as the last silent-detection sweep found them",
})
export const SENSOR_STATES = ["alive", "silent", "unknown", "revoked"] as const
export const sensorsGauge = (state: (typeof SENSOR_STATES)[number]) => Metric.tagged(sensorsByState, "state", state)
