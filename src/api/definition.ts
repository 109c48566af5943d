import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { EventPage, Event as EventSchema, Incident, IncidentPage } from "../domain/models.ts"
import {
  Forbidden,
  InternalError,
  InvalidRequest,
  NotFound,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
} from "../domain/problem.ts"
import { SEVERITIES } from "../domain/severity.ts"
import type { Scope } from "../repos/ApiKeysRepo.ts"

/** The authenticated caller, provided to handlers by the auth middleware. */
export class Caller extends Context.Tag("Caller")<
  Caller,
  { readonly orgId: string; readonly keyId: string; readonly scopes: ReadonlyArray<Scope> }
>() {}

const authFailures = Schema.Union(Unauthorized, Forbidden, RateLimited, InternalError, ServiceUnavailable)

/** Bearer-key authentication for the incident endpoints (scope incidents:read). */
export class IncidentsAuth extends HttpApiMiddleware.Tag<IncidentsAuth>()("IncidentsAuth", {
  failure: authFailures,
  provides: Caller,
  security: { bearer: HttpApiSecurity.bearer },
}) {}

/** Bearer-key authentication for the event endpoints (scope events:read). */
export class EventsAuth extends HttpApiMiddleware.Tag<EventsAuth>()("EventsAuth", {
  failure: authFailures,
  provides: Caller,
  security: { bearer: HttpApiSecurity.bearer },
}) {}

/**
 * Query parameters are taken as raw text (a repeated parameter as a list) and validated by the handlers
 * (api/params.ts), so every D5 failure answers with our problem body naming the parameter and its allowed
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
  { type: "string" },
  "The nextCursor of a previous response with the same filters; omit for the first page",
)
const timestamp = { type: "string", format: "date-time" }

export const IncidentListParams = Schema.Struct({
  status: param({ type: "string", enum: ["open", "closed", "all"], default: "all" }, "Filter by status"),
  limit: limitParam,
  cursor: cursorParam,
})

export const EventListParams = Schema.Struct({
  sensorId: param({ type: "string" }, "Only events of this sensor"),
  severity: param({ type: "string", enum: [...SEVERITIES] }, "Only events of this severity"),
  type: param({ type: "string" }, "Only events of this type"),
  sourceIp: param({ type: "string" }, "Only events from this source address"),
  incidentId: param({ type: "string" }, "Only member events of this incident (D6, D8)"),
  from: param(timestamp, "Events at or after this RFC 3339 time (with Z or an offset); inclusive"),
  to: param(timestamp, "Events before this RFC 3339 time (with Z or an offset); exclusive"),
  limit: limitParam,
  cursor: cursorParam,
})

const idPath = (description: string) => Schema.Struct({ id: Schema.String.annotations({ description }) })

export class IncidentsGroup extends HttpApiGroup.make("incidents")
  .add(
    HttpApiEndpoint.get("listIncidents", "/v1/incidents")
      .setUrlParams(IncidentListParams)
      .addSuccess(IncidentPage)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "List incidents, most recent activity first")
      .annotate(
        OpenApi.Description,
        "Polling rule: request the first page and stop at the first incident already seen. Requires incidents:read.",
      ),
  )
  .add(
    HttpApiEndpoint.get("getIncident", "/v1/incidents/:id")
      .setPath(idPath("Incident identifier"))
      .addSuccess(Incident)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One incident with its first 200 member events, oldest first"),
  )
  .middleware(IncidentsAuth)
  .annotate(OpenApi.Title, "Incidents") {}

export class EventsGroup extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("listEvents", "/v1/events")
      .setUrlParams(EventListParams)
      .addSuccess(EventPage)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "List decoy events, newest first. Requires events:read."),
  )
  .add(
    HttpApiEndpoint.get("getEvent", "/v1/events/:id")
      .setPath(idPath("Event identifier"))
      .addSuccess(EventSchema)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "One event"),
  )
  .middleware(EventsAuth)
  .annotate(OpenApi.Title, "Events") {}

export class IncidentApi extends HttpApi.make("incident-api")
  .add(IncidentsGroup)
  .add(EventsGroup)
  .addError(InternalError)
  .addError(ServiceUnavailable)
  .annotate(OpenApi.Title, "Incident and Event Read API")
  .annotate(OpenApi.Version, "1")
  .annotate(
    OpenApi.Description,
    "Read-only API of the deception platform's incidents and events. Every request needs `Authorization: Bearer <API_KEY>`. Errors are RFC 9457 problem documents. title, narrative, recommendedAction, summary and attackerInput are untrusted attacker-influenced text.",
  ) {}
