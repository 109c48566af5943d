import { Schema } from "effect"
import { AlertEvent, AlertIncident, type AlertMessage } from "../alertMessage.ts"
import { UNKNOWN_SOURCE } from "../enrichment.ts"
import type { Severity } from "../severity.ts"
import type { Technique } from "../techniques.ts"
import { TACTICS_BY_NAME } from "../techniques.ts"
import type { ChannelFormat, ChannelMessage, FormatContext } from "./kinds.ts"

/**
 * An incident message as an OCSF Detection Finding (class_uid 2004), for `webhook`, `syslog` and `splunk_hec`
 * channels in the `ocsf` format. Pure, like every formatter: the same stored message renders the same object.
 * The target is OCSF 1.8.0 with no profile applied; test/fixtures/ocsf holds the schema the tests validate against.
 */
export const OCSF_VERSION = "1.8.0"

const CLASS_UID = 2004
const CATEGORY_UID = 2

/** OCSF activity: creation (and the test message, which imitates one) 1, escalation and re-open 2 (Update), close 3. */
const ACTIVITIES = {
  "incident.created": { id: 1, name: "Create", statusId: 1, status: "New" },
  "webhook.test": { id: 1, name: "Create", statusId: 1, status: "New" },
  // An escalated or re-opened incident is one the receiver already has: an update of a finding under way.
  "incident.escalated": { id: 2, name: "Update", statusId: 2, status: "In Progress" },
  "incident.reopened": { id: 2, name: "Update", statusId: 2, status: "In Progress" },
  "incident.closed": { id: 3, name: "Close", statusId: 4, status: "Resolved" },
} as const satisfies Record<AlertMessage["type"], { id: number; name: string; statusId: number; status: string }>

/** Our severities (low … critical) onto OCSF severity_id (2 Low … 5 Critical), with OCSF's caption. */
const SEVERITY_IDS: Record<Severity, { readonly id: number; readonly name: string }> = {
  low: { id: 2, name: "Low" },
  medium: { id: 3, name: "Medium" },
  high: { id: 4, name: "High" },
  critical: { id: 5, name: "Critical" },
}

const tacticOf = (shortName: string) => TACTICS_BY_NAME.get(shortName) ?? { name: shortName }

/**
 * OCSF splits a sub-technique from its parent: `technique` is the parent (T1110), `sub_technique` the sub (T1110.001).
 * Our names are written "Parent: Sub" (techniques.ts), so both names come from the one entry.
 */
const techniqueParts = (technique: Technique): Record<string, unknown> => {
  const dot = technique.id.indexOf(".")
  if (dot < 0) return { technique: { uid: technique.id, name: technique.name } }
  const colon = technique.name.indexOf(": ")
  const parentName = colon < 0 ? technique.name : technique.name.slice(0, colon)
  const subName = colon < 0 ? technique.name : technique.name.slice(colon + 2)
  return {
    technique: { uid: technique.id.slice(0, dot), name: parentName },
    sub_technique: { uid: technique.id, name: subName },
  }
}

/** One OCSF attack per technique and tactic (an attack holds one tactic); a technique with no tactic, one attack. */
const attacksOf = (techniques: ReadonlyArray<Technique>): Array<Record<string, unknown>> =>
  techniques.flatMap((technique) => {
    const parts = techniqueParts(technique)
    return technique.tactics.length === 0
      ? [parts]
      : technique.tactics.map((tactic) => ({ tactic: tacticOf(tactic), ...parts }))
  })

/** OCSF ports are 0…65535; a value outside (the native body does not bound it) is left out, not sent invalid. */
const portField = (port: number): { port?: number } =>
  Number.isInteger(port) && port >= 0 && port <= 65535 ? { port } : {}

/**
 * The attacker's endpoint: its address, and what enrichment knew of it when the message was written: the
 * forward-confirmed reverse DNS name as `hostname` (attacker text: data, never a link), the country as
 * `location.country`, the AS as `autonomous_system`. A fact not known is left out (OCSF has no nulls there).
 */
const sourceEndpoint = (incident: AlertIncident): Record<string, unknown> => {
  const source = incident.source ?? UNKNOWN_SOURCE
  const as = {
    ...(source.asn === null ? {} : { number: source.asn }),
    ...(source.asOrganization === null ? {} : { name: source.asOrganization }),
  }
  return {
    ip: incident.sourceIp,
    ...(source.reverseDns === null ? {} : { hostname: source.reverseDns }),
    ...(source.country === null ? {} : { location: { country: source.country } }),
    ...(Object.keys(as).length === 0 ? {} : { autonomous_system: as }),
  }
}

const encodeEvent = Schema.encodeSync(AlertEvent)
const encodeIncident = Schema.encodeSync(AlertIncident)

export const ocsfDetectionFinding = (message: AlertMessage, ctx: FormatContext): Record<string, unknown> => {
  const { incident } = message
  const activity = ACTIVITIES[message.type]
  const severity = SEVERITY_IDS[incident.severity]
  const isTest = message.type === "webhook.test"
  const sensor = { uid: incident.sensor.id, name: incident.sensor.name }
  // The class has no top-level src_endpoint in 1.x: the attacker's address is each evidence's src_endpoint.ip,
  // and an observable says where it is. With no event in the body, one evidence still carries it.
  const evidences =
    incident.events.length > 0
      ? incident.events.map((event) => ({
          uid: event.id,
          name: event.type,
          src_endpoint: { ...sourceEndpoint(incident), ...portField(event.sourcePort) },
          dst_endpoint: { ...sensor, svc_name: event.service, ...portField(event.port) },
          // The event as the native body has it, attacker input included: data, never interpreted.
          data: encodeEvent(event),
        }))
      : [{ name: "incident.sourceIp", src_endpoint: sourceEndpoint(incident) }]
  return {
    activity_id: activity.id,
    activity_name: activity.name,
    category_uid: CATEGORY_UID,
    category_name: "Findings",
    class_uid: CLASS_UID,
    class_name: "Detection Finding",
    type_uid: CLASS_UID * 100 + activity.id,
    type_name: `Detection Finding: ${activity.name}`,
    time: message.createdAt.getTime(),
    severity_id: severity.id,
    severity: severity.name,
    status_id: activity.statusId,
    status: activity.status,
    message: isTest ? `Test delivery, not a real incident: ${incident.title}` : incident.title,
    // A close is not an alert (OCSF's own example); a test should not page anyone.
    is_alert: activity.id !== 3 && !isTest,
    start_time: incident.firstSeenAt.getTime(),
    end_time: incident.lastSeenAt.getTime(),
    count: incident.eventCount,
    finding_info: {
      uid: incident.id,
      title: incident.title,
      desc: incident.narrative,
      types: isTest ? ["Deception", "Test"] : ["Deception"],
      first_seen_time: incident.firstSeenAt.getTime(),
      last_seen_time: incident.lastSeenAt.getTime(),
      src_url: incident.url,
      attacks: attacksOf(incident.techniques),
    },
    remediation: { desc: incident.recommendedAction },
    // The sensor is the decoy that was attacked: the affected resource and device.
    resources: [
      { ...sensor, type: "Decoy sensor", role_id: 1, role: "Target", data: { profile: incident.sensor.profile } },
    ],
    device: { ...sensor, type_id: 99, type: "Decoy sensor" },
    evidences,
    observables: [
      { name: "evidences.src_endpoint.ip", type_id: 2, type: "IP Address", value: incident.sourceIp },
      ...(incident.source?.reverseDns == null
        ? []
        : [
            {
              name: "evidences.src_endpoint.hostname",
              type_id: 1,
              type: "Hostname",
              value: incident.source.reverseDns,
            },
          ]),
    ],
    metadata: {
      version: OCSF_VERSION,
      // The message id: the same on every retry of one delivery, so a receiver can drop duplicates.
      uid: message.id,
      correlation_uid: incident.id,
      product: { name: ctx.product.name, vendor_name: ctx.product.vendor, version: ctx.product.version },
      ...(isTest ? { labels: ["test"] } : {}),
    },
    // The native incident but its events, which are the evidences already: the finding stays near the native
    // body's size (which is bounded), not twice it.
    unmapped: {
      type: message.type,
      incident: withoutEvents(encodeIncident(incident)),
      ...(message.truncated === true ? { truncated: true } : {}),
    },
  }
}

const withoutEvents = (incident: Record<string, unknown>): Record<string, unknown> => {
  const { events: _events, ...rest } = incident
  return rest
}

/**
 * What a `webhook`, `syslog` or `splunk_hec` channel carries: the native body exactly as stored (`stored`, the
 * parsed JSON, so its values read as the webhook's do), or for an incident message in the OCSF format its Detection
 * Finding. A sensor-health message is not a finding: it stays native (channels in the OCSF format cannot opt in to
 * it; this covers one that did before).
 */
export const payloadOf = (
  format: ChannelFormat,
  message: ChannelMessage,
  stored: unknown,
  context: FormatContext,
): unknown => (format === "ocsf" && "incident" in message ? ocsfDetectionFinding(message, context) : stored)
