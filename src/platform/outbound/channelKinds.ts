import { hecEvent } from "../../domain/channels/hec.ts"
import type { ChannelFormat, ChannelKind, ChannelMessage, FormatContext } from "../../domain/channels/kinds.ts"
import { ocsfDetectionFinding } from "../../domain/channels/ocsf.ts"
import { slackMessage } from "../../domain/channels/slack.ts"
import { syslogMessage } from "../../domain/channels/syslog.ts"
import { teamsMessage } from "../../domain/channels/teams.ts"

/**
 * D47: what a `webhook`, `syslog` or `splunk_hec` channel carries: the native message, or for an incident message in
 * the OCSF format its Detection Finding. A sensor-health message is not a finding: it stays native (channels in the
 * OCSF format cannot opt in to it; this covers one that did before).
 */
const payloadOf = (format: ChannelFormat, message: ChannelMessage, context: FormatContext): unknown =>
  format === "ocsf" && "incident" in message ? ocsfDetectionFinding(message, context) : message

/** The bytes a channel of this kind and format sends for a stored message (D46: a kind's formatter). */
export const renderForKind = (
  kind: ChannelKind,
  format: ChannelFormat,
  message: ChannelMessage,
  context: FormatContext,
): string => {
  switch (kind) {
    case "webhook":
      return JSON.stringify(payloadOf(format, message, context))
    case "slack":
      return JSON.stringify(slackMessage(message, context))
    case "teams":
      return JSON.stringify(teamsMessage(message, context))
    case "syslog":
      return syslogMessage(message, context, payloadOf(format, message, context))
    case "splunk_hec":
      return hecEvent(message, context, payloadOf(format, message, context), {
        sourcetype: format === "ocsf" ? "ocsf:detection_finding" : "decoy:incident",
      })
  }
}
