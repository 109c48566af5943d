import { expect, test } from "bun:test"
import fc from "fast-check"
import { decodeUtf8, invalidUtf8Offset } from "../../src/platform/http/body.ts"

/** D22: a body that is not well-formed UTF-8 is refused, and the refusal names the first bad byte. */
const fatal = new TextDecoder("utf-8", { fatal: true })
const isUtf8 = (bytes: Uint8Array) => {
  try {
    fatal.decode(bytes)
    return true
  } catch {
    return false
  }
}

test("the offset of the first byte that is not UTF-8", () => {
  const at = (...bytes: Array<number>) => invalidUtf8Offset(new Uint8Array(bytes))
  expect(at(0x61, 0x62)).toBeUndefined()
  expect(at(0x61, 0xff)).toBe(1) // never a UTF-8 byte
  expect(at(0x61, 0x80)).toBe(1) // a continuation byte without a lead
  expect(at(0xc0, 0xaf)).toBe(0) // overlong "/"
  expect(at(0xe0, 0x80, 0xaf)).toBe(0) // overlong three-byte form
  expect(at(0xed, 0xa0, 0x80)).toBe(0) // a surrogate (CESU-8)
  expect(at(0xf4, 0x90, 0x80, 0x80)).toBe(0) // above U+10FFFF
  expect(at(0x61, 0xe2, 0x82)).toBe(1) // truncated at the end
  expect(at(0xe2, 0x82, 0x61)).toBe(0) // cut short by an ASCII byte
  expect(at(...new TextEncoder().encode("rööt 😀 €"))).toBeUndefined()
  expect(decodeUtf8(new Uint8Array([0x63, 0xff]))).toEqual({ invalidAt: 1 })
  expect(decodeUtf8(new TextEncoder().encode("ok"))).toEqual({ text: "ok" })
})

test("invalidUtf8Offset agrees with a strict decoder on any bytes, and everything before the offset is UTF-8", () => {
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 24 }),
    fc.string({ unit: "binary" }).map((s) => new TextEncoder().encode(s)),
    fc
      .tuple(fc.string({ unit: "binary" }), fc.uint8Array({ maxLength: 4 }), fc.string())
      .map(([a, junk, b]) => new Uint8Array([...new TextEncoder().encode(a), ...junk, ...new TextEncoder().encode(b)])),
  )
  fc.assert(
    fc.property(bytes, (b) => {
      const offset = invalidUtf8Offset(b)
      expect(offset === undefined).toBe(isUtf8(b))
      if (offset !== undefined) {
        // Everything before the offset decodes; the sequence starting there does not.
        expect(isUtf8(b.slice(0, offset))).toBe(true)
        expect(offset).toBeLessThan(b.length)
      }
    }),
    { numRuns: 2000 },
  )
})
