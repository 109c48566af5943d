import { Schema } from "effect"
import { hecEvent } from "../../domain/channels/hec.ts"
import type { ChannelFormat, ChannelKind, ChannelMessage, FormatContext } from "../../domain/channels/kinds.ts"
import { ocsfDetectionFinding } from "../../domain/channels/ocsf.ts"
import { slackMessage } from "../../domain/channels/slack.ts"
import { syslogMessage } from "../../domain/channels/syslog.ts"
import { teamsMessage } from "../../domain/channels/teams.ts"
import { SensorWebhookBody } from "../../domain/sensorHealthPayload.ts"
import { WebhookBody } from "../../domain/webhookBody.ts"

/**
 * D47: what a `webhook`, `syslog` or `splunk_hec` channel carries: the native body exactly as stored (`stored`, the
 * parsed JSON, so its values read as the webhook's do), or for an incident message in the OCSF format its Detection
 * Finding. A sensor-health message is not a finding: it stays native (channels in the OCSF format cannot opt in to
 * it; this covers one that did before).
 */
const payloadOf = (format: ChannelFormat, message: ChannelMessage, stored: unknown, context: FormatContext): unknown =>
  format === "ocsf" && "incident" in message ? ocsfDetectionFinding(message, context) : stored

/**
 * The bytes a channel of this kind and format sends for a stored message (D46: a kind's formatter): `message` is the
 * stored body decoded, `stored` the same body as plain parsed JSON.
 */
export const renderForKind = (
  kind: ChannelKind,
  format: ChannelFormat,
  message: ChannelMessage,
  stored: unknown,
  context: FormatContext,
): string => {
  switch (kind) {
    case "webhook":
      return JSON.stringify(payloadOf(format, message, stored, context))
    case "slack":
      return JSON.stringify(slackMessage(message, context))
    case "teams":
      return JSON.stringify(teamsMessage(message, context))
    case "syslog":
      return syslogMessage(message, context, payloadOf(format, message, stored, context))
    case "splunk_hec":
      return hecEvent(message, context, payloadOf(format, message, stored, context), {
        sourcetype: format === "ocsf" ? "ocsf:detection_finding" : "decoy:incident",
      })
  }
}

const decodeMessage = Schema.decodeUnknownEither(Schema.Union(WebhookBody, SensorWebhookBody))

/**
 * A stored delivery body (the native JSON the outbox wrote) rendered for a kind and format, as the sender sends it;
 * undefined when the stored text is not a message this service writes.
 */
export const renderStored = (
  kind: ChannelKind,
  format: ChannelFormat,
  storedBody: string,
  context: FormatContext,
): string | undefined => {
  let stored: unknown
  try {
    stored = JSON.parse(storedBody)
  } catch {
    return undefined
  }
  const decoded = decodeMessage(stored)
  return decoded._tag === "Left" ? undefined : renderForKind(kind, format, decoded.right, stored, context)
}
