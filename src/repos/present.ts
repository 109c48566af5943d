import { readableAttackerInput } from "../domain/attackerInput.ts"
import { sourceFactsOf } from "../domain/enrichment.ts"
import { techniquesForEventTypes } from "../domain/eventTypes.ts"
import type { Event, Incident, IncidentSummary } from "../domain/models.ts"
import { utf8Length } from "../domain/sanitize.ts"
import { mergeTechniques, type Technique, techniquesForTags } from "../domain/techniques.ts"
import type { EventRow } from "./EventsRepo.ts"
import type { IncidentRow } from "./IncidentsRepo.ts"

/**
 * Stored rows to the API's shapes (spec "Resources"), field by field in the spec's order. Pure: the techniques
 * come from the fixed tables (never guessed). Each shape comes two ways from one field list: `present…` with Dates, for
 * the console's pages, and `encode…` with the timestamps as their ISO strings, as the schemas encode them, for every
 * JSON answer (API, feeds, MCP). JSON.stringify writes an object holding a Date (its toJSON) on a slow path: a page of
 * 50 incidents took 120 µs to serialize with Dates and 34 with the strings, the conversion included.
 */

/**
 * attackerInput as the Event schema encodes it (the API answers with JSON.stringify of these shapes, without a schema
 * pass, which cost a share of every answer): `username` and `password` first, every other member after them in
 * stored order.
 * Any stored jsonb reads back as a valid value (readableAttackerInput: `username` a string, password-like members
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
 * once (merging and sorting per row was a visible share of a page's CPU). Bounded: emptied
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

/** The encoded shapes: what the API's JSON holds (timestamps as ISO strings). */
export type EventJson = typeof Event.Encoded
export type IncidentSummaryJson = typeof IncidentSummary.Encoded
export type IncidentJson = typeof Incident.Encoded

const asDate = (date: Date): Date => date
const asText = (date: Date): string => date.toISOString()

const eventShape = <T>(row: EventRow, time: (date: Date) => T) => ({
  id: row.id,
  time: time(row.time),
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

export const presentEvent = (row: EventRow): Event => eventShape(row, asDate)
export const encodeEvent = (row: EventRow): EventJson => eventShape(row, asText)

/** Spec "Technique": in an incident list, techniques are derived from the event types only. */
const summaryShape = <T>(row: IncidentRow, appUrl: string, time: (date: Date) => T) => ({
  id: row.id,
  title: row.title,
  severity: row.severity,
  status: row.status,
  narrative: row.narrative,
  recommendedAction: row.recommendedAction,
  sensor: { id: row.sensorId, name: row.sensorName },
  sourceIp: row.sourceIp,
  source: sourceFactsOf(row),
  eventCount: row.eventCount,
  eventTypes: row.eventTypes,
  highConfidence: row.highConfidence,
  baitCredentialUsed: row.baitCredential,
  otherSensors: row.otherSensors ?? 0,
  firstSeenAt: time(row.firstSeenAt),
  lastSeenAt: time(row.lastSeenAt),
  resolvedAt: row.resolvedAt === null ? null : time(row.resolvedAt),
  closeReason: row.closeReason ?? null,
  assignee: row.assignee ?? null,
  acknowledgedAt: row.acknowledgedAt === undefined || row.acknowledgedAt === null ? null : time(row.acknowledgedAt),
  url: `${appUrl}/incidents/${row.id}`,
  techniques: memoTechniques(row.eventTypes, NO_TAGS),
})

export const presentIncidentSummary = (row: IncidentRow, appUrl: string): IncidentSummary =>
  summaryShape(row, appUrl, asDate)
export const encodeIncidentSummary = (row: IncidentRow, appUrl: string): IncidentSummaryJson =>
  summaryShape(row, appUrl, asText)

/**
 * The most bytes (UTF-8 of the compact JSON) of one API answer: a page of a list, or a
 * single incident with its events. Items stop being added before the answer would pass it (at least one is always
 * given). Events are bounded at ingestion (ATTACKER_INPUT_MAX_BYTES) so that a full page and a single incident with
 * its 200 events stay under it; this bound holds whatever the rows hold.
 */
export const PAGE_MAX_BYTES = 4 * 1024 * 1024

/** Compact JSON texts of items, as many as fit in `maxBytes` (with one comma each), at least one when there is one. */
export const serializeWithin = <T>(
  items: ReadonlyArray<T>,
  maxBytes: number,
): { readonly items: ReadonlyArray<T>; readonly texts: ReadonlyArray<string>; readonly bytes: number } => {
  const texts: Array<string> = []
  let bytes = 0
  for (const item of items) {
    const text = JSON.stringify(item)
    const size = utf8Length(text) + (texts.length > 0 ? 1 : 0)
    if (texts.length > 0 && bytes + size > maxBytes) break
    texts.push(text)
    bytes += size
  }
  return { items: items.slice(0, texts.length), texts, bytes }
}

/**
 * The first of `items` (in their order) whose compact JSON fits in `maxBytes` together, at least one when there is
 * one: what a page built from them shows, so that no answer grows with what attackers sent. A page that stops early
 * continues right after the last item shown.
 */
export const takeWithinBytes = <T>(items: ReadonlyArray<T>, maxBytes: number = PAGE_MAX_BYTES): ReadonlyArray<T> =>
  serializeWithin(items, maxBytes).items

/**
 * Answers serialized while they were bounded: the API sends these exact texts instead of serializing the answer a
 * second time (they are JSON.stringify of the answer).
 */
const serialized = new WeakMap<object, string>()
export const serializedAnswer = (answer: object): string | undefined => serialized.get(answer)
export const rememberSerialized = <A extends object>(answer: A, text: string): A => {
  serialized.set(answer, text)
  return answer
}

/**
 * Spec "Technique": on a single incident, techniques additionally include those of the payload tags of its
 * events (all of them, not only the 200 shown: the incident row keeps the union of its events' tags).
 * The events (oldest first, to tell the story from its start) stop before the answer would pass `maxBytes` (spec: "at
 * most 200"); the rest are read with GET /v1/events?incidentId=….
 */
const incidentFit = (row: IncidentRow, events: ReadonlyArray<EventRow>, appUrl: string, maxBytes: number) => {
  const head = { ...encodeIncidentSummary(row, appUrl), techniques: memoTechniques(row.eventTypes, row.tags) }
  const headText = JSON.stringify(head)
  const fitted = serializeWithin(events.map(encodeEvent), maxBytes - utf8Length(headText) - 12)
  return { head, fitted, text: `${headText.slice(0, -1)},"events":[${fitted.texts.join(",")}]}` }
}

/** The API's single incident, remembered with its text (bounded as described above). */
export const encodeIncident = (
  row: IncidentRow,
  events: ReadonlyArray<EventRow>,
  appUrl: string,
  maxBytes: number = PAGE_MAX_BYTES,
): IncidentJson => {
  const { head, fitted, text } = incidentFit(row, events, appUrl, maxBytes)
  return rememberSerialized({ ...head, events: [...fitted.items] }, text)
}

/** The same incident with Dates, for the console's page: the events the API's answer shows, no more. */
export const presentIncident = (
  row: IncidentRow,
  events: ReadonlyArray<EventRow>,
  appUrl: string,
  maxBytes: number = PAGE_MAX_BYTES,
): Incident => {
  const shown = incidentFit(row, events, appUrl, maxBytes).fitted.items.length
  return {
    ...presentIncidentSummary(row, appUrl),
    techniques: memoTechniques(row.eventTypes, row.tags),
    events: events.slice(0, shown).map(presentEvent),
  }
}
