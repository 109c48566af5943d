import type { EventRow } from "../repos/EventsRepo.ts"
import type { IncidentRow } from "../repos/IncidentsRepo.ts"
import { readableAttackerInput } from "./attackerInput.ts"
import { techniquesForEventTypes } from "./eventTypes.ts"
import type { Event, Incident, IncidentSummary } from "./models.ts"
import { mergeTechniques, type Technique, techniquesForTags } from "./techniques.ts"

/**
 * Stored rows to the API's shapes (spec "Resources"), field by field in the spec's order. Pure: the techniques
 * come from the fixed tables (D23).
 */

/**
 * attackerInput as the Event schema encodes it (the API answers with JSON.stringify of these shapes, without a schema
 * pass, for performance issue #6): `username` and `password` first, every other member after them in stored order.
 * D20: any stored jsonb reads back as a valid value (readableAttackerInput: `username` a string, password-like members
 * masked, text cleaned), so no stored row can make a read fail; on a row in the stored shape nothing changes.
 */
export const presentAttackerInput = (stored: unknown): Event["attackerInput"] => {
  const input = readableAttackerInput(stored)
  if (!("username" in input) && !("password" in input)) return input
  const out: Record<string, unknown> = {}
  if ("username" in input) out.username = input.username
  if ("password" in input) out.password = input.password
  for (const key in input) if (key !== "username" && key !== "password") out[key] = input[key]
  return out as Event["attackerInput"]
}

/**
 * The technique lists are pure functions of (types, tags) and few distinct combinations occur, so each is computed
 * once (performance issue #6: merging and sorting per row was a visible share of a page's CPU). Bounded: emptied
 * when full, since tags come from sensors.
 */
const techniqueMemo = new Map<string, ReadonlyArray<Technique>>()
const memoTechniques = (types: ReadonlyArray<string>, tags: ReadonlyArray<string>): ReadonlyArray<Technique> => {
  const key = JSON.stringify([types, tags])
  let techniques = techniqueMemo.get(key)
  if (techniques === undefined) {
    techniques =
      tags.length === 0
        ? techniquesForEventTypes(types)
        : mergeTechniques([techniquesForEventTypes(types), techniquesForTags(tags)])
    if (techniqueMemo.size >= 10_000) techniqueMemo.clear()
    techniqueMemo.set(key, techniques)
  }
  return techniques
}
const NO_TAGS: ReadonlyArray<string> = []

export const presentEvent = (row: EventRow): Event => ({
  id: row.id,
  time: row.time,
  sensor: { id: row.sensorId, name: row.sensorName },
  sourceIp: row.sourceIp,
  sourcePort: row.sourcePort,
  service: row.service,
  port: row.port,
  type: row.type,
  action: row.action,
  severity: row.severity,
  confidence: row.confidence,
  tags: row.tags,
  // An event's own payload is at hand, so its techniques are those of its type and of its tags.
  techniques: memoTechniques([row.type], row.tags),
  summary: row.summary,
  attackerInput: presentAttackerInput(row.attackerInput),
})

/** Spec "Technique": in an incident list, techniques are derived from the event types only. */
export const presentIncidentSummary = (row: IncidentRow, appUrl: string): IncidentSummary => ({
  id: row.id,
  title: row.title,
  severity: row.severity,
  status: row.status,
  narrative: row.narrative,
  recommendedAction: row.recommendedAction,
  sensor: { id: row.sensorId, name: row.sensorName },
  sourceIp: row.sourceIp,
  eventCount: row.eventCount,
  eventTypes: row.eventTypes,
  highConfidence: row.highConfidence,
  firstSeenAt: row.firstSeenAt,
  lastSeenAt: row.lastSeenAt,
  resolvedAt: row.resolvedAt,
  url: `${appUrl}/incidents/${row.id}`,
  techniques: memoTechniques(row.eventTypes, NO_TAGS),
})

/**
 * Spec "Technique": on a single incident, techniques additionally include those of the payload tags of its
 * events (all of them, not only the 200 shown: the incident row keeps the union of its events' tags).
 */
export const presentIncident = (row: IncidentRow, events: ReadonlyArray<EventRow>, appUrl: string): Incident => ({
  ...presentIncidentSummary(row, appUrl),
  techniques: memoTechniques(row.eventTypes, row.tags),
  events: events.map(presentEvent),
})
