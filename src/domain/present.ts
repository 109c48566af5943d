import type { EventRow } from "../repos/EventsRepo.ts"
import type { IncidentRow } from "../repos/IncidentsRepo.ts"
import { techniquesForEventTypes } from "./eventTypes.ts"
import type { Event, Incident, IncidentSummary } from "./models.ts"
import { mergeTechniques, techniquesForTags } from "./techniques.ts"

/**
 * Stored rows to the API's shapes (spec "Resources"), field by field in the spec's order. Pure: the techniques
 * come from the fixed tables (D23).
 */

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
  techniques: mergeTechniques([techniquesForEventTypes([row.type]), techniquesForTags(row.tags)]),
  summary: row.summary,
  attackerInput: row.attackerInput,
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
  techniques: techniquesForEventTypes(row.eventTypes),
})

/**
 * Spec "Technique": on a single incident, techniques additionally include those of the payload tags of its
 * events (all of them, not only the 200 shown: the incident row keeps the union of its events' tags).
 */
export const presentIncident = (row: IncidentRow, events: ReadonlyArray<EventRow>, appUrl: string): Incident => ({
  ...presentIncidentSummary(row, appUrl),
  techniques: mergeTechniques([techniquesForEventTypes(row.eventTypes), techniquesForTags(row.tags)]),
  events: events.map(presentEvent),
})
