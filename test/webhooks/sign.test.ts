import { describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { generateSigningSecret, signatureHeader } from "../../src/domain/webhookSignature.ts"

const HEADER_PATTERN = /^t=[0-9]{1,12}(,v1=[0-9a-f]{64})+$/
const SECRET_PATTERN = /^whsec_[A-Za-z0-9_-]{43}$/

const reference = (secret: string, t: number, body: string): string =>
  createHmac("sha256", Buffer.from(secret, "utf8")).update(`${t}.${body}`, "utf8").digest("hex")

describe("signatureHeader", () => {
  test("format t=<t>,v1=<64 lowercase hex>", () => {
    const header = signatureHeader(["whsec_abc"], 1_700_000_000, '{"type":"incident.created"}')
    expect(header).toMatch(HEADER_PATTERN)
    expect(header.startsWith("t=1700000000,v1=")).toBe(true)
  })

  test('v1 is HMAC-SHA256 over t + "." + body keyed with the secret\'s UTF-8 bytes', () => {
    const secret = "whsec_Zm9vYmFy"
    const body = '{"id":"evt_1","type":"incident.created","note":"é—😀"}'
    expect(signatureHeader([secret], 1_700_000_123, body)).toBe(
      `t=1700000123,v1=${reference(secret, 1_700_000_123, body)}`,
    )
  })

  test("a Uint8Array body gives the same header as its UTF-8 string", () => {
    const body = '{"x":"ü"}'
    expect(signatureHeader(["s1"], 42, new TextEncoder().encode(body))).toBe(signatureHeader(["s1"], 42, body))
  })

  test("rotation: one v1 per secret, current first", () => {
    const body = "{}"
    const header = signatureHeader(["whsec_new", "whsec_old"], 1_700_000_000, body)
    expect(header).toMatch(HEADER_PATTERN)
    expect(header).toBe(
      `t=1700000000,v1=${reference("whsec_new", 1_700_000_000, body)},v1=${reference("whsec_old", 1_700_000_000, body)}`,
    )
  })

  test("a repeated secret is signed once", () => {
    expect(signatureHeader(["a", "a"], 1, "{}").split(",v1=").length).toBe(2)
  })

  test("programming errors throw", () => {
    expect(() => signatureHeader([], 1, "{}")).toThrow()
    expect(() => signatureHeader([""], 1, "{}")).toThrow()
    expect(() => signatureHeader(["s"], 1.5, "{}")).toThrow()
    expect(() => signatureHeader(["s"], -1, "{}")).toThrow()
    expect(() => signatureHeader(["s"], 1e13, "{}")).toThrow()
  })
})

describe("generateSigningSecret", () => {
  test("whsec_ followed by 43 base64url characters (32 random bytes)", () => {
    for (let i = 0; i < 50; i++) {
      const secret = generateSigningSecret()
      expect(secret).toMatch(SECRET_PATTERN)
      expect(Buffer.from(secret.slice("whsec_".length), "base64url").length).toBe(32)
    }
  })

  test("secrets are unique", () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => generateSigningSecret()))
    expect(secrets.size).toBe(1000)
  })
})
