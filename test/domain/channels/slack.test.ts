import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { CUT_MARK } from "../../../src/domain/channels/chatText.ts"
import type { ChannelMessage } from "../../../src/domain/channels/kinds.ts"
import { slackMessage } from "../../../src/domain/channels/slack.ts"
import {
  APP_URL,
  CTX,
  everyMessage,
  HOSTILE,
  HOSTILE_FRAGMENTS,
  hostileMessage,
  hugeMessage,
  incidentMessage,
} from "./messages.ts"

/**
 * A checker written from Slack's documentation, independent of the formatter:
 * - Block Kit (https://api.slack.com/reference/block-kit/blocks): at most 50 blocks; header: plain_text at most 150;
 *   section: text at most 3000, at most 10 fields of at most 2000; context: at most 10 elements; actions: at most 25
 *   elements; button: plain_text at most 75, url at most 3000, action_id at most 255; block_id at most 255.
 * - Formatting (https://api.slack.com/reference/surfaces/formatting): `&`, `<`, `>` must be escaped as `&amp;`,
 *   `&lt;`, `&gt;`; `<…>` is the only way to write links, mentions and dates; inline code is between single backticks
 *   and is not formatted.
 * - D46: links only to APP_URL; attacker text only in code spans.
 */

interface Found {
  readonly where: string
  readonly problem: string
}

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/u
const URL_LIKE = /[a-z][a-z0-9+.-]*:\/\/|www\.|[\p{L}\p{N}-][.\u3002\uFF0E\uFF61]\p{L}{2}/iu
const MENTION = /@(channel|here|everyone)\b/i

const appLink = (url: string): boolean => url.startsWith(`${APP_URL}/`) && url.length <= 3000

/** The parts of mrkdwn outside and inside inline code spans, or a problem if a span is not closed. */
const codeSplit = (text: string): { outside: Array<string>; inside: Array<string> } | string => {
  const pieces = text.split("`")
  if (pieces.length % 2 === 0) return "an unclosed code span"
  return { outside: pieces.filter((_, k) => k % 2 === 0), inside: pieces.filter((_, k) => k % 2 === 1) }
}

const checkMrkdwn = (text: string, where: string, notification: boolean, out: Array<Found>): void => {
  const bad = (problem: string) => out.push({ where, problem: `${problem}: ${JSON.stringify(text.slice(0, 300))}` })
  if (text.length === 0) bad("empty text")
  if (/[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/u.test(text.replace(/\n/g, ""))) {
    bad("an invisible or control character")
  }
  if (/&(?!(amp|lt|gt);)/.test(text)) bad("an unescaped &")
  // The only `<…>` allowed is a link to APP_URL; everything else must be escaped.
  const withoutLinks = text.replace(/<([^<>|]+)\|[^<>]*>/g, (m, url: string) => (appLink(url) ? "" : m))
  if (/[<>]/.test(withoutLinks)) bad("an unescaped < or > (a link, mention or date)")
  const split = codeSplit(withoutLinks)
  if (typeof split === "string") {
    bad(split)
    return
  }
  for (const code of split.inside) {
    if (code.includes("\n")) bad("a code span across lines")
    if (code === "" || /^\s|\s$/.test(code)) bad("a code span Slack may not read as one")
    if (URL_LIKE.test(code) || /@/.test(code))
      bad(`a URL or @ in a code span${notification ? " of the notification text" : ""}`)
  }
  for (const plain of split.outside) {
    if (MENTION.test(plain)) bad("a mention outside code")
    if (URL_LIKE.test(plain)) bad("URL-like text outside code")
  }
}

const checkText = (t: unknown, where: string, allowed: ReadonlyArray<string>, max: number, out: Array<Found>) => {
  const o = t as { type?: unknown; text?: unknown; verbatim?: unknown; emoji?: unknown }
  if (typeof o !== "object" || o === null || !allowed.includes(String(o.type))) {
    return out.push({ where, problem: `a text object of type ${String(o?.type)}` })
  }
  if (typeof o.text !== "string" || o.text.length === 0 || o.text.length > max) {
    return out.push({ where, problem: `text of length ${String((o.text as string)?.length)} (max ${max})` })
  }
  if (o.type === "mrkdwn") {
    if (o.verbatim !== true) out.push({ where, problem: "mrkdwn without verbatim: true" })
    checkMrkdwn(o.text, where, false, out)
  } else if (INVISIBLE.test(o.text) || URL_LIKE.test(o.text) || MENTION.test(o.text)) {
    out.push({ where, problem: `plain_text with hidden characters, a URL or a mention: ${o.text}` })
  }
}

/** Every problem the payload has under the rules above. */
export const checkSlack = (payload: unknown): Array<Found> => {
  const out: Array<Found> = []
  const p = payload as Record<string, unknown>
  for (const key of Object.keys(p)) {
    if (!["text", "blocks", "unfurl_links", "unfurl_media"].includes(key)) out.push({ where: key, problem: "unknown" })
  }
  if (typeof p.text !== "string" || p.text.length > 4000) out.push({ where: "text", problem: "missing or too long" })
  else checkMrkdwn(p.text, "text", true, out)
  const blocks = p.blocks as Array<Record<string, unknown>>
  if (!Array.isArray(blocks) || blocks.length === 0 || blocks.length > 50) {
    out.push({ where: "blocks", problem: "not 1 to 50 blocks" })
    return out
  }
  const actionIds = new Set<string>()
  blocks.forEach((b, k) => {
    const where = `blocks[${k}] ${String(b.type)}`
    if (b.block_id !== undefined && (typeof b.block_id !== "string" || b.block_id.length > 255)) {
      out.push({ where, problem: "block_id" })
    }
    switch (b.type) {
      case "header":
        checkText(b.text, where, ["plain_text"], 150, out)
        break
      case "section": {
        if (b.accessory !== undefined) out.push({ where, problem: "an accessory (none is used)" })
        if (b.text === undefined && b.fields === undefined) out.push({ where, problem: "neither text nor fields" })
        if (b.text !== undefined) checkText(b.text, where, ["mrkdwn", "plain_text"], 3000, out)
        if (b.fields !== undefined) {
          const fields = b.fields as Array<unknown>
          if (!Array.isArray(fields) || fields.length === 0 || fields.length > 10) {
            out.push({ where, problem: "not 1 to 10 fields" })
          } else
            fields.forEach((f, j) => {
              checkText(f, `${where} field ${j}`, ["mrkdwn", "plain_text"], 2000, out)
            })
        }
        break
      }
      case "context": {
        const elements = b.elements as Array<unknown>
        if (!Array.isArray(elements) || elements.length === 0 || elements.length > 10) {
          out.push({ where, problem: "not 1 to 10 elements" })
        } else
          elements.forEach((e, j) => {
            checkText(e, `${where} element ${j}`, ["mrkdwn", "plain_text"], 3000, out)
          })
        break
      }
      case "actions": {
        const elements = b.elements as Array<Record<string, unknown>>
        if (!Array.isArray(elements) || elements.length === 0 || elements.length > 25) {
          out.push({ where, problem: "not 1 to 25 elements" })
          break
        }
        for (const e of elements) {
          if (e.type !== "button") out.push({ where, problem: `element ${String(e.type)}` })
          checkText(e.text, where, ["plain_text"], 75, out)
          if (typeof e.url !== "string" || !appLink(e.url)) out.push({ where, problem: `url ${String(e.url)}` })
          const id = e.action_id
          if (typeof id !== "string" || id.length === 0 || id.length > 255 || actionIds.has(id)) {
            out.push({ where, problem: "action_id missing, too long or repeated" })
          } else actionIds.add(id)
        }
        break
      }
      case "divider":
        break
      default:
        out.push({ where, problem: "a block type this formatter does not use" })
    }
  })
  return out
}

/** Every mrkdwn text of a payload, with its code spans removed: what Slack may format or link. */
const outsideCode = (payload: unknown): string => {
  const p = payload as { text: string; blocks: ReadonlyArray<unknown> }
  const texts: Array<string> = [p.text]
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk)
    else if (typeof v === "object" && v !== null) {
      const o = v as Record<string, unknown>
      if (typeof o.text === "string") texts.push(o.text)
      for (const value of Object.values(o)) walk(value)
    }
  }
  walk(p.blocks)
  return texts
    .map((t) =>
      t
        .split("`")
        .filter((_, k) => k % 2 === 0)
        .join(""),
    )
    .join("\n")
}

const blocksOf = (payload: object) => (payload as { blocks: ReadonlyArray<Record<string, unknown>> }).blocks

describe("Slack messages", () => {
  test("every message type renders a Block Kit message that keeps Slack's rules", () => {
    for (const message of everyMessage()) {
      const payload = slackMessage(message, CTX)
      expect({ type: message.type, problems: checkSlack(payload) }).toEqual({ type: message.type, problems: [] })
      const header = blocksOf(payload)[0] as { type: string; text: { text: string } }
      expect(header.type).toBe("header")
    }
  })

  test("each type has its own service-written lead", () => {
    const heads = everyMessage().map((m) => (blocksOf(slackMessage(m, CTX))[0] as { text: { text: string } }).text.text)
    expect(heads).toEqual([
      "New incident (critical)",
      "Incident escalated (critical)",
      "Incident reopened (critical)",
      "Incident closed (critical)",
      "Test message (high)",
      "Sensor silent",
      "Sensor silent",
      "Sensor recovered",
    ])
  })

  test("an incident message carries title, severity, sensor, source IP, count, techniques, events and the link", () => {
    const payload = slackMessage(incidentMessage("incident.created"), CTX)
    const json = JSON.stringify(payload)
    expect(json).toContain("Shell commands over SSH from 203.0.113.7 on sensor `web-01`")
    expect(json).toContain("*Severity*\\nCritical")
    expect(json).toContain("*Sensor*\\n`web-01` (`linux-server`)")
    expect(json).toContain("*Source IP*\\n`203.0.113.7`")
    expect(json).toContain("*Events*\\n3")
    expect(json).toMatch(/• T\d{4}(\.\d{3})? \w/)
    expect(json).toContain("*Newest events* (3 of 3)")
    expect(json).toContain("with username `root`")
    const actions = blocksOf(payload).find((b) => b.type === "actions") as { elements: Array<{ url: string }> }
    expect(actions.elements.map((e) => e.url)).toEqual([`${APP_URL}/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV`])
    expect((payload as { text: string }).text).toStartWith("New incident (critical): ")
  })

  test("a sensor message names the sensor and when it was last heard from, and links nowhere", () => {
    const [silent, never, recovered] = everyMessage()
      .slice(-3)
      .map((m) => JSON.stringify(slackMessage(m, CTX)))
    expect(silent).toContain("Sensor `web-01` (`linux-server`) missed three heartbeats in a row")
    expect(silent).toContain("Last heard from: 2026-11-26 12:00:00 UTC.")
    expect(never).toContain("Last heard from: never.")
    expect(recovered).toContain("is heard from again")
    for (const json of [silent, never, recovered]) expect(json).not.toContain('"url"')
  })

  test("a link not on APP_URL is left out (no button, no link anywhere)", () => {
    for (const url of [
      "https://evil.example/incidents/x",
      `${APP_URL}.evil.example/incidents/x`,
      `${APP_URL}@evil.example/x`,
      `${APP_URL}/incidents/x|<!channel>`,
      `${APP_URL}/incidents/x y`,
      APP_URL,
    ]) {
      const base = incidentMessage("incident.created")
      const payload = slackMessage({ ...base, incident: { ...base.incident, url } }, CTX)
      expect(blocksOf(payload).some((b) => b.type === "actions")).toBe(false)
      expect(JSON.stringify(payload)).not.toContain("evil")
      expect(checkSlack(payload)).toEqual([])
    }
  })

  test("a huge incident (long title, 20 events of 256-character attacker strings) stays within the limits", () => {
    const message = hugeMessage()
    expect(message.incident.events).toHaveLength(20)
    const payload = slackMessage(message, CTX)
    expect(checkSlack(payload)).toEqual([])
    const sections = blocksOf(payload).filter((b) => b.type === "section" && b.text !== undefined)
    const events = sections.find((b) => (b.text as { text: string }).text.startsWith("*Newest events*"))
    expect((events?.text as { text: string } | undefined)?.text).toStartWith("*Newest events* (5 of 20)")
    // The long values were cut, with the mark outside the code.
    expect(JSON.stringify(payload)).toContain("` … (cut)")
  })

  test("a title of many long quoted values needing escapes is cut within the section limit, the mark outside code", () => {
    const rawTitle = Array.from({ length: 30 }, (_, k) => `part ${k} ${JSON.stringify("&<>".repeat(90))}`).join(" ")
    const payload = slackMessage(incidentMessage("incident.created", { rawTitle }), CTX)
    expect(checkSlack(payload)).toEqual([])
    const title = (blocksOf(payload)[2] as { text: { text: string } }).text.text
    expect(title.length).toBeLessThanOrEqual(3000)
    expect(title).toStartWith("part 0 `&amp;&lt;&gt;")
    expect(title).toEndWith(` ${CUT_MARK}`)
  })

  test("hostile attacker text stays inert: escaped, in code spans, no mention, link or formatting", () => {
    for (const s of HOSTILE) {
      const payload = slackMessage(hostileMessage(s), CTX)
      expect({ s, problems: checkSlack(payload) }).toEqual({ s, problems: [] })
      const plain = outsideCode(payload)
      for (const fragment of HOSTILE_FRAGMENTS) expect({ s, found: fragment.test(plain) }).toEqual({ s, found: false })
    }
    // The characters are shown, not hidden or acted on.
    const shown = JSON.stringify(slackMessage(hostileMessage("abc\u202Eevil\nx`y<z"), CTX))
    expect(shown).toContain("abc[U+202E]evil␊xˋy&lt;z")
    expect(shown).not.toContain("\\u202e")
  })

  test("an empty title or summary still gives a message Slack takes", () => {
    const base = incidentMessage("incident.created", { rawTitle: "" })
    const events = base.incident.events.map((e) => ({ ...e, summary: "" }))
    const payload = slackMessage({ ...base, incident: { ...base.incident, events } }, CTX)
    expect(checkSlack(payload)).toEqual([])
    expect(JSON.stringify(payload)).toContain("(no title)")
  })

  test("attacker text the service forgot to quote is still escaped, defanged and without mentions", () => {
    const rawTitle = "Login from <!channel> @here http://evil.example/x <http://evil.example|y> evil.example"
    const payload = slackMessage(incidentMessage("incident.created", { rawTitle }), CTX)
    expect(checkSlack(payload)).toEqual([])
    expect(JSON.stringify(payload)).toContain("&lt;!channel&gt; ＠here hxxp[:]//evil[.]example/x")
  })

  test("a value that is only whitespace, or starts or ends with it (any Unicode space), is still one code span", () => {
    // Found by the property below (seed 671743159): a sensor named with one no-break space gave "` `".
    for (const ws of [" ", "\u00A0", "\u2003", "\u3000", "\t"]) {
      for (const sensorName of [ws, `${ws}edge`, `edge${ws}`]) {
        const message = incidentMessage("incident.created", { sensorName, usernames: ["<!channel>"] })
        expect(checkSlack(slackMessage(message, CTX))).toEqual([])
      }
    }
  })

  test("any attacker strings in titles, summaries and attackerInput give a message that keeps the rules", () => {
    const text = fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.constantFrom(...HOSTILE))
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), text, text, (usernames, detail, sensorName) => {
        const message: ChannelMessage = incidentMessage("incident.created", {
          usernames,
          details: [detail],
          sensorName,
          profile: detail,
          events: 6,
        })
        expect(checkSlack(slackMessage(message, CTX))).toEqual([])
      }),
      { numRuns: 300 },
    )
  })

  test("the checker itself finds what it must (an unescaped <, a mention, a URL outside code, a bad button)", () => {
    const ok = slackMessage(incidentMessage("incident.created"), CTX) as { text: string; blocks: Array<object> }
    const section = (text: string) => ({
      ...ok,
      blocks: [{ type: "section", text: { type: "mrkdwn", text, verbatim: true } }],
    })
    expect(checkSlack(section("hi <!channel>"))).not.toEqual([])
    expect(checkSlack(section("hi @here"))).not.toEqual([])
    expect(checkSlack(section("see http://evil.example"))).not.toEqual([])
    expect(checkSlack(section("a & b"))).not.toEqual([])
    expect(checkSlack(section("`open"))).not.toEqual([])
    expect(checkSlack(section("x".repeat(3001)))).not.toEqual([])
    expect(checkSlack(section(`<${APP_URL}/incidents/x|open>`))).toEqual([])
    const button = {
      type: "button",
      text: { type: "plain_text", text: "x" },
      url: "https://evil.example/",
      action_id: "a",
    }
    expect(checkSlack({ ...ok, blocks: [{ type: "actions", elements: [button] }] })).not.toEqual([])
  })
})
