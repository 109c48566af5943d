import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { cleanup, type RunningServer, startServer, testEnv } from "../support/server.ts"

/**
 * D27: the console's cookies are `__Host-` and Secure, so a browser drops them over plain HTTP except on localhost. A
 * sign-in posted that way arrives without its form cookie: the answer says the console needs HTTPS and how, instead
 * of "form expired" (which no retry can fix). Real server, real HTTP; the Host header is the browser's address bar.
 */

let plain: RunningServer
let proxied: RunningServer
beforeAll(async () => {
  ;[plain, proxied] = await Promise.all([
    startServer({ env: await testEnv() }),
    // Behind a TLS proxy on loopback that says so with X-Forwarded-Proto.
    startServer({ env: await testEnv({ TRUST_PROXY: "127.0.0.1" }) }),
  ])
})
afterAll(async () => {
  for (const server of [plain, proxied]) {
    await server?.stop()
    if (server) cleanup(server)
  }
})

/** A browser's sign-in post that lost its form cookie (none sent), on `host`. */
const signIn = async (server: RunningServer, host: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${server.consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { host, "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams({ email: "a@example.com", password: "x".repeat(12), csrf: "c".repeat(32), next: "/" }),
  })
  return { status: response.status, body: await response.text() }
}

const HTTPS_PAGE = "The console needs HTTPS"
const EXPIRED = "The sign-in form expired"

describe("a plain-HTTP sign-in on a non-local host", () => {
  test("is answered with what to do (CONSOLE_TLS_CERT_FILE/KEY_FILE or a TLS proxy), not 'form expired'", async () => {
    for (const host of ["console.example.com", "192.0.2.10:3000", "[2001:db8::1]:3000"]) {
      const answer = await signIn(plain, host)
      expect({ host, status: answer.status }).toEqual({ host, status: 403 })
      expect(answer.body).toContain(HTTPS_PAGE)
      expect(answer.body).toContain("CONSOLE_TLS_CERT_FILE")
      expect(answer.body).toContain("CONSOLE_TLS_KEY_FILE")
      expect(answer.body).toContain("X-Forwarded-Proto: https")
      expect(answer.body).not.toContain(EXPIRED)
    }
  })

  test("X-Forwarded-Proto: https from a peer not in TRUST_PROXY is not believed", async () => {
    const answer = await signIn(plain, "console.example.com", { "x-forwarded-proto": "https" })
    expect(answer.body).toContain(HTTPS_PAGE)
  })

  test("controls: localhost, a trusted HTTPS proxy, or a form cookie that is there but wrong still say 'form expired'", async () => {
    for (const host of ["localhost:3000", "127.0.0.1:3000", "[::1]:3000"]) {
      const answer = await signIn(plain, host)
      expect({ host, status: answer.status }).toEqual({ host, status: 403 })
      expect(answer.body).toContain(EXPIRED)
      expect(answer.body).not.toContain(HTTPS_PAGE)
    }
    const viaProxy = await signIn(proxied, "console.example.com", { "x-forwarded-proto": "https" })
    expect(viaProxy.body).toContain(EXPIRED)
    expect(viaProxy.body).not.toContain(HTTPS_PAGE)
    // A trusted proxy that says the browser came over plain HTTP: the HTTPS page.
    expect((await signIn(proxied, "console.example.com", { "x-forwarded-proto": "http" })).body).toContain(HTTPS_PAGE)
    const stale = await signIn(plain, "console.example.com", { cookie: "__Host-form=stale" })
    expect(stale.body).toContain(EXPIRED)
  })
})
