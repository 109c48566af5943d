import type { AlertMessage } from "../alertMessage.ts"
import { UNKNOWN_SOURCE } from "../enrichment.ts"
import type { SensorWebhookBody } from "../sensorHealthPayload.ts"
import {
  chatTime,
  cutCodePoints,
  INCIDENT_LEADS,
  INCIDENT_LINES,
  isAppLink,
  signalLines,
  slackCode,
  slackPlain,
  slackServiceText,
} from "./chatText.ts"
import { type ChannelKindSpec, type ChannelMessage, type FormatContext, isSensorMessage } from "./kinds.ts"

/**
 * A `slack` channel posts a Block Kit message to an incoming-webhook URL. Attacker text is only in code spans,
 * every mrkdwn text is escaped and sent `verbatim` (see chatText.ts), and the one link is the incident's console page.
 * Sizes stay within Slack's documented limits (https://api.slack.com/reference/block-kit/blocks): at most 50 blocks,
 * section text 3000 characters, header 150, 10 fields of 2000, 10 context elements, button url 3000, action_id 255.
 */

/** Slack's limits this formatter keeps to. */
export const SLACK_LIMITS = {
  blocks: 50,
  sectionText: 3000,
  headerText: 150,
  fields: 10,
  fieldText: 2000,
  contextElements: 10,
  buttonText: 75,
  buttonUrl: 3000,
  actionId: 255,
} as const

/** How many of the newest events a message shows. */
export const SLACK_EVENTS_SHOWN = 5

/** Each event summary's share of the events section. */
const EVENT_LINE_MAX = 500
const TITLE_MAX = 1500

type Text = { readonly type: "mrkdwn"; readonly text: string; readonly verbatim: true }
const mrkdwn = (text: string): Text => ({ type: "mrkdwn", text, verbatim: true })
const plain = (text: string) => ({ type: "plain_text", text, emoji: false }) as const

const severityLabel = (s: string): string => slackPlain(s.charAt(0).toUpperCase() + s.slice(1))

/** `head` and as many of `lines` as fit in `limit` characters, then how many were left out. */
const linesWithin = (head: string, lines: ReadonlyArray<string>, limit: number): string => {
  let out = head
  for (let k = 0; k < lines.length; k++) {
    const more = `\nand ${lines.length - k} more`
    const line = `\n${lines[k]}`
    const last = k === lines.length - 1
    if (out.length + line.length + (last ? 0 : more.length) > limit) return `${out}${more}`
    out += line
  }
  return out
}

/**
 * What enrichment knew of the source address, one line each, or undefined when nothing: the reverse DNS name and the
 * AS organization are attacker text (code spans, escaped, defanged), the AS number and the country service-checked.
 */
const sourceField = (body: AlertMessage): string | undefined => {
  const source = body.incident.source ?? UNKNOWN_SOURCE
  const lines = [
    ...(source.reverseDns === null ? [] : [`Reverse DNS ${slackCode(source.reverseDns, { max: 253 })}`]),
    ...(source.asn === null && source.asOrganization === null
      ? []
      : [
          [
            source.asn === null ? "AS" : `AS${source.asn}`,
            source.asOrganization === null ? "" : slackCode(source.asOrganization),
          ]
            .filter((part) => part !== "")
            .join(" "),
        ]),
    ...(source.country === null ? [] : [`Country ${slackPlain(source.country)}`]),
  ]
  return lines.length === 0 ? undefined : `*Source*\n${lines.join("\n")}`
}

const header = (text: string) => ({ type: "header", text: plain(text.slice(0, SLACK_LIMITS.headerText)) })

const incidentBlocks = (body: AlertMessage, ctx: FormatContext): Array<object> => {
  const i = body.incident
  const blocks: Array<object> = [
    header(`${INCIDENT_LEADS[body.type]} (${i.severity})`),
    { type: "section", text: mrkdwn(slackPlain(INCIDENT_LINES[body.type])) },
    // Slack refuses an empty text.
    { type: "section", text: mrkdwn(slackServiceText(i.title, TITLE_MAX) || "(no title)") },
  ]
  const signals = signalLines(i)
  if (signals.length > 0) {
    blocks.push({ type: "section", text: mrkdwn(signals.map((line) => `*${slackPlain(line)}*`).join("\n")) })
  }
  const fields = [
    `*Severity*\n${severityLabel(i.severity)}`,
    `*Sensor*\n${slackCode(i.sensor.name)} (${slackCode(i.sensor.profile, { max: 64 })})`,
    `*Source IP*\n${slackCode(i.sourceIp, { max: 64 })}`,
    ...[sourceField(body)].filter((f) => f !== undefined),
    `*Events*\n${i.eventCount}`,
    `*First seen*\n${chatTime(i.firstSeenAt)}`,
    `*Last seen*\n${chatTime(i.lastSeenAt)}`,
  ].map(mrkdwn)
  blocks.push({ type: "section", fields: fields.slice(0, SLACK_LIMITS.fields) })
  if (i.techniques.length > 0) {
    const lines = i.techniques.map(
      (t) => `• ${slackPlain(cutCodePoints(t.id, 32).text)} ${slackPlain(cutCodePoints(t.name, 120).text)}`,
    )
    blocks.push({ type: "section", text: mrkdwn(linesWithin("*Techniques*", lines, SLACK_LIMITS.sectionText)) })
  }
  const newest = i.events.slice(-SLACK_EVENTS_SHOWN).reverse()
  if (newest.length > 0) {
    const known = i.events.length + (i.eventsLeftOut ?? 0)
    const head = `*Newest events* (${newest.length} of ${Math.max(known, i.eventCount)})`
    const lines = newest.map((e) => `• ${chatTime(e.time)}: ${slackServiceText(e.summary, EVENT_LINE_MAX)}`)
    blocks.push({ type: "section", text: mrkdwn([head, ...lines].join("\n")) })
  }
  const context = [mrkdwn(`Incident ${slackCode(i.id, { max: 64 })}`)]
  if (body.truncated === true) context.push(mrkdwn("Some attacker input was cut for size: the console has all of it."))
  blocks.push({ type: "context", elements: context.slice(0, SLACK_LIMITS.contextElements) })
  if (isAppLink(i.url, ctx.appUrl)) {
    blocks.push({
      type: "actions",
      elements: [{ type: "button", text: plain("Open in console"), url: i.url, action_id: "open_incident" }],
    })
  }
  return blocks
}

const sensorBlocks = (body: SensorWebhookBody): Array<object> => {
  const s = body.sensor
  const name = `${slackCode(s.name)} (${slackCode(s.profile, { max: 64 })})`
  const seen = s.lastSeenAt === null ? "never" : chatTime(s.lastSeenAt)
  const line =
    body.type === "sensor.silent"
      ? `Sensor ${name} missed three heartbeats in a row. Last heard from: ${seen}.`
      : `Sensor ${name} is heard from again. Last heard from: ${seen}.`
  return [
    header(body.type === "sensor.silent" ? "Sensor silent" : "Sensor recovered"),
    { type: "section", text: mrkdwn(line) },
    { type: "context", elements: [mrkdwn(`Sensor ${slackCode(s.id, { max: 64 })}`)] },
  ]
}

/**
 * The notification text (shown where blocks are not: push notifications, some clients): the lead and the title or
 * sensor, attacker text in code spans and defanged, since Slack parses it without `verbatim`.
 */
const fallbackText = (message: ChannelMessage): string => {
  if (isSensorMessage(message)) {
    const lead = message.type === "sensor.silent" ? "Sensor silent" : "Sensor recovered"
    return `${lead}: ${slackCode(message.sensor.name, { max: 64 })}`
  }
  const i = message.incident
  const title = slackServiceText(i.title, 500, { spanMax: 64 })
  return `${INCIDENT_LEADS[message.type]} (${slackPlain(i.severity)}): ${title}`
}

/** The JSON payload a `slack` channel posts to its incoming webhook. */
export const slackMessage = (message: ChannelMessage, ctx: FormatContext): object => {
  const blocks = isSensorMessage(message) ? sensorBlocks(message) : incidentBlocks(message, ctx)
  return {
    text: fallbackText(message),
    blocks: blocks.slice(0, SLACK_LIMITS.blocks),
    unfurl_links: false,
    unfurl_media: false,
  }
}

/** The `slack` kind. Its incoming-webhook URL is the credential: sealed, with only its origin kept in view. */
export const slackKind: ChannelKindSpec<"slack"> = {
  name: "slack",
  label: "Slack",
  shortLabel: "Slack",
  formats: ["native"],
  formatLabel: "Slack message (Block Kit)",
  render: (_format, message, _stored, context) => JSON.stringify(slackMessage(message, context)),
  transport: "https",
  settle: { readers: "people", defaultSeconds: 30 },
  credential: { type: "sealedUrl" },
  address: {
    scheme: "https",
    noun: "URL",
    shownWhole: "admins",
    hint: ["Slack: the incoming-webhook URL (", { code: "https://hooks.slack.com/services/…" }, ")."],
  },
  added: (id) =>
    `Slack channel ${id} added. Its URL is stored sealed and will not be shown again; the list shows its origin only.`,
  replaced: "URL replaced: it is stored sealed and will not be shown again; the old one is no longer used.",
}
