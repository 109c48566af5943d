import { HttpServerResponse } from "@effect/platform"
import { type Context, Effect, Option } from "effect"
import { type CursorScope, encodeCursor } from "../domain/cursor.ts"
import { sourceFactsOf } from "../domain/enrichment.ts"
import { isId } from "../domain/ids.ts"
import { canonicalIp } from "../domain/ip.ts"
import { INCIDENT_EVENTS_SHOWN, SOURCE_INCIDENTS_SHOWN } from "../domain/models.ts"
import { classifySource } from "../domain/networks.ts"
import { AppConfig } from "../platform/config.ts"
import { Keys } from "../platform/keys.ts"
import { EventsRepo } from "../repos/EventsRepo.ts"
import { IgnoreRulesRepo } from "../repos/IgnoreRulesRepo.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { NetworksRepo } from "../repos/NetworksRepo.ts"
import { encodeEvent, encodeIncident, encodeIncidentSummary, serializedAnswer } from "../repos/present.ts"
import { ChangesRepo } from "./ChangesRepo.ts"
import type { Caller, EventListParams, IncidentListParams } from "./contract/definition.ts"
import { EventNotFound, IncidentNotFound, SourceNotFound } from "./errors.ts"
import { type FeedParams, feedPage } from "./feeds.ts"
import { page } from "./paging.ts"
import {
  eventFilterDigestInput,
  InvalidQuery,
  parseCursor,
  parseEventListParams,
  parseLimit,
  parseStatus,
  readCursor,
} from "./params.ts"
import { feedFailures, listFailures, lookupFailures, sourceFailures } from "./problems.ts"

/** The cursor signing key, derived from SECRET_KEY so cursors survive restarts and work across replicas. */
const cursorKey = Effect.map(Keys, (keys) => keys.derive("cursor-v1"))
/** The feed token signing key, derived from SECRET_KEY like the cursor key. */
const feedTokenKey = Effect.map(Keys, (keys) => keys.derive("feed-token-v1"))

/**
 * The answer, serialized once. present.ts's encode… functions build exactly the encoded shapes of domain/models.ts
 * (timestamps as their ISO strings, as the schema's encoding writes them), so the HttpApi's per-response Schema encode
 * is skipped (it cost a share of every answer); test/api/present.test.ts holds the two to the same bytes.
 */
export const json = (body: unknown) => {
  // An answer bounded by size was serialized then: its text is sent as it is (the same bytes JSON.stringify gives).
  const text = typeof body === "object" && body !== null ? serializedAnswer(body) : undefined
  return text === undefined
    ? HttpServerResponse.unsafeJson(body)
    : HttpServerResponse.text(text, { contentType: "application/json" })
}

type CallerInfo = Context.Tag.Service<Caller>

/**
 * The read queries behind the endpoints, with their validation and problem mapping: the HttpApi handlers below and
 * the MCP tools (mcp/tools.ts) both call these, so an agent gets exactly the API's answers and errors.
 */
export const makeReadQueries = Effect.gen(function* () {
  const incidents = yield* IncidentsRepo
  const events = yield* EventsRepo
  const { appUrl } = yield* AppConfig
  const key = yield* cursorKey
  const changes = yield* ChangesRepo
  const tokenKey = yield* feedTokenKey
  const networks = yield* NetworksRepo
  const ignoreRules = yield* IgnoreRulesRepo

  const listIncidents = (caller: CallerInfo, urlParams: typeof IncidentListParams.Type) =>
    Effect.gen(function* () {
      const status = yield* parseStatus(urlParams.status)
      const limit = yield* parseLimit(urlParams.limit)
      const cursor = yield* parseCursor(urlParams.cursor)
      const scope: CursorScope = { endpoint: "incidents", orgId: caller.orgId, filters: { status } }
      const after = yield* readCursor(key, scope, cursor)
      const rows = yield* incidents.list({ orgId: caller.orgId, status, after, fetch: limit + 1 })
      return page(
        rows,
        limit,
        (r) => r.lastSeenAt,
        (r) => encodeIncidentSummary(r, appUrl),
        (at) => encodeCursor(key, scope, at),
      )
    }).pipe(listFailures)

  const getIncident = (caller: CallerInfo, id: string) =>
    Effect.gen(function* () {
      if (!isId("incident", id)) return yield* new IncidentNotFound({ id })
      const row = yield* incidents.findById(caller.orgId, id)
      if (Option.isNone(row)) return yield* new IncidentNotFound({ id })
      const members = yield* events.members(caller.orgId, id, INCIDENT_EVENTS_SHOWN)
      return encodeIncident(row.value, members, appUrl)
    }).pipe(lookupFailures)

  const listEvents = (caller: CallerInfo, urlParams: typeof EventListParams.Type) =>
    Effect.gen(function* () {
      const input = yield* parseEventListParams(urlParams)
      const scope: CursorScope = {
        endpoint: "events",
        orgId: caller.orgId,
        filters: eventFilterDigestInput(input.filters),
      }
      const after = yield* readCursor(key, scope, input.cursor)
      const rows = yield* events.list({
        orgId: caller.orgId,
        filters: input.filters,
        after,
        fetch: input.limit + 1,
      })
      return page(
        rows,
        input.limit,
        (r) => r.time,
        encodeEvent,
        (at) => encodeCursor(key, scope, at),
      )
    }).pipe(listFailures)

  const getEvent = (caller: CallerInfo, id: string) =>
    Effect.gen(function* () {
      if (!isId("event", id)) return yield* new EventNotFound({ id })
      const row = yield* events.findById(caller.orgId, id)
      if (Option.isNone(row)) return yield* new EventNotFound({ id })
      return encodeEvent(row.value)
    }).pipe(lookupFailures)

  // The change feeds.
  const incidentChanges = (caller: CallerInfo, urlParams: FeedParams) =>
    feedPage(tokenKey, "incidents/changes", caller.orgId, urlParams, changes.incidents, (r) =>
      encodeIncidentSummary(r, appUrl),
    ).pipe(feedFailures)

  const eventChanges = (caller: CallerInfo, urlParams: FeedParams) =>
    feedPage(tokenKey, "events/changes", caller.orgId, urlParams, changes.events, encodeEvent).pipe(feedFailures)

  /**
   * What the organization knows of one address: inside or outside its networks (as the list stands now), what
   * enrichment found, its incidents on every sensor, and the ignore rule that holds it.
   */
  const getSource = (caller: CallerInfo, ipText: string) =>
    Effect.gen(function* () {
      const ip = ipText.length > 64 ? undefined : canonicalIp(ipText)
      if (ip === undefined) {
        return yield* new InvalidQuery({
          parameter: "ip",
          allowed: "an IPv4 address (dotted decimal) or an IPv6 address",
        })
      }
      const { rows, totals, anyEvent } = yield* incidents.forSource(caller.orgId, ip, SOURCE_INCIDENTS_SHOWN)
      if (totals.incidents === 0 && !anyEvent) return yield* new SourceNotFound({ ip })
      const own = yield* networks.get(caller.orgId)
      const judged = classifySource(ip, own.networks)
      const rule = yield* ignoreRules.holding(caller.orgId, ip, new Date())
      const newest = rows[0]
      const facts = sourceFactsOf(newest ?? {})
      return {
        ip,
        source: { ...facts, scope: judged.scope, network: judged.network },
        firstSeenAt: totals.firstSeenAt === null ? null : new Date(totals.firstSeenAt).toISOString(),
        lastSeenAt: totals.lastSeenAt === null ? null : new Date(totals.lastSeenAt).toISOString(),
        incidentCount: totals.incidents,
        sensorCount: totals.sensors,
        ignoredBy:
          rule === undefined
            ? null
            : {
                ruleId: rule.id,
                source: rule.source,
                sensorId: rule.sensorId,
                port: rule.port,
                eventType: rule.eventType,
              },
        incidents: rows.map((r) => encodeIncidentSummary(r, appUrl)),
      }
    }).pipe(sourceFailures)

  return { listIncidents, getIncident, listEvents, getEvent, incidentChanges, eventChanges, getSource } as const
})
export type ReadQueries = Effect.Effect.Success<typeof makeReadQueries>
