/**
 * The ingest listener's routes, in one table: the router (server.ts), the request log's route labels
 * (requestLog.ts), the metrics' route labels (metrics.ts) and the tests that go through every route all read it.
 * Adding a route is one row here, and its handler in server.ts's `HANDLERS` when it is a new kind.
 *
 * Labels are the log's and the metrics' `route`: a bounded set (a raw path never becomes one), read by dashboards,
 * so a label once published stays. Several paths may share a label (HEC's aliases).
 */

/** Which handler serves a route (server.ts maps each kind to its handler). */
export type IngestHandlerKind = "native" | "opencanary" | "cowrie" | "heartbeat" | "hecEvents" | "hecHealth"

export interface IngestRouteSpec {
  readonly path: `/${string}`
  readonly method: "POST" | "GET"
  /** The `route` of the request's log line and metrics. */
  readonly label: string
  /** Whether the route carries events: its events are counted by outcome (ingest_events_total). */
  readonly events: boolean
  /** A Splunk HEC route: it answers in HEC's shape (`{"text", "code"}`), never with problem documents. */
  readonly hec: boolean
  readonly handler: IngestHandlerKind
}

export const INGEST_ROUTE_TABLE = [
  { path: "/ingest/v1/events", method: "POST", label: "events", events: true, hec: false, handler: "native" },
  {
    path: "/ingest/v1/opencanary",
    method: "POST",
    label: "opencanary",
    events: true,
    hec: false,
    handler: "opencanary",
  },
  { path: "/ingest/v1/cowrie", method: "POST", label: "cowrie", events: true, hec: false, handler: "cowrie" },
  { path: "/services/collector/event", method: "POST", label: "hec", events: true, hec: true, handler: "hecEvents" },
  { path: "/services/collector", method: "POST", label: "hec", events: true, hec: true, handler: "hecEvents" },
  {
    path: "/services/collector/event/1.0",
    method: "POST",
    label: "hec",
    events: true,
    hec: true,
    handler: "hecEvents",
  },
  {
    path: "/services/collector/health",
    method: "GET",
    label: "hec_health",
    events: false,
    hec: true,
    handler: "hecHealth",
  },
  {
    path: "/services/collector/health/1.0",
    method: "GET",
    label: "hec_health",
    events: false,
    hec: true,
    handler: "hecHealth",
  },
  {
    path: "/ingest/v1/heartbeat",
    method: "POST",
    label: "heartbeat",
    events: false,
    hec: false,
    handler: "heartbeat",
  },
] as const satisfies ReadonlyArray<IngestRouteSpec>

export type IngestRouteEntry = (typeof INGEST_ROUTE_TABLE)[number]

/** The label of a request that reached no route of the table. */
export const UNMATCHED = "unmatched"

/** A request's route label: its route's, or `unmatched`. */
export type IngestRoute = IngestRouteEntry["label"] | typeof UNMATCHED
/** The labels of the routes that carry events. */
export type IngestEventRoute = Extract<IngestRouteEntry, { readonly events: true }>["label"]

const labels = <L extends string>(entries: ReadonlyArray<{ readonly label: L }>): ReadonlyArray<L> => [
  ...new Set(entries.map((entry) => entry.label)),
]

/** Every route label, in the table's order, `unmatched` last. */
export const INGEST_ROUTES: ReadonlyArray<IngestRoute> = [...labels(INGEST_ROUTE_TABLE), UNMATCHED]

export const isEventRoute = (entry: IngestRouteEntry): entry is Extract<IngestRouteEntry, { events: true }> =>
  entry.events

/** The labels of the routes that carry events (ingest_events_total). */
export const INGEST_EVENT_ROUTES: ReadonlyArray<IngestEventRoute> = labels(INGEST_ROUTE_TABLE.filter(isEventRoute))
