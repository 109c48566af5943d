import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import {
  sanitizeJson,
  sanitizeText,
  shortenStrings,
  TOO_DEEP,
  truncateCodePoints,
  utf8Length,
} from "../../src/domain/sanitize.ts"

const codePoints = (s: string): number => [...s].length

/** Independent of the implementation's regex: true when a code point must not survive sanitizeText. */
const isForbiddenCodePoint = (cp: number): boolean =>
  cp < 0x20 ||
  (cp >= 0x7f && cp <= 0x9f) ||
  (cp >= 0xd800 && cp <= 0xdfff) ||
  cp === 0x00ad ||
  cp === 0x034f ||
  cp === 0x061c ||
  cp === 0x115f ||
  cp === 0x1160 ||
  (cp >= 0x180b && cp <= 0x180f) ||
  (cp >= 0x200b && cp <= 0x200f) ||
  (cp >= 0x202a && cp <= 0x202e) ||
  (cp >= 0x2060 && cp <= 0x206f) ||
  cp === 0x3164 ||
  (cp >= 0xfe00 && cp <= 0xfe0f) ||
  cp === 0xfeff ||
  cp === 0xffa0 ||
  (cp >= 0xe0000 && cp <= 0xe0fff)

/** Iterates code points, yielding lone surrogates as themselves. */
const codePointValues = (s: string): Array<number> => [...s].map((c) => c.codePointAt(0) ?? -1)

const REMOVED_CLASSES = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Surrogate}]/u

/** Any UTF-16 code unit, so lone surrogates are generated too. */
const utf16String = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) })
const anyString = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  utf16String,
  fc.string({
    unit: fc.constantFrom("a", "😀", "\u200b", "\u202e", "\u001b", "\ud800", "\udc00", "\ufe0f", "\u{e0041}"),
  }),
)

describe("sanitizeText", () => {
  test("removes NUL, BEL and other C0 controls", () => {
    expect(sanitizeText("a\u0000b\u0007c")).toBe("abc")
    expect(sanitizeText("a\tb\nc\rd\u007f")).toBe("abcd")
  })

  test("removes ESC, which neutralises ANSI sequences", () => {
    expect(sanitizeText("\u001b[31mred\u001b[0m")).toBe("[31mred[0m")
  })

  test("removes C1 controls U+0080–U+009F", () => {
    let c1 = ""
    for (let cp = 0x80; cp <= 0x9f; cp++) c1 += String.fromCharCode(cp)
    expect(sanitizeText(`x${c1}y`)).toBe("xy")
  })

  test("removes zero-width characters and the BOM", () => {
    expect(sanitizeText("a\u200bb\u200cc\u200dd\u2060e\ufefff")).toBe("abcdef")
  })

  test("removes bidi overrides (Trojan Source) and isolates", () => {
    // The classic Trojan Source comment: RLO ... LRI makes the source look different from what it is.
    const trojan = "/*\u202e } \u2066if (isAdmin)\u2069 \u2066 begin admins only */"
    expect(sanitizeText(trojan)).toBe("/* } if (isAdmin)  begin admins only */")
    expect(sanitizeText("a\u202ab\u202bc\u202cd\u202de\u202ef")).toBe("abcdef")
    expect(sanitizeText("a\u2066b\u2067c\u2068d\u2069e")).toBe("abcde")
  })

  test("removes LRM, RLM, ALM and the soft hyphen", () => {
    expect(sanitizeText("a\u200eb\u200fc\u061cd")).toBe("abcd")
    expect(sanitizeText("pass\u00adword")).toBe("password")
  })

  test("removes Hangul fillers, tag characters, variation selectors and other default-ignorables", () => {
    expect(sanitizeText("a\u3164b\u115fc\u1160d\uffa0e")).toBe("abcde")
    expect(sanitizeText("hidden\u{e0041}\u{e0042}\u{e007f}")).toBe("hidden")
    expect(sanitizeText("\u2764\ufe0f")).toBe("\u2764")
    expect(sanitizeText("x\u{e0100}y\u{e01ef}z")).toBe("xyz")
    expect(sanitizeText("a\u180bb\u180fc\u034fd")).toBe("abcd")
  })

  test("removes lone high and lone low surrogates", () => {
    expect(sanitizeText("a\ud800b")).toBe("ab")
    expect(sanitizeText("a\udc00b")).toBe("ab")
    expect(sanitizeText("\ud83d")).toBe("")
    expect(sanitizeText("\ude00\ud83d")).toBe("")
    expect(sanitizeText("\ud83d\ud83d\ude00")).toBe("😀")
  })

  test("keeps emoji, combining accents, ordinary spaces and any script", () => {
    expect(sanitizeText("😀")).toBe("😀")
    expect(sanitizeText("e\u0301")).toBe("e\u0301")
    expect(sanitizeText("攻击者 مهاجم атакующий a b")).toBe("攻击者 مهاجم атакующий a b")
    expect(sanitizeText("")).toBe("")
  })

  test("is idempotent (property)", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        const once = sanitizeText(s)
        expect(sanitizeText(once)).toBe(once)
      }),
      { numRuns: 2000 },
    )
  })

  test("output never contains a removed character (property)", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        const out = sanitizeText(s)
        expect(REMOVED_CLASSES.test(out)).toBe(false)
        expect(codePointValues(out).some(isForbiddenCodePoint)).toBe(false)
        expect(out.isWellFormed()).toBe(true)
      }),
      { numRuns: 2000 },
    )
  })

  test("only removes: the output is the input minus removed code points (property)", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        const kept = [...s].filter((c) => !REMOVED_CLASSES.test(c)).join("")
        expect(sanitizeText(s)).toBe(kept)
      }),
      { numRuns: 1000 },
    )
  })

  test("handles a 1 MiB string", () => {
    const clean = "a".repeat(1024 * 1024)
    expect(sanitizeText(clean)).toBe(clean)
    const dirty = "ab\u200b\u001b".repeat(256 * 1024)
    expect(sanitizeText(dirty)).toBe("ab".repeat(256 * 1024))
  })
})

describe("truncateCodePoints", () => {
  test("keeps a string within the limit unchanged, without an ellipsis", () => {
    expect(truncateCodePoints("abc", 3)).toBe("abc")
    expect(truncateCodePoints("abc", 10)).toBe("abc")
    expect(truncateCodePoints("😀😀😀", 3)).toBe("😀😀😀")
    expect(truncateCodePoints("", 5)).toBe("")
  })

  test("cuts to exactly max code points ending in …", () => {
    expect(truncateCodePoints("abcdef", 4)).toBe("abc…")
    expect(truncateCodePoints("abcdef", 1)).toBe("…")
    expect(codePoints(truncateCodePoints("x".repeat(1000), 256))).toBe(256)
  })

  test("never splits an emoji surrogate pair", () => {
    expect(truncateCodePoints("😀😀😀😀", 3)).toBe("😀😀…")
    expect(truncateCodePoints("a😀b😀c", 3)).toBe("a😀…")
    expect(truncateCodePoints("a😀b😀c", 4)).toBe("a😀b…")
    expect(truncateCodePoints("😀😀😀😀", 3).isWellFormed()).toBe(true)
  })

  test("max of 0 or less gives the empty string", () => {
    expect(truncateCodePoints("abc", 0)).toBe("")
    expect(truncateCodePoints("abc", -1)).toBe("")
  })

  test("length and prefix properties", () => {
    fc.assert(
      fc.property(anyString, fc.integer({ min: 1, max: 40 }), (s, max) => {
        const out = truncateCodePoints(s, max)
        const n = codePoints(s)
        if (n <= max) {
          expect(out).toBe(s)
        } else {
          expect(codePoints(out)).toBe(max)
          expect(out.endsWith("…")).toBe(true)
          expect(s.startsWith(out.slice(0, -1))).toBe(true)
          expect([...out].slice(0, -1)).toEqual([...s].slice(0, max - 1))
        }
      }),
      { numRuns: 2000 },
    )
  })
})

describe("sanitizeJson", () => {
  test("sanitizes strings and keys, keeps scalars, drops non-JSON types", () => {
    const input = {
      "na\u200bme": "ev\u202eil",
      n: 1.5,
      b: false,
      z: null,
      list: ["a\u0000", 2, undefined, () => 1, 10n, { k: "v\u001b" }],
      u: undefined,
      f: () => 1,
    }
    expect(sanitizeJson(input)).toEqual({ name: "evil", n: 1.5, b: false, z: null, list: ["a", 2, { k: "v" }] })
    expect(sanitizeJson("x\u200b")).toBe("x")
    expect(sanitizeJson(undefined)).toBeUndefined()
  })

  test("never mutates its input", () => {
    const input = { a: ["x\u200b", { b: "y\u0000" }] }
    const copy = structuredClone(input)
    const out = sanitizeJson(input)
    expect(input).toEqual(copy)
    expect(out).not.toBe(input)
  })

  test("drops __proto__, constructor and prototype keys", () => {
    const input: unknown = JSON.parse('{"__proto__":{"polluted":true},"constructor":1,"prototype":2,"ok":3}')
    const out = sanitizeJson(input) as Record<string, unknown>
    expect(out).toEqual({ ok: 3 })
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    // A key that only becomes "__proto__" after sanitizing is dropped too.
    expect(sanitizeJson({ "__pro\u200bto__": { polluted: true } })).toEqual({})
  })

  test("bounds the depth (default 8)", () => {
    const nest = (levels: number): unknown => {
      let v: unknown = "leaf"
      for (let i = 0; i < levels; i++) v = { a: v }
      return v
    }
    // 9 nested objects: depths 0..8, all allowed.
    expect(sanitizeJson(nest(9))).toEqual(nest(9))
    // 10 nested objects: the one at depth 9 is replaced.
    const out = JSON.stringify(sanitizeJson(nest(10)))
    expect(out).toBe(JSON.stringify(nest(9)).replace('"leaf"', JSON.stringify(TOO_DEEP)))
    expect(sanitizeJson({ a: { b: [1] } }, { maxDepth: 1 })).toEqual({ a: { b: TOO_DEEP } })
  })

  test("terminates on cyclic input", () => {
    const cyclic: Record<string, unknown> = { name: "x" }
    cyclic.self = cyclic
    expect(JSON.stringify(sanitizeJson(cyclic))).toContain(TOO_DEEP)
  })
})

describe("shortenStrings", () => {
  test("cuts every string to 256 code points by default, keys included", () => {
    const long = "😀".repeat(300)
    const out = shortenStrings({ username: long, nested: [{ [long]: long }], short: "ok", n: 1 }) as {
      username: string
      nested: Array<Record<string, string>>
      short: string
      n: number
    }
    expect(codePoints(out.username)).toBe(256)
    expect(out.username.endsWith("😀…")).toBe(true)
    expect(out.short).toBe("ok")
    expect(out.n).toBe(1)
    const [key, value] = Object.entries(out.nested[0] ?? {})[0] ?? ["", ""]
    expect(codePoints(key)).toBe(256)
    expect(codePoints(value)).toBe(256)
  })

  test("takes an explicit maximum and keeps short strings as they are", () => {
    expect(shortenStrings({ a: "abcdef", b: "abc" }, 4)).toEqual({ a: "abc…", b: "abc" })
    expect(shortenStrings("x".repeat(256))).toBe("x".repeat(256))
  })
})

test("utf8Length is the length of the UTF-8 the string is sent as (a lone surrogate as U+FFFD), whatever the string", () => {
  const encoder = new TextEncoder()
  const unit = fc.oneof(
    fc.string({ unit: "grapheme" }),
    fc.string({ unit: "binary" }),
    fc.constantFrom("\uD800", "\uDFFF", "\uD83D\uDE00", "é", "\u0000", "\u2028"),
  )
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 6 }), (parts) => {
      const s = parts.join("")
      expect(utf8Length(s)).toBe(encoder.encode(s).length)
    }),
    { numRuns: 2000 },
  )
})
