import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createServer, type Server, type Socket } from "node:net"
import { createServer as createTlsServer } from "node:tls"
import { SYSLOG_MESSAGE_MAX_BYTES, SYSLOG_SD_ID, syslogMessage } from "../../src/domain/channels/syslog.ts"
import {
  checkSyslogDestination,
  octetCountedFrame,
  parseSyslogDestination,
  sendSyslog,
} from "../../src/platform/outbound/syslogSend.ts"
import type { AddressPolicy } from "../../src/platform/outbound/urlRule.ts"
import { allFixtures, bigFixture, CONTEXT, type Fixture, HOSTILE, hostileFixture } from "../support/channelMessages.ts"
import { type ParsedSyslog, type Rsyslog, startRsyslog } from "../support/rsyslog.ts"
import { issueCertificate, makeTestCa, type TestCa, type TestCertificate } from "../support/tls.ts"

/**
 * D46 syslog channel end to end: syslogMessage → sendSyslog (RFC 5425: TLS, octet counting) → a real rsyslogd
 * (imtcp with the GnuTLS driver, its RFC 5424 parser, mmpstrucdata), which writes what it parsed. Only DNS is a
 * stand-in (an injected lookup), so a host name can point at the loopback receiver.
 */

const LOOPBACK: AddressPolicy = { allowPrivate: ["127.0.0.0/8"] }
const NO_PRIVATE: AddressPolicy = { allowPrivate: [] }
const NAME = "syslog.example.test"
const toLoopback = async (): Promise<ReadonlyArray<string>> => ["127.0.0.1"]

let ca: TestCa
let rsyslog: Rsyslog
/** Signed by a CA the sender does not trust. */
let stranger: Rsyslog

beforeAll(async () => {
  ca = makeTestCa("Throwaway Syslog Test CA")
  rsyslog = await startRsyslog({
    certificate: issueCertificate(ca, { dnsNames: ["localhost", NAME], ipAddresses: ["127.0.0.1"] }),
  })
  stranger = await startRsyslog({
    certificate: issueCertificate(makeTestCa("Some Other CA"), { dnsNames: [NAME], ipAddresses: ["127.0.0.1"] }),
  })
})

afterAll(async () => {
  if (process.env.SHOW_RSYSLOG_LOG) console.log(rsyslog?.log(), stranger?.log())
  await rsyslog?.stop()
  await stranger?.stop()
})

const send = (fixture: Fixture, overrides: Partial<Parameters<typeof sendSyslog>[0]> = {}) =>
  sendSyslog({
    destination: `syslog+tls://127.0.0.1:${rsyslog.port}`,
    message: syslogMessage(fixture.message, CONTEXT, fixture.payload),
    policy: LOOPBACK,
    ca: ca.caCert,
    ...overrides,
  })

/** The messages rsyslog wrote whose `messageId` SD param is `id`: waits for `count` of them, at most `withinMs`. */
const receivedFor = async (id: string, count = 1, withinMs = 5000): Promise<ReadonlyArray<ParsedSyslog>> => {
  const until = performance.now() + withinMs
  for (;;) {
    const found = rsyslog.messages().filter((m) => sdOf(m).messageId === id)
    if (found.length >= count || performance.now() > until) return found
    await Bun.sleep(25)
  }
}

const sdOf = (message: ParsedSyslog): Readonly<Record<string, string>> =>
  message["$!"]?.["rfc5424-sd"]?.[SYSLOG_SD_ID] ?? {}

describe("syslog messages through a real rsyslog over TLS", () => {
  test("every message type arrives and rsyslog parses every header field, SD param and the MSG", async () => {
    const severities: Record<string, string> = {
      "incident.created": "3",
      "incident.escalated": "2",
      "incident.reopened": "4",
      "incident.closed": "6",
      "webhook.test": "6",
      "sensor.silent": "4",
      "sensor.recovered": "5",
    }
    for (const fixture of allFixtures()) {
      const result = await send(fixture)
      expect(result).toMatchObject({ ok: true, status: null, error: null, responseBody: "", address: "127.0.0.1" })
      const [parsed, ...more] = await receivedFor(fixture.message.id)
      expect(more).toEqual([])
      if (parsed === undefined) throw new Error(`rsyslog did not write ${fixture.message.type}: ${rsyslog.log()}`)
      const severity = severities[fixture.message.type] ?? "?"
      expect(parsed).toMatchObject({
        "protocol-version": "1",
        pri: String(16 * 8 + Number(severity)),
        syslogfacility: "16",
        syslogseverity: severity,
        timereported: "2026-11-21T15:57:42.053Z",
        hostname: CONTEXT.hostname,
        "app-name": "decoy-incident-service",
        procid: "-",
        msgid: fixture.message.type,
      })
      // rsyslog keeps the BOM at the start of msg; the rest is the payload's JSON.
      expect(parsed.msg.startsWith("\uFEFF")).toBe(true)
      expect(JSON.parse(parsed.msg.slice(1))).toEqual(fixture.payload)
      const sd = sdOf(parsed)
      expect(sd.type).toBe(fixture.message.type)
      if ("incident" in fixture.message) {
        const { incident } = fixture.message
        expect(sd).toEqual({
          messageId: fixture.message.id,
          type: fixture.message.type,
          incidentId: incident.id,
          title: incident.title,
          severity: incident.severity,
          sensorId: incident.sensor.id,
          sensorName: incident.sensor.name,
          sourceIp: incident.sourceIp,
          ...(incident.source?.reverseDns ? { sourceReverseDns: incident.source.reverseDns } : {}),
          ...(incident.source?.asn ? { sourceAsn: String(incident.source.asn) } : {}),
          ...(incident.source?.asOrganization ? { sourceAsOrganization: incident.source.asOrganization } : {}),
          ...(incident.source?.country ? { sourceCountry: incident.source.country } : {}),
          eventCount: String(incident.eventCount),
          techniques: incident.techniques.map((t) => t.id).join(","),
          url: incident.url,
        })
      } else {
        expect(sd.sensorId).toBe(fixture.message.sensor.id)
        expect(sd.sensorName).toBe(fixture.message.sensor.name)
      }
    }
  })

  test("hostile attacker text comes back exactly from the SD (after unescaping) and the MSG", async () => {
    const fixture = hostileFixture()
    expect((await send(fixture)).ok).toBe(true)
    const [parsed] = await receivedFor(fixture.message.id)
    if (parsed === undefined) throw new Error(`nothing written: ${rsyslog.log()}`)
    // One SD element: the attacker's `"] [evil@1 …` opened none, and no second message was split off.
    expect(Object.keys(parsed["$!"]?.["rfc5424-sd"] ?? {})).toEqual([SYSLOG_SD_ID])
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what is replaced
    const controls = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g
    expect(sdOf(parsed).sensorName).toBe(HOSTILE.replace(controls, "\uFFFD"))
    expect(sdOf(parsed).title).toBe(`SSH login as ${HOSTILE.replace(controls, "\uFFFD")}`)
    const body = JSON.parse(parsed.msg.slice(1))
    expect(body).toEqual(fixture.payload)
    expect(body.incident.events[0].summary).toBe(HOSTILE)
    expect(rsyslog.messages().some((m) => m.hostname === "fake" || m.msgid === "injected")).toBe(false)
  })

  test("a message near the size bound arrives whole (rsyslog's maxMessageSize is 256k, above the 64 KiB bound)", async () => {
    const fixture = bigFixture(20, 6000)
    const text = syslogMessage(fixture.message, CONTEXT, fixture.payload)
    expect(Buffer.byteLength(text)).toBeGreaterThan(SYSLOG_MESSAGE_MAX_BYTES - 4096)
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(SYSLOG_MESSAGE_MAX_BYTES)
    expect((await send(fixture, { message: text })).ok).toBe(true)
    const [parsed] = await receivedFor(fixture.message.id)
    if (parsed === undefined) throw new Error(`nothing written: ${rsyslog.log()}`)
    expect(parsed.rawmsg).toBe(text)
    const body = JSON.parse(parsed.msg.slice(1))
    expect(body.incident.eventsLeftOut).toBe(Number(sdOf(parsed).eventsLeftOut))
    expect(body.incident.events.at(-1).id).toBe("evt_big0019")
  })

  test("a host name is resolved once, pinned, sent as SNI and checked against the certificate", async () => {
    const fixture = allFixtures()[0] as Fixture
    const looked: Array<string> = []
    const lookup = async (host: string) => {
      looked.push(host)
      return ["127.0.0.1"]
    }
    const named = await send({ ...fixture, message: { ...fixture.message, id: "dlv_named" } } as Fixture, {
      destination: `syslog+tls://${NAME}:${rsyslog.port}`,
      lookup,
    })
    expect(named).toMatchObject({ ok: true, address: "127.0.0.1" })
    expect(looked).toEqual([NAME])
    expect(await receivedFor("dlv_named")).toHaveLength(1)

    // A name the certificate does not list is refused after the handshake, before a byte of the message.
    const other = await send({ ...fixture, message: { ...fixture.message, id: "dlv_othername" } } as Fixture, {
      destination: `syslog+tls://other.example.test:${rsyslog.port}`,
      lookup: toLoopback,
    })
    expect(other.ok).toBe(false)
    expect(other.error).toContain("certificate")
    expect(await receivedFor("dlv_othername", 1, 500)).toHaveLength(0)
  })

  test("a receiver whose certificate the CA does not sign is refused, and gets nothing", async () => {
    const fixture = allFixtures()[0] as Fixture
    const result = await send(fixture, { destination: `syslog+tls://127.0.0.1:${stranger.port}` })
    expect(result.ok).toBe(false)
    expect(result.error).toContain("certificate")
    expect(result.address).toBe("127.0.0.1")
    await Bun.sleep(300)
    expect(stranger.messages()).toEqual([])
  })
})

/** A TLS listener that records the bytes of each connection and closes its side on the client's end. */
const tlsListener = async (certificate: TestCertificate) => {
  const received: Array<Buffer> = []
  const sockets: Array<Socket> = []
  const server = createTlsServer({ cert: certificate.cert, key: certificate.key }, (socket) => {
    sockets.push(socket)
    const index = received.push(Buffer.alloc(0)) - 1
    socket.on("data", (data: Buffer) => {
      received[index] = Buffer.concat([received[index] ?? Buffer.alloc(0), data])
    })
    socket.on("end", () => {
      socket.end()
    })
    socket.on("error", () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  return {
    port: typeof address === "object" && address !== null ? address.port : 0,
    received,
    close: () => {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}

describe("the transport", () => {
  test("the receiver gets exactly the octet-counted frame, and nothing more", async () => {
    const listener = await tlsListener(issueCertificate(ca, { ipAddresses: ["127.0.0.1"] }))
    try {
      const fixture = hostileFixture()
      const message = syslogMessage(fixture.message, CONTEXT, fixture.payload)
      const result = await send(fixture, { destination: `syslog+tls://127.0.0.1:${listener.port}`, message })
      expect(result.ok).toBe(true)
      // The frame was flushed and the connection closed: the receiver reads every byte (in its own time).
      const until = performance.now() + 2000
      while (
        (listener.received[0]?.byteLength ?? 0) < octetCountedFrame(message).byteLength &&
        performance.now() < until
      ) {
        await Bun.sleep(10)
      }
      expect(listener.received).toHaveLength(1)
      expect(listener.received[0]?.equals(octetCountedFrame(message))).toBe(true)
      expect(listener.received[0]?.toString("utf8").startsWith(`${Buffer.byteLength(message)} <131>1 `)).toBe(true)
    } finally {
      listener.close()
    }
  })
})

/** A plain TCP listener: records every byte and every connection, never answers. */
const plainListener = async (): Promise<{
  server: Server
  port: number
  connections: () => number
  received: () => string
}> => {
  let connections = 0
  let received = ""
  const sockets: Array<Socket> = []
  const server = createServer((socket) => {
    connections++
    sockets.push(socket)
    socket.on("data", (data) => {
      received += data.toString("latin1")
    })
    socket.on("error", () => {})
  })
  server.on("close", () => {
    for (const socket of sockets) socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  return {
    server,
    port: typeof address === "object" && address !== null ? address.port : 0,
    connections: () => connections,
    received: () => received,
  }
}

describe("what is refused", () => {
  test("a plain-TCP (no TLS) listener is refused: the message is never sent in clear", async () => {
    const plain = await plainListener()
    try {
      const fixture = allFixtures()[0] as Fixture
      const result = await send(fixture, { destination: `syslog+tls://127.0.0.1:${plain.port}`, timeoutMs: 1000 })
      expect(result.ok).toBe(false)
      expect(result.error).toMatch(/TLS handshake/)
      expect(plain.connections()).toBe(1)
      // Only a TLS ClientHello (record type 22) came; none of the message.
      expect(plain.received().charCodeAt(0)).toBe(22)
      expect(plain.received()).not.toContain("incident.created")
    } finally {
      plain.server.close()
    }
  })

  test("a private address without allowPrivate is refused before connecting", async () => {
    const plain = await plainListener()
    try {
      const fixture = allFixtures()[0] as Fixture
      const result = await send(fixture, { destination: `syslog+tls://127.0.0.1:${plain.port}`, policy: NO_PRIVATE })
      expect(result).toMatchObject({ ok: false, address: null })
      expect(result.error).toContain("refused address: 127.0.0.1 is a loopback address")
      // A name resolving to a private address is refused the same way (D18: every address checked).
      const named = await send(fixture, {
        destination: `syslog+tls://${NAME}:${plain.port}`,
        policy: NO_PRIVATE,
        lookup: async () => ["93.184.216.34", "10.0.0.5"],
      })
      expect(named.error).toContain("resolves to a refused address: 10.0.0.5 is a private address")
      await Bun.sleep(100)
      expect(plain.connections()).toBe(0)
    } finally {
      plain.server.close()
    }
  })
})

describe("the syslog destination form", () => {
  test("syslog+tls://host[:port] is the canonical form (6514 by default)", () => {
    expect(parseSyslogDestination("syslog+tls://Logs.Example.com")).toEqual({
      ok: true,
      host: "logs.example.com",
      given: "Logs.Example.com",
      port: 6514,
      canonical: "syslog+tls://logs.example.com:6514",
    })
    expect(parseSyslogDestination("SYSLOG+TLS://192.0.2.10:1514")).toMatchObject({
      ok: true,
      host: "192.0.2.10",
      port: 1514,
    })
    expect(parseSyslogDestination("syslog+tls://[2001:db8::1]:6514")).toMatchObject({
      ok: true,
      host: "2001:db8::1",
      canonical: "syslog+tls://[2001:db8::1]:6514",
    })
    expect(parseSyslogDestination("syslog+tls://logs.example.com:443")).toMatchObject({ ok: true, port: 443 })
  })

  test.each([
    ["syslog://logs.example.com:514", "TLS only"],
    ["tcp://logs.example.com:514", "TLS only"],
    ["logs.example.com:6514", "TLS only"],
    ["syslog+tls://", "no host"],
    ["syslog+tls://logs.example.com:6514/path", "no path"],
    ["syslog+tls://user@logs.example.com", "credentials"],
    ["syslog+tls://localhost:6514", "local host name"],
    ["syslog+tls://logs.internal:6514", "internal"],
    ["syslog+tls://logs:6514", "fully qualified"],
    ["syslog+tls://0x7f000001:6514", "dotted-decimal"],
    ["syslog+tls://logs.example.com:70000", "port"],
    ["syslog+tls://logs.example.com:", "empty port"],
    ["syslog+tls://logs.example.com:6514 x", "control characters"],
  ])("%s is refused (%s)", (raw, why) => {
    const result = parseSyslogDestination(raw)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toContain(why)
  })

  test("checkSyslogDestination resolves and checks every address", async () => {
    expect(
      await checkSyslogDestination("syslog+tls://logs.example.com", async () => ["93.184.216.34"], NO_PRIVATE),
    ).toEqual({
      ok: true,
      host: "logs.example.com",
      given: "logs.example.com",
      port: 6514,
      canonical: "syslog+tls://logs.example.com:6514",
      addresses: ["93.184.216.34"],
    })
    const refused = await checkSyslogDestination(
      "syslog+tls://logs.example.com",
      async () => ["169.254.169.254"],
      LOOPBACK,
    )
    expect(refused).toMatchObject({ ok: false })
    expect(await checkSyslogDestination("syslog+tls://127.0.0.1:6514", toLoopback, LOOPBACK)).toMatchObject({
      ok: true,
      addresses: ["127.0.0.1"],
    })
  })

  test("octet counting counts bytes, not characters", () => {
    expect(octetCountedFrame("é🐝\n").toString("utf8")).toBe("7 é🐝\n")
  })
})
