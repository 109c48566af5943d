import type { AlertMessage } from "../alertMessage.ts"
import { UNKNOWN_SOURCE } from "../enrichment.ts"
import type { SensorWebhookBody } from "../sensorHealthPayload.ts"
import {
  chatTime,
  cutCodePoints,
  INCIDENT_LEADS,
  INCIDENT_LINES,
  isAppLink,
  markdownEscape,
  signalLines,
  type TextRun,
  teamsCode,
  teamsPlain,
  teamsServiceRuns,
} from "./chatText.ts"
import { type ChannelKindSpec, type ChannelMessage, type FormatContext, isSensorMessage } from "./kinds.ts"

/**
 * A `teams` channel posts to a Teams Workflows webhook an Adaptive Card 1.5 in the Workflows message envelope.
 * Attacker text is only in monospace TextRuns (no markdown), defanged; TextBlock and Fact texts carry service, admin
 * or catalog text, markdown-escaped (see chatText.ts). The one link is an Action.OpenUrl to the incident's console page.
 */

export const ADAPTIVE_CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
export const ADAPTIVE_CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"

/** How many of the newest events a card shows. */
export const TEAMS_EVENTS_SHOWN = 5

/**
 * Code points of text (before it is made visible) per title and per event summary: with at most 5 events the card
 * stays well under the 28 KB Teams takes for a message.
 */
const TITLE_MAX = 400
const SUMMARY_MAX = 300
const TECHNIQUES_SHOWN = 12

const textBlock = (text: string, extra: object = {}) => ({
  type: "TextBlock",
  text: markdownEscape(text),
  wrap: true,
  ...extra,
})

const richText = (inlines: ReadonlyArray<TextRun>, extra: object = {}) => ({ type: "RichTextBlock", inlines, ...extra })

const fact = (title: string, value: string) => ({ title: markdownEscape(title), value: markdownEscape(value) })

const severityColor = (s: string): string => (s === "critical" || s === "high" ? "Attention" : "Warning")

const incidentCard = (body: AlertMessage, ctx: FormatContext) => {
  const i = body.incident
  const source = i.source ?? UNKNOWN_SOURCE
  const facts = [
    fact("Severity", i.severity),
    fact("Sensor", `${cutCodePoints(i.sensor.name, 256).text} (${cutCodePoints(i.sensor.profile, 64).text})`),
    fact("Source IP", cutCodePoints(i.sourceIp, 64).text),
    // Service-checked facts of the source address (a number, a two-letter code); its texts follow the FactSet.
    ...(source.asn === null ? [] : [fact("Autonomous system", `AS${source.asn}`)]),
    ...(source.country === null ? [] : [fact("Country", source.country)]),
    fact("Events", String(i.eventCount)),
    fact("First seen", chatTime(i.firstSeenAt)),
    fact("Last seen", chatTime(i.lastSeenAt)),
  ]
  if (i.techniques.length > 0) {
    const shown = i.techniques.slice(0, TECHNIQUES_SHOWN).map((t) => `${t.id} ${t.name}`)
    const more = i.techniques.length - TECHNIQUES_SHOWN
    facts.push(fact("Techniques", `${shown.join(", ")}${more > 0 ? `, and ${more} more` : ""}`))
  }
  const items: Array<object> = [
    textBlock(`${INCIDENT_LEADS[body.type]} (${i.severity})`, {
      weight: "Bolder",
      size: "Medium",
      color: severityColor(i.severity),
    }),
    textBlock(INCIDENT_LINES[body.type], { isSubtle: true, spacing: "None" }),
    i.title === ""
      ? textBlock("(no title)", { weight: "Bolder" })
      : richText(teamsServiceRuns(i.title, TITLE_MAX, { weight: "Bolder" })),
    ...signalLines(i).map((line) => textBlock(teamsPlain(line), { weight: "Bolder", color: "Attention" })),
    { type: "FactSet", facts },
  ]
  // The source address's reverse DNS name and AS organization are attacker text: monospace TextRuns, never markdown.
  if (source.reverseDns !== null) {
    items.push(
      richText([{ type: "TextRun", text: "Reverse DNS: ", isSubtle: true }, ...teamsCode(source.reverseDns, {}, 253)], {
        spacing: "None",
      }),
    )
  }
  if (source.asOrganization !== null) {
    items.push(
      richText([{ type: "TextRun", text: "AS organization: ", isSubtle: true }, ...teamsCode(source.asOrganization)], {
        spacing: "None",
      }),
    )
  }
  const newest = i.events.slice(-TEAMS_EVENTS_SHOWN).reverse()
  if (newest.length > 0) {
    const known = Math.max(i.events.length + (i.eventsLeftOut ?? 0), i.eventCount)
    items.push(textBlock(`Newest events (${newest.length} of ${known})`, { weight: "Bolder", separator: true }))
    for (const e of newest) {
      items.push(
        richText([
          { type: "TextRun", text: `${chatTime(e.time)}: `, isSubtle: true },
          ...teamsServiceRuns(e.summary, SUMMARY_MAX),
        ]),
      )
    }
  }
  const footer = [{ type: "TextRun", text: "Incident ", isSubtle: true } as const, ...teamsCode(i.id, {}, 64)]
  items.push(
    richText(
      footer.map((r) => ({ ...r, isSubtle: true })),
      { separator: true },
    ),
  )
  if (body.truncated === true) {
    items.push(textBlock("Some attacker input was cut for size: the console has all of it.", { isSubtle: true }))
  }
  const actions = isAppLink(i.url, ctx.appUrl) ? [{ type: "Action.OpenUrl", title: "Open in console", url: i.url }] : []
  return { items, actions }
}

const sensorCard = (body: SensorWebhookBody) => {
  const s = body.sensor
  const silent = body.type === "sensor.silent"
  return {
    items: [
      textBlock(silent ? "Sensor silent" : "Sensor recovered", {
        weight: "Bolder",
        size: "Medium",
        color: silent ? "Attention" : "Good",
      }),
      textBlock(silent ? "The sensor missed three heartbeats in a row." : "The sensor is heard from again.", {
        spacing: "None",
      }),
      {
        type: "FactSet",
        facts: [
          fact("Sensor", cutCodePoints(s.name, 256).text),
          fact("Profile", cutCodePoints(s.profile, 64).text),
          fact("Last heard from", s.lastSeenAt === null ? "never" : chatTime(s.lastSeenAt)),
          fact("Sensor id", cutCodePoints(s.id, 64).text),
        ],
      },
    ],
    actions: [],
  }
}

/** The JSON payload a `teams` channel posts to its Workflows webhook. */
export const teamsMessage = (message: ChannelMessage, ctx: FormatContext): object => {
  const { items, actions } = isSensorMessage(message) ? sensorCard(message) : incidentCard(message, ctx)
  const card = {
    $schema: ADAPTIVE_CARD_SCHEMA,
    type: "AdaptiveCard",
    version: "1.5",
    body: items,
    ...(actions.length > 0 ? { actions } : {}),
  }
  return {
    type: "message",
    attachments: [{ contentType: ADAPTIVE_CARD_CONTENT_TYPE, contentUrl: null, content: card }],
  }
}

/** The `teams` kind. Its Workflows URL is the credential: sealed, with only its origin kept in view. */
export const teamsKind: ChannelKindSpec<"teams"> = {
  name: "teams",
  label: "Microsoft Teams",
  shortLabel: "Teams",
  formats: ["native"],
  formatLabel: "Adaptive Card",
  render: (_format, message, _stored, context) => JSON.stringify(teamsMessage(message, context)),
  transport: "https",
  settle: { readers: "people", defaultSeconds: 30 },
  credential: { type: "sealedUrl" },
  address: {
    scheme: "https",
    noun: "URL",
    shownWhole: "admins",
    hint: ['Microsoft Teams: the URL of a Workflows "when a Teams webhook request is received" flow.'],
  },
  added: (id) =>
    `Microsoft Teams channel ${id} added. Its URL is stored sealed and will not be shown again; the list shows its origin only.`,
  replaced: "URL replaced: it is stored sealed and will not be shown again; the old one is no longer used.",
}
