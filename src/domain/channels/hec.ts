import type { ChannelMessage, FormatContext } from "./kinds.ts"

/**
 * D46 `splunk_hec` formatter: the JSON body of one `POST /services/collector/event` (Splunk's HEC event protocol),
 * pure. The transport is the webhook's (send.ts) with `Authorization: Splunk <token>`.
 *
 * HEC's rules the body follows: `event` present and not empty (HEC answers code 12 "Event field is required" or 13
 * "Event field cannot be blank"), `time` a number (epoch seconds, milliseconds as the fraction), metadata keys
 * (`host`, `source`, `sourcetype`, `index`) strings, and `fields` flat (string values only: HEC refuses nested
 * objects there, code 15). `fields` become indexed fields, so a search can filter on them without parsing the event.
 */

/** The native body's sourcetype; an OCSF channel passes HEC_SOURCETYPE_OCSF. */
export const HEC_SOURCETYPE_NATIVE = "decoy:incident"
export const HEC_SOURCETYPE_OCSF = "ocsf:detection_finding"
export const HEC_DEFAULT_SOURCE = "decoy-incident-service"

export interface HecOptions {
  /** Omitted: the token's default index. */
  readonly index?: string
  /** Default: the product's token name (HEC_DEFAULT_SOURCE when empty). */
  readonly source?: string
  /** Default HEC_SOURCETYPE_NATIVE. */
  readonly sourcetype?: string
}

const isEmpty = (value: unknown): boolean =>
  value === undefined ||
  value === null ||
  value === "" ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0)

/** Indexed fields: flat strings only. */
const fieldsOf = (message: ChannelMessage): Record<string, string> =>
  "incident" in message
    ? {
        messageId: message.id,
        type: message.type,
        incidentId: message.incident.id,
        severity: message.incident.severity,
        sensorId: message.incident.sensor.id,
      }
    : { messageId: message.id, type: message.type, sensorId: message.sensor.id }

/**
 * The HEC event body for `message` with `payload` (a JSON value: the native body as encoded, or an OCSF finding) as
 * `event`. An empty payload (nothing HEC would accept) is replaced by `{id, type, createdAt}` of the message, so the
 * delivery still says what happened.
 */
export const hecEvent = (
  message: ChannelMessage,
  ctx: FormatContext,
  payload: unknown,
  options: HecOptions = {},
): string => {
  const ms = message.createdAt.getTime()
  const body: Record<string, unknown> = {
    // Epoch seconds with the milliseconds as a fraction (HEC takes a number; a string is refused or misread).
    ...(Number.isFinite(ms) ? { time: Math.round(ms) / 1000 } : {}),
    ...(ctx.hostname === "" ? {} : { host: ctx.hostname }),
    source: options.source ?? (ctx.product.id === "" ? HEC_DEFAULT_SOURCE : ctx.product.id),
    sourcetype: options.sourcetype ?? HEC_SOURCETYPE_NATIVE,
    ...(options.index === undefined || options.index === "" ? {} : { index: options.index }),
    fields: fieldsOf(message),
    event: isEmpty(payload)
      ? { id: message.id, type: message.type, createdAt: Number.isFinite(ms) ? message.createdAt.toISOString() : null }
      : payload,
  }
  return JSON.stringify(body)
}
