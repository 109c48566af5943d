import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { createServer } from "node:net"
import { type HttpsSendRequest, type SendResult, sendHttps } from "../../src/platform/outbound/send.ts"
import { type AddressPolicy, checkAndResolveWebhookUrl } from "../../src/platform/outbound/urlRule.ts"
import {
  issueCertificate,
  lookupTo,
  makeTestCa,
  type RawReceiver,
  type Receiver,
  startRawReceiver,
  startReceiver,
  type TestCa,
} from "../support/tls.ts"

/**
 * sendHttps against real local HTTPS receivers whose certificates are made at test time by a throwaway CA. Nothing
 * is mocked except DNS, which is an injected parameter: "receiver.test" resolves to whatever each test says.
 */

const NAME = "receiver.test"
const LOOPBACK: AddressPolicy = { allowPrivate: ["127.0.0.0/8", "::1/128"] }
const NO_PRIVATE: AddressPolicy = { allowPrivate: [] }
const PUBLIC_ADDRESS = "93.184.216.34"
const BODY = '{"type":"incident.opened","data":{"title":"SSH brute force – café ✓","eventCount":42}}'
const SIGNATURE = "t=1764000000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"
const HEADERS = {
  "X-Service-Signature": SIGNATURE,
  "X-Service-Webhook-Id": "dlv_01JDEMO0000000000000000000",
  "User-Agent": "DecoyIncidentService-Webhooks/1.0",
}

let ca: TestCa
/** DNS:receiver.test only, on 127.0.0.1: the workhorse. */
let named: Receiver
/** IP:127.0.0.1 and IP:::1 only (no DNS name), on 127.0.0.1. */
let byIp: Receiver
/** DNS:other.test only, on 127.0.0.1. */
let wrongName: Receiver
/** DNS:receiver.test and IP:::1, on ::1. */
let v6: Receiver
/** DNS:receiver.test, a redirect target that must never be asked. */
let target: Receiver
/** node:tls, DNS:receiver.test and IP:127.0.0.1: records SNI and raw bytes, hangs up or answers verbatim. */
let raw: RawReceiver

beforeAll(async () => {
  ca = makeTestCa()
  const nameCert = issueCertificate(ca, { dnsNames: [NAME] })
  named = startReceiver(nameCert)
  target = startReceiver(nameCert)
  byIp = startReceiver(issueCertificate(ca, { ipAddresses: ["127.0.0.1", "::1"] }))
  wrongName = startReceiver(issueCertificate(ca, { dnsNames: ["other.test"] }))
  v6 = startReceiver(issueCertificate(ca, { dnsNames: [NAME], ipAddresses: ["::1"] }), "::1")
  raw = await startRawReceiver(issueCertificate(ca, { dnsNames: [NAME], ipAddresses: ["127.0.0.1"] }))
})

afterEach(() => {
  for (const receiver of [named, target, byIp, wrongName, v6]) receiver.reset()
  raw.reset()
})

afterAll(async () => {
  await Promise.all([named, target, byIp, wrongName, v6].map((receiver) => receiver.stop()))
  await raw.stop()
})

const urlOf = (port: number, host = NAME) => `https://${host}:${port}/hook?channel=ch_1`

/** Sends BODY with HEADERS, trusting the test CA, "receiver.test" resolving to 127.0.0.1 unless overridden. */
const send = (overrides: Partial<HttpsSendRequest> & { readonly url: string }): Promise<SendResult> =>
  sendHttps({
    body: BODY,
    headers: HEADERS,
    policy: LOOPBACK,
    lookup: lookupTo("127.0.0.1").lookup,
    ca: [ca.caCert],
    timeoutMs: 3000,
    ...overrides,
  })

const expectTlsFailure = (result: SendResult) => {
  expect(result.ok).toBe(false)
  expect(result.status).toBeNull()
  expect(result.error ?? "").toStartWith("TLS: ")
}

describe("sendHttps: a 2xx receiver", () => {
  test("POSTs exactly the body bytes and the headers, with Content-Type application/json, and reports the 200", async () => {
    named.respond({ status: 200, body: "thanks ✓" })
    const dns = lookupTo("127.0.0.1")
    const result = await send({
      url: urlOf(named.port),
      lookup: dns.lookup,
      // The sender owns Content-Type, Content-Length and Host; a caller's are dropped.
      headers: { ...HEADERS, "content-type": "text/plain", Host: "evil.test" },
    })

    expect(result).toMatchObject({
      ok: true,
      status: 200,
      error: null,
      address: "127.0.0.1",
      responseBody: "thanks ✓",
      responseTruncated: false,
    })
    expect(result.durationMs).toBeLessThan(3000)
    expect(dns.hosts).toEqual([NAME])

    expect(named.requests).toHaveLength(1)
    const request = named.requests[0]
    expect(request?.method).toBe("POST")
    expect(request?.path).toBe("/hook?channel=ch_1")
    expect(request?.bodyBytes).toEqual(new Uint8Array(Buffer.from(BODY, "utf8")))
    expect(request?.body).toBe(BODY)
    expect(request?.headers["content-type"]).toBe("application/json")
    expect(request?.headers["content-length"]).toBe(String(Buffer.byteLength(BODY)))
    expect(request?.headers.host).toBe(`${NAME}:${named.port}`)
    expect(request?.headers["x-service-signature"]).toBe(SIGNATURE)
    expect(request?.headers["x-service-webhook-id"]).toBe(HEADERS["X-Service-Webhook-Id"])
    expect(request?.headers["user-agent"]).toBe(HEADERS["User-Agent"])
  })

  test("a 2xx other than 200 is a success too (raw receiver, IP-literal URL)", async () => {
    raw.answer("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
    const result = await send({ url: `https://127.0.0.1:${raw.port}/x` })
    expect(result).toMatchObject({ ok: true, status: 204, error: null, responseBody: "" })
    expect(raw.received[0] ?? "").toStartWith("POST /x HTTP/1.1\r\n")
    expect(raw.received[0] ?? "").toContain(`\r\nHost: 127.0.0.1:${raw.port}\r\n`)
  })
})

describe("sendHttps: TLS verifies the URL's host name while connecting to the checked address", () => {
  test("a certificate valid only for the name, reached at 127.0.0.1, is accepted: the name was verified", async () => {
    const result = await send({ url: urlOf(named.port) })
    expect(result.ok).toBe(true)
    expect(result.address).toBe("127.0.0.1")
    expect(named.requests).toHaveLength(1)
  })

  test("a certificate valid only for the IP we connect to is refused: the IP is not what is verified", async () => {
    const result = await send({ url: urlOf(byIp.port) })
    expectTlsFailure(result)
    expect(result.error ?? "").toContain(NAME)
    expect(result.address).toBe("127.0.0.1")
    expect(byIp.requests).toHaveLength(0)
  })

  test("the URL's host name is sent as SNI; an IP-literal URL sends none", async () => {
    raw.answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    const byName = await send({ url: urlOf(raw.port) })
    expect(byName).toMatchObject({ ok: true, status: 200, responseBody: "ok" })
    const byAddress = await send({ url: `https://127.0.0.1:${raw.port}/hook` })
    expect(byAddress).toMatchObject({ ok: true, status: 200 })
    expect(raw.serverNames).toEqual([NAME, ""])
  })

  test("a certificate for another name fails with a TLS error and the receiver gets no request", async () => {
    const result = await send({ url: urlOf(wrongName.port) })
    expectTlsFailure(result)
    expect(result.error ?? "").not.toContain(SIGNATURE)
    expect(wrongName.requests).toHaveLength(0)
  })

  test("without the extra CA (or with an unrelated one) the certificate is untrusted", async () => {
    expectTlsFailure(await send({ url: urlOf(named.port), ca: [] }))
    expectTlsFailure(await send({ url: urlOf(named.port), ca: [makeTestCa("Unrelated CA").caCert] }))
    const noCaField: HttpsSendRequest = {
      url: urlOf(named.port),
      body: BODY,
      headers: HEADERS,
      policy: LOOPBACK,
      lookup: lookupTo("127.0.0.1").lookup,
    }
    expectTlsFailure(await sendHttps(noCaField))
    expect(named.requests).toHaveLength(0)
  })
})

/** Sets environment variables for the duration of `use` (Bun reads these two at request time, not at start-up). */
const withEnv = async <A>(vars: Readonly<Record<string, string>>, use: () => Promise<A>): Promise<A> => {
  const saved = Object.keys(vars).map((name) => [name, process.env[name]] as const)
  Object.assign(process.env, vars)
  try {
    return await use()
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}

describe("sendHttps: process-wide settings cannot undo the pinning or the verification", () => {
  test("HTTPS_PROXY is ignored: the connection goes straight to the checked address", async () => {
    // Bun's fetch would send "CONNECT 127.0.0.1:<port>" to this proxy and let it connect on its own.
    const firstLines: Array<string> = []
    const proxy = createServer((socket) => {
      socket.once("data", (data: Buffer) => {
        firstLines.push(data.toString("latin1").split("\r\n")[0] ?? "")
        socket.destroy()
      })
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", () => resolve()))
    const address = proxy.address()
    const proxyUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
    try {
      const result = await withEnv({ HTTPS_PROXY: proxyUrl, https_proxy: proxyUrl }, () =>
        send({ url: urlOf(named.port) }),
      )
      expect(result).toMatchObject({ ok: true, status: 200, address: "127.0.0.1" })
      expect(named.requests).toHaveLength(1)
      expect(firstLines).toEqual([])
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()))
    }
  })

  test("NODE_TLS_REJECT_UNAUTHORIZED=0 does not switch certificate verification off", async () => {
    const result = await withEnv({ NODE_TLS_REJECT_UNAUTHORIZED: "0" }, () => send({ url: urlOf(wrongName.port) }))
    expectTlsFailure(result)
    expect(wrongName.requests).toHaveLength(0)
  })
})

describe("sendHttps: the URL rule at send time", () => {
  // D18: the URL is "checked at channel creation and again at every delivery, connecting to the address that was
  // checked (no DNS-rebinding window)". The name was public at creation; at delivery it points at a loopback receiver
  // that would accept the request (valid certificate, trusted CA), and the send must be refused before connecting.
  test("DNS rebinding: public at channel creation, loopback at delivery: refused, the receiver gets nothing", async () => {
    const atCreation = await checkAndResolveWebhookUrl(urlOf(named.port), lookupTo(PUBLIC_ADDRESS).lookup, NO_PRIVATE)
    expect(atCreation).toMatchObject({ ok: true, addresses: [PUBLIC_ADDRESS] })

    const dns = lookupTo("127.0.0.1")
    const result = await send({ url: urlOf(named.port), lookup: dns.lookup, policy: NO_PRIVATE })
    expect(dns.hosts).toEqual([NAME])
    expect(result).toMatchObject({ ok: false, status: null, address: null, responseBody: "" })
    expect(result.error ?? "").toStartWith("refused address: ")
    expect(result.error ?? "").toContain("127.0.0.1")
    expect(named.requests).toHaveLength(0)

    // The same send with loopback allowed reaches the receiver: the refusal above is the rule, not a broken setup.
    expect((await send({ url: urlOf(named.port), policy: LOOPBACK })).ok).toBe(true)
    expect(named.requests).toHaveLength(1)
  })

  test("one refused address among several refuses the send", async () => {
    const publicAndPrivate = await send({
      url: urlOf(named.port),
      lookup: lookupTo(PUBLIC_ADDRESS, "127.0.0.1").lookup,
      policy: NO_PRIVATE,
    })
    expect(publicAndPrivate.ok).toBe(false)
    expect(publicAndPrivate.error ?? "").toStartWith("refused address: ")

    // The first address is allowed and reachable, the second is not allowed: still refused, nothing sent.
    const allowedThenPrivate = await send({ url: urlOf(named.port), lookup: lookupTo("127.0.0.1", "10.1.2.3").lookup })
    expect(allowedThenPrivate.ok).toBe(false)
    expect(allowedThenPrivate.error ?? "").toContain("10.1.2.3")
    expect(allowedThenPrivate.address).toBeNull()
    expect(named.requests).toHaveLength(0)
  })

  test("a non-https URL or credentials in the URL are refused without lookup or connection", async () => {
    const dns = lookupTo("127.0.0.1")
    const plain = await send({ url: `http://${NAME}:${named.port}/hook`, lookup: dns.lookup })
    expect(plain).toMatchObject({ ok: false, status: null, address: null })
    expect(plain.error ?? "").toStartWith("refused URL: ")

    const credentials = await send({ url: `https://user:s3cret@${NAME}:${named.port}/hook`, lookup: dns.lookup })
    expect(credentials).toMatchObject({ ok: false, status: null, address: null })
    expect(credentials.error ?? "").toStartWith("refused URL: ")
    expect(credentials.error ?? "").not.toContain("s3cret")

    expect(dns.hosts).toEqual([])
    expect(named.requests).toHaveLength(0)
  })

  test("a name that does not resolve is refused", async () => {
    const failing = async (): Promise<ReadonlyArray<string>> => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND receiver.test"), { code: "ENOTFOUND" })
    }
    const result = await send({ url: urlOf(named.port), lookup: failing })
    expect(result.ok).toBe(false)
    expect(result.error ?? "").toStartWith("refused address: ")
    expect(result.error ?? "").toContain("ENOTFOUND")
  })

  test("when connecting to the first checked address is refused, the next checked one is used", async () => {
    // 127.0.0.2 is loopback too, but the receiver listens on 127.0.0.1 only: the connection is refused, nothing sent.
    const result = await send({ url: urlOf(named.port), lookup: lookupTo("127.0.0.2", "127.0.0.1").lookup })
    expect(result).toMatchObject({ ok: true, status: 200, address: "127.0.0.1" })
    expect(named.requests).toHaveLength(1)
  })
})

describe("sendHttps: IPv6", () => {
  test("an IPv6 literal host [::1] is checked and connected to, verified against the IP", async () => {
    const dns = lookupTo()
    const result = await send({ url: `https://[::1]:${v6.port}/hook`, lookup: dns.lookup })
    expect(result).toMatchObject({ ok: true, status: 200, address: "::1" })
    expect(dns.hosts).toEqual([])
    expect(v6.requests[0]?.headers.host).toBe(`[::1]:${v6.port}`)
    expect(v6.requests[0]?.body).toBe(BODY)
  })

  test("a name resolving to ::1 connects there, verified against the name", async () => {
    const result = await send({ url: urlOf(v6.port), lookup: lookupTo("::1").lookup })
    expect(result).toMatchObject({ ok: true, status: 200, address: "::1" })
    expect(v6.requests).toHaveLength(1)
  })

  test("[::1] is refused when the policy does not allow it", async () => {
    const result = await send({ url: `https://[::1]:${v6.port}/hook`, policy: { allowPrivate: ["127.0.0.0/8"] } })
    expect(result.ok).toBe(false)
    expect(result.error ?? "").toStartWith("refused address: ")
    expect(v6.requests).toHaveLength(0)
  })
})

describe("sendHttps: non-2xx answers", () => {
  test("500 and 410 are failures that keep the status and the response body", async () => {
    named.respond({ status: 500, body: "boom" })
    const failed = await send({ url: urlOf(named.port) })
    expect(failed).toMatchObject({ ok: false, status: 500, error: "HTTP 500", responseBody: "boom" })

    named.respond({ status: 410, body: "gone" })
    const gone = await send({ url: urlOf(named.port) })
    expect(gone).toMatchObject({ ok: false, status: 410, error: "HTTP 410", responseBody: "gone" })
    expect(named.requests).toHaveLength(2)
  })

  test("a 302 is not followed: failure with status 302, and the redirect target gets nothing", async () => {
    named.respond({ redirectTo: `${urlOf(target.port)}&redirected=1` })
    const result = await send({ url: urlOf(named.port) })
    expect(result).toMatchObject({ ok: false, status: 302, error: "redirect not followed (302)" })
    expect(named.requests).toHaveLength(1)
    await Bun.sleep(100)
    expect(target.requests).toHaveLength(0)
    // The target is reachable: the same send straight to it arrives.
    expect((await send({ url: urlOf(target.port) })).ok).toBe(true)
    expect(target.requests).toHaveLength(1)
  })
})

describe("sendHttps: time budget and broken connections", () => {
  test("a receiver slower than timeoutMs: failure after about timeoutMs, and the socket is destroyed", async () => {
    named.respond({ delayMs: 2000 })
    const result = await send({ url: urlOf(named.port), timeoutMs: 300 })
    expect(result).toMatchObject({ ok: false, status: null, error: "timed out after 300 ms", address: "127.0.0.1" })
    expect(result.durationMs).toBeGreaterThanOrEqual(290)
    expect(result.durationMs).toBeLessThan(1000)
    expect(named.requests).toHaveLength(1)
    // The receiver sees its client go away long before its 2 s answer.
    expect(await named.waitForAbort(1000)).toBe(true)
  })

  test("the default budget is 5000 ms: a receiver answering after 6 s fails at about 5 s", async () => {
    named.respond({ delayMs: 6000 })
    const result = await sendHttps({
      url: urlOf(named.port),
      body: BODY,
      headers: HEADERS,
      policy: LOOPBACK,
      lookup: lookupTo("127.0.0.1").lookup,
      ca: [ca.caCert],
    })
    expect(result).toMatchObject({ ok: false, status: null, error: "timed out after 5000 ms" })
    expect(result.durationMs).toBeGreaterThanOrEqual(4900)
    expect(result.durationMs).toBeLessThanOrEqual(5900)
  }, 15_000)

  test("a DNS lookup that never answers counts against the budget", async () => {
    const hanging = (): Promise<ReadonlyArray<string>> => new Promise(() => {})
    const result = await send({ url: urlOf(named.port), lookup: hanging, timeoutMs: 300 })
    expect(result).toMatchObject({ ok: false, status: null, address: null })
    expect(result.error ?? "").toStartWith("timed out after 300 ms")
    expect(result.durationMs).toBeLessThan(1000)
    expect(named.requests).toHaveLength(0)
  })

  test("a receiver that closes the connection without answering: connection error", async () => {
    raw.answer(null)
    const result = await send({ url: urlOf(raw.port) })
    expect(result).toMatchObject({ ok: false, status: null, address: "127.0.0.1", responseBody: "" })
    expect(result.error ?? "").toContain("connection closed")
    // It did get the request (so the failure is the hang-up, not TLS or the URL rule).
    expect(raw.received[0] ?? "").toStartWith("POST /hook?channel=ch_1 HTTP/1.1\r\n")
    expect(raw.serverNames).toEqual([NAME])
  })

  test("a 200 whose body is cut off by a closed connection is a failure that keeps the status", async () => {
    raw.answer("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nonly ten!!")
    const result = await send({ url: urlOf(raw.port) })
    expect(result).toMatchObject({ ok: false, status: 200 })
    expect(result.error ?? "").toContain("connection closed")
  })

  test("nothing listening: connection refused", async () => {
    const gone = startReceiver(issueCertificate(ca, { dnsNames: [NAME] }))
    const port = gone.port
    await gone.stop()
    const result = await send({ url: urlOf(port) })
    expect(result).toMatchObject({ ok: false, status: null, error: "connection refused", address: "127.0.0.1" })
  })

  test("a header value with CR/LF is refused before connecting, and sendHttps does not throw", async () => {
    const result = await send({ url: urlOf(named.port), headers: { "X-Bad": "a\r\nInjected: 1" } })
    expect(result.ok).toBe(false)
    expect(result.error ?? "").toContain("X-Bad")
    expect(result.error ?? "").not.toContain("Injected")
    expect(named.requests).toHaveLength(0)
  })
})

describe("sendHttps: response body limit", () => {
  test("a 200 with a 1 MiB body: ok, at most 65536 bytes kept, truncated, and quick", async () => {
    named.respond({ bodyBytes: 1024 * 1024 })
    const result = await send({ url: urlOf(named.port) })
    expect(result).toMatchObject({ ok: true, status: 200, error: null, responseTruncated: true })
    expect(Buffer.byteLength(result.responseBody)).toBeLessThanOrEqual(65536)
    expect(result.responseBody.length).toBeGreaterThan(0)
    expect(result.responseBody).toMatch(/^a+$/)
    expect(result.durationMs).toBeLessThan(1500)
  })

  test("maxResponseBytes cuts at a byte count without a broken character; a body of exactly that size is whole", async () => {
    named.respond({ body: "ab✓cd" })
    const cut = await send({ url: urlOf(named.port), maxResponseBytes: 4 })
    expect(cut).toMatchObject({ ok: true, responseBody: "ab", responseTruncated: true })

    named.respond({ body: "abcd" })
    const whole = await send({ url: urlOf(named.port), maxResponseBytes: 4 })
    expect(whole).toMatchObject({ ok: true, responseBody: "abcd", responseTruncated: false })
  })
})
