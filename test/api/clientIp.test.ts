import { describe, expect, test } from "bun:test"
import { clientIp, parseTrustProxy } from "../../src/platform/http/clientIp.ts"

const cidrs = (text: string) => {
  const parsed = parseTrustProxy(text)
  if (!parsed.ok) throw new Error(parsed.reason)
  return parsed.cidrs
}

describe("the client IP", () => {
  test("without TRUST_PROXY the socket peer is the client and X-Forwarded-For is ignored", () => {
    expect(clientIp("198.51.100.7", "203.0.113.1", [])).toBe("198.51.100.7")
    expect(clientIp("::ffff:198.51.100.7", undefined, [])).toBe("198.51.100.7")
  })

  test("a trusted proxy's X-Forwarded-For is read from the right, skipping trusted hops", () => {
    const trusted = cidrs("10.0.0.0/8, 127.0.0.1")
    expect(clientIp("10.1.1.1", "203.0.113.9", trusted)).toBe("203.0.113.9")
    expect(clientIp("10.1.1.1", "1.2.3.4, 203.0.113.9, 10.2.2.2", trusted)).toBe("203.0.113.9")
    expect(clientIp("127.0.0.1", "2001:DB8::1", trusted)).toBe("2001:db8::1")
    // A forged left-most entry is not believed; an untrusted peer's header is ignored.
    expect(clientIp("10.1.1.1", "6.6.6.6, 203.0.113.9", trusted)).toBe("203.0.113.9")
    expect(clientIp("198.51.100.7", "203.0.113.9", trusted)).toBe("198.51.100.7")
    expect(clientIp("10.1.1.1", "garbage", trusted)).toBe("10.1.1.1")
    expect(clientIp("10.1.1.1", "10.3.3.3", trusted)).toBe("10.1.1.1")
  })

  test("TRUST_PROXY parsing refuses garbage", () => {
    expect(parseTrustProxy("10.0.0.0/8,::1").ok).toBe(true)
    expect(parseTrustProxy("").ok).toBe(true)
    expect(parseTrustProxy("10.0.0.0/33").ok).toBe(false)
    expect(parseTrustProxy("proxy.local").ok).toBe(false)
  })
})
