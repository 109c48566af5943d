import { ParseResult, Schema } from "effect"
import { techniquesForEventTypes } from "../domain/eventTypes.ts"
import { AttackerInput, Technique, Timestamp } from "../domain/models.ts"
import { presentAttackerInput } from "../domain/present.ts"
import { shortenStrings } from "../domain/sanitize.ts"
import { Confidence, Severity } from "../domain/severity.ts"
import { mergeTechniques, techniquesForTags } from "../domain/techniques.ts"
import type { EventRow } from "../repos/EventsRepo.ts"
import type { IncidentRow } from "../repos/IncidentsRepo.ts"

/**
 * The webhook body (spec "Webhook incident", "Webhook delivery", D15, D20), field for field in the spec's order.
 * Pure: the body is built once, when the delivery is queued, and its exact bytes are what every attempt sends and
 * signs (the same `id` and `createdAt` on every retry).
 */

/** Spec: firstSeenAt/lastSeenAt in a webhook are "in seconds precision, ending in Z": 2026-11-21T15:57:42Z. */
export const TimestampSeconds = Schema.transformOrFail(Schema.String, Schema.DateFromSelf, {
  strict: true,
  decode: (text, _, ast) => {
    const date = new Date(text)
    return Number.isNaN(date.getTime())
      ? ParseResult.fail(new ParseResult.Type(ast, text, "not a timestamp"))
      : ParseResult.succeed(date)
  },
  encode: (date) => ParseResult.succeed(date.toISOString().replace(/\.\d{3}Z$/, "Z")),
}).annotations({ description: "RFC 3339 UTC timestamp in whole seconds, e.g. 2026-11-21T15:57:42Z" })

/** A webhook event: no `sensor`, no `sourceIp` (the incident carries them), attackerInput strings cut to 256. */
export const WebhookEvent = Schema.Struct({
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
}).annotations({ identifier: "WebhookEvent" })

/** The reduced incident of a webhook: no status, eventTypes, highConfidence or resolvedAt. */
export const WebhookIncident = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  severity: Severity,
  narrative: Schema.String,
  recommendedAction: Schema.String,
  sensor: Schema.Struct({ id: Schema.String, name: Schema.String, profile: Schema.String }),
  sourceIp: Schema.String,
  eventCount: Schema.Int,
  firstSeenAt: TimestampSeconds,
  lastSeenAt: TimestampSeconds,
  url: Schema.String,
  techniques: Schema.Array(Technique),
  events: Schema.Array(WebhookEvent),
}).annotations({ identifier: "WebhookIncident" })
export type WebhookIncident = typeof WebhookIncident.Type

export const WEBHOOK_TYPES = ["incident.created", "incident.escalated", "incident.reopened", "webhook.test"] as const
export type WebhookType = (typeof WEBHOOK_TYPES)[number]

/** D15: `{id, type, createdAt, incident}`. */
export const WebhookBody = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal(...WEBHOOK_TYPES),
  createdAt: Timestamp,
  incident: WebhookIncident,
}).annotations({ identifier: "WebhookBody" })
export type WebhookBody = typeof WebhookBody.Type

/** Spec: "events holds the most recent events of the incident, oldest first, at most 20". */
export const WEBHOOK_EVENTS = 20

/** The body type a transition is announced with; a close is not announced (spec "States and transitions"). */
export const webhookTypeOf = (kind: "created" | "escalated" | "reopened" | "closed"): WebhookType | undefined =>
  kind === "closed" ? undefined : `incident.${kind}`

export const webhookEvent = (row: EventRow): typeof WebhookEvent.Type => ({
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
  // D20: any stored value read as a valid one (as the API does); in webhooks every attackerInput string (keys too) is
  // cut to 256 code points.
  attackerInput: shortenStrings(presentAttackerInput(row.attackerInput)) as typeof AttackerInput.Type,
})

/**
 * The webhook incident from the stored incident, its sensor's profile and its most recent events (any order in,
 * oldest first out, the newest WEBHOOK_EVENTS kept). Techniques follow the single-incident rule (types and tags).
 */
export const webhookIncident = (
  row: IncidentRow,
  sensorProfile: string,
  recentEvents: ReadonlyArray<EventRow>,
  appUrl: string,
): WebhookIncident => {
  const events = [...recentEvents]
    .sort((a, b) => a.time.getTime() - b.time.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(-WEBHOOK_EVENTS)
  return {
    id: row.id,
    title: row.title,
    severity: row.severity,
    narrative: row.narrative,
    recommendedAction: row.recommendedAction,
    sensor: { id: row.sensorId, name: row.sensorName, profile: sensorProfile },
    sourceIp: row.sourceIp,
    eventCount: row.eventCount,
    firstSeenAt: row.firstSeenAt,
    lastSeenAt: row.lastSeenAt,
    url: `${appUrl}/incidents/${row.id}`,
    techniques: mergeTechniques([techniquesForEventTypes(row.eventTypes), techniquesForTags(row.tags)]),
    events: events.map(webhookEvent),
  }
}

const encodeBody = Schema.encodeSync(WebhookBody)

/** The exact bytes sent and signed: compact JSON, keys in the spec's order. */
export const serializeWebhookBody = (body: WebhookBody): string => JSON.stringify(encodeBody(body))

/**
 * D15 `webhook.test` ("the Send test action; carries a sample incident"): an obviously fictitious incident in the
 * real shape, so a receiver can test its parsing end to end. The ids say `sample`.
 */
export const sampleIncident = (now: Date, appUrl: string): WebhookIncident => {
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
