import { UNKNOWN_SOURCE } from "../enrichment.ts"
import { shortenStrings, truncateCodePoints, utf8Length } from "../sanitize.ts"
import type { ChannelKindSpec, ChannelMessage, FormatContext } from "./kinds.ts"
import { payloadOf } from "./ocsf.ts"

/**
 * The `syslog` formatter: one RFC 5424 message (no framing; the transport adds RFC 5425's octet count), pure.
 *
 *   <PRI>1 TIMESTAMP HOSTNAME APP-NAME - MSGID [decoyIncident@32473 k="v" …] BOM{"id":…}
 *
 * - PRI = facility × 8 + severity. The facility defaults to local0 (16): the facility RFC 5424 leaves to local use,
 *   the one a receiver's rules usually route an application's alerts by; an operator may choose another (0-23).
 * - Severity: incident low/medium/high/critical → notice(5)/warning(4)/err(3)/crit(2); sensor.silent warning(4),
 *   sensor.recovered notice(5), webhook.test informational(6), incident.closed informational(6) (a close is not an
 *   alarm; the incident's own severity is still in the `severity` SD param).
 * - SD-ID `decoyIncident@32473`: a private SD-ID needs an IANA enterprise number; 32473 is the one RFC 5612 reserves
 *   for documentation (and RFC 5424's own examples use). It stays until the project registers its own number.
 * - Attacker text (titles, names, events) appears only in SD param values, escaped per RFC 5424 6.3.3 with control
 *   characters replaced by U+FFFD (a value stays one line for receivers that split on newlines), and in the MSG, which
 *   is JSON with every control character (C0, DEL, C1, U+2028/9) and lone surrogate written as a \u escape. So no raw
 *   control character is ever in the message; octet-counted framing (RFC 5425) would carry one safely anyway, as it never looks for a delimiter.
 * - Size: at most SYSLOG_MESSAGE_MAX_BYTES. A larger MSG first loses the oldest events (native `incident.events`,
 *   OCSF `evidences`; SD param `eventsLeftOut` says how many), then has its strings shortened, then is replaced by a
 *   stub `{id, type, truncated}`; `truncated="true"` says something was cut. Cuts are by code point, never inside a
 *   UTF-8 sequence, and the MSG is always complete JSON.
 */

/** local0. */
export const SYSLOG_DEFAULT_FACILITY = 16
export const SYSLOG_ENTERPRISE_NUMBER = 32473
export const SYSLOG_SD_ID = `decoyIncident@${SYSLOG_ENTERPRISE_NUMBER}`
/**
 * The bound of one message in bytes (no framing): RFC 5425 requires receivers to take 2048 bytes and SHOULD take
 * 8192; common receivers accept more when configured (rsyslog's maxMessageSize, syslog-ng's log-msg-size), and a
 * native body with events is larger than 8 KiB. 64 KiB keeps every incident deliverable with most of its events.
 */
export const SYSLOG_MESSAGE_MAX_BYTES = 64 * 1024
export const SYSLOG_DEFAULT_APP_NAME = "decoy-incident-service"

export interface SyslogOptions {
  /** 0-23; default SYSLOG_DEFAULT_FACILITY (local0). Anything else falls back to the default. */
  readonly facility?: number
  /** Default SYSLOG_MESSAGE_MAX_BYTES; at least 2048 (RFC 5425's minimum every receiver takes). */
  readonly maxBytes?: number
}

/** RFC 5424 6.2.1 severities. */
export const SYSLOG_SEVERITY = {
  critical: 2,
  error: 3,
  warning: 4,
  notice: 5,
  informational: 6,
} as const

export const syslogSeverityOf = (message: ChannelMessage): number => {
  if (!("incident" in message)) {
    return message.type === "sensor.silent" ? SYSLOG_SEVERITY.warning : SYSLOG_SEVERITY.notice
  }
  if (message.type === "webhook.test" || message.type === "incident.closed") return SYSLOG_SEVERITY.informational
  switch (message.incident.severity) {
    case "critical":
      return SYSLOG_SEVERITY.critical
    case "high":
      return SYSLOG_SEVERITY.error
    case "medium":
      return SYSLOG_SEVERITY.warning
    default:
      return SYSLOG_SEVERITY.notice
  }
}

const NILVALUE = "-"
const BOM = "\uFEFF"
/** SD param values are cut to this many code points: the whole SD stays far below the message bound. */
const SD_VALUE_MAX = 256
const MAX_TECHNIQUES = 64

/** PRINTUSASCII (33-126) only, at most `max` characters, NILVALUE when nothing is left. */
const printable = (text: string, max: number): string => {
  const kept = text.replace(/[^\x21-\x7e]/g, "").slice(0, max)
  return kept === "" ? NILVALUE : kept
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
// biome-ignore lint/suspicious/noControlCharactersInRegex: replacing control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g

/** RFC 5424 6.3.3: `"`, `\` and `]` escaped with a backslash; controls and lone surrogates become U+FFFD. */
export const escapeParamValue = (value: string): string =>
  truncateCodePoints(value.replace(LONE_SURROGATE, "\uFFFD").replace(CONTROL, "\uFFFD"), SD_VALUE_MAX).replace(
    /["\\\]]/g,
    (c) => `\\${c}`,
  )

type Params = ReadonlyArray<readonly [string, string]>

const sdElement = (params: Params): string =>
  `[${SYSLOG_SD_ID}${params.map(([name, value]) => ` ${name}="${escapeParamValue(value)}"`).join("")}]`

const timestampOf = (date: Date): string => {
  const time = date.getTime()
  // toISOString is RFC 3339 with milliseconds and Z for years 0000-9999; anything else has no valid TIMESTAMP.
  if (!Number.isFinite(time)) return NILVALUE
  const year = date.getUTCFullYear()
  return year < 0 || year > 9999 ? NILVALUE : date.toISOString()
}

const baseParams = (message: ChannelMessage): Params => {
  if (!("incident" in message)) {
    const { sensor } = message
    return [
      ["messageId", message.id],
      ["type", message.type],
      ["sensorId", sensor.id],
      ["sensorName", sensor.name],
      ["sensorProfile", sensor.profile],
      ["lastSeenAt", sensor.lastSeenAt === null ? "" : timestampOf(sensor.lastSeenAt)],
    ]
  }
  const { incident } = message
  // What enrichment knew of the source address, each only when known; the reverse DNS name and the AS organization
  // are attacker text, escaped like every other value.
  const source = incident.source ?? UNKNOWN_SOURCE
  const sourceParams: Params = [
    // An inside source is the strongest breach signal: said as its own param so a SIEM rule can route on it.
    ...(source.scope === "internal" ? [["sourceScope", "internal"] as const] : []),
    ...(source.network === null ? [] : [["sourceNetwork", `${source.network.cidr} ${source.network.label}`] as const]),
    ...(source.reverseDns === null ? [] : [["sourceReverseDns", source.reverseDns] as const]),
    ...(source.asn === null ? [] : [["sourceAsn", String(source.asn)] as const]),
    ...(source.asOrganization === null ? [] : [["sourceAsOrganization", source.asOrganization] as const]),
    ...(source.country === null ? [] : [["sourceCountry", source.country] as const]),
  ]
  return [
    ["messageId", message.id],
    ["type", message.type],
    ["incidentId", incident.id],
    ["title", incident.title],
    ["severity", incident.severity],
    ["sensorId", incident.sensor.id],
    ["sensorName", incident.sensor.name],
    ["sourceIp", incident.sourceIp],
    ...sourceParams,
    ["eventCount", String(incident.eventCount)],
    [
      "techniques",
      incident.techniques
        .slice(0, MAX_TECHNIQUES)
        .map((t) => t.id)
        .join(","),
    ],
    ["url", incident.url],
  ]
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The payload's event list, oldest first: native `incident.events`, OCSF `evidences`; with a way to replace it. */
const eventList = (
  payload: unknown,
): { readonly items: ReadonlyArray<unknown>; readonly without: (drop: number) => unknown } | undefined => {
  if (!isRecord(payload)) return undefined
  const incident = payload.incident
  if (isRecord(incident) && Array.isArray(incident.events)) {
    const items: ReadonlyArray<unknown> = incident.events
    const already = typeof incident.eventsLeftOut === "number" ? incident.eventsLeftOut : 0
    return {
      items,
      without: (drop) => ({
        ...payload,
        truncated: true,
        incident: { ...incident, events: items.slice(drop), eventsLeftOut: already + drop },
      }),
    }
  }
  if (Array.isArray(payload.evidences)) {
    const items: ReadonlyArray<unknown> = payload.evidences
    return { items, without: (drop) => ({ ...payload, evidences: items.slice(drop) }) }
  }
  return undefined
}

/**
 * Compact JSON with DEL, the C1 controls and U+2028/U+2029 written as \u escapes (JSON.stringify leaves them raw):
 * the same value, and no control character at all in the MSG. They can only occur inside JSON strings.
 */
const jsonText = (value: unknown): string =>
  (JSON.stringify(value) ?? "null").replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  )

/**
 * One RFC 5424 message for `message` with `payload` (a JSON value: the native body as encoded, or an OCSF finding) as
 * its MSG. See the module comment for every field.
 */
export const syslogMessage = (
  message: ChannelMessage,
  ctx: FormatContext,
  payload: unknown,
  options: SyslogOptions = {},
): string => {
  const facility =
    options.facility !== undefined &&
    Number.isInteger(options.facility) &&
    options.facility >= 0 &&
    options.facility <= 23
      ? options.facility
      : SYSLOG_DEFAULT_FACILITY
  const maxBytes = Math.max(2048, Math.floor(options.maxBytes ?? SYSLOG_MESSAGE_MAX_BYTES))
  const header = [
    `<${facility * 8 + syslogSeverityOf(message)}>1`,
    timestampOf(message.createdAt),
    printable(ctx.hostname, 255),
    printable(ctx.product.id === "" ? SYSLOG_DEFAULT_APP_NAME : ctx.product.id.replace(/\s+/g, "-"), 48),
    NILVALUE,
    printable(message.type, 32),
  ].join(" ")
  const params = baseParams(message)
  const build = (json: string, extra: Params): string => `${header} ${sdElement([...params, ...extra])} ${BOM}${json}`
  const fits = (text: string) => utf8Length(text) <= maxBytes

  const whole = build(jsonText(payload), [])
  if (fits(whole)) return whole

  // Leave out the oldest events until the rest fits (one JSON text per try; at most a few dozen events).
  const list = eventList(payload)
  const count = list?.items.length ?? 0
  if (list !== undefined) {
    for (let drop = 1; drop <= count; drop++) {
      const attempt = build(jsonText(list.without(drop)), [
        ["eventsLeftOut", String(drop)],
        ["truncated", "true"],
      ])
      if (fits(attempt)) return attempt
    }
  }
  const leftOut: Params = count > 0 ? [["eventsLeftOut", String(count)]] : []
  const bare = list === undefined ? payload : list.without(count)
  for (const max of [1024, 256, 64]) {
    const attempt = build(jsonText(shortenStrings(bare, max)), [...leftOut, ["truncated", "true"]])
    if (fits(attempt)) return attempt
  }
  // Nothing of the payload fits: a stub that says what it was; the SD params still carry the incident's facts.
  return build(jsonText({ id: truncateCodePoints(message.id, 64), type: message.type, truncated: true }), [
    ...leftOut,
    ["truncated", "true"],
  ])
}

/** The `syslog` kind, RFC 5424 over TLS (RFC 5425). It has no secret: the server's certificate is checked. */
export const syslogKind: ChannelKindSpec<"syslog"> = {
  name: "syslog",
  label: "Syslog over TLS",
  shortLabel: "syslog",
  formats: ["native", "ocsf"],
  render: (format, message, stored, context) =>
    syslogMessage(message, context, payloadOf(format, message, stored, context)),
  transport: "syslog-tls",
  settle: { readers: "machines" },
  credential: { type: "none" },
  address: {
    scheme: "syslog+tls",
    noun: "destination",
    shownWhole: "everyone",
    hint: ["Syslog over TLS: ", { code: "syslog+tls://host[:6514]" }, " (RFC 5424 over TLS)."],
  },
  added: (id) => `Syslog channel ${id} added. It has no secret: the server's certificate is checked.`,
}
