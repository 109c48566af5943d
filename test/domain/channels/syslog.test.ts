import { describe, expect, test } from "bun:test"
import {
  escapeParamValue,
  SYSLOG_DEFAULT_FACILITY,
  SYSLOG_MESSAGE_MAX_BYTES,
  SYSLOG_SD_ID,
  syslogMessage,
} from "../../../src/domain/channels/syslog.ts"
import {
  allFixtures,
  bigFixture,
  CONTEXT,
  CREATED_AT,
  HOSTILE,
  hostileFixture,
  incidentFixture,
  sensorFixture,
} from "../../support/channelMessages.ts"

/**
 * D46 syslog formatter. Every message is checked by a parser written from RFC 5424's ABNF (section 6), strict: it
 * refuses what the grammar refuses (an unescaped `"` or `]` in a PARAM-VALUE, a too-long field, invalid UTF-8).
 */

interface Parsed {
  readonly pri: number
  readonly version: number
  readonly timestamp: string
  readonly hostname: string
  readonly appName: string
  readonly procid: string
  readonly msgid: string
  readonly sd: ReadonlyArray<{ readonly id: string; readonly params: ReadonlyArray<readonly [string, string]> }>
  readonly rawSd: string
  /** MSG without its BOM; `bom` says whether it had one. */
  readonly msg: string
  readonly bom: boolean
}

const PRINTUSASCII = /^[\x21-\x7e]+$/
const SD_NAME = /^[\x21-\x7e]{1,32}$/
const SD_NAME_CHARS = /[=\s\]"]/
// FULL-DATE "T" FULL-TIME, TIME-SECFRAC 1*6DIGIT, TIME-OFFSET "Z" / ("+" / "-") HH ":" MM.
const TIMESTAMP =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/

/** RFC 5424 SYSLOG-MSG = HEADER SP STRUCTURED-DATA [SP MSG]; throws on any violation. */
const parseRfc5424 = (text: string): Parsed => {
  // The whole message must be valid UTF-8 (MSG-UTF8, PARAM-VALUE = UTF-8-STRING): a lone surrogate would not be.
  const bytes = new TextEncoder().encode(text)
  if (new TextDecoder("utf-8", { fatal: true }).decode(bytes) !== text) throw new Error("not valid UTF-8")
  let at = 0
  const fail = (why: string): never => {
    throw new Error(`${why} at ${at}: ${JSON.stringify(text.slice(at, at + 40))}`)
  }
  const field = (max: number, name: string): string => {
    const end = text.indexOf(" ", at)
    if (end === -1) fail(`no SP after ${name}`)
    const value = text.slice(at, end)
    if (value.length === 0 || value.length > max || !PRINTUSASCII.test(value)) fail(`bad ${name} ${value}`)
    at = end + 1
    return value
  }
  const head = /^<(\d{1,3})>([1-9]\d{0,2}) /.exec(text) ?? fail("bad PRI/VERSION")
  const pri = Number(head[1])
  if (pri > 191 || (head[1]?.length !== 1 && head[1]?.startsWith("0"))) fail("PRIVAL out of range")
  at = head[0].length
  const timestamp = field(64, "TIMESTAMP")
  if (timestamp !== "-" && !TIMESTAMP.test(timestamp)) fail(`bad TIMESTAMP ${timestamp}`)
  const hostname = field(255, "HOSTNAME")
  const appName = field(48, "APP-NAME")
  const procid = field(128, "PROCID")
  const msgid = field(32, "MSGID")

  const sdStart = at
  const sd: Array<{ id: string; params: Array<readonly [string, string]> }> = []
  if (text[at] === "-") at++
  else {
    while (text[at] === "[") {
      at++
      const nameEnd = text.slice(at).search(/[ \]]/)
      if (nameEnd === -1) fail("unterminated SD-ID")
      const id = text.slice(at, at + nameEnd)
      if (!SD_NAME.test(id) || SD_NAME_CHARS.test(id)) fail(`bad SD-ID ${id}`)
      at += nameEnd
      const params: Array<readonly [string, string]> = []
      while (text[at] === " ") {
        at++
        const eq = text.indexOf("=", at)
        if (eq === -1) fail("no = in SD-PARAM")
        const name = text.slice(at, eq)
        if (!SD_NAME.test(name) || SD_NAME_CHARS.test(name)) fail(`bad PARAM-NAME ${name}`)
        at = eq + 1
        if (text[at] !== '"') fail("PARAM-VALUE must start with a quote")
        at++
        let value = ""
        for (;;) {
          const c = text[at]
          if (c === undefined) fail("unterminated PARAM-VALUE")
          if (c === "\\") {
            const next = text[at + 1]
            // RFC 5424 6.3.3: only these three are escapes; a backslash before anything else is itself.
            if (next === '"' || next === "\\" || next === "]") {
              value += next
              at += 2
            } else {
              value += c
              at++
            }
            continue
          }
          if (c === "]") fail("unescaped ] in PARAM-VALUE")
          if (c === '"') {
            at++
            break
          }
          value += c
          at++
        }
        params.push([name, value])
      }
      if (text[at] !== "]") fail("SD-ELEMENT not closed")
      at++
      sd.push({ id, params })
    }
    if (sd.length === 0) fail("STRUCTURED-DATA is neither - nor an SD-ELEMENT")
  }
  const rawSd = text.slice(sdStart, at)
  if (at === text.length)
    return {
      pri,
      version: Number(head[2]),
      timestamp,
      hostname,
      appName,
      procid,
      msgid,
      sd,
      rawSd,
      msg: "",
      bom: false,
    }
  if (text[at] !== " ") fail("no SP before MSG")
  const rest = text.slice(at + 1)
  const bom = rest.startsWith("\uFEFF")
  return {
    pri,
    version: Number(head[2]),
    timestamp,
    hostname,
    appName,
    procid,
    msgid,
    sd,
    rawSd,
    msg: bom ? rest.slice(1) : rest,
    bom,
  }
}

const paramsOf = (parsed: Parsed): Record<string, string> => {
  const element = parsed.sd.find((e) => e.id === SYSLOG_SD_ID)
  if (element === undefined) throw new Error("no SD element of ours")
  return Object.fromEntries(element.params)
}

const utf8 = (text: string) => Buffer.byteLength(text, "utf8")

describe("the RFC 5424 parser of these tests refuses what the grammar refuses", () => {
  const ok = '<134>1 2026-11-21T15:57:42.053Z h app - id [x@32473 a="1"] \uFEFF{}'
  test("a valid message parses", () => {
    expect(paramsOf({ ...parseRfc5424(ok), sd: [{ id: SYSLOG_SD_ID, params: [["a", "1"]] }] })).toEqual({ a: "1" })
  })
  test.each([
    ["unescaped ]", '<134>1 - h app - id [x@32473 a="]"]'],
    ["unescaped quote", '<134>1 - h app - id [x@32473 a="""]'],
    ["PRI above 191", "<192>1 - h app - id -"],
    ["space in SD-ID", '<134>1 - h app - id [x y a="1"]'],
    ["MSGID of 33", `<134>1 - h app - ${"m".repeat(33)} -`],
    ["no SD", "<134>1 - h app - id"],
    ["bad timestamp", "<134>1 2026-11-21 15:57:42Z h app - id -"],
  ])("%s is refused", (_, text) => {
    expect(() => parseRfc5424(text)).toThrow()
  })
})

describe("syslogMessage", () => {
  test("every message type is one RFC 5424 message with the documented header, SD and MSG", () => {
    const expectedSeverity: Record<string, number> = {
      "incident.created": 3, // high
      "incident.escalated": 2, // critical
      "incident.reopened": 4, // medium
      "incident.closed": 6,
      "webhook.test": 6,
      "sensor.silent": 4,
      "sensor.recovered": 5,
    }
    for (const { message, payload } of allFixtures()) {
      const parsed = parseRfc5424(syslogMessage(message, CONTEXT, payload))
      expect(parsed.pri).toBe(SYSLOG_DEFAULT_FACILITY * 8 + (expectedSeverity[message.type] ?? -1))
      expect(parsed.version).toBe(1)
      expect(parsed.timestamp).toBe("2026-11-21T15:57:42.053Z")
      expect(parsed.hostname).toBe(CONTEXT.hostname)
      expect(parsed.appName).toBe("decoy-incident-service")
      expect(parsed.procid).toBe("-")
      expect(parsed.msgid).toBe(message.type)
      expect(parsed.sd.map((e) => e.id)).toEqual(["decoyIncident@32473"])
      expect(parsed.bom).toBe(true)
      expect(JSON.parse(parsed.msg)).toEqual(payload)
      const params = paramsOf(parsed)
      expect(params.messageId).toBe(message.id)
      expect(params.type).toBe(message.type)
      if ("incident" in message) {
        expect(params).toEqual({
          messageId: message.id,
          type: message.type,
          incidentId: message.incident.id,
          title: message.incident.title,
          severity: message.incident.severity,
          sensorId: message.incident.sensor.id,
          sensorName: message.incident.sensor.name,
          sourceIp: message.incident.sourceIp,
          ...(message.incident.source?.reverseDns ? { sourceReverseDns: message.incident.source.reverseDns } : {}),
          ...(message.incident.source?.asn ? { sourceAsn: String(message.incident.source.asn) } : {}),
          ...(message.incident.source?.asOrganization
            ? { sourceAsOrganization: message.incident.source.asOrganization }
            : {}),
          ...(message.incident.source?.country ? { sourceCountry: message.incident.source.country } : {}),
          eventCount: String(message.incident.eventCount),
          techniques: message.incident.techniques.map((t) => t.id).join(","),
          url: message.incident.url,
        })
      } else {
        expect(params).toEqual({
          messageId: message.id,
          type: message.type,
          sensorId: message.sensor.id,
          sensorName: message.sensor.name,
          sensorProfile: message.sensor.profile,
          lastSeenAt: CREATED_AT.toISOString(),
        })
      }
    }
  })

  test("the facility is a parameter (default local0); an invalid one falls back to local0", () => {
    const { message, payload } = incidentFixture("incident.created")
    expect(parseRfc5424(syslogMessage(message, CONTEXT, payload, { facility: 4 })).pri).toBe(4 * 8 + 3)
    expect(parseRfc5424(syslogMessage(message, CONTEXT, payload, { facility: 24 })).pri).toBe(16 * 8 + 3)
    expect(parseRfc5424(syslogMessage(message, CONTEXT, payload, { facility: 1.5 })).pri).toBe(16 * 8 + 3)
  })

  test("several techniques are listed comma-separated", () => {
    const { message, payload } = incidentFixture("incident.created", (incident) => ({
      ...incident,
      techniques: [
        { id: "T1110.001", name: "Password Guessing", tactics: [] },
        { id: "T1078", name: "Valid Accounts", tactics: [] },
      ],
    }))
    expect(paramsOf(parseRfc5424(syslogMessage(message, CONTEXT, payload))).techniques).toBe("T1110.001,T1078")
  })

  test("hostile attacker text stays inside its param values and the JSON MSG", () => {
    const { message, payload } = hostileFixture()
    const text = syslogMessage(message, CONTEXT, payload)
    const parsed = parseRfc5424(text)
    // One SD element only: the attacker's "] [evil@1 …" did not open a second one.
    expect(parsed.sd.map((e) => e.id)).toEqual([SYSLOG_SD_ID])
    const params = paramsOf(parsed)
    // Quotes, backslashes, brackets and non-ASCII come back exactly; controls (C0, DEL, C1, U+2028) as U+FFFD.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what is replaced
    const expected = HOSTILE.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, "\uFFFD")
    expect(params.sensorName).toBe(expected)
    expect(params.title).toBe(`SSH login as ${expected}`)
    // No raw control character anywhere in the message (the MSG JSON escapes them).
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters is the point
    expect(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(text)).toBe(false)
    expect(JSON.parse(parsed.msg)).toEqual(payload)
    expect(JSON.parse(parsed.msg).incident.events[0].summary).toBe(HOSTILE)
  })

  test("escapeParamValue escapes exactly the three characters RFC 5424 names", () => {
    expect(escapeParamValue('a"b\\c]d[e=f')).toBe('a\\"b\\\\c\\]d[e=f')
    expect(escapeParamValue("x\ny\u0000z")).toBe("x\uFFFDy\uFFFDz")
    // A lone surrogate is not UTF-8: it becomes U+FFFD too.
    expect(escapeParamValue("a\uD800b")).toBe("a\uFFFDb")
    // Long values are cut (by code point, never inside one) to 256.
    const long = escapeParamValue("🐝".repeat(300))
    expect([...long].length).toBe(256)
    expect(long.endsWith("…")).toBe(true)
  })

  test("header fields that are not PRINTUSASCII are cleaned, and an empty hostname is NILVALUE", () => {
    const { message, payload } = incidentFixture("incident.created")
    const parsed = parseRfc5424(
      syslogMessage(
        message,
        { ...CONTEXT, hostname: "", product: { ...CONTEXT.product, id: "Decoy Service ✓" } },
        payload,
      ),
    )
    expect(parsed.hostname).toBe("-")
    expect(parsed.appName).toBe("Decoy-Service-")
    const long = parseRfc5424(syslogMessage(message, { ...CONTEXT, hostname: `h${"x".repeat(300)}` }, payload))
    expect(long.hostname.length).toBe(255)
  })

  test("an invalid createdAt is NILVALUE, not a malformed TIMESTAMP", () => {
    const { message, payload } = incidentFixture("incident.created")
    const invalid = { ...message, createdAt: new Date(Number.NaN) }
    expect(parseRfc5424(syslogMessage(invalid, CONTEXT, payload)).timestamp).toBe("-")
    const far = { ...message, createdAt: new Date("+010000-01-01T00:00:00Z") }
    expect(parseRfc5424(syslogMessage(far, CONTEXT, payload)).timestamp).toBe("-")
  })

  test("a body over the bound loses its oldest events, says how many, and stays valid JSON and UTF-8", () => {
    const { message, payload } = bigFixture(20, 6000)
    expect(utf8(JSON.stringify(payload))).toBeGreaterThan(SYSLOG_MESSAGE_MAX_BYTES)
    const text = syslogMessage(message, CONTEXT, payload)
    expect(utf8(text)).toBeLessThanOrEqual(SYSLOG_MESSAGE_MAX_BYTES)
    const parsed = parseRfc5424(text)
    const params = paramsOf(parsed)
    const body = JSON.parse(parsed.msg)
    const left = Number(params.eventsLeftOut)
    expect(left).toBeGreaterThan(0)
    expect(params.truncated).toBe("true")
    expect(body.truncated).toBe(true)
    expect(body.incident.eventsLeftOut).toBe(left)
    // The newest kept, the oldest left out.
    expect(body.incident.events.length).toBe(20 - left)
    expect(body.incident.events.at(-1).id).toBe("evt_big0019")
    expect(body.incident.events[0].id).toBe(`evt_big${String(left).padStart(4, "0")}`)
    // As few as needed: one more event would not have fitted.
    const oneMore = JSON.stringify({
      ...body,
      incident: { ...body.incident, events: (payload as typeof body).incident.events.slice(left - 1) },
    })
    expect(utf8(oneMore)).toBeGreaterThan(SYSLOG_MESSAGE_MAX_BYTES - utf8(text.slice(0, text.indexOf("\uFEFF"))))
  })

  test("a body that does not fit even without events has its strings shortened, then is a stub, never cut text", () => {
    const { message, payload } = incidentFixture("incident.created", (incident) => ({
      ...incident,
      narrative: "é🐝".repeat(40_000),
    }))
    const text = syslogMessage(message, CONTEXT, payload)
    expect(utf8(text)).toBeLessThanOrEqual(SYSLOG_MESSAGE_MAX_BYTES)
    const parsed = parseRfc5424(text)
    const body = JSON.parse(parsed.msg)
    expect(body.incident.narrative.endsWith("…")).toBe(true)
    expect(body.incident.events).toEqual([])
    expect(paramsOf(parsed).eventsLeftOut).toBe("1")

    // 200 members of 64 code points are over 2048 bytes however short their strings are: only the stub fits.
    const wide = {
      ...(payload as object),
      unmapped: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, "v"])),
    }
    const tiny = syslogMessage(message, CONTEXT, wide, { maxBytes: 2048 })
    expect(utf8(tiny)).toBeLessThanOrEqual(2048)
    const stub = parseRfc5424(tiny)
    expect(JSON.parse(stub.msg)).toEqual({ id: message.id, type: message.type, truncated: true })
    expect(paramsOf(stub).truncated).toBe("true")
  })

  test("an OCSF payload loses its oldest evidences when too large", () => {
    const { message } = incidentFixture("incident.created")
    const evidences = Array.from({ length: 40 }, (_, i) => ({ uid: `e${i}`, data: "é".repeat(1000) }))
    const finding = { class_uid: 2004, finding_info: { uid: "inc" }, evidences }
    const parsed = parseRfc5424(syslogMessage(message, CONTEXT, finding))
    const body = JSON.parse(parsed.msg)
    const left = Number(paramsOf(parsed).eventsLeftOut)
    expect(left).toBeGreaterThan(0)
    expect(body.evidences.length).toBe(40 - left)
    expect(body.evidences.at(-1).uid).toBe("e39")
    expect(body.class_uid).toBe(2004)
  })

  test("a sensor with a hostile name is escaped the same way", () => {
    const { message, payload } = sensorFixture("sensor.silent", 'a"b]c\\d')
    expect(paramsOf(parseRfc5424(syslogMessage(message, CONTEXT, payload))).sensorName).toBe('a"b]c\\d')
  })
})
