import { describe, expect, test } from "bun:test"
import { makeSealer, sealedKeyId } from "../../src/domain/sealing.ts"

const keyA = new Uint8Array(32).fill(1)
const keyB = new Uint8Array(32).fill(2)
const text = new TextEncoder().encode("whsec_example")

describe("secrets at rest (AES-256-GCM under SECRET_KEY)", () => {
  test("seal then open gives the plaintext; the text names the key id, never the plaintext", () => {
    const sealer = makeSealer(keyA)
    const sealed = sealer.seal(text)
    expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/)
    expect(sealedKeyId(sealed)).toBe(sealer.keyId)
    expect(sealed).not.toContain("whsec")
    expect(sealer.open(sealed)).toEqual(text)
    expect(sealer.seal(text)).not.toBe(sealed) // a fresh IV every time
  })

  test("another key cannot open it; altered text or key id is refused", () => {
    const sealed = makeSealer(keyA).seal(text)
    expect(makeSealer(keyB).open(sealed)).toBeUndefined()
    const [v, kid, iv, body] = sealed.split(".") as [string, string, string, string]
    // Change the second-to-last character (the last may carry unused bits): to "B" when it is an "A", else to "A".
    const flipped = `${body.slice(0, -2)}${body.at(-2) === "A" ? "B" : "A"}${body.slice(-1)}`
    expect(flipped).not.toBe(body)
    expect(makeSealer(keyA).open(`${v}.${kid}.${iv}.${flipped}`)).toBeUndefined()
    expect(makeSealer(keyA).open(`${v}.00000000.${iv}.${body}`)).toBeUndefined()
    expect(makeSealer(keyA).open("garbage")).toBeUndefined()
  })

  test("rotation: a sealer with previous keys opens their texts and seals under the new key only", () => {
    const old = makeSealer(keyA).seal(text)
    const rotated = makeSealer(keyB, [keyA])
    expect(rotated.open(old)).toEqual(text)
    const resealed = rotated.seal(text)
    expect(sealedKeyId(resealed)).toBe(makeSealer(keyB).keyId)
    expect(makeSealer(keyB).open(resealed)).toEqual(text)
    expect(makeSealer(keyA).open(resealed)).toBeUndefined()
  })
})
