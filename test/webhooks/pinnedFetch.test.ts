import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { createServer as createTcpServer, type Server as TcpServer } from "node:net"
import tls from "node:tls"
import * as client from "openid-client"
import { OutboundRefused, pinnedFetch } from "../../src/platform/outbound/pinnedFetch.ts"
import type { AddressPolicy } from "../../src/platform/outbound/urlRule.ts"
import { issueCertificate, lookupTo, makeTestCa, type Receiver, startReceiver, type TestCa } from "../support/tls.ts"

/**
 * pinnedFetch against real local TLS servers whose certificates are made at test time by a throwaway CA. Nothing is
 * mocked except DNS, which is an injected option: "idp.test" resolves to whatever each test says.
 */

const NAME = "idp.test"
const LOOPBACK: AddressPolicy = { allowPrivate: ["127.0.0.0/8", "::1/128"] }
const NO_PRIVATE: AddressPolicy = { allowPrivate: [] }
const SECRET = "Bearer eyJhbGciOiJSUzI1NiJ9.s3cr3t-access-token.signature"

let ca: TestCa
/** DNS:idp.test, on 127.0.0.1. */
let named: Receiver
/** DNS:idp.test, a redirect target that must never be asked. */
let target: Receiver
/** DNS:other.test only, on 127.0.0.1. */
let wrongName: Receiver
/** Plain TCP on 127.0.0.1 that counts connections: proves that a refusal made none. */
let counter: TcpServer
let counterPort = 0
let connections = 0
/** TLS for DNS:idp.test that completes the handshake, reads and discards the request, and never answers. */
let silent: tls.Server
let silentPort = 0
const silentSockets = new Set<tls.TLSSocket>()

const listen = (server: TcpServer): Promise<number> =>
  new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      resolve(typeof address === "object" && address !== null ? address.port : 0)
    }),
  )

beforeAll(async () => {
  ca = makeTestCa()
  const nameCert = issueCertificate(ca, { dnsNames: [NAME] })
  named = startReceiver(nameCert)
  target = startReceiver(nameCert)
  wrongName = startReceiver(issueCertificate(ca, { dnsNames: ["other.test"] }))
  counter = createTcpServer((socket) => {
    connections += 1
    socket.destroy()
  })
  counterPort = await listen(counter)
  silent = tls.createServer({ cert: nameCert.cert, key: nameCert.key }, (socket) => {
    silentSockets.add(socket)
    socket.on("error", () => {})
    socket.on("close", () => silentSockets.delete(socket))
    socket.resume()
  })
  silentPort = await listen(silent)
})

afterEach(() => {
  for (const receiver of [named, target, wrongName]) receiver.reset()
  connections = 0
})

afterAll(async () => {
  await Promise.all([named, target, wrongName].map((receiver) => receiver.stop()))
  await new Promise<void>((resolve) => counter.close(() => resolve()))
  for (const socket of silentSockets) socket.destroy()
  await new Promise<void>((resolve) => silent.close(() => resolve()))
})

const urlOf = (port: number, path = "/userinfo?x=1", host = NAME) => `https://${host}:${port}${path}`

/** A pinnedFetch trusting the test CA, "idp.test" resolving to 127.0.0.1 unless overridden. */
const fetchWith = (overrides: Partial<Parameters<typeof pinnedFetch>[0]> = {}) =>
  pinnedFetch({
    policy: LOOPBACK,
    ca: [ca.caCert],
    lookup: lookupTo("127.0.0.1").lookup,
    timeoutMs: 3000,
    ...overrides,
  })

/** The rejection of `promise`, which must be an OutboundRefused. */
const refusal = async (promise: Promise<unknown>): Promise<OutboundRefused> => {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  )
  expect(error).toBeInstanceOf(OutboundRefused)
  return error as OutboundRefused
}

describe("pinnedFetch: answers", () => {
  test("a GET returns a standard Response with the status, the response headers and the JSON body", async () => {
    named.respond({
      status: 200,
      body: JSON.stringify({ sub: "u_1", name: "Ada ✓" }),
      headers: { "Content-Type": "application/json", "X-Trace-Id": "t-42", "Cache-Control": "no-store" },
    })
    const dns = lookupTo("127.0.0.1")
    const response = await fetchWith({ lookup: dns.lookup })(new URL(urlOf(named.port)), {
      headers: { Accept: "application/json", Authorization: SECRET },
    })
    expect(response).toBeInstanceOf(Response)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("application/json")
    expect(response.headers.get("x-trace-id")).toBe("t-42")
    expect(response.headers.get("cache-control")).toBe("no-store")
    expect(await response.json()).toEqual({ sub: "u_1", name: "Ada ✓" })
    expect(dns.hosts).toEqual([NAME])
    expect(named.requests).toHaveLength(1)
    const request = named.requests[0]
    expect(request?.method).toBe("GET")
    expect(request?.path).toBe("/userinfo?x=1")
    expect(request?.headers.host).toBe(`${NAME}:${named.port}`)
    expect(request?.headers.authorization).toBe(SECRET)
    expect(request?.headers.accept).toBe("application/json")
    expect(request?.headers["accept-encoding"]).toBeUndefined()
    expect(request?.body).toBe("")
  })

  test("a POST of URLSearchParams arrives form-encoded with the Authorization header; a given Content-Type wins", async () => {
    named.respond({ body: '{"access_token":"x"}', headers: { "Content-Type": "application/json" } })
    const post = fetchWith()
    const form = new URLSearchParams({
      grant_type: "authorization_code",
      code: "c ✓&1",
      redirect_uri: "https://a.b/cb",
    })
    const response = await post(urlOf(named.port, "/token"), {
      method: "post",
      headers: { Authorization: SECRET },
      body: form,
    })
    expect(response.status).toBe(200)
    const request = named.requests[0]
    expect(request?.method).toBe("POST")
    expect(request?.headers["content-type"]).toBe("application/x-www-form-urlencoded;charset=UTF-8")
    expect(request?.headers.authorization).toBe(SECRET)
    expect(request?.headers["content-length"]).toBe(String(Buffer.byteLength(form.toString())))
    expect(new URLSearchParams(request?.body).get("code")).toBe("c ✓&1")
    expect(request?.body).toBe(form.toString())

    await post(urlOf(named.port, "/token"), {
      method: "POST",
      headers: new Headers({ "content-type": "application/x-www-form-urlencoded" }),
      body: form,
    })
    expect(named.requests[1]?.headers["content-type"]).toBe("application/x-www-form-urlencoded")
  })

  test("a 302 is returned as it is, even with redirect: follow, and its target is never asked", async () => {
    named.respond({ redirectTo: urlOf(target.port, "/elsewhere") })
    const response = await fetchWith()(urlOf(named.port), { redirect: "follow" })
    expect(response.status).toBe(302)
    expect(response.headers.get("location")).toBe(urlOf(target.port, "/elsewhere"))
    expect(await response.text()).toBe("moved")
    expect(target.requests).toHaveLength(0)
  })

  test("a 204 gives a Response with a null body and a 500 resolves too: statuses are the caller's to judge", async () => {
    named.respond({ status: 204, body: "" })
    const empty = await fetchWith()(urlOf(named.port))
    expect(empty.status).toBe(204)
    expect(empty.body).toBeNull()
    named.respond({ status: 500, body: "broken" })
    const failed = await fetchWith()(urlOf(named.port))
    expect(failed.status).toBe(500)
    expect(await failed.text()).toBe("broken")
  })
})

describe("pinnedFetch: refusals", () => {
  test("http:// is refused without a lookup or a connection", async () => {
    const dns = lookupTo("127.0.0.1")
    const error = await refusal(fetchWith({ lookup: dns.lookup })(`http://${NAME}:${counterPort}/`))
    expect(error.message).toContain("http:// is not allowed")
    expect(dns.hosts).toEqual([])
    expect(connections).toBe(0)
  })

  test("a loopback address is refused without allowPrivate, and no connection is made", async () => {
    const error = await refusal(fetchWith({ policy: NO_PRIVATE })(`https://127.0.0.1:${counterPort}/`))
    expect(error.message).toStartWith("refused address: 127.0.0.1 is a loopback address")
    await Bun.sleep(50)
    expect(connections).toBe(0)

    // The same server is reachable when the policy allows loopback: the refusal above was the rule, not the network.
    await refusal(fetchWith({ policy: LOOPBACK })(`https://127.0.0.1:${counterPort}/`))
    await Bun.sleep(50)
    expect(connections).toBe(1)
  })

  test("a host name resolving to a refused address is refused (one refused address among several is enough)", async () => {
    const toLoopback = lookupTo("127.0.0.1")
    const loopback = await refusal(fetchWith({ policy: NO_PRIVATE, lookup: toLoopback.lookup })(urlOf(counterPort)))
    expect(loopback.message).toContain(`${NAME} resolves to a refused address: 127.0.0.1 is a loopback address`)
    expect(toLoopback.hosts).toEqual([NAME])

    const mixed = await refusal(fetchWith({ lookup: lookupTo("127.0.0.1", "10.1.2.3").lookup })(urlOf(counterPort)))
    expect(mixed.message).toContain("10.1.2.3 is a private address")
    await Bun.sleep(50)
    expect(connections).toBe(0)
  })

  test("a certificate for another name is refused with a TLS error and the server gets no request", async () => {
    const error = await refusal(fetchWith()(urlOf(wrongName.port)))
    expect(error.message).toStartWith("TLS: ")
    expect(wrongName.requests).toHaveLength(0)
  })

  test("without the test CA the certificate is untrusted", async () => {
    const error = await refusal(fetchWith({ ca: [] })(urlOf(named.port)))
    expect(error.message).toStartWith("TLS: ")
    expect(named.requests).toHaveLength(0)
  })

  test("methods other than GET and POST, a GET with a body and a stream body are refused before any lookup", async () => {
    const dns = lookupTo("127.0.0.1")
    const fetchFn = fetchWith({ lookup: dns.lookup })
    expect((await refusal(fetchFn(urlOf(named.port), { method: "PUT", body: "{}" }))).message).toContain("GET and POST")
    expect((await refusal(fetchFn(urlOf(named.port), { method: "DELETE" }))).message).toContain("GET and POST")
    expect((await refusal(fetchFn(urlOf(named.port), { body: "x" }))).message).toContain(
      "GET request cannot have a body",
    )
    const stream = new ReadableStream({ start: (controller) => controller.close() })
    const streamed = await refusal(fetchFn(urlOf(named.port), { method: "POST", body: stream }))
    expect(streamed.message).toContain("unsupported request body type")
    expect(dns.hosts).toEqual([])
    expect(named.requests).toHaveLength(0)
  })
})

describe("pinnedFetch: bounds", () => {
  test("a response over maxResponseBytes rejects (default 1 MiB); one of exactly that size is whole", async () => {
    named.respond({ bodyBytes: 1024 * 1024 + 1 })
    const started = performance.now()
    const error = await refusal(fetchWith()(urlOf(named.port)))
    expect(error.message).toBe("response body larger than 1048576 bytes (HTTP 200)")
    expect(performance.now() - started).toBeLessThan(2000)

    named.respond({ bodyBytes: 1024 * 1024 })
    const whole = await fetchWith()(urlOf(named.port))
    expect((await whole.arrayBuffer()).byteLength).toBe(1024 * 1024)

    named.respond({ body: "abcde" })
    expect((await refusal(fetchWith({ maxResponseBytes: 4 })(urlOf(named.port)))).message).toContain("larger than 4")
  })

  test("a server that never answers rejects after about timeoutMs, and the connection is closed", async () => {
    const started = performance.now()
    const error = await refusal(fetchWith({ timeoutMs: 300 })(urlOf(silentPort)))
    const elapsed = performance.now() - started
    expect(error.message).toBe("timed out after 300 ms")
    expect(elapsed).toBeGreaterThanOrEqual(250)
    expect(elapsed).toBeLessThan(2000)
    const until = performance.now() + 2000
    while (silentSockets.size > 0 && performance.now() < until) await Bun.sleep(20)
    expect(silentSockets.size).toBe(0)
  })

  test("a DNS lookup that never answers counts against timeoutMs", async () => {
    const hanging = () => new Promise<ReadonlyArray<string>>(() => {})
    const error = await refusal(fetchWith({ timeoutMs: 200, lookup: hanging })(urlOf(named.port)))
    expect(error.message).toBe(`timed out after 200 ms (resolving ${NAME})`)
  })

  test("an aborted signal rejects with its reason, before or during the request", async () => {
    const before = new AbortController()
    before.abort(new DOMException("stop", "AbortError"))
    const early = await fetchWith()(urlOf(named.port), { signal: before.signal }).catch((reason: unknown) => reason)
    expect(early).toBe(before.signal.reason)
    expect(named.requests).toHaveLength(0)

    named.respond({ delayMs: 2000 })
    const started = performance.now()
    const late = await fetchWith()(urlOf(named.port), { signal: AbortSignal.timeout(200) }).catch((r: unknown) => r)
    expect(late).toBeInstanceOf(DOMException)
    expect((late as DOMException).name).toBe("TimeoutError")
    expect(performance.now() - started).toBeLessThan(1500)
  })

  test("an OutboundRefused message never contains the Authorization value, whatever went wrong", async () => {
    const headers = { Authorization: SECRET }
    const messages = [
      (await refusal(fetchWith()(urlOf(named.port), { headers: { Authorization: `${SECRET}\r\nX-Injected: 1` } })))
        .message,
      (await refusal(fetchWith()(urlOf(wrongName.port), { headers }))).message,
      (await refusal(fetchWith({ timeoutMs: 200 })(urlOf(silentPort), { headers }))).message,
      (await refusal(fetchWith({ policy: NO_PRIVATE })(urlOf(named.port), { headers }))).message,
    ]
    expect(messages[0]).toContain("Authorization")
    for (const message of messages) {
      expect(message).not.toContain("s3cr3t")
      expect(message).not.toContain("Bearer")
      expect(message).not.toContain("Injected")
    }
    expect(named.requests).toHaveLength(0)
  })
})

describe("pinnedFetch as openid-client's customFetch", () => {
  /** A small identity provider: discovery and a token endpoint, over TLS for DNS:idp.test. */
  const startProvider = () => {
    const seen: Array<{ method: string; path: string; authorization: string | null; body: string }> = []
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      tls: issueCertificate(ca, { dnsNames: [NAME] }),
      async fetch(request): Promise<Response> {
        const url = new URL(request.url)
        seen.push({
          method: request.method,
          path: url.pathname,
          authorization: request.headers.get("authorization"),
          body: await request.text(),
        })
        if (url.pathname === "/.well-known/openid-configuration") return Response.json(discovery)
        if (url.pathname === "/token" && request.method === "POST") {
          return Response.json({ access_token: "at_1", token_type: "Bearer", expires_in: 60 })
        }
        return new Response("not found", { status: 404 })
      },
    })
    const issuer = `https://${NAME}:${server.port}`
    const discovery = {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["RS256"],
      token_endpoint_auth_methods_supported: ["client_secret_basic"],
    }
    return { issuer, seen, stop: () => server.stop(true) }
  }

  test("discovery and a token request go through it, and a refusal surfaces as the ClientError's cause", async () => {
    const provider = startProvider()
    try {
      const dns = lookupTo("127.0.0.1")
      const fetchFn = fetchWith({ lookup: dns.lookup })
      const config = await client.discovery(
        new URL(provider.issuer),
        "client_1",
        "client-secret-1",
        client.ClientSecretBasic(),
        { [client.customFetch]: fetchFn },
      )
      expect(config.serverMetadata().issuer).toBe(provider.issuer)
      expect(config.serverMetadata().token_endpoint).toBe(`${provider.issuer}/token`)
      expect(provider.seen[0]).toMatchObject({ method: "GET", path: "/.well-known/openid-configuration" })

      const tokens = await client.clientCredentialsGrant(config, { scope: "openid" })
      expect(tokens.access_token).toBe("at_1")
      const token = provider.seen[1]
      expect(token).toMatchObject({ method: "POST", path: "/token" })
      expect(token?.authorization ?? "").toStartWith("Basic ")
      expect(new URLSearchParams(token?.body).get("grant_type")).toBe("client_credentials")
      expect(dns.hosts).toEqual([NAME, NAME])

      const refused = await client
        .discovery(new URL(provider.issuer), "client_1", undefined, undefined, {
          [client.customFetch]: fetchWith({ policy: NO_PRIVATE }),
        })
        .catch((reason: unknown) => reason)
      expect(refused).toBeInstanceOf(client.ClientError)
      expect((refused as Error).cause).toBeInstanceOf(OutboundRefused)
      expect(provider.seen).toHaveLength(2)
    } finally {
      await provider.stop()
    }
  })
})
