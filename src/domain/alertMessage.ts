import { Schema } from "effect"
import { webhookAttackerInputWithCut } from "./attackerInput.ts"
import { type SourceColumns, sourceFactsOf } from "./enrichment.ts"
import { techniquesForEventTypes } from "./eventTypes.ts"
import { AttackerInput, IncidentSource, Technique, Timestamp, TimestampSeconds } from "./models.ts"
import { truncateCodePoints, utf8Length } from "./sanitize.ts"
import { Confidence, Severity } from "./severity.ts"
import { mergeTechniques, techniquesForTags } from "./techniques.ts"

/** The stored event fields an alert message's event is made of (the events repository's row has these and more). */
export interface AlertEventSource {
  readonly id: string
  readonly time: Date
  readonly type: string
  readonly action: string
  readonly service: string
  readonly port: number
  readonly sourcePort: number
  readonly severity: Severity
  readonly confidence: Confidence
  readonly tags: ReadonlyArray<string>
  readonly summary: string
  readonly attackerInput: unknown
}

/**
 * The stored incident fields an alert message's incident is made of; with the source address's enrichment when the row was
 * read with it (a message carries what is known when it is written, and never waits for more).
 */
export interface AlertIncidentSource extends SourceColumns {
  readonly id: string
  readonly title: string
  readonly severity: Severity
  readonly narrative: string
  readonly recommendedAction: string
  readonly sensorId: string
  readonly sensorName: string
  readonly sourceIp: string
  readonly eventCount: number
  readonly firstSeenAt: Date
  readonly lastSeenAt: Date
  readonly eventTypes: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
  /** A member event used a bait credential (absent on rows written before judgement: false). */
  readonly baitCredential?: boolean | undefined
  /** Other sensors that saw the source within 7 days (counted on read, or by ingestion for its own row). */
  readonly otherSensors?: number | undefined
}

/**
 * The alert message: the native message the outbox stores for every channel kind, which a webhook channel sends as it
 * is and every other kind renders from (spec "Webhook incident", "Webhook delivery"), field for field in the
 * spec's order. Pure: the message is built once, when the delivery is queued, and its exact bytes are what every
 * attempt sends and signs (the same `id` and `createdAt` on every retry).
 */

/** An event of a message: no `sensor`, no `sourceIp` (the incident carries them), attackerInput strings cut to 256. */
export const AlertEvent = Schema.Struct({
  id: Schema.String,
  time: Timestamp,
  type: Schema.String,
  action: Schema.String,
  service: Schema.String,
  port: Schema.Int,
  sourcePort: Schema.Int,
  severity: Severity,
  confidence: Confidence,
  tags: Schema.Array(Schema.String),
  summary: Schema.String,
  attackerInput: AttackerInput,
}).annotations({ identifier: "AlertEvent" })

/** The reduced incident of a message: no status, eventTypes, highConfidence or resolvedAt. */
export const AlertIncident = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  severity: Severity,
  narrative: Schema.String,
  recommendedAction: Schema.String,
  sensor: Schema.Struct({ id: Schema.String, name: Schema.String, profile: Schema.String }),
  sourceIp: Schema.String,
  /**
   * What was known of the source address when the message was written (additive, spec "Versioning"). Always written;
   * optional so a message queued by an earlier version still reads.
   */
  source: Schema.optional(IncidentSource),
  /** A member event used a bait credential: the strongest sign someone is inside. Optional like `source`. */
  baitCredentialUsed: Schema.optional(Schema.Boolean),
  /** Other sensors of the organization that saw the same source within 7 days. Optional like `source`. */
  otherSensors: Schema.optional(Schema.Int),
  eventCount: Schema.Int,
  firstSeenAt: TimestampSeconds,
  lastSeenAt: TimestampSeconds,
  url: Schema.String,
  techniques: Schema.Array(Technique),
  events: Schema.Array(AlertEvent),
  /**
   * Only when some of the most recent events were left out to keep the body under ALERT_MESSAGE_MAX_BYTES: how many
   * (they are read with GET /v1/events?incidentId=…). Additive (spec "Versioning").
   */
  eventsLeftOut: Schema.optional(Schema.Int),
}).annotations({ identifier: "AlertIncident" })
export type AlertIncident = typeof AlertIncident.Type

/** The types every channel kind receives: the announced transitions, and the Send test (wire name `webhook.test`). */
export const ALERT_TYPES = ["incident.created", "incident.escalated", "incident.reopened", "webhook.test"] as const
export type AlertType = (typeof ALERT_TYPES)[number]

/**
 * What the outbox may store for an incident: the announced types, and `incident.closed`, which only channels in the
 * OCSF format receive (OCSF has a Close activity; the spec's webhook does not announce a close).
 */
export const INCIDENT_MESSAGE_TYPES = [...ALERT_TYPES, "incident.closed"] as const
export type IncidentMessageType = (typeof INCIDENT_MESSAGE_TYPES)[number]

/** `{id, type, createdAt, incident}`; `id` is stable across retries. */
export const AlertMessage = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal(...INCIDENT_MESSAGE_TYPES),
  createdAt: Timestamp,
  incident: AlertIncident,
  /**
   * Only when something was cut for size beyond the 256 code points per string every message allows: an event's
   * attackerInput was cut for the message (it then carries the cut mark, member "…"), or events were left out
   * (incident.eventsLeftOut), or the incident's texts were shortened.
   */
  truncated: Schema.optional(Schema.Literal(true)),
}).annotations({ identifier: "AlertMessage" })
export type AlertMessage = typeof AlertMessage.Type

/** Spec: "events holds the most recent events of the incident, oldest first, at most 20". */
export const MESSAGE_EVENTS = 20

/** The body type a transition is announced with; a close is not announced (spec "States and transitions"). */
export const alertTypeOf = (kind: "created" | "escalated" | "reopened" | "closed"): AlertType | undefined =>
  kind === "closed" ? undefined : `incident.${kind}`

/**
 * The attackerInput values that alertEvent cut (its walk's own flag): what sets `truncated`. The presence of a "…"
 * member does not, since a row stored before sensor-sent "…" members were renamed at ingestion may hold one.
 */
const cutInputs = new WeakSet<object>()

const messageInput = (stored: unknown) => {
  const walked = webhookAttackerInputWithCut(stored)
  if (walked.cut) cutInputs.add(walked.value)
  return walked.value as typeof AttackerInput.Type
}

export const alertEvent = (row: AlertEventSource): typeof AlertEvent.Type => ({
  id: row.id,
  time: row.time,
  type: row.type,
  action: row.action,
  service: row.service,
  port: row.port,
  sourcePort: row.sourcePort,
  severity: row.severity,
  confidence: row.confidence,
  tags: row.tags,
  summary: row.summary,
  // Any stored value read as a valid one, so no stored row can fail a message (as the API does), shortened for
  // messages: every string (keys too) cut to 256 code points, and the whole bounded in depth, members, items, masked
  // secrets and bytes (with a cut mark).
  attackerInput: messageInput(row.attackerInput),
})

/**
 * The message's incident from the stored incident, its sensor's profile and its most recent events (any order in,
 * oldest first out, the newest MESSAGE_EVENTS kept). Techniques follow the single-incident rule (types and tags).
 */
export const alertIncident = (
  row: AlertIncidentSource,
  sensorProfile: string,
  recentEvents: ReadonlyArray<AlertEventSource>,
  appUrl: string,
): AlertIncident => {
  const events = [...recentEvents]
    .sort((a, b) => a.time.getTime() - b.time.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(-MESSAGE_EVENTS)
  return {
    id: row.id,
    title: row.title,
    severity: row.severity,
    narrative: row.narrative,
    recommendedAction: row.recommendedAction,
    sensor: { id: row.sensorId, name: row.sensorName, profile: sensorProfile },
    sourceIp: row.sourceIp,
    source: sourceFactsOf(row),
    baitCredentialUsed: row.baitCredential ?? false,
    otherSensors: row.otherSensors ?? 0,
    eventCount: row.eventCount,
    firstSeenAt: row.firstSeenAt,
    lastSeenAt: row.lastSeenAt,
    url: `${appUrl}/incidents/${row.id}`,
    techniques: mergeTechniques([techniquesForEventTypes(row.eventTypes), techniquesForTags(row.tags)]),
    events: events.map(alertEvent),
  }
}

const encodeBody = Schema.encodeSync(AlertMessage)

/**
 * The hard bound of an alert message in UTF-8 bytes: well under 256 KiB, the smallest limit common receivers set, so an
 * alert is always deliverable. The per-event bounds (webhookAttackerInput, at most 20 events) keep a message far below
 * it; serializeAlertMessage enforces it whatever the content.
 */
export const ALERT_MESSAGE_MAX_BYTES = 240 * 1024

const wasCut = (event: typeof AlertEvent.Type): boolean => cutInputs.has(event.attackerInput)

const encodeText = (body: AlertMessage): string => JSON.stringify(encodeBody(body))

/** Every string of the incident (but its events) cut to `max` code points, techniques to the first 64. */
const shortenIncident = (incident: AlertIncident, max: number): AlertIncident => ({
  ...incident,
  id: truncateCodePoints(incident.id, max),
  title: truncateCodePoints(incident.title, max),
  narrative: truncateCodePoints(incident.narrative, max),
  recommendedAction: truncateCodePoints(incident.recommendedAction, max),
  sensor: {
    id: truncateCodePoints(incident.sensor.id, max),
    name: truncateCodePoints(incident.sensor.name, max),
    profile: truncateCodePoints(incident.sensor.profile, max),
  },
  sourceIp: truncateCodePoints(incident.sourceIp, max),
  ...(incident.source === undefined
    ? {}
    : {
        source: {
          ...incident.source,
          reverseDns: incident.source.reverseDns === null ? null : truncateCodePoints(incident.source.reverseDns, max),
          asOrganization:
            incident.source.asOrganization === null ? null : truncateCodePoints(incident.source.asOrganization, max),
        },
      }),
  url: truncateCodePoints(incident.url, max),
  techniques: incident.techniques.slice(0, 64).map((t) => ({
    id: truncateCodePoints(t.id, max),
    name: truncateCodePoints(t.name, max),
    tactics: t.tactics.slice(0, 16).map((tactic) => truncateCodePoints(tactic, max)),
  })),
})

/**
 * The exact bytes sent and signed: compact JSON, keys in the spec's order, at most ALERT_MESSAGE_MAX_BYTES. A body
 * that would be larger loses its oldest events first (incident.eventsLeftOut says how many), then, with no event
 * left, has the incident's texts shortened; `truncated: true` says that something was cut for size.
 */
export const serializeAlertMessage = (input: AlertMessage): string => {
  const cut = input.incident.events.some(wasCut)
  const body: AlertMessage = cut ? { ...input, truncated: true } : input
  const text = encodeText(body)
  if (utf8Length(text) <= ALERT_MESSAGE_MAX_BYTES) return text
  // Leave out the oldest events until the rest fits (their sizes as encoded, one comma each).
  const events = body.incident.events
  const sizes = events.map((e) => utf8Length(JSON.stringify(Schema.encodeSync(AlertEvent)(e))) + 1)
  const already = body.incident.eventsLeftOut ?? 0
  let total = utf8Length(text)
  let drop = 0
  while (drop < events.length && total > ALERT_MESSAGE_MAX_BYTES - 64) {
    total -= sizes[drop] ?? 0
    drop++
  }
  for (; drop <= events.length; drop++) {
    const fewer: AlertMessage = {
      ...body,
      truncated: true,
      incident: { ...body.incident, events: events.slice(drop), eventsLeftOut: already + drop },
    }
    const attempt = encodeText(fewer)
    if (utf8Length(attempt) <= ALERT_MESSAGE_MAX_BYTES) return attempt
  }
  // Not even the incident alone fits: its texts are shortened, first to 1024 code points, then to 256.
  for (const max of [1024, 256]) {
    const attempt = encodeText({
      ...body,
      truncated: true,
      incident: { ...shortenIncident(body.incident, max), events: [], eventsLeftOut: already + events.length },
    })
    if (utf8Length(attempt) <= ALERT_MESSAGE_MAX_BYTES) return attempt
  }
  return encodeText({
    ...body,
    id: truncateCodePoints(body.id, 64),
    truncated: true,
    incident: {
      ...shortenIncident(body.incident, 64),
      techniques: [],
      events: [],
      eventsLeftOut: already + events.length,
    },
  })
}

/**
 * `webhook.test` ("the Send test action; carries a sample incident"): an obviously fictitious incident in the
 * real shape, so a receiver can test its parsing end to end. The ids say `sample`.
 */
export const sampleIncident = (now: Date, appUrl: string): AlertIncident => {
  const id = "inc_sample00000000000000000000"
  const first = new Date(now.getTime() - 60_000)
  return {
    id,
    title: "Test: SSH brute force on web-01 from 203.0.113.7",
    severity: "high",
    narrative:
      "This is a test delivery from the Send test action. 203.0.113.7 (a documentation address) tried 3 passwords for root.",
    recommendedAction: "Nothing to do: this incident is a sample. Check that your receiver verified the signature.",
    sensor: { id: "sen_sample00000000000000000000", name: "web-01", profile: "linux-server" },
    sourceIp: "203.0.113.7",
    // A documentation name and AS number (RFC 5398); ZZ is the code ISO 3166 leaves to users ("unknown").
    source: {
      scope: "external",
      network: null,
      reverseDns: "scanner-7.example.net",
      asn: 64496,
      asOrganization: "Example Networks",
      country: "ZZ",
    },
    baitCredentialUsed: false,
    otherSensors: 0,
    eventCount: 1,
    firstSeenAt: first,
    lastSeenAt: first,
    url: `${appUrl}/incidents/${id}`,
    techniques: techniquesForEventTypes(["ssh.login_attempt"]),
    events: [
      {
        id: "evt_sample00000000000000000000",
        time: first,
        type: "ssh.login_attempt",
        action: "login_attempt",
        service: "ssh",
        port: 22,
        sourcePort: 51234,
        severity: "high",
        confidence: "normal",
        tags: [],
        summary: 'SSH login attempt as "root" from 203.0.113.7',
        attackerInput: { username: "root", password: { masked: "********", length: 8, fingerprint: "0".repeat(32) } },
      },
    ],
  }
}
