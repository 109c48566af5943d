import {
  type AlertIncident,
  type AlertMessage,
  type IncidentMessageType,
  sampleIncident,
  serializeAlertMessage,
} from "../../src/domain/alertMessage.ts"
import type { ChannelMessage, FormatContext } from "../../src/domain/channels/kinds.ts"
import { type SensorWebhookBody, serializeSensorWebhookBody } from "../../src/domain/sensorHealthPayload.ts"

/**
 * Channel messages for the formatter and transport tests, built with the domain's own builders: the decoded message
 * (what a formatter reads) and its payload (the stored JSON as parsed, what goes into MSG / `event`).
 */

export const CONTEXT: FormatContext = {
  appUrl: "https://decoy.example.com",
  product: { name: "Decoy Incident Service", vendor: "Example", version: "0.1.0", id: "decoy-incident-service" },
  hostname: "decoy-01.example.com",
}

export const CREATED_AT = new Date("2026-11-21T15:57:42.053Z")

export interface Fixture<M extends ChannelMessage = ChannelMessage> {
  readonly message: M
  readonly payload: unknown
}

export const incidentFixture = (
  type: IncidentMessageType,
  change: (incident: AlertIncident) => AlertIncident = (incident) => incident,
  createdAt: Date = CREATED_AT,
  id = `dlv_${type.replace(/\W/g, "")}`,
): Fixture<AlertMessage> => {
  const message: AlertMessage = {
    id,
    type,
    createdAt,
    incident: change(sampleIncident(createdAt, CONTEXT.appUrl)),
  }
  const text = serializeAlertMessage(message)
  return { message, payload: JSON.parse(text) }
}

export const sensorFixture = (
  type: "sensor.silent" | "sensor.recovered",
  name = "web-01",
): Fixture<SensorWebhookBody> => {
  const sensor = { id: "sen_01HEALTH0000000000000000000", name, profile: "linux-server", lastSeenAt: CREATED_AT }
  const input = { id: `dlv_${type.replace(/\W/g, "")}`, type, createdAt: CREATED_AT, sensor }
  const text = serializeSensorWebhookBody(input)
  const message: SensorWebhookBody = {
    id: input.id,
    type,
    createdAt: CREATED_AT,
    sensor: { ...sensor, lastSeenAt: new Date(CREATED_AT.getTime()) },
  }
  return { message, payload: JSON.parse(text) }
}

/** Every message type a syslog or HEC channel may send. */
export const allFixtures = (): ReadonlyArray<Fixture> => [
  incidentFixture("incident.created"),
  incidentFixture("incident.escalated", (incident) => ({ ...incident, severity: "critical" })),
  incidentFixture("incident.reopened", (incident) => ({ ...incident, severity: "medium" })),
  incidentFixture("incident.closed", (incident) => ({ ...incident, severity: "low" })),
  incidentFixture("webhook.test"),
  sensorFixture("sensor.silent"),
  sensorFixture("sensor.recovered"),
]

/** Text an attacker controls (a login name, a command) with everything that could break a syslog line or SD. */
export const HOSTILE =
  'root"] [evil@1 x="y"] \\" \\\\ ]]\n<13>1 2026-01-01T00:00:00Z fake - - - - injected\r\n\t\u0000\u001b[31m\u007f\u0085 café ✓ 🐝 \u2028 end'

/** An incident whose title, sensor name and one event carry HOSTILE. */
export const hostileFixture = (): Fixture<AlertMessage> =>
  incidentFixture(
    "incident.created",
    (incident) => ({
      ...incident,
      title: `SSH login as ${HOSTILE}`,
      sensor: { ...incident.sensor, name: HOSTILE },
      events: incident.events.map((event) => ({ ...event, summary: HOSTILE, attackerInput: { username: HOSTILE } })),
    }),
    CREATED_AT,
    "dlv_hostile",
  )

/** An incident with `count` events of about `bytesEach` bytes of multi-byte text each. */
export const bigFixture = (count: number, bytesEach: number): Fixture<AlertMessage> =>
  incidentFixture(
    "incident.escalated",
    (incident) => {
      const [first] = incident.events
      if (first === undefined) throw new Error("sampleIncident has no event")
      const events = Array.from({ length: count }, (_, index) => ({
        ...first,
        id: `evt_big${String(index).padStart(4, "0")}`,
        time: new Date(first.time.getTime() + index * 1000),
        // "é" is 2 bytes, "🐝" 4: a cut in the wrong place would split a sequence.
        summary: `${index}: ${"é🐝".repeat(100)}`.slice(0, 255),
        // Strings of at most 255 code points (as D20 bounds them), as many as make about `bytesEach` bytes.
        attackerInput: Object.fromEntries(
          Array.from({ length: Math.max(1, Math.ceil(bytesEach / 700)) }, (_, key) => [
            `arg${key}`,
            "é🐝x".repeat(100).slice(0, 255),
          ]),
        ),
      }))
      return { ...incident, eventCount: count, events }
    },
    CREATED_AT,
    "dlv_big",
  )
