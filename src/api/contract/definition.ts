import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi,
} from "@effect/platform"
import { Context, Schema } from "effect"
import { AUDIT_ACTION_PATTERN, AUDIT_BOUNDS, AuditChangePage, AuditPage } from "../../domain/audit.ts"
import { BLOCKLIST_DAYS_DEFAULT, BLOCKLIST_DAYS_MAX, BLOCKLIST_MAX_LINES } from "../../domain/blocklist.ts"
import { EVENT_TYPE_NAMES } from "../../domain/eventTypeNames.ts"
import { type ApiKeyId, idPattern, type OrgId } from "../../domain/ids.ts"
import {
  EventChangePage,
  EventPage,
  Event as EventSchema,
  INCIDENT_STATUS_FILTERS,
  Incident,
  IncidentChangePage,
  IncidentPage,
  SourceProfile,
} from "../../domain/models.ts"
import {
  Forbidden,
  Gone,
  InternalError,
  InvalidRequest,
  NotFound,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
} from "../../domain/problem.ts"
import type { Scope } from "../../domain/scopes.ts"
import { SEVERITIES } from "../../domain/severity.ts"
import { describeBlocklist, describeServer, requiresScope } from "./openapi.ts"

/** The authenticated caller, provided to handlers by the auth middleware. */
export class Caller extends Context.Tag("Caller")<
  Caller,
  { readonly orgId: OrgId; readonly keyId: ApiKeyId; readonly scopes: ReadonlyArray<Scope> }
>() {}

const authFailures = Schema.Union(Unauthorized, Forbidden, RateLimited, InternalError, ServiceUnavailable)

/** The bearer scheme; the annotations only describe it in OpenAPI. */
const bearer = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "An API key, `Authorization: Bearer dsk_<key id>_<secret>`. Each endpoint names the scope it needs.",
  ),
  HttpApiSecurity.annotate(OpenApi.Format, "dsk_<key id>_<secret>"),
)

/** Bearer-key authentication for the incident endpoints (scope incidents:read). */
export class IncidentsAuth extends HttpApiMiddleware.Tag<IncidentsAuth>()("IncidentsAuth", {
  failure: authFailures,
  provides: Caller,
  security: { bearer },
}) {}

/** Bearer-key authentication for the event endpoints (scope events:read). */
export class EventsAuth extends HttpApiMiddleware.Tag<EventsAuth>()("EventsAuth", {
  failure: authFailures,
  provides: Caller,
  security: { bearer },
}) {}

/** Bearer-key authentication for the threat intelligence endpoints (scope intel:read). */
export class IntelAuth extends HttpApiMiddleware.Tag<IntelAuth>()("IntelAuth", {
  failure: authFailures,
  provides: Caller,
  security: { bearer },
}) {}

/** Bearer-key authentication for the audit trail (scope audit:read). */
export class AuditAuth extends HttpApiMiddleware.Tag<AuditAuth>()("AuditAuth", {
  failure: authFailures,
  provides: Caller,
  security: { bearer },
}) {}

/**
 * Query parameters are taken as raw text (a repeated parameter as a list) and validated by the handlers
 * (api/params.ts), so every parameter failure answers with our problem body naming the parameter and its allowed
 * values. The `jsonSchema` annotations give OpenAPI the real types and bounds.
 */
const param = (jsonSchema: object, description: string) =>
  Schema.optional(
    Schema.Union(Schema.String, Schema.Array(Schema.String)).annotations({
      jsonSchema: { ...jsonSchema, description },
    }),
  )

const limitParam = param({ type: "integer", minimum: 1, maximum: 100, default: 50 }, "Page size, 1 to 100 (default 50)")
const cursorParam = param(
  { type: "string", minLength: 1 },
  "The nextCursor of a previous response with the same endpoint and filters; omit for the first page",
)
const timestamp = { type: "string", format: "date-time" }

export const IncidentListParams = Schema.Struct({
  status: param({ type: "string", enum: INCIDENT_STATUS_FILTERS, default: "all" }, "Filter by status"),
  limit: limitParam,
  cursor: cursorParam,
})

export const EventListParams = Schema.Struct({
  sensorId: param({ type: "string", pattern: idPattern("sensor") }, "Only events of this sensor (sen_<ULID>)"),
  severity: param({ type: "string", enum: [...SEVERITIES] }, "Only events of this severity"),
  type: param({ type: "string", enum: [...EVENT_TYPE_NAMES] }, "Only events of this type"),
  sourceIp: param(
    { type: "string", maxLength: 45 },
    "Only events from this source address: an IPv4 address in dotted decimal or an IPv6 address (no zone); an IPv4-mapped IPv6 address matches its IPv4 address",
  ),
  incidentId: param(
    { type: "string", pattern: idPattern("incident") },
    "Only member events of this incident (inc_<ULID>): all of them, past the first 200 that GET /v1/incidents/{id} returns",
  ),
  from: param(timestamp, "Events at or after this RFC 3339 time with a zone (Z or an offset); inclusive"),
  to: param(timestamp, "Events before this RFC 3339 time with a zone (Z or an offset); exclusive"),
  limit: limitParam,
  cursor: cursorParam,
})

/** The change feeds' query. */
export const FeedParams = Schema.Struct({
  after: param(
    { type: "string", minLength: 1 },
    "The nextToken of a previous response of this endpoint; omit on a first call",
  ),
  from: param(
    timestamp,
    "First call only (not with after): start with the changes at or after this RFC 3339 time with a zone; omitted: from the beginning",
  ),
  limit: limitParam,
})

const FEED_DESCRIPTION = (what: string) =>
  `${what} Pass the response's nextToken as after on the next call, always: it is never null, and a follower that does so receives every committed change at least once and never skips one, even when transactions of several processes commit out of order. A committed change appears within about a second. When hasMore is false, wait a moment (for example 1 to 5 s) before asking again. The token is bound to this endpoint and organization; a malformed, tampered or foreign one is answered 400.`

/**
 * The path id is any text to the HttpApi (so its decoding never fails); the handler answers a malformed id 404 like
 * an unknown one. The `jsonSchema` annotation only documents the form.
 */
const idPath = (kind: "incident" | "event", description: string) =>
  Schema.Struct({
    id: Schema.String.annotations({
      description,
      jsonSchema: { type: "string", pattern: idPattern(kind), description },
    }),
  })

export class IncidentsGroup extends HttpApiGroup.make("incidents")
  .add(
    HttpApiEndpoint.get("listIncidents", "/v1/incidents")
      .setUrlParams(IncidentListParams)
      .addSuccess(IncidentPage)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "List incidents, most recent activity first")
      .annotate(
        OpenApi.Description,
        "To follow new and changed incidents, poll GET /v1/incidents/changes with its token: it never skips one. Reading this list's first page and stopping at the first incident already seen finds new incidents, but misses one whose latest activity is older than that of a seen incident that just changed.",
      ),
  )
  .add(
    HttpApiEndpoint.get("incidentChanges", "/v1/incidents/changes")
      .setUrlParams(FeedParams)
      .addSuccess(IncidentChangePage)
      .addError(InvalidRequest)
      .addError(Gone)
      .annotate(OpenApi.Summary, "Incidents in the order they changed: the feed for pollers")
      .annotate(
        OpenApi.Description,
        FEED_DESCRIPTION(
          "Every change of an incident (created, new event, escalated, closed, re-opened) in the order it happened, with the incident as of that change. Use this instead of the list's first-page polling rule, which misses an incident whose activity is older than that of a seen incident that just changed.",
        ),
      ),
  )
  .add(
    HttpApiEndpoint.get("getIncident", "/v1/incidents/:id")
      .setPath(idPath("incident", "Incident identifier, inc_<ULID>; a malformed id is answered 404"))
      .addSuccess(Incident)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One incident with its first 200 member events, oldest first"),
  )
  .add(
    HttpApiEndpoint.get("getSource", "/v1/sources/:ip")
      .setPath(
        Schema.Struct({
          ip: Schema.String.annotations({
            description:
              "An IPv4 address (dotted decimal) or an IPv6 address; an IPv4-mapped IPv6 address is its IPv4 address",
            jsonSchema: {
              type: "string",
              maxLength: 64,
              description: "An IPv4 address (dotted decimal) or an IPv6 address",
            },
          }),
        }),
      )
      .addSuccess(SourceProfile)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "What your organization knows of one source address, across all of its sensors")
      .annotate(
        OpenApi.Description,
        "Inside or outside your networks, reverse DNS, AS and country when known, first and last activity, its incidents on every sensor (the same source on several decoys is one story: a sweep or lateral movement) and the ignore rule that holds it. 404 when your organization has seen nothing from it.",
      ),
  )
  .annotateEndpoints(OpenApi.Transform, requiresScope("incidents:read"))
  .middleware(IncidentsAuth)
  .annotate(OpenApi.Title, "Incidents") {}

export class EventsGroup extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("listEvents", "/v1/events")
      .setUrlParams(EventListParams)
      .addSuccess(EventPage)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "List decoy events, newest first"),
  )
  .add(
    HttpApiEndpoint.get("eventChanges", "/v1/events/changes")
      .setUrlParams(FeedParams)
      .addSuccess(EventChangePage)
      .addError(InvalidRequest)
      .addError(Gone)
      .annotate(OpenApi.Summary, "Events in the order they were stored: the feed for pollers")
      .annotate(
        OpenApi.Description,
        FEED_DESCRIPTION(
          "Every stored event, in the order it was stored (an event that a sensor reported late comes when it arrives, not at its time). from is the time of storing.",
        ),
      ),
  )
  .add(
    HttpApiEndpoint.get("getEvent", "/v1/events/:id")
      .setPath(idPath("event", "Event identifier, evt_<ULID>; a malformed id is answered 404"))
      .addSuccess(EventSchema)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One event"),
  )
  .annotateEndpoints(OpenApi.Transform, requiresScope("events:read"))
  .middleware(EventsAuth)
  .annotate(OpenApi.Title, "Events") {}

export const BlocklistParams = Schema.Struct({
  days: param(
    { type: "integer", minimum: 1, maximum: BLOCKLIST_DAYS_MAX, default: BLOCKLIST_DAYS_DEFAULT },
    `Sources seen in this many last days, 1 to ${BLOCKLIST_DAYS_MAX} (default ${BLOCKLIST_DAYS_DEFAULT})`,
  ),
})

export class IntelGroup extends HttpApiGroup.make("intel")
  .add(
    HttpApiEndpoint.get("blocklist", "/v1/blocklist.txt")
      .setUrlParams(BlocklistParams)
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain" }))
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "Addresses to block: a plain-text list for firewalls")
      .annotate(
        OpenApi.Description,
        `The external source addresses your decoys saw in the last days (IPv4 and IPv6), one a line, sorted by address, as firewalls' external lists read them (Palo Alto External Dynamic Lists, FortiGate external threat feeds, pfSense URL tables). Not listed: sources inside your organization's networks, sources whose every event an ignore rule ignored, and sources whose every incident in the window was closed as false_positive or authorized_test. At most ${BLOCKLIST_MAX_LINES} lines: past that, the most recently seen sources are kept and the header Blocklist-Truncated: true is sent. The ETag is a digest of the body; send it back in If-None-Match and an unchanged list is answered 304 with no body.`,
      )
      // One transform: a group's annotateEndpoints would replace an endpoint's own.
      .annotate(OpenApi.Transform, (operation) => describeBlocklist(requiresScope("intel:read")(operation))),
  )
  .middleware(IntelAuth)
  .annotate(OpenApi.Title, "Threat intelligence") {}

export const AuditListParams = Schema.Struct({
  actor: param(
    { type: "string", minLength: 1, maxLength: AUDIT_BOUNDS.email },
    "Only entries of this actor: cli (the operator's admin command line), a console user's id (usr_<ULID>) or a console user's email address (any case)",
  ),
  action: param(
    { type: "string", pattern: AUDIT_ACTION_PATTERN, maxLength: AUDIT_BOUNDS.action },
    "Only entries of this action, exactly (for example key.create, webhook.rotate, signin.failed)",
  ),
  from: param(timestamp, "Entries at or after this RFC 3339 time with a zone (Z or an offset); inclusive"),
  to: param(timestamp, "Entries before this RFC 3339 time with a zone (Z or an offset); exclusive"),
  limit: limitParam,
  cursor: cursorParam,
})

export class AuditGroup extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("listAudit", "/v1/audit")
      .setUrlParams(AuditListParams)
      .addSuccess(AuditPage)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "The audit trail, newest first")
      .annotate(
        OpenApi.Description,
        "Every change made in your organization's console or with the operator's admin command line (keys, alert channels, tests and redeliveries, closes, users, settings) and every console sign-in, successful or not, with who did it, when, from which address, to what, and its names and settings. Never a secret, a token or a password. To follow new entries, poll GET /v1/audit/changes with its token: it never skips one.",
      ),
  )
  .add(
    HttpApiEndpoint.get("auditChanges", "/v1/audit/changes")
      .setUrlParams(FeedParams)
      .addSuccess(AuditChangePage)
      .addError(InvalidRequest)
      .addError(Gone)
      .annotate(OpenApi.Summary, "Audit entries in the order they were written: the feed for pollers")
      .annotate(
        OpenApi.Description,
        FEED_DESCRIPTION(
          "Every audit entry of your organization, in the order it was written, for a SIEM or an archive. from is the time of the entry. Audit entries are not deleted by the retention windows today, so a token expires (410) only if they ever are.",
        ),
      ),
  )
  .annotateEndpoints(OpenApi.Transform, requiresScope("audit:read"))
  .middleware(AuditAuth)
  .annotate(OpenApi.Title, "Audit trail") {}

export class IncidentApi extends HttpApi.make("incident-api")
  .add(IncidentsGroup)
  .add(EventsGroup)
  .add(IntelGroup)
  .add(AuditGroup)
  .addError(InternalError)
  .addError(ServiceUnavailable)
  .annotate(OpenApi.Title, "Incident and Event Read API")
  // What the edge and the handlers do beyond the HttpApi (problem+json, headers, no decode errors): contract/openapi.ts.
  .annotate(OpenApi.Transform, describeServer)
  .annotate(OpenApi.Version, "1")
  .annotate(
    OpenApi.Description,
    "Read-only API of the deception platform's incidents and events. Every request needs `Authorization: Bearer <API_KEY>`. Errors are RFC 9457 problem documents. title, narrative, recommendedAction, summary and attackerInput are untrusted attacker-influenced text.",
  ) {}
