import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Caller, IncidentApi } from "./contract/definition.ts"
import { json, makeReadQueries } from "./queries.ts"

/** The HttpApi's handlers: each endpoint is one of the read queries, answered as its serialized JSON. */
export const IncidentsHandlers = HttpApiBuilder.group(IncidentApi, "incidents", (handlers) =>
  Effect.gen(function* () {
    const queries = yield* makeReadQueries

    return handlers
      .handle("incidentChanges", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.incidentChanges(caller, urlParams), json)),
      )
      .handle("listIncidents", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.listIncidents(caller, urlParams), json)),
      )
      .handle("getIncident", ({ path }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.getIncident(caller, path.id), json)),
      )
      .handle("getSource", ({ path }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.getSource(caller, path.ip), json)),
      )
  }),
)

export const EventsHandlers = HttpApiBuilder.group(IncidentApi, "events", (handlers) =>
  Effect.gen(function* () {
    const queries = yield* makeReadQueries

    return handlers
      .handle("eventChanges", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.eventChanges(caller, urlParams), json)),
      )
      .handle("listEvents", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.listEvents(caller, urlParams), json)),
      )
      .handle("getEvent", ({ path }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(queries.getEvent(caller, path.id), json)),
      )
  }),
)
