import type { AlertMessage } from "../alertMessage.ts"
import { splitServiceText, type TextPart } from "../serviceText.ts"

/**
 * How chat messages (Slack, Teams) show text, so attacker text can never become markup, a mention or a link. Pure.
 *
 * Service-written text (titles, narratives, event summaries) quotes attacker text in double quotes, as JSON string
 * literals (`SSH login attempt as "root" from 203.0.113.7`). Chat messages split it at its quotes and show every quoted
 * part as code (Slack: an inline code span; Teams: a monospace TextRun), never as markup, and bounded in length with a
 * cut mark that sits outside the code, where attacker text never is, so it cannot be forged.
 *
 * The rules:
 * - Every character is shown: controls become their Control Pictures (line feed "␊"), invisible and format characters
 *   (zero-width, bidi overrides) become `[U+XXXX]`, a lone surrogate becomes U+FFFD. Text was sanitized when stored;
 *   this is the formatter's own guarantee, so nothing can reorder or hide the text around it.
 * - Slack: `&`, `<`, `>` are escaped in every mrkdwn text, code spans included (Slack decodes them everywhere); so no
 *   `<!channel>`, `<@U123>`, `<!date…>` or `<url|label>` can be written. A backtick in attacker text becomes "ˋ"
 *   (U+02CB) so a span cannot be closed; spaces at a span's edges become "␠" so the span stays a span. Every mrkdwn
 *   text is sent with `verbatim: true` (no automatic links, channel names or mentions). Outside code, "@" becomes
 *   "＠" (U+FF20) and URL-like text is defanged, in case service text ever carries attacker text unquoted; inside
 *   code spans too (also in the notification `text`, which Slack parses without `verbatim`).
 * - Teams: attacker text is only in TextRuns (no markdown) with fontType Monospace, and always defanged, since Teams
 *   may turn a bare URL or domain into a link in any text. TextBlock and Fact texts (markdown) carry only service,
 *   admin or catalog text, markdown-escaped with backslashes and defanged. "{{" becomes "｛{" and "${" becomes "$｛" in
 *   every Teams text so no `{{DATE(…)}}` / `{{TIME(…)}}` function and no `${…}` template expression can be written.
 *   Mentions need an `msteams.entities` entry, which cards never carry, so "@" and `<at>` stay as they are.
 * - Defanging: a scheme's "://" becomes "[:]//" (and http/https/ftp become hxxp/hxxps/fxp); a dot between a letter,
 *   digit or hyphen and a letter becomes "[.]" (`evil[.]example`, `file[.]txt`; IPv4 addresses stay as they are).
 * - The only link a message has is the incident's `url`, and only when it is on APP_URL (`isAppLink`).
 */

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/u
const INVISIBLE_ALL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/gu

const shownCodePoint = (ch: string): string =>
  `[U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}]`

const shown = (ch: string): string => {
  const cp = ch.codePointAt(0) ?? 0
  if (cp >= 0xd800 && cp <= 0xdfff) return "\uFFFD"
  if (cp < 0x20) return String.fromCodePoint(0x2400 + cp)
  if (cp === 0x7f) return "\u2421"
  return shownCodePoint(ch)
}

/** Every character made visible: controls as Control Pictures, invisible and format characters as `[U+XXXX]`. */
export const visibleText = (s: string): string => (INVISIBLE.test(s) ? s.replace(INVISIBLE_ALL, shown) : s)

const SCHEME = /\b([a-z][a-z0-9+.-]{0,31}):\/\//giu
const DOT = /(?<=[\p{L}\p{N}-])[.\u3002\uFF0E\uFF61](?=\p{L})/gu

/** URL-like text made inert: `hxxps[:]//evil[.]example/x`, `evil[.]example` (IPv4 addresses are left). */
export const defang = (s: string): string =>
  s
    .replace(
      SCHEME,
      (_m, scheme: string) => `${scheme.replace(/^(h)tt(ps?)$/i, "$1xx$2").replace(/^ftp$/i, "fxp")}[:]//`,
    )
    .replace(DOT, "[.]")

/** `s` cut to `max` code points, saying whether it was cut (no mark: the caller puts it outside the code). */
export const cutCodePoints = (s: string, max: number): { readonly text: string; readonly cut: boolean } => {
  const points = Array.from(s)
  return points.length <= max ? { text: s, cut: false } : { text: points.slice(0, max).join(""), cut: true }
}

/** The mark after a value or text that was cut: service text, outside any code. */
export const CUT_MARK = "… (cut)"

/** What an empty quoted value shows, outside any code. */
export const EMPTY_MARK = "(empty)"

/** The longest attacker value a chat message shows, in code points (webhook strings are already at most 256). */
export const ATTACKER_SPAN_MAX = 256

/**
 * `url` when it is a link chat messages may carry: on APP_URL (same origin, under its path), http(s), at most 3000
 * characters, and nothing a markup could read as its end (spaces, controls, `<>|"` or backticks).
 */
export const isAppLink = (url: string, appUrl: string): boolean => {
  if (appUrl === "" || url.length > 3000 || !url.startsWith(`${appUrl}/`)) return false
  if (/[\s<>|"`\\{}^]/u.test(url) || INVISIBLE.test(url)) return false
  try {
    const u = new URL(url)
    const base = new URL(appUrl)
    return (u.protocol === "https:" || u.protocol === "http:") && u.origin === base.origin
  } catch {
    return false
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Slack mrkdwn

/** Slack's three escapes (https://api.slack.com/reference/surfaces/formatting#escaping). */
export const slackEscape = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** Service, admin or catalog text for mrkdwn: visible, escaped, defanged, no "@" and no backtick. */
export const slackPlain = (s: string): string =>
  slackEscape(defang(visibleText(s)).replace(/@/g, "＠").replace(/`/g, "ˋ"))

// Defanged and without "@" inside code too: that Slack neither links nor mentions in a code span is its clients'
// behaviour, which no test here can watch; a defanged value cannot become a link in any of them.
const spanBody = (raw: string): string => {
  let t = defang(visibleText(raw).replace(/`/g, "ˋ")).replace(/@/g, "＠")
  // A span that starts or ends with whitespace may not be read as one: edge spaces are shown as ␠, any other
  // whitespace there (no-break, ideographic, en spaces…) as its code point.
  t = t.replace(/^\s+|\s+$/gu, (m) => Array.from(m, (ch) => (ch === " " ? "␠" : shownCodePoint(ch))).join(""))
  return slackEscape(t)
}

export interface SlackCodeOptions {
  /** At most this many code points of the value (ATTACKER_SPAN_MAX if not given). */
  readonly max?: number
}

/** Attacker text as one inline code span, cut with CUT_MARK after the span; an empty value is EMPTY_MARK. */
export const slackCode = (raw: string, options: SlackCodeOptions = {}): string => {
  if (raw === "") return EMPTY_MARK
  const { text, cut } = cutCodePoints(raw, options.max ?? ATTACKER_SPAN_MAX)
  const span = `\`${spanBody(text)}\``
  return cut ? `${span} ${CUT_MARK}` : span
}

const WORDISH = /[\p{L}\p{N}_*~]/u

/**
 * Service text as mrkdwn, every quoted value a code span: at most `limit` characters (UTF-16 units, as the rendered
 * text is measured), cut at a part's boundary, or inside a part, with CUT_MARK.
 */
export const slackServiceText = (text: string, limit: number, options: { readonly spanMax?: number } = {}): string => {
  const room = limit - CUT_MARK.length - 1
  let out = ""
  const renderPart = (part: TextPart, n: number): string => {
    const cut = cutCodePoints(part.text, n)
    if (!part.quoted) return slackPlain(cut.text)
    const span = slackCode(cut.text, {
      max: options.spanMax ?? ATTACKER_SPAN_MAX,
    })
    // A span glued to a word is not read as code: keep a space on either side.
    const before = WORDISH.test(out.slice(-1)) ? " " : ""
    return `${before}${span}`
  }
  const parts = splitServiceText(text)
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as TextPart
    let rendered = renderPart(part, Number.POSITIVE_INFINITY)
    const next = parts[i + 1]
    if (part.quoted && next !== undefined && WORDISH.test(next.text.slice(0, 1))) rendered += " "
    if (out.length + rendered.length <= limit && (i === parts.length - 1 || out.length + rendered.length <= room)) {
      out += rendered
      continue
    }
    // Cut inside this part: the most code points that fit before the mark.
    let lo = 0
    let hi = Array.from(part.text).length
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2)
      if (out.length + renderPart(part, mid).length <= room) lo = mid
      else hi = mid - 1
    }
    if (lo > 0) out += renderPart(part, lo)
    return `${out} ${CUT_MARK}`
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------------
// Teams (Adaptive Cards)

/**
 * "{{" can open a `{{DATE(…)}}` / `{{TIME(…)}}` function in Adaptive Card text, and "${" a template expression
 * (`${$root.x}`) wherever a card goes through the Adaptive Cards templating (a Workflow or bot that expands the card
 * as a template before posting it). Each "{" that another "{" follows, or a "$" precedes, becomes "｛" (U+FF5B): a run
 * such as "{{{" keeps no "{{" (replacing each "{{" pair would leave "｛{{").
 */
const noFunctions = (s: string): string => s.replace(/\{(?=\{)|(?<=\$)\{/g, "｛")

/** Characters the Adaptive Card markdown subset (and the CommonMark renderers behind it) may read as markup. */
const MARKDOWN_SPECIAL = /[\\`*_~[\]<>]/g

/** Service, admin or catalog text for a TextBlock or Fact (markdown): visible, defanged, backslash-escaped. */
export const markdownEscape = (s: string): string =>
  noFunctions(
    defang(visibleText(s))
      .replace(MARKDOWN_SPECIAL, "\\$&")
      // A list, heading or quote marker only counts at the start of a line.
      .replace(/^([-+#])/, "\\$1")
      .replace(/^(\d+)\.(?=\s|$)/, "$1\\."),
  )

/** An Adaptive Card TextRun (no markdown). */
export interface TextRun {
  readonly type: "TextRun"
  readonly text: string
  readonly fontType?: "Monospace"
  readonly weight?: "Bolder"
  readonly size?: "Medium" | "Large"
  readonly isSubtle?: boolean
  readonly italic?: boolean
}

export interface RunStyle {
  readonly weight?: "Bolder"
  readonly size?: "Medium" | "Large"
}

/** Service text as it is shown in a TextRun: visible, defanged, no functions. */
export const teamsPlain = (s: string): string => noFunctions(defang(visibleText(s)))

/** Attacker text as monospace TextRuns: the value, then an italic CUT_MARK run if it was cut. */
export const teamsCode = (raw: string, style: RunStyle = {}, max = ATTACKER_SPAN_MAX): ReadonlyArray<TextRun> => {
  if (raw === "") return [{ type: "TextRun", text: EMPTY_MARK, italic: true, ...style }]
  const { text, cut } = cutCodePoints(raw, max)
  const code: TextRun = { type: "TextRun", text: teamsPlain(text), fontType: "Monospace", ...style }
  return cut ? [code, { type: "TextRun", text: ` ${CUT_MARK}`, italic: true, ...style }] : [code]
}

/**
 * Service text as TextRuns, every quoted value monospace; at most `limit` code points of text in all, then a
 * CUT_MARK run.
 */
export const teamsServiceRuns = (
  text: string,
  limit: number,
  style: RunStyle = {},
  spanMax = ATTACKER_SPAN_MAX,
): ReadonlyArray<TextRun> => {
  const runs: Array<TextRun> = []
  const mark: TextRun = { type: "TextRun", text: ` ${CUT_MARK}`, italic: true, ...style }
  let left = limit
  for (const part of splitServiceText(text)) {
    if (left <= 0) {
      runs.push(mark)
      break
    }
    const length = Array.from(part.text).length
    if (part.quoted) {
      // teamsCode puts its own mark after a value it cut.
      runs.push(...teamsCode(part.text, style, Math.min(spanMax, left)))
      if (length > left) break
      left -= Math.min(length, spanMax)
    } else {
      runs.push({ type: "TextRun", text: teamsPlain(cutCodePoints(part.text, left).text), ...style })
      if (length > left) {
        runs.push(mark)
        break
      }
      left -= length
    }
  }
  return runs
}

/** The header of a chat message about an incident, by message type (Slack and Teams say the same). */
export const INCIDENT_LEADS: Record<AlertMessage["type"], string> = {
  "incident.created": "New incident",
  "incident.escalated": "Incident escalated",
  "incident.reopened": "Incident reopened",
  "incident.closed": "Incident closed",
  "webhook.test": "Test message",
}

/** A short line under the header, service-written. */
export const INCIDENT_LINES: Record<AlertMessage["type"], string> = {
  "incident.created": "A decoy saw activity that opened a new incident.",
  "incident.escalated": "The incident's severity went up.",
  "incident.reopened": "New activity reopened a closed incident.",
  "incident.closed": "The incident was closed.",
  "webhook.test": "This channel works: the incident below is a sample, nothing happened.",
}

/** `2026-11-26T13:00:00.000Z` as `2026-11-26 13:00:00 UTC`. */
export const chatTime = (d: Date): string =>
  Number.isNaN(d.getTime()) ? "unknown time" : `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`

/**
 * What matters most about an incident, first in a chat message (Slack and Teams say the same): a bait credential
 * used, a source inside the organization's networks (the label is the admin's words), the other decoys the source
 * touched. Service and admin text, escaped by each kind as it escapes such text.
 */
export const signalLines = (i: AlertMessage["incident"]): ReadonlyArray<string> => [
  ...(i.baitCredentialUsed === true
    ? ["Bait credential used: someone read a planted credential where it was planted."]
    : []),
  ...(i.source?.scope === "internal" && i.source.network !== null
    ? [`From inside your network (${i.source.network.label}, ${i.source.network.cidr}).`]
    : []),
  ...((i.otherSensors ?? 0) > 0
    ? [
        `Also seen on ${i.otherSensors} other ${i.otherSensors === 1 ? "sensor" : "sensors"} of yours in the last 7 days.`,
      ]
    : []),
]
