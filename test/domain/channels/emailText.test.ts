import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import type { AlertMessage } from "../../../src/domain/alertMessage.ts"
import { CUT_MARK } from "../../../src/domain/channels/chatText.ts"
import { confirmationEmail, type EmailContent, emailContent } from "../../../src/domain/channels/emailText.ts"
import type { ChannelMessage } from "../../../src/domain/channels/kinds.ts"
import {
  APP_URL,
  CTX,
  everyMessage,
  HOSTILE,
  hostileMessage,
  hugeMessage,
  incidentMessage,
  sensorMessage,
} from "./messages.ts"

/**
 * A checker written from the email contract, independent of the formatter:
 * - Subject: one line (no CR, LF or other control or invisible character), at most 200 code points.
 * - Text part: lines of at most 998 octets (RFC 5322 section 2.1.1), at most 64 KiB, no control character but LF, and
 *   no URL but the app's own.
 * - HTML part: a complete document of a small set of elements, inline styles only (no stylesheet, image, script, form
 *   or frame), every text escaped, `<a>` only with an href on APP_URL, no other URL in any attribute, at most 64 KiB.
 * - Attacker text never shows un-defanged (`evil.example`, `http://`) in any part.
 * - Both parts carry the same words in the same order.
 */

const RECIPIENT = { channelId: "ch_01ARZ3NDEKTSV4RRFFQ69G5FAV", organization: "Acme Security" }
const MAX_BYTES = 64 * 1024
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/u
const URL_LIKE = /[a-z][a-z0-9+.-]*:\/\/|www\.|[\p{L}\p{N}-][.\u3002\uFF0E\uFF61]\p{L}{2}/iu
const EVIL = /evil\.example|evil\s*\.\s*example/i

const ELEMENTS = new Set([
  "html",
  "head",
  "meta",
  "title",
  "body",
  "div",
  "h1",
  "h2",
  "p",
  "code",
  "em",
  "strong",
  "table",
  "tr",
  "th",
  "td",
  "ul",
  "li",
  "a",
  "hr",
  "br",
])
const INLINE = new Set(["code", "em", "strong", "a"])
const ATTRIBUTES = new Set(["style", "href", "lang", "charset", "name", "content", "role", "scope"])

const appLink = (url: string, appUrl = APP_URL): boolean =>
  url.startsWith(`${appUrl}/`) && !/[\s"'<>`]/.test(url) && url.length <= 3000

/** Application links removed from a text, so what is left can be checked for any other URL. */
const withoutAppLinks = (s: string, appUrl = APP_URL): string =>
  s.replaceAll(new RegExp(`${appUrl.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}/[^\\s<>"']*`, "g"), " ")

const ENTITIES: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'" }

const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z-]+(?:="[^"<>]*")?)*)\s*(\/?)>/g
const ATTRIBUTE = /([a-zA-Z-]+)(?:="([^"]*)")?/g

interface HtmlRead {
  readonly problems: ReadonlyArray<string>
  readonly links: ReadonlyArray<string>
  /** The body's text, tags removed and character references decoded. */
  readonly bodyText: string
}

const readHtml = (html: string, appUrl = APP_URL): HtmlRead => {
  const problems: Array<string> = []
  const links: Array<string> = []
  if (!html.startsWith("<!DOCTYPE html>\n")) problems.push("no doctype")
  const doc = html.slice("<!DOCTYPE html>".length)
  for (const match of doc.matchAll(TAG)) {
    const [, , name = "", attributes = ""] = match
    const element = name.toLowerCase()
    if (!ELEMENTS.has(element)) problems.push(`element <${element}>`)
    for (const attribute of attributes.matchAll(ATTRIBUTE)) {
      const [, attributeName = "", raw = ""] = attribute
      const value = raw.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m)
      if (!ATTRIBUTES.has(attributeName.toLowerCase())) problems.push(`attribute ${attributeName}`)
      if (attributeName === "href") {
        if (element !== "a") problems.push(`href on <${element}>`)
        if (!appLink(value, appUrl)) problems.push(`a link off APP_URL: ${value}`)
        links.push(value)
      } else if (/url\(|expression|@import|javascript:|:\/\/|\/\/|\\/i.test(value)) {
        problems.push(`a URL or script in ${attributeName}: ${value}`)
      }
    }
    if (element === "a" && match[1] === "" && !/\shref="/.test(attributes)) problems.push("an <a> without href")
  }
  const text = doc.replace(TAG, "\n")
  if (/[<>]/.test(text))
    problems.push(`unescaped < or > in text: ${JSON.stringify(text.match(/.{0,40}[<>].{0,40}/)?.[0])}`)
  if (/&(?!(amp|lt|gt|quot|#39);)/.test(text)) problems.push("an unescaped &")
  const decoded = (s: string) => s.replace(/&(amp|lt|gt|quot|#39);/g, (m) => ENTITIES[m] ?? m)
  const bodyStart = doc.indexOf("<body")
  // Inline elements join their text to the words around them; the others end a line.
  const bodyText = decoded(
    doc
      .slice(bodyStart)
      .replace(TAG, (_tag, _close: string, name: string) => (INLINE.has(name.toLowerCase()) ? "" : "\n")),
  )
  if ((html.match(/<a[\s>]/gi) ?? []).length !== links.length) problems.push("an <a> this checker did not read")
  return { problems, links, bodyText }
}

/** Every problem of an email, by the contract; empty when it keeps it. */
const check = (content: EmailContent, appUrl = APP_URL): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const { subject, text, html } = content
  if (subject === "" || INVISIBLE.test(subject)) problems.push(`subject has a control or is empty: ${subject}`)
  if (Array.from(subject).length > 200) problems.push("subject longer than 200 code points")
  if (EVIL.test(subject) || URL_LIKE.test(subject)) problems.push(`subject has URL-like text: ${subject}`)
  if (Buffer.byteLength(text) > MAX_BYTES) problems.push(`text part of ${Buffer.byteLength(text)} bytes`)
  if (Buffer.byteLength(html) > MAX_BYTES) problems.push(`HTML part of ${Buffer.byteLength(html)} bytes`)
  for (const line of text.split("\n")) {
    if (Buffer.byteLength(line) > 998) problems.push(`a text line of ${Buffer.byteLength(line)} octets`)
    if (INVISIBLE.test(line)) problems.push(`a control or invisible character in text: ${JSON.stringify(line)}`)
  }
  const textLeft = withoutAppLinks(text, appUrl)
  if (EVIL.test(text) || URL_LIKE.test(textLeft)) {
    problems.push(
      `URL-like text in the text part: ${JSON.stringify(textLeft.match(/.{0,40}(evil|:\/\/|www).{0,40}/i)?.[0])}`,
    )
  }
  const read = readHtml(html, appUrl)
  problems.push(...read.problems)
  if (EVIL.test(html)) problems.push("evil.example in the HTML")
  const htmlLeft = withoutAppLinks(read.bodyText, appUrl)
  if (EVIL.test(read.bodyText) || URL_LIKE.test(htmlLeft)) {
    problems.push(
      `URL-like text in the HTML: ${JSON.stringify(htmlLeft.match(/.{0,40}(evil|:\/\/|www).{0,40}/i)?.[0])}`,
    )
  }
  return problems
}

/**
 * The words of a part in order: the text part without its decorations (heading underlines, list bullets, the
 * signature line) and the HTML body's text, both without quotes (the text part's quotes around values), split at spaces and colons.
 */
const words = (s: string): ReadonlyArray<string> =>
  s
    .replace(/"/g, "")
    .split(/[\s:]+/)
    .filter((w) => w !== "")

const textWords = (text: string): ReadonlyArray<string> =>
  words(
    text
      .split("\n")
      .filter((line) => !/^(=+|-+|-- )$/.test(line))
      .map((line) => line.replace(/^- /, ""))
      .join(" "),
  )

const htmlWords = (html: string): ReadonlyArray<string> => words(readHtml(html).bodyText)

const samples = (): ReadonlyArray<ChannelMessage> => [...everyMessage(), hugeMessage()]

const withIncident = (message: AlertMessage, change: Partial<AlertMessage["incident"]>): AlertMessage => ({
  ...message,
  incident: { ...message.incident, ...change },
})

/** The attacker strings the brief names, with the chat formatters' own list. */
const ATTACKS: ReadonlyArray<string> = [
  '<a href="http://evil.example/x">click</a>',
  "<img src=http://evil.example/p.png>",
  "javascript:alert(1)",
  "wget https://evil.example/s.sh",
  "line1\r\nSubject: injected\r\n\r\nbody",
  "abc\u202Eevil.exe\u202Ctxt \u2066x\u2069",
  "{{x}} $" + "{x} <%= x %>",
  "<script>alert(1)</script><style>@import url(http://evil.example/c.css)</style>",
  "<form action=https://evil.example><input></form>",
  "\" onmouseover=\"alert(1)\" ' onerror='x'",
  "x".repeat(10_000),
  "\u202E".repeat(10_000),
  "<".repeat(10_000),
  "evil.example/".repeat(800),
  ...HOSTILE,
]

describe("Alert emails", () => {
  test("the checker finds what it is written to find", () => {
    const good = emailContent(incidentMessage("incident.created"), CTX, RECIPIENT)
    expect(check(good)).toEqual([])
    const broken = (change: Partial<EmailContent>) => check({ ...good, ...change }).length
    const inBody = (html: string) => good.html.replace("</h1>", `</h1>${html}`)
    expect(broken({ subject: "a\r\nBcc: x@example.org" })).toBeGreaterThan(0)
    expect(broken({ subject: "x".repeat(201) })).toBeGreaterThan(0)
    expect(broken({ text: `${good.text}${"x".repeat(999)}\n` })).toBeGreaterThan(0)
    expect(broken({ text: `${good.text}see http://evil.example\n` })).toBeGreaterThan(0)
    expect(broken({ text: `${good.text}see evil[.]example https://elsewhere.example.org/x\n` })).toBeGreaterThan(0)
    expect(broken({ html: inBody('<a href="https://evil.example/x">x</a>') })).toBeGreaterThan(0)
    expect(broken({ html: inBody('<a href="https://decoys.example.com.evil.example/x">x</a>') })).toBeGreaterThan(0)
    expect(broken({ html: inBody('<img src="https://decoys.example.com/p.png">') })).toBeGreaterThan(0)
    expect(
      broken({ html: inBody('<p style="background:url(https://decoys.example.com/p.png)">x</p>') }),
    ).toBeGreaterThan(0)
    expect(broken({ html: inBody('<p onclick="x()">x</p>') })).toBeGreaterThan(0)
    expect(broken({ html: inBody("<script>x()</script>") })).toBeGreaterThan(0)
    expect(broken({ html: inBody("<p>a < b & c</p>") })).toBeGreaterThan(0)
    expect(broken({ html: inBody("<code>evil.example</code>") })).toBeGreaterThan(0)
    expect(broken({ html: inBody("<p>a</p>") })).toBe(0)
  })

  test("every message type keeps the contract", () => {
    for (const message of samples()) {
      expect({ type: message.type, problems: check(emailContent(message, CTX, RECIPIENT)) }).toEqual({
        type: message.type,
        problems: [],
      })
    }
  })

  test("subjects: [severity] title for incidents, [test] for the test, a sentence for sensors", () => {
    const created = incidentMessage("incident.created")
    expect(emailContent(created, CTX).subject).toBe(`[critical] ${created.incident.title}`)
    const escalated = withIncident(incidentMessage("incident.escalated"), { severity: "high" })
    expect(emailContent(escalated, CTX).subject).toMatch(/^\[high\] Shell commands over SSH from 203\.0\.113\.7/)
    const sample = everyMessage().find((m) => m.type === "webhook.test")
    if (sample === undefined) throw new Error("no webhook.test sample")
    expect(emailContent(sample, CTX).subject).toBe("[test] Test: SSH brute force on web-01 from 203.0.113.7")
    expect(emailContent(sensorMessage("sensor.silent"), CTX).subject).toBe('Sensor "web-01" went silent')
    expect(emailContent(sensorMessage("sensor.recovered"), CTX).subject).toBe('Sensor "web-01" recovered')
  })

  test("the text and HTML parts carry the same words in the same order", () => {
    for (const message of samples()) {
      const content = emailContent(message, CTX, RECIPIENT)
      expect(htmlWords(content.html)).toEqual(textWords(content.text))
    }
    const confirmation = confirmationEmail({
      organization: "Acme Security",
      channelId: RECIPIENT.channelId,
      address: "soc@acme.example.org",
      link: `${APP_URL}/confirm/abc123`,
      expiresAt: new Date("2026-11-27T12:00:00Z"),
      appUrl: APP_URL,
    })
    expect(htmlWords(confirmation.html)).toEqual(textWords(confirmation.text))
  })

  test("an incident email shows the facts a responder needs, in order", () => {
    const message = withIncident(incidentMessage("incident.created"), {
      baitCredentialUsed: true,
      otherSensors: 2,
      source: {
        scope: "internal",
        network: { cidr: "10.20.0.0/16", label: "Office LAN" },
        reverseDns: "ws-17.corp.example.net",
        asn: 64496,
        asOrganization: "Example Networks",
        country: "ZZ",
      },
    })
    const content = emailContent(message, CTX, RECIPIENT)
    const facts = [
      "New incident (critical)",
      "A decoy saw activity that opened a new incident.",
      "Shell commands over SSH",
      "Bait credential used",
      "From inside your network (Office LAN, 10.20.0.0/16).",
      "Also seen on 2 other sensors",
      "Severity",
      "web-01",
      "203.0.113.7",
      "ws-17[.]corp[.]example[.]net",
      "AS64496",
      "Example Networks",
      "ZZ",
      "2026-11-26 12:00:00 UTC",
      "What happened",
      "Recommended action",
      "Techniques",
      "T1021.004",
      "Newest events (3 of 3)",
      "2026-11-26 12:00:02 UTC",
      "2026-11-26 12:00:00 UTC: SSH shell command",
      `${APP_URL}/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV`,
      RECIPIENT.channelId,
      RECIPIENT.organization,
    ]
    for (const part of [content.text, readHtml(content.html).bodyText]) {
      let at = 0
      for (const fact of facts) {
        const found = part.indexOf(fact, at)
        expect({ fact, found: found >= 0 }).toEqual({ fact, found: true })
        at = found + 1
      }
    }
    expect(readHtml(content.html).links).toEqual([`${APP_URL}/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV`])
  })

  test("a sensor email links only to the sensor's console page", () => {
    for (const type of ["sensor.silent", "sensor.recovered"] as const) {
      const content = emailContent(sensorMessage(type), CTX, RECIPIENT)
      expect(readHtml(content.html).links).toEqual([`${APP_URL}/settings/sensors/sen_01ARZ3NDEKTSV4RRFFQ69G5FAV`])
      expect(content.text).toContain("Last heard from: 2026-11-26 12:00:00 UTC")
    }
    expect(emailContent(sensorMessage("sensor.silent", "edge-2", "windows-server", null), CTX).text).toContain(
      "Last heard from: never",
    )
  })

  test("an incident URL off APP_URL is no link and no text", () => {
    const message = withIncident(incidentMessage("incident.created"), { url: "https://evil.example/incidents/x" })
    const content = emailContent(message, CTX)
    expect(check(content)).toEqual([])
    expect(readHtml(content.html).links).toEqual([])
    expect(content.text).not.toContain("Open in console")
  })

  test("the footer says why the recipient gets the email, and there is no unsubscribe link", () => {
    const content = emailContent(incidentMessage("incident.created"), CTX, RECIPIENT)
    expect(content.text).toContain(
      `You get this email because this address is a recipient of alert channel "${RECIPIENT.channelId}" of the organization "${RECIPIENT.organization}".`,
    )
    expect(readHtml(content.html).bodyText).toContain(`alert channel ${RECIPIENT.channelId} of the organization`)
    expect(content.html.toLowerCase()).not.toContain("unsubscribe")
    expect(emailContent(incidentMessage("incident.created"), CTX).text).toContain(
      "recipient of an alert channel of Decoys.",
    )
  })

  test("hostile attacker text is escaped, defanged and in code, everywhere it can be", () => {
    for (const attack of ATTACKS) {
      const messages: ReadonlyArray<ChannelMessage> = [
        hostileMessage(attack),
        // Service text that carries attacker text unquoted: a bug elsewhere; the email stays inert anyway.
        incidentMessage("incident.escalated", { rawTitle: `Login as ${attack}` }),
        withIncident(incidentMessage("incident.reopened"), {
          title: `Login as ${JSON.stringify(attack)}`,
          narrative: `Tried ${JSON.stringify(attack)} and ${attack}`,
          recommendedAction: attack,
          sourceIp: attack,
          source: {
            scope: "external",
            network: null,
            reverseDns: attack,
            asn: 64496,
            asOrganization: attack,
            country: "ZZ",
          },
        }),
        sensorMessage("sensor.silent", attack, attack),
      ]
      for (const message of messages) {
        const content = emailContent(message, CTX, { channelId: attack, organization: attack })
        expect({ attack: attack.slice(0, 60), problems: check(content) }).toEqual({
          attack: attack.slice(0, 60),
          problems: [],
        })
      }
    }
  })

  test("attacker markup shows as escaped code, never as an element", () => {
    const content = emailContent(hostileMessage('<a href="http://evil.example/x">'), CTX, RECIPIENT)
    expect(content.html).toContain("&lt;a href=&quot;hxxp[:]//evil[.]example/x&quot;&gt;</code>")
    expect(content.text).toContain('"<a href=\\"hxxp[:]//evil[.]example/x\\">"')
    const image = emailContent(hostileMessage("<img src=http://evil.example/p.png>"), CTX)
    expect(image.html).toContain("&lt;img src=hxxp[:]//evil[.]example/p[.]png&gt;")
    expect(image.html).not.toMatch(/<img/i)
  })

  test("a quoted value cannot close its quotes in the text part", () => {
    const content = emailContent(hostileMessage('root" (trusted admin) "x'), CTX)
    expect(content.text).toContain('"root\\" (trusted admin) \\"x"')
    expect(content.text).not.toContain('"root" (trusted admin)')
  })

  test("CR, LF and bidi characters are shown, never acted on; the subject stays one line", () => {
    const message = incidentMessage("incident.created", {
      rawTitle: "Login\r\nBcc: victim@example.org\r\n as \u202Eexe.txt",
    })
    const content = emailContent(message, CTX)
    expect(content.subject).not.toMatch(/[\r\n]/)
    expect(content.subject).toContain("␍␊Bcc")
    expect(content.subject).toContain("[U+202E]")
    expect(content.text).not.toContain("\r")
    expect(content.text).not.toContain("\u202E")
    expect(content.html).not.toContain("\u202E")
  })

  test("10 000-character strings: the subject is cut with a mark, the parts stay bounded", () => {
    const long = "A".repeat(10_000)
    const message = withIncident(
      incidentMessage("incident.escalated", { usernames: [long], details: [long], sensorName: long, rawTitle: long }),
      { narrative: long, recommendedAction: long },
    )
    const content = emailContent(message, CTX, RECIPIENT)
    expect(check(content)).toEqual([])
    expect(Array.from(content.subject).length).toBeLessThanOrEqual(200)
    expect(content.subject.endsWith(` ${CUT_MARK}`)).toBe(true)
    expect(content.text).toContain(CUT_MARK)
  })

  test("the largest email any message can make stays within 64 KiB a part", () => {
    // Every character shown as [U+XXXX] (8 bytes) or escaped, in every text, with 20 events.
    for (const seed of ["\u202E", "<", "é🐝", "a.b"]) {
      const long = seed.repeat(Math.ceil(12_000 / seed.length))
      const base = hugeMessage()
      const message = withIncident(base, {
        title: `${long} ${JSON.stringify(long)}`,
        narrative: `${long} ${JSON.stringify(long)}`.repeat(3),
        recommendedAction: long,
        sensor: { id: long, name: long, profile: long },
        sourceIp: long,
        events: base.incident.events.map((e) => ({ ...e, summary: `${long} ${JSON.stringify(long)}`.repeat(2) })),
      })
      const content = emailContent(message, CTX, { channelId: long, organization: long })
      expect({ seed, problems: check(content) }).toEqual({ seed, problems: [] })
    }
  })

  test("texts of many short quoted values stay bounded and still show the newest events", () => {
    for (const unit of ['"a" ', '"\u202E" ', '"" ', '"<" ', '"a.b" ']) {
      const many = unit.repeat(3000)
      const base = hugeMessage()
      const message = withIncident(base, {
        title: many,
        narrative: many,
        recommendedAction: many,
        events: base.incident.events.map((e) => ({ ...e, summary: many })),
      })
      const content = emailContent(message, CTX, RECIPIENT)
      expect({ unit, problems: check(content) }).toEqual({ unit, problems: [] })
      expect(content.text).toContain("Newest events")
    }
  })

  test("random attacker text keeps the contract", () => {
    const text = fc.oneof(fc.string({ unit: "binary", maxLength: 400 }), fc.constantFrom(...ATTACKS))
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 3 }), text, text, (usernames, detail, sensorName) => {
        const message = incidentMessage("incident.created", {
          usernames,
          details: [detail],
          sensorName,
          rawTitle: `${sensorName} ${JSON.stringify(detail)}`,
        })
        expect(check(emailContent(message, CTX, { channelId: detail, organization: sensorName }))).toEqual([])
      }),
      { numRuns: 60 },
    )
  })
})

describe("Confirmation emails", () => {
  const base = {
    organization: "Acme Security",
    channelId: RECIPIENT.channelId,
    address: "soc@acme.example.org",
    link: `${APP_URL}/confirm/abc123`,
    expiresAt: new Date("2026-11-27T12:00:00Z"),
    appUrl: APP_URL,
  }

  test("the confirmation link is the only link; the expiry and the reason are in both parts", () => {
    const content = confirmationEmail(base)
    expect(check(content)).toEqual([])
    expect(content.subject).toBe('Confirm alert emails for "Acme Security"')
    expect(readHtml(content.html).links).toEqual([base.link])
    for (const part of [content.text, readHtml(content.html).bodyText]) {
      expect(part).toContain(base.link)
      expect(part).toContain("2026-11-27 12:00:00 UTC")
      expect(part).toContain(RECIPIENT.channelId)
      expect(part).toContain("Acme Security")
    }
  })

  test("a hostile organization name is escaped and defanged; a link off APP_URL is not a link", () => {
    for (const attack of ATTACKS) {
      const content = confirmationEmail({ ...base, organization: attack, address: attack })
      expect({ attack: attack.slice(0, 60), problems: check(content) }).toEqual({
        attack: attack.slice(0, 60),
        problems: [],
      })
    }
    const offsite = confirmationEmail({ ...base, link: "https://evil.example/confirm/abc123" })
    expect(check(offsite)).toEqual([])
    expect(readHtml(offsite.html).links).toEqual([])
  })
})
