import type { SensorWebhookBody } from "../sensorHealthPayload.ts"
import type { WebhookBody } from "../webhookBody.ts"

/**
 * D46: a channel has a kind; a kind is a formatter (this folder: pure functions from the stored message to the bytes
 * the receiver takes) and a transport (platform/outbound). The outbox stores every delivery in the native shape
 * (the spec's webhook body, or a sensor-health body); the kind's formatter renders it at send time, so a retry
 * renders the same bytes from the same stored row.
 */
export const CHANNEL_KINDS = ["webhook", "slack", "teams", "syslog", "splunk_hec"] as const
export type ChannelKind = (typeof CHANNEL_KINDS)[number]

/** D47: the body a `webhook`, `syslog` or `splunk_hec` channel sends: the native shape, or OCSF Detection Finding. */
export const CHANNEL_FORMATS = ["native", "ocsf"] as const
export type ChannelFormat = (typeof CHANNEL_FORMATS)[number]

/** The kinds that may send OCSF (chat kinds render a message for people). */
export const OCSF_KINDS: ReadonlyArray<ChannelKind> = ["webhook", "syslog", "splunk_hec"]

/** A stored delivery body, parsed: an incident message (`incident.*`, `webhook.test`) or a sensor-health one. */
export type ChannelMessage = WebhookBody | SensorWebhookBody

export const isSensorMessage = (m: ChannelMessage): m is SensorWebhookBody =>
  m.type === "sensor.silent" || m.type === "sensor.recovered"

/** What every formatter may use besides the message. */
export interface FormatContext {
  /** APP_URL without a trailing slash: the only place chat messages link to. */
  readonly appUrl: string
  /** The product's name and version, for OCSF `metadata.product` and syslog APP-NAME. */
  readonly product: {
    readonly name: string
    readonly vendor: string
    readonly version: string
    /** A token form of the name: syslog APP-NAME, HEC `source`. */
    readonly id: string
  }
  /** The sending host's name (syslog HOSTNAME, HEC `host`). */
  readonly hostname: string
}
