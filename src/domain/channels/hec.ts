import type { ChannelKindSpec, ChannelMessage, FormatContext } from "./kinds.ts"
import { payloadOf } from "./ocsf.ts"

/**
 * The `splunk_hec` formatter: the JSON body of one `POST /services/collector/event` (Splunk's HEC event protocol),
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

/** Splunk HEC's JSON event endpoint, given to a collector URL that has no path. */
export const HEC_EVENT_PATH = "/services/collector/event"

/** The `splunk_hec` kind: the collector URL, and its token (sealed) in `Authorization: Splunk <token>`. */
export const splunkHecKind: ChannelKindSpec<"splunk_hec"> = {
  name: "splunk_hec",
  label: "Splunk HEC",
  shortLabel: "Splunk HEC",
  formats: ["native", "ocsf"],
  render: (format, message, stored, context) =>
    hecEvent(message, context, payloadOf(format, message, stored, context), {
      sourcetype: format === "ocsf" ? HEC_SOURCETYPE_OCSF : HEC_SOURCETYPE_NATIVE,
    }),
  transport: "https",
  settle: { readers: "machines" },
  credential: {
    type: "sealedToken",
    flag: "--token",
    field: "token",
    label: "HEC token",
    maxLength: 256,
    // Printable, no spaces, at most 256 characters (Splunk's are GUIDs).
    refusal: (token) =>
      token.length > 256 || !/^[\x21-\x7e]+$/.test(token)
        ? "the HEC token must be at most 256 printable characters, without spaces"
        : undefined,
    headers: (token) => ({ Authorization: `Splunk ${token}` }),
  },
  address: {
    scheme: "https",
    noun: "URL",
    defaultPath: HEC_EVENT_PATH,
    shownWhole: "admins",
    hint: [
      "Splunk HEC: the collector URL (",
      { code: "https://splunk.example.com:8088" },
      "); without a path, ",
      { code: HEC_EVENT_PATH },
      ".",
    ],
  },
  added: (id) => `Splunk HEC channel ${id} added. Its token is stored sealed and will not be shown again.`,
  replaced: "Token replaced: it is stored sealed and will not be shown again; the old one is no longer sent.",
}
