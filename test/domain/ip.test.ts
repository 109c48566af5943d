import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { canonicalIp, parseNetwork } from "../../src/domain/ip.ts"

/**
 * One spelling per address: every way a sensor may write an IPv4 address inside IPv6 (IPv4-mapped `::ffff:0:0/96`
 * and IPv4-compatible `::/96`, dotted or hexadecimal tail, any case, leading zeros, `::` anywhere it fits) reads as
 * the same dotted quad, so grouping and ignore rules never depend on the sensor's spelling. `::` and `::1` are not
 * IPv4-compatible addresses: they stay the IPv6 unspecified and loopback addresses. FC_RUNS and FC_SEED repeat a run.
 */

const runs = Number(process.env.FC_RUNS ?? 100)
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
const params = { numRuns: runs, ...(seed === undefined ? {} : { seed }) }

const octets = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255))
const dotted = (o: ReadonlyArray<number>) => o.join(".")

/** A 16-bit word as hex text: random case, and up to 4 digits with leading zeros. */
const hexWord = (word: number) =>
  fc.tuple(fc.boolean(), fc.nat(3)).map(([upper, pad]) => {
    const text = word.toString(16).padStart(Math.min(4, word.toString(16).length + pad), "0")
    return upper ? text.toUpperCase() : text
  })

/**
 * An IPv6 text of eight words, the last two written as a dotted quad (`tail`) or as hex, with one run of zero words
 * (if any) compressed to `::`.
 */
const spelling = (head: ReadonlyArray<number>, o: ReadonlyArray<number>) =>
  fc
    .tuple(
      fc.tuple(...head.map(hexWord)),
      fc.boolean(),
      fc.tuple(hexWord(((o[0] ?? 0) << 8) | (o[1] ?? 0)), hexWord(((o[2] ?? 0) << 8) | (o[3] ?? 0))),
      fc.nat(5),
      fc.nat(5),
      fc.boolean(),
    )
    .map(([headText, dottedTail, hexTail, a, b, compress]) => {
      const tail = dottedTail ? [dotted(o)] : hexTail
      if (!compress) return [...headText, ...tail].join(":")
      // Compress head words [from, to] when all of them are zero.
      const from = Math.min(a, b)
      const to = Math.max(a, b)
      if (head.slice(from, to + 1).some((w) => w !== 0)) return [...headText, ...tail].join(":")
      const before = headText.slice(0, from).join(":")
      const after = [...headText.slice(to + 1), ...tail].join(":")
      return `${before}::${after}`
    })

const MAPPED_HEAD = [0, 0, 0, 0, 0, 0xffff]
const COMPATIBLE_HEAD = [0, 0, 0, 0, 0, 0]

/** An IPv4 address and one of its IPv6 spellings. */
const v4Spelling = octets.chain((o) =>
  fc
    .oneof(
      fc.constant(dotted(o)),
      spelling(MAPPED_HEAD, o),
      // 0.0.0.0 and 0.0.0.1 have no IPv4-compatible spelling: those are `::` and `::1`.
      ...((o[0] ?? 0) + (o[1] ?? 0) + (o[2] ?? 0) === 0 && (o[3] ?? 0) <= 1 ? [] : [spelling(COMPATIBLE_HEAD, o)]),
    )
    .map((text) => ({ address: dotted(o), text })),
)

/** The eight 16-bit words of an IPv6 address written as canonicalIp accepts it (test oracle, not the implementation). */
const wordsOf = (text: string): Array<number> => {
  let t = text.toLowerCase()
  const dot = t.lastIndexOf(":")
  if (t.includes(".")) {
    const o = t
      .slice(dot + 1)
      .split(".")
      .map(Number)
    t = `${t.slice(0, dot + 1)}${(((o[0] ?? 0) << 8) | (o[1] ?? 0)).toString(16)}:${(((o[2] ?? 0) << 8) | (o[3] ?? 0)).toString(16)}`
  }
  const [left = "", right] = t.split("::")
  const l = left === "" ? [] : left.split(":")
  const r = right === undefined || right === "" ? [] : right.split(":")
  const fill = right === undefined ? [] : Array<string>(8 - l.length - r.length).fill("0")
  return [...l, ...fill, ...r].map((w) => Number.parseInt(w, 16))
}

/** RFC 5952 section 4: lowercase, no leading zeros, the longest run of two or more zero words (the first) as `::`. */
const rfc5952 = (words: ReadonlyArray<number>): string => {
  let best = { at: -1, length: 0 }
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && words[j] === 0) j++
    if (j - i > best.length) best = { at: i, length: j - i }
    i = j
  }
  const hex = words.map((w) => w.toString(16))
  if (best.length < 2) return hex.join(":")
  return `${hex.slice(0, best.at).join(":")}::${hex.slice(best.at + best.length).join(":")}`
}

/** An IPv6 address outside ::/96 and ::ffff:0:0/96 (no IPv4 inside), or `::` and `::1`. */
const isPlainV6 = (words: ReadonlyArray<number>) =>
  words.slice(0, 5).some((w) => w !== 0) ||
  (words[5] !== 0 && words[5] !== 0xffff) ||
  (words[5] === 0 && words[6] === 0 && (words[7] ?? 0) <= 1)

describe("one spelling per address", () => {
  test("the sensors' spellings of 192.0.2.5 are all 192.0.2.5", () => {
    for (const text of [
      "192.0.2.5",
      "::192.0.2.5",
      "::c000:205",
      "::C000:0205",
      "0:0:0:0:0:0:192.0.2.5",
      "::ffff:c000:205",
      "::FFFF:C000:205",
      "::ffff:192.0.2.5",
      "0:0:0:0:0:ffff:192.0.2.5",
      "0:0:0:0:0:FFFF:c000:0205",
      "0::ffff:192.0.2.5",
    ]) {
      expect({ text, ip: canonicalIp(text) }).toEqual({ text, ip: "192.0.2.5" })
    }
  })

  test("`::` and `::1` stay IPv6 in every spelling; their IPv4-mapped forms are 0.0.0.0 and 0.0.0.1", () => {
    for (const [text, ip] of [
      ["::", "::"],
      ["0:0:0:0:0:0:0:0", "::"],
      ["::0.0.0.0", "::"],
      ["::1", "::1"],
      ["0:0:0:0:0:0:0:1", "::1"],
      ["::0.0.0.1", "::1"],
      ["::ffff:0.0.0.1", "0.0.0.1"],
      ["::ffff:0:0", "0.0.0.0"],
      ["::0.0.0.2", "0.0.0.2"],
      ["::2", "0.0.0.2"],
    ] as const) {
      expect({ text, ip: canonicalIp(text) }).toEqual({ text, ip })
    }
  })

  test("an IPv4 part inside IPv6 is read as strictly as a plain IPv4 address: decimal, four parts, no leading zero", () => {
    for (const text of [
      "::ffff:010.0.0.1",
      "::ffff:0x7f.0.0.1",
      "::010.0.0.1",
      "::ffff:1.2.3",
      "::ffff:256.0.0.1",
      "1:2:3:4:5:6:7:1.2.3.4",
      ":1.2.3.4",
      "::ffff:1.2.3.4%eth0",
    ]) {
      expect({ text, ip: canonicalIp(text) }).toEqual({ text, ip: undefined })
    }
    expect(canonicalIp("1:2:3:4:5:6:1.2.3.4")).toBe("1:2:3:4:5:6:102:304")
  })

  test("every spelling of an IPv4 address is its dotted quad (property)", () => {
    fc.assert(
      fc.property(v4Spelling, ({ address, text }) => {
        expect({ text, ip: canonicalIp(text) }).toEqual({ text, ip: address })
      }),
      params,
    )
  })

  test("an IPv6 address without an IPv4 address inside keeps its RFC 5952 form (property)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.ipV6(),
          // Words drawn near zero reach ::/96's neighbours (::1:0:0:0, ::ffff:0:0:0, 0:0:0:0:1::) as well.
          fc
            .tuple(...Array.from({ length: 8 }, () => fc.oneof(fc.constant(0), fc.constant(1), fc.nat(0xffff))))
            .chain((words) =>
              spelling(
                words.slice(0, 6),
                [words[6] ?? 0, words[7] ?? 0].flatMap((w) => [w >> 8, w & 255]),
              ),
            ),
        ),
        (text) => {
          const words = wordsOf(text)
          fc.pre(isPlainV6(words))
          expect({ text, ip: canonicalIp(text) }).toEqual({ text, ip: rfc5952(words) })
        },
      ),
      params,
    )
  })

  test("normalising is idempotent, and what it writes it reads back the same (property)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.ipV4(),
          fc.ipV4Extended(),
          fc.ipV6(),
          v4Spelling.map((s) => s.text),
          fc.string({ maxLength: 45 }),
        ),
        (text) => {
          const once = canonicalIp(text)
          if (once === undefined) return
          expect({ text, twice: canonicalIp(once) }).toEqual({ text, twice: once })
          // A network of one address reads as the same address.
          expect(parseNetwork(once)?.address).toBe(once)
        },
      ),
      params,
    )
  })

  test("an ignore rule's source is normalised the same way", () => {
    expect(parseNetwork("::c000:205")?.cidr).toBe("192.0.2.5/32")
    expect(parseNetwork("::192.0.2.5")?.cidr).toBe("192.0.2.5/32")
    expect(parseNetwork("::1")?.cidr).toBe("::1/128")
  })
})
