import type { AlertMessage } from "../alertMessage.ts"
import { UNKNOWN_SOURCE } from "../enrichment.ts"
import { utf8Length } from "../sanitize.ts"
import type { SensorWebhookBody } from "../sensorHealthPayload.ts"
import { splitServiceText } from "../serviceText.ts"
import {
  ATTACKER_SPAN_MAX,
  CUT_MARK,
  chatTime,
  cutCodePoints,
  defang,
  EMPTY_MARK,
  INCIDENT_LEADS,
  INCIDENT_LINES,
  isAppLink,
  signalLines,
  visibleText,
} from "./chatText.ts"
import { type ChannelMessage, type FormatContext, isSensorMessage } from "./kinds.ts"

/**
 * The text of an alert email: one subject, a plain-text part and an HTML part, both rendered from the same list of
 * blocks, so they carry the same facts in the same order. Pure.
 *
 * Attacker text stays inert as in chat messages (chatText.ts):
 * - Every piece of text is made visible (`visibleText`: controls, bidi and zero-width characters shown, never acted on)
 *   and defanged (`defang`: `hxxps[:]//evil[.]example`), service text too, so no mail client turns it into a link.
 * - Attacker text (the values service text quotes, sensor names, reverse DNS names, ids) is shown in the text part as a
 *   JSON string literal (its `"` and `\` escaped, so a value cannot close its quotes and pass for service text), and in
 *   the HTML part inside `<code>`. A value is cut to ATTACKER_SPAN_MAX code points; the cut mark is outside the value.
 * - HTML: every text is escaped (`& < > " '`); styles are inline (no stylesheet, no remote image, no script, no form);
 *   the only `<a>` elements link to APP_URL (`isAppLink`): the incident's or sensor's console page, or a confirmation
 *   page. No other URL is an attribute anywhere.
 * - Subject: one line of at most SUBJECT_MAX code points (cut with CUT_MARK), made visible, so no CR or LF can add a
 *   header.
 * - Text part: lines of at most LINE_MAX_OCTETS octets (RFC 5322 section 2.1.1: 998), the whole part and the HTML part
 *   each at most PART_MAX_BYTES; longer texts are shortened, then fewer events shown.
 * - A footer says why the recipient gets the mail; there is no unsubscribe link: admins remove recipients.
 */

export interface EmailContent {
  readonly subject: string
  readonly text: string
  readonly html: string
}

/** Why a recipient gets an alert: the channel and its organization (the footer names both). */
export interface EmailRecipient {
  readonly channelId: string
  /** The organization's name, as an admin typed it. */
  readonly organization: string
}

/** The longest subject, in code points (cut mark included). */
export const SUBJECT_MAX = 200

/** The longest line of the text part, in octets, without its line break (RFC 5322 section 2.1.1). */
export const LINE_MAX_OCTETS = 998

/** The largest text part and the largest HTML part, in UTF-8 bytes. */
export const PART_MAX_BYTES = 64 * 1024

/** How many of the newest events an email shows at most. */
export const EMAIL_EVENTS_SHOWN = 5

const TECHNIQUES_SHOWN = 12

// ---------------------------------------------------------------------------------------------------------------------
// The content model: blocks of inline pieces, rendered twice.

type Inline =
  /** Service, admin or catalog text. */
  | { readonly kind: "words"; readonly text: string }
  /** Attacker text, already cut: a JSON string literal in text, `<code>` in HTML. */
  | { readonly kind: "value"; readonly text: string }
  /** A mark the service writes about a value (cut, empty): never inside a value. */
  | { readonly kind: "mark"; readonly text: string }

type Inlines = ReadonlyArray<Inline>

type Tone = "critical" | "high" | "medium" | "low" | "info" | "good"

type Block =
  | { readonly kind: "heading"; readonly text: string; readonly tone: Tone }
  | { readonly kind: "section"; readonly text: string }
  | { readonly kind: "paragraph"; readonly inlines: Inlines; readonly style?: "strong" | "alert" | "subtle" }
  | { readonly kind: "facts"; readonly rows: ReadonlyArray<{ readonly label: string; readonly value: Inlines }> }
  | { readonly kind: "list"; readonly items: ReadonlyArray<Inlines> }
  | { readonly kind: "link"; readonly label: string; readonly url: string }
  | { readonly kind: "footer"; readonly inlines: Inlines }

const words = (text: string): Inline => ({ kind: "words", text })
const mark = (text: string): Inline => ({ kind: "mark", text })
const CUT: Inline = mark(` ${CUT_MARK}`)

/** Attacker text as a value, cut to `max` code points (then the cut mark); an empty value is EMPTY_MARK. */
const value = (raw: string, max = ATTACKER_SPAN_MAX): Inlines => {
  if (raw === "") return [mark(EMPTY_MARK)]
  const { text, cut } = cutCodePoints(raw, max)
  return cut ? [{ kind: "value", text }, CUT] : [{ kind: "value", text }]
}

/**
 * What a value costs of a text's budget besides its code points: its markup (`<code style=…>`, ~100 bytes) is worth
 * about this many code points, so a text of many short values is bounded like a text of long ones.
 */
const VALUE_COST = 12

/**
 * Service text (titles, narratives, summaries) as inlines, each value it quotes an attacker value: at most `limit` code
 * points of text in all, then the cut mark.
 */
const serviceText = (text: string, limit: number): Inlines => {
  const out: Array<Inline> = []
  let left = limit
  for (const part of splitServiceText(text)) {
    if (left <= 0) {
      out.push(CUT)
      break
    }
    const length = Array.from(part.text).length
    if (part.quoted) {
      const max = Math.min(ATTACKER_SPAN_MAX, left)
      // value() puts its own mark after a value it cut.
      out.push(...value(part.text, max))
      if (length > max && max < ATTACKER_SPAN_MAX) break
      left -= Math.min(length, max) + VALUE_COST
    } else {
      out.push(words(cutCodePoints(part.text, left).text))
      if (length > left) {
        out.push(CUT)
        break
      }
      left -= length
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------------
// Plain text

/** Text made inert for any reader: every character visible, URL-like text defanged. */
const inert = (s: string): string => defang(visibleText(s))

const inlineText = (inline: Inline): string => {
  switch (inline.kind) {
    case "words":
      return inert(inline.text)
    case "value":
      return `"${inert(inline.text).replace(/[\\"]/g, "\\$&")}"`
    case "mark":
      return inline.text
  }
}

const inlinesText = (inlines: Inlines): string => inlines.map(inlineText).join("")

/** A line cut into lines of at most LINE_MAX_OCTETS octets, at a space where one is in the second half. */
const fitLine = (line: string): ReadonlyArray<string> => {
  if (utf8Length(line) <= LINE_MAX_OCTETS) return [line]
  const out: Array<string> = []
  let rest = Array.from(line)
  while (rest.length > 0) {
    let bytes = 0
    let end = 0
    while (end < rest.length) {
      const size = utf8Length(rest[end] as string)
      if (bytes + size > LINE_MAX_OCTETS) break
      bytes += size
      end++
    }
    if (end < rest.length) {
      const space = rest.lastIndexOf(" ", end - 1)
      if (space >= end / 2) end = space + 1
    }
    out.push(rest.slice(0, end).join(""))
    rest = rest.slice(end)
  }
  return out
}

/** A heading's underline, as long as the heading (at most 78). */
const underline = (text: string, ch: string): string => ch.repeat(Math.min(78, Math.max(3, Array.from(text).length)))

const blockText = (block: Block): ReadonlyArray<string> => {
  switch (block.kind) {
    case "heading": {
      const t = inert(block.text)
      return [t, underline(t, "=")]
    }
    case "section": {
      const t = inert(block.text)
      return [t, underline(t, "-")]
    }
    case "paragraph":
      return [inlinesText(block.inlines)]
    case "facts":
      return block.rows.map((row) => `${inert(row.label)}: ${inlinesText(row.value)}`)
    case "list":
      return block.items.map((item) => `- ${inlinesText(item)}`)
    case "link":
      return [`${inert(block.label)}: ${block.url}`]
    case "footer":
      return ["-- ", inlinesText(block.inlines)]
  }
}

const renderText = (blocks: ReadonlyArray<Block>): string =>
  `${blocks.map((block) => blockText(block).flatMap(fitLine).join("\n")).join("\n\n")}\n`

// ---------------------------------------------------------------------------------------------------------------------
// HTML

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }

/** The five characters HTML gives a meaning to, as character references. */
export const htmlEscape = (s: string): string => s.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch] ?? ch)

const FONT = "-apple-system,BlinkMacSystemFont,Segoe UI,Roboto,Helvetica,Arial,sans-serif"
const MONO = "Menlo,Consolas,monospace"

const STYLE = {
  body: "margin:0;padding:0;background:#f3f4f6;",
  page: `max-width:680px;margin:0 auto;padding:24px;background:#ffffff;font-family:${FONT};font-size:14px;line-height:1.5;color:#111827;`,
  heading: "margin:0 0 4px 0;font-size:20px;line-height:1.3;",
  section: "margin:20px 0 6px 0;font-size:15px;line-height:1.3;color:#111827;",
  paragraph: "margin:0 0 10px 0;",
  strong: "margin:0 0 10px 0;font-size:16px;font-weight:bold;",
  alert: "margin:0 0 10px 0;font-weight:bold;color:#991b1b;",
  subtle: "margin:0 0 10px 0;color:#4b5563;",
  code: `font-family:${MONO};background:#f3f4f6;padding:0 3px;white-space:pre-wrap;word-break:break-all;`,
  mark: "color:#6b7280;",
  facts: "border-collapse:collapse;margin:8px 0 10px 0;",
  factLabel:
    "text-align:left;vertical-align:top;padding:2px 16px 2px 0;color:#4b5563;font-weight:normal;white-space:nowrap;",
  factValue: "vertical-align:top;padding:2px 0;",
  list: "margin:0 0 10px 0;padding-left:20px;",
  item: "margin:0 0 4px 0;",
  button:
    "display:inline-block;padding:8px 14px;background:#1d4ed8;color:#ffffff;text-decoration:none;border-radius:4px;font-weight:bold;",
  linkText: "margin:0 0 10px 0;font-size:12px;color:#6b7280;word-break:break-all;",
  rule: "border:0;border-top:1px solid #e5e7eb;margin:24px 0 12px 0;",
  footer: "margin:0;font-size:12px;color:#6b7280;",
} as const

const TONES: Record<Tone, string> = {
  critical: "#991b1b",
  high: "#c2410c",
  medium: "#a16207",
  low: "#1d4ed8",
  info: "#111827",
  good: "#15803d",
}

const inlineHtml = (inline: Inline): string => {
  switch (inline.kind) {
    case "words":
      return htmlEscape(inert(inline.text))
    case "value":
      return `<code style="${STYLE.code}">${htmlEscape(inert(inline.text))}</code>`
    case "mark":
      return `<em style="${STYLE.mark}">${htmlEscape(inline.text)}</em>`
  }
}

const inlinesHtml = (inlines: Inlines): string => inlines.map(inlineHtml).join("")

const blockHtml = (block: Block, appUrl: string): string => {
  switch (block.kind) {
    case "heading":
      return `<h1 style="${STYLE.heading}color:${TONES[block.tone]};">${htmlEscape(inert(block.text))}</h1>`
    case "section":
      return `<h2 style="${STYLE.section}">${htmlEscape(inert(block.text))}</h2>`
    case "paragraph":
      return `<p style="${STYLE[block.style ?? "paragraph"]}">${inlinesHtml(block.inlines)}</p>`
    case "facts":
      return [
        `<table role="presentation" style="${STYLE.facts}">`,
        ...block.rows.map(
          (row) =>
            `<tr><th scope="row" style="${STYLE.factLabel}">${htmlEscape(inert(row.label))}</th><td style="${STYLE.factValue}">${inlinesHtml(row.value)}</td></tr>`,
        ),
        "</table>",
      ].join("\n")
    case "list":
      return [
        `<ul style="${STYLE.list}">`,
        ...block.items.map((item) => `<li style="${STYLE.item}">${inlinesHtml(item)}</li>`),
        "</ul>",
      ].join("\n")
    case "link":
      // The builders only make link blocks for app links; checked again here, where the attribute is written.
      return isAppLink(block.url, appUrl)
        ? [
            `<p style="${STYLE.paragraph}"><a href="${htmlEscape(block.url)}" style="${STYLE.button}">${htmlEscape(inert(block.label))}</a></p>`,
            `<p style="${STYLE.linkText}">${htmlEscape(block.url)}</p>`,
          ].join("\n")
        : ""
    case "footer":
      return `<hr style="${STYLE.rule}">\n<p style="${STYLE.footer}">${inlinesHtml(block.inlines)}</p>`
  }
}

const renderHtml = (subject: string, blocks: ReadonlyArray<Block>, appUrl: string): string =>
  [
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${htmlEscape(subject)}</title>`,
    "</head>",
    `<body style="${STYLE.body}">`,
    `<div style="${STYLE.page}">`,
    ...blocks.map((block) => blockHtml(block, appUrl)).filter((html) => html !== ""),
    "</div>",
    "</body>",
    "</html>",
    "",
  ].join("\n")

// ---------------------------------------------------------------------------------------------------------------------
// Subject

/** One line: `prefix` and the inlines as in the text part, at most SUBJECT_MAX code points. */
const subjectLine = (inlines: Inlines): string => {
  const line = inlinesText(inlines)
  if (Array.from(line).length <= SUBJECT_MAX) return line
  const { text } = cutCodePoints(line, SUBJECT_MAX - CUT_MARK.length - 1)
  return `${text.trimEnd()} ${CUT_MARK}`
}

// ---------------------------------------------------------------------------------------------------------------------
// Alert emails

/** How much of each text an email shows: the first that keeps both parts within PART_MAX_BYTES is used. */
interface Budget {
  readonly title: number
  readonly narrative: number
  readonly action: number
  readonly summary: number
  readonly events: number
}

const BUDGETS: ReadonlyArray<Budget> = [
  { title: 500, narrative: 2000, action: 1000, summary: 400, events: EMAIL_EVENTS_SHOWN },
  { title: 300, narrative: 800, action: 400, summary: 200, events: 3 },
  { title: 120, narrative: 200, action: 200, summary: 100, events: 1 },
]

const severityTone = (severity: string): Tone =>
  severity === "critical" || severity === "high" || severity === "medium" || severity === "low" ? severity : "info"

const footer = (context: FormatContext, recipient: EmailRecipient | undefined): Block => ({
  kind: "footer",
  inlines:
    recipient === undefined
      ? [
          words(
            `You get this email because this address is a recipient of an alert channel of ${context.product.name}.`,
          ),
        ]
      : [
          words("You get this email because this address is a recipient of alert channel "),
          ...value(recipient.channelId, 64),
          words(" of the organization "),
          ...value(recipient.organization),
          words(". To stop getting these emails, ask an admin of the organization to remove this address."),
        ],
})

const incidentBlocks = (message: AlertMessage, context: FormatContext, budget: Budget): Array<Block> => {
  const i = message.incident
  const source = i.source ?? UNKNOWN_SOURCE
  const blocks: Array<Block> = [
    { kind: "heading", text: `${INCIDENT_LEADS[message.type]} (${i.severity})`, tone: severityTone(i.severity) },
    { kind: "paragraph", inlines: [words(INCIDENT_LINES[message.type])], style: "subtle" },
    {
      kind: "paragraph",
      inlines: i.title === "" ? [mark("(no title)")] : serviceText(i.title, budget.title),
      style: "strong",
    },
    ...signalLines(i).map((line): Block => ({ kind: "paragraph", inlines: [words(line)], style: "alert" })),
    {
      kind: "facts",
      rows: [
        { label: "Severity", value: [words(i.severity)] },
        { label: "Sensor", value: [...value(i.sensor.name), words(" ("), ...value(i.sensor.profile, 64), words(")")] },
        { label: "Source IP", value: value(i.sourceIp, 64) },
        ...(source.reverseDns === null ? [] : [{ label: "Reverse DNS", value: value(source.reverseDns, 253) }]),
        ...(source.asn === null && source.asOrganization === null
          ? []
          : [
              {
                label: "Autonomous system",
                value: [
                  ...(source.asn === null ? [] : [words(`AS${source.asn}`)]),
                  ...(source.asn !== null && source.asOrganization !== null ? [words(" ")] : []),
                  ...(source.asOrganization === null ? [] : value(source.asOrganization)),
                ],
              },
            ]),
        ...(source.country === null ? [] : [{ label: "Country", value: [words(source.country)] }]),
        { label: "Events", value: [words(String(i.eventCount))] },
        { label: "First seen", value: [words(chatTime(i.firstSeenAt))] },
        { label: "Last seen", value: [words(chatTime(i.lastSeenAt))] },
        { label: "Incident", value: value(i.id, 64) },
      ],
    },
  ]
  if (i.narrative !== "") {
    blocks.push(
      { kind: "section", text: "What happened" },
      { kind: "paragraph", inlines: serviceText(i.narrative, budget.narrative) },
    )
  }
  if (i.recommendedAction !== "") {
    blocks.push(
      { kind: "section", text: "Recommended action" },
      { kind: "paragraph", inlines: serviceText(i.recommendedAction, budget.action) },
    )
  }
  if (i.techniques.length > 0) {
    const more = i.techniques.length - TECHNIQUES_SHOWN
    blocks.push(
      { kind: "section", text: "Techniques" },
      {
        kind: "list",
        items: [
          ...i.techniques
            .slice(0, TECHNIQUES_SHOWN)
            .map((t) => [words(`${cutCodePoints(t.id, 32).text} ${cutCodePoints(t.name, 120).text}`)]),
          ...(more > 0 ? [[words(`and ${more} more`)]] : []),
        ],
      },
    )
  }
  const newest = budget.events > 0 ? i.events.slice(-budget.events).reverse() : []
  if (newest.length > 0) {
    const known = Math.max(i.events.length + (i.eventsLeftOut ?? 0), i.eventCount)
    blocks.push(
      { kind: "section", text: `Newest events (${newest.length} of ${known})` },
      {
        kind: "list",
        items: newest.map((e) => [words(`${chatTime(e.time)}: `), ...serviceText(e.summary, budget.summary)]),
      },
    )
  }
  if (message.truncated === true) {
    blocks.push({
      kind: "paragraph",
      inlines: [words("Some attacker input was cut for size: the console has all of it.")],
      style: "subtle",
    })
  }
  if (isAppLink(i.url, context.appUrl)) blocks.push({ kind: "link", label: "Open in console", url: i.url })
  return blocks
}

const sensorBlocks = (message: SensorWebhookBody, context: FormatContext): Array<Block> => {
  const s = message.sensor
  const silent = message.type === "sensor.silent"
  const page = `${context.appUrl}/settings/sensors/${encodeURIComponent(s.id)}`
  return [
    { kind: "heading", text: silent ? "Sensor silent" : "Sensor recovered", tone: silent ? "high" : "good" },
    {
      kind: "paragraph",
      inlines: [
        words("Sensor "),
        ...value(s.name),
        words(silent ? " missed three heartbeats in a row." : " is heard from again."),
      ],
      style: "strong",
    },
    {
      kind: "facts",
      rows: [
        { label: "Sensor", value: value(s.name) },
        { label: "Profile", value: value(s.profile, 64) },
        { label: "Last heard from", value: [words(s.lastSeenAt === null ? "never" : chatTime(s.lastSeenAt))] },
        { label: "Sensor id", value: value(s.id, 64) },
      ],
    },
    ...(silent
      ? [
          {
            kind: "paragraph",
            inlines: [words("A silent decoy is a blind spot: check that it runs and can reach the service.")],
            style: "subtle",
          } as const,
        ]
      : []),
    ...(isAppLink(page, context.appUrl)
      ? [{ kind: "link", label: "Open the sensor in console", url: page } as const]
      : []),
  ]
}

const subjectOf = (message: ChannelMessage): Inlines => {
  if (isSensorMessage(message)) {
    return [
      words("Sensor "),
      ...value(message.sensor.name, SUBJECT_MAX),
      words(message.type === "sensor.silent" ? " went silent" : " recovered"),
    ]
  }
  const i = message.incident
  const prefix = message.type === "webhook.test" ? "[test] " : `[${i.severity}] `
  return [words(prefix), ...(i.title === "" ? [mark("(no title)")] : serviceText(i.title, SUBJECT_MAX))]
}

const fits = (content: EmailContent): boolean =>
  utf8Length(content.text) <= PART_MAX_BYTES && utf8Length(content.html) <= PART_MAX_BYTES

/** Both parts from the same blocks. */
const render = (subject: string, blocks: ReadonlyArray<Block>, appUrl: string): EmailContent => ({
  subject,
  text: renderText(blocks),
  html: renderHtml(subject, blocks, appUrl),
})

/**
 * One alert email for a stored channel message. `recipient` names the channel and organization in the footer (without
 * it the footer names the product).
 */
export const emailContent = (
  message: ChannelMessage,
  context: FormatContext,
  recipient?: EmailRecipient,
): EmailContent => {
  const subject = subjectLine(subjectOf(message))
  const end = footer(context, recipient)
  if (isSensorMessage(message)) return render(subject, [...sensorBlocks(message, context), end], context.appUrl)
  for (const budget of BUDGETS) {
    const content = render(subject, [...incidentBlocks(message, context, budget), end], context.appUrl)
    if (fits(content)) return content
  }
  // Not reached with the bounds above (every value is cut, at most 8 bytes shown per code point); kept as a guarantee.
  return render(
    subject,
    [
      ...incidentBlocks(message, context, { title: 60, narrative: 0, action: 0, summary: 0, events: 0 }),
      { kind: "paragraph", inlines: [words("This alert was too large for an email: the console has all of it.")] },
      end,
    ],
    context.appUrl,
  )
}

// ---------------------------------------------------------------------------------------------------------------------
// Confirmation

/** The mail asking a recipient to confirm before receiving alerts. */
export const confirmationEmail = (input: {
  readonly organization: string
  readonly channelId: string
  readonly address: string
  readonly link: string
  readonly expiresAt: Date
  readonly appUrl: string
}): EmailContent => {
  const subject = subjectLine([words("Confirm alert emails for "), ...value(input.organization, 120)])
  const blocks: Array<Block> = [
    { kind: "heading", text: "Confirm alert emails", tone: "info" },
    {
      kind: "paragraph",
      inlines: [
        words("An admin of the organization "),
        ...value(input.organization),
        words(" added "),
        ...value(input.address),
        words(" as a recipient of alert channel "),
        ...value(input.channelId, 64),
        words(
          ". Alerts about the organization's decoys (incidents and sensor health) are sent to this address only after it is confirmed.",
        ),
      ],
    },
    isAppLink(input.link, input.appUrl)
      ? { kind: "link", label: "Confirm this address", url: input.link }
      : {
          kind: "paragraph",
          inlines: [
            words("The confirmation link could not be made: ask an admin of the organization to send it again."),
          ],
          style: "alert",
        },
    {
      kind: "paragraph",
      inlines: [
        words(
          `The link works until ${chatTime(input.expiresAt)}. If you did not expect this email, ignore it: nothing is sent to an address that is not confirmed.`,
        ),
      ],
      style: "subtle",
    },
    {
      kind: "footer",
      inlines: [
        words("You get this email because an admin of the organization "),
        ...value(input.organization),
        words(" added this address to alert channel "),
        ...value(input.channelId, 64),
        words("."),
      ],
    },
  ]
  return render(subject, blocks, input.appUrl)
}
