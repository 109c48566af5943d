/**
 * Neutralising attacker-derived text.
 *
 * Pure functions, no I/O. Every string that an attacker could have typed (attackerInput, titles, summaries, ...) goes
 * through `sanitizeText` before it is stored or emitted; `sanitizeJson` applies it to a whole JSON-like value, and
 * `shortenStrings` additionally cuts each string for webhooks.
 */

/**
 * Characters removed by `sanitizeText`:
 * - `\p{Cc}`: all C0 and C1 controls (NUL, BEL, TAB, LF, CR, ESC, DEL, U+0080–U+009F, ...).
 * - `\p{Cf}`: format characters (zero-width space/non-joiner/joiner, word joiner, BOM, soft hyphen, LRM/RLM/ALM, bidi
 *   embeddings/overrides U+202A–U+202E and isolates U+2066–U+2069, tag characters U+E0000–U+E007F, ...).
 * - `\p{Default_Ignorable_Code_Point}`: everything else that renders invisibly (Hangul fillers U+115F, U+1160, U+3164,
 *   U+FFA0, variation selectors U+FE00–U+FE0F and U+E0100–U+E01EF, Mongolian free variation selectors U+180B–U+180F,
 *   combining grapheme joiner U+034F, and the reserved default-ignorable ranges).
 * - `\p{Surrogate}`: in a `u`-mode regex a well-formed surrogate pair is matched as one astral code point, so this
 *   class only ever matches unpaired (lone) surrogates. Real pairs (emoji, ...) are kept.
 */
const REMOVABLE_SOURCE = "[\\p{Cc}\\p{Cf}\\p{Default_Ignorable_Code_Point}\\p{Surrogate}]"
const REMOVABLE_ANY = new RegExp(REMOVABLE_SOURCE, "u")
const REMOVABLE_ALL = new RegExp(`${REMOVABLE_SOURCE}+`, "gu")

/**
 * Removes control characters (Unicode Cc: all of C0 and C1, including NUL, TAB, LF, CR and ESC), format
 * characters (Cf: zero-width characters, BOM, soft hyphen, bidi embeddings/overrides/isolates, LRM/RLM/ALM, tag
 * characters), all other Default_Ignorable_Code_Point characters (Hangul fillers, variation selectors, U+034F, ...) and
 * unpaired surrogates. Everything else (letters of any script, combining marks, emoji, ordinary spaces) is kept.
 *
 * Only these characters are removed; the printable remainder of an ANSI escape sequence stays
 * ("\u001b[31mred" becomes "[31mred"). Removing ESC is what neutralises the sequence: no terminal interprets it
 * without the ESC (and the C1 CSI U+009B is removed as a Cc as well).
 *
 * Note that ZWJ emoji sequences lose their joiners and VS16 is dropped (e.g. "❤️" becomes "❤"): this is intended, an
 * invisible character is an invisible character. The function is idempotent. When nothing needs removing, the input
 * string itself is returned.
 */
export const sanitizeText = (s: string): string => (REMOVABLE_ANY.test(s) ? s.replace(REMOVABLE_ALL, "") : s)

const ELLIPSIS = "…"

const isHighSurrogate = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff
const isLowSurrogate = (unit: number): boolean => unit >= 0xdc00 && unit <= 0xdfff

/**
 * Cuts `s` to at most `max` code points (not UTF-16 code units). When `s` is longer, the result is its first `max - 1`
 * code points followed by "…", so it is exactly `max` code points long; "…" is only added when something was cut. A
 * surrogate pair is never split (a lone surrogate counts as one code point). `max` is floored; `max <= 0` gives "".
 */
export const truncateCodePoints = (s: string, max: number): string => {
  const limit = Math.floor(max)
  if (!(limit > 0)) return ""
  // Every code point takes at least one UTF-16 unit: a short string cannot exceed the limit.
  if (s.length <= limit) return s
  let index = 0
  let count = 0
  let cutAt = 0 // UTF-16 index after the first `limit - 1` code points
  while (index < s.length) {
    if (count === limit - 1) cutAt = index
    if (count === limit) return s.slice(0, cutAt) + ELLIPSIS
    const unit = s.charCodeAt(index)
    index += isHighSurrogate(unit) && index + 1 < s.length && isLowSurrogate(s.charCodeAt(index + 1)) ? 2 : 1
    count++
  }
  return s
}

/** Code points in `s` (a lone surrogate counts as one). */
export const codePointLength = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i)
    if (!isLowSurrogate(unit) || i === 0 || !isHighSurrogate(s.charCodeAt(i - 1))) n++
  }
  return n
}

/** The first `n` code points of `s`, a surrogate pair never split (no "…": see truncateCodePoints for that). */
export const firstCodePoints = (s: string, n: number): string => {
  let i = 0
  for (let count = 0; count < n && i < s.length; count++) {
    i += isHighSurrogate(s.charCodeAt(i)) && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1)) ? 2 : 1
  }
  return s.slice(0, i)
}

/**
 * A short, clean excerpt of attacker text for a message (a refusal's reason): at most `max` code points, without the
 * characters sanitizeText removes. Only a bounded prefix is cleaned, since the text may be 1 MiB long.
 */
export const cleanExcerpt = (s: string, max = 64): string => truncateCodePoints(sanitizeText(s.slice(0, max * 16)), max)

/** Replacement for an array or object nested deeper than the allowed depth. */
export const TOO_DEEP = "[truncated: too deep]"

/** Keys that are never copied into an output object (prototype pollution and look-alikes). */
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/** @internal Options of the shared walker behind sanitizeJson, shortenStrings and prepareAttackerInput. */
export interface WalkOptions {
  /** Applied to every string, object keys included. */
  readonly text: (s: string) => string
  /** The root is at depth 0; an array or object at a depth greater than this is replaced by TOO_DEEP. */
  readonly maxDepth: number
  /** At most this many entries are kept per object (CUT_MEMBER at the root is not counted). */
  readonly maxKeys: number
  /** At most this many items are kept per array. */
  readonly maxItems: number
  /**
   * Called for every entry of an object, with the already transformed key and the object's depth (the root is 0),
   * before its value is walked. Returning a value (not `undefined`) uses it as the entry's value as-is (it is not
   * walked); returning `OMIT` leaves the entry out; returning `CUT` says the budget ran out there.
   */
  readonly onEntry?: (key: string, rawKey: string, value: unknown, depth: number) => unknown
  /**
   * Called for every array and object (within maxDepth) before it is walked; a value returned is walked instead;
   * `CUT` says the budget ran out there.
   */
  readonly onValue?: (value: object, depth: number) => object | typeof CUT | undefined
  /** Members of the root walked first, in this order (when present), before the others in their own order. */
  readonly firstKeys?: ReadonlyArray<string>
  /** A size budget for the whole walk (see WalkBudget); without it only the counts above bound the value. */
  readonly budget?: WalkBudget
}

/**
 * @internal The size budget of one walk. `maxBytes` bounds the UTF-8 size of the result's compact JSON; once an
 * entry does not fit (or onEntry/onValue say `CUT`), `cut` is set and every later entry, at every level, is left
 * out. Entries left out by the budget or by maxKeys/maxItems are counted in `leftOut` and `leftOutBytes` (their
 * compact JSON as given to the walk), so the caller can say what was cut.
 */
export interface WalkBudget {
  readonly maxBytes: number
  used: number
  cut: boolean
  leftOut: number
  leftOutBytes: number
  /**
   * How left-out values are measured: exactly (JSON.stringify: at ingestion, where a request holds at most 1 MiB),
   * or within `work` units (about one per value) for stored rows, which older versions let grow to megabytes: past
   * it, leftOutBytes is a lower bound and `inexact` is set.
   */
  readonly exact: boolean
  work: number
  inexact: boolean
}

/** Work allowed for measuring what a read leaves out of one stored value. */
const MEASURE_WORK = 5_000

export const newBudget = (maxBytes: number, exact: boolean): WalkBudget => ({
  maxBytes,
  used: 0,
  cut: false,
  leftOut: 0,
  leftOutBytes: 0,
  exact,
  work: MEASURE_WORK,
  inexact: false,
})

/** The member name of the visible mark that says an attackerInput was cut (its value says how much). */
export const CUT_MEMBER = "…"

const DROP: unique symbol = Symbol("drop")
/** @internal What `WalkOptions.onEntry` returns to leave an entry out. */
export const OMIT: typeof DROP = DROP
/** @internal What `WalkOptions.onEntry`/`onValue` return when the budget runs out at that entry. */
export const CUT: unique symbol = Symbol("cut")
// An entry left out by the budget (internal to the walk).
const LEFT: unique symbol = Symbol("left out")

/**
 * UTF-8 length of a string (a lone surrogate counts 3, as U+FFFD), counted natively: a JavaScript loop over the
 * characters took 50–60 µs for a page of 50 incidents, Buffer.byteLength about 2.
 */
export const utf8Length = (s: string): number => Buffer.byteLength(s, "utf8")

/** UTF-8 size of a value's compact JSON (0 for what JSON cannot encode). */
export const jsonBytes = (value: unknown): number => {
  try {
    const json: unknown = JSON.stringify(value)
    return typeof json === "string" ? utf8Length(json) : 0
  } catch {
    return 0
  }
}

/** UTF-8 bytes of one code point inside a JSON string (an upper bound for escapes). */
const jsonCodePointBytes = (cp: number): number => {
  if (cp === 0x22 || cp === 0x5c) return 2
  if (cp < 0x20 || (cp >= 0xd800 && cp <= 0xdfff)) return 6
  if (cp < 0x80) return 1
  if (cp < 0x800) return 2
  if (cp < 0x10000) return 3
  return 4
}

/**
 * The longest start of `s`, ending in "…", whose compact JSON takes at most `maxBytes` bytes (undefined when not even
 * "…" fits). Code points are never split.
 */
export const fitJsonString = (s: string, maxBytes: number): string | undefined => {
  let room = maxBytes - 2 - 3 // the quotes and the "…"
  if (room < 0) return undefined
  let end = 0
  for (const ch of s) {
    const cost = jsonCodePointBytes(ch.codePointAt(0) ?? 0)
    if (cost > room) break
    room -= cost
    end += ch.length
  }
  return `${s.slice(0, end)}${ELLIPSIS}`
}

const charge = (budget: WalkBudget, bytes: number): boolean => {
  if (budget.cut || budget.used + bytes > budget.maxBytes) return false
  budget.used += bytes
  return true
}

/** The size of `v` as compact JSON, measured within the budget's work (0 once it is spent). */
const measure = (v: unknown, budget: WalkBudget): number => {
  if (budget.work <= 0) {
    budget.inexact = true
    return 0
  }
  budget.work--
  switch (typeof v) {
    case "string":
      budget.work -= v.length >> 6
      return utf8Length(JSON.stringify(v))
    case "number":
      return Number.isFinite(v) ? String(v).length : 4
    case "boolean":
      return v ? 4 : 5
    case "object": {
      if (v === null) return 4
      if (Array.isArray(v)) {
        let size = 2 + Math.max(0, v.length - 1)
        for (const item of v) {
          const t = typeof item
          size += t === "undefined" || t === "function" || t === "symbol" ? 4 : measure(item, budget)
          if (budget.work <= 0) break
        }
        return size
      }
      let size = 2
      let n = 0
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue
        const item = (v as Record<string, unknown>)[key]
        const t = typeof item
        if (t === "undefined" || t === "function" || t === "symbol") continue
        size += (n > 0 ? 1 : 0) + utf8Length(JSON.stringify(key)) + 1 + measure(item, budget)
        n++
        if (budget.work <= 0) break
      }
      return size
    }
    default:
      return 0
  }
}

/** @internal Counts one entry left out of a walk, with its size as compact JSON (within the budget's work). */
export const countLeftOut = (budget: WalkBudget | undefined, raw: unknown): void => {
  if (budget === undefined) return
  budget.leftOut++
  budget.leftOutBytes += budget.exact ? jsonBytes(raw) : measure(raw, budget)
}

/** A leaf (already transformed) within the budget: itself, a shortened string, or LEFT. */
const leaf = (value: unknown, budget: WalkBudget | undefined): unknown => {
  if (budget === undefined) return value
  const size = jsonBytes(value)
  if (charge(budget, size)) return value
  // A string that does not fit whole keeps what fits (when that is a useful part of it).
  if (typeof value === "string" && !budget.cut && budget.maxBytes - budget.used >= 64) {
    const part = fitJsonString(value, budget.maxBytes - budget.used)
    if (part !== undefined) {
      const partSize = jsonBytes(part)
      budget.used += partSize
      budget.leftOutBytes += Math.max(0, size - partSize)
      budget.cut = true
      return part
    }
  }
  budget.cut = true
  return LEFT
}

const rootOrder = (keys: Array<string>, first: ReadonlyArray<string> | undefined): Array<string> => {
  if (first === undefined || first.length === 0) return keys
  const head = first.filter((k) => keys.includes(k))
  if (head.length === 0) return keys
  return [...head, ...keys.filter((k) => !head.includes(k))]
}

const walk = (v: unknown, depth: number, options: WalkOptions): unknown => {
  const budget = options.budget
  switch (typeof v) {
    case "string":
      return leaf(options.text(v), budget)
    case "number":
      return leaf(Number.isFinite(v) ? v : null, budget)
    case "boolean":
      return leaf(v, budget)
    case "object": {
      if (v === null) return leaf(null, budget)
      if (depth > options.maxDepth) return leaf(TOO_DEEP, budget)
      if (options.onValue !== undefined) {
        const replaced = options.onValue(v, depth)
        if (replaced === CUT) {
          if (budget !== undefined) budget.cut = true
          return LEFT
        }
        v = replaced ?? v
      }
      if (budget !== undefined && !charge(budget, 2)) {
        budget.cut = true
        return LEFT
      }
      // A container emptied by a cut at its first entry is left out whole (counted once, by the caller).
      const before =
        budget === undefined ? undefined : { used: budget.used - 2, n: budget.leftOut, b: budget.leftOutBytes }
      const emptiedByCut = (empty: boolean): boolean => {
        if (budget === undefined || before === undefined || !empty || !budget.cut) return false
        budget.used = before.used
        budget.leftOut = before.n
        budget.leftOutBytes = before.b
        return true
      }
      if (Array.isArray(v)) {
        const out: Array<unknown> = []
        for (let i = 0; i < v.length; i++) {
          if (budget === undefined && out.length >= options.maxItems) break
          if (out.length >= options.maxItems || budget?.cut) {
            countLeftOut(budget, v[i])
            continue
          }
          const comma = out.length > 0 ? 1 : 0
          if (budget !== undefined && !charge(budget, comma)) {
            budget.cut = true
            countLeftOut(budget, v[i])
            continue
          }
          const item = walk(v[i], depth + 1, options)
          if (item === LEFT) {
            if (budget !== undefined) budget.used -= comma
            countLeftOut(budget, v[i])
          } else if (item !== DROP) out.push(item)
          else if (budget !== undefined) budget.used -= comma
        }
        return emptiedByCut(out.length === 0 && v.length > 0) ? LEFT : out
      }
      const source = v as Record<string, unknown>
      const out: Record<string, unknown> = {}
      let kept = 0
      const keys = depth === 0 ? rootOrder(Object.keys(source), options.firstKeys) : Object.keys(source)
      for (const rawKey of keys) {
        if (budget === undefined && kept >= options.maxKeys) break
        const value = source[rawKey]
        if (budget?.cut) {
          countLeftOut(budget, value)
          continue
        }
        const key = options.text(rawKey)
        if (FORBIDDEN_KEYS.has(key)) continue
        if (Object.hasOwn(out, key)) {
          // Two names that are one once cleaned or shortened: the first is kept, the other counted as cut.
          countLeftOut(budget, value)
          continue
        }
        if (kept >= options.maxKeys && !(depth === 0 && key === CUT_MEMBER)) {
          countLeftOut(budget, value)
          continue
        }
        const special = options.onEntry === undefined ? undefined : options.onEntry(key, rawKey, value, depth)
        if (special === DROP) continue
        if (special === CUT) {
          if (budget !== undefined) budget.cut = true
          countLeftOut(budget, value)
          continue
        }
        const keyCost = budget === undefined ? 0 : jsonBytes(key) + 1 + (kept > 0 ? 1 : 0)
        if (budget !== undefined && !charge(budget, keyCost)) {
          budget.cut = true
          countLeftOut(budget, value)
          continue
        }
        const result = special === undefined ? walk(value, depth + 1, options) : leaf(special, budget)
        if (result === LEFT || result === DROP) {
          if (budget !== undefined) budget.used -= keyCost
          if (result === LEFT) countLeftOut(budget, value)
          continue
        }
        out[key] = result
        if (!(depth === 0 && key === CUT_MEMBER)) kept++
      }
      return depth > 0 && emptiedByCut(kept === 0 && Object.keys(source).length > 0) ? LEFT : out
    }
    default:
      return DROP
  }
}

/**
 * @internal Deep copy of a JSON-like value with every string passed through `options.text`. Numbers (non-finite ones
 * become null, as in JSON), booleans and null are kept; undefined, functions, symbols and bigints are dropped (from
 * arrays too; a dropped root gives undefined). Keys "__proto__", "constructor" and "prototype" (after the key's
 * transformation) are dropped. When two keys become equal after transformation, the first one wins. Never mutates.
 */
export const walkRoot = (v: unknown, options: WalkOptions): unknown => {
  const out = walk(v, 0, options)
  return out === DROP || out === LEFT ? undefined : out
}

export const DEFAULT_MAX_DEPTH = 8

/**
 * Deep-sanitizes a JSON-like value. Every string, object keys included, goes through `sanitizeText`; numbers,
 * booleans and null are kept (non-finite numbers become null, as JSON.stringify would); arrays and objects are copied
 * recursively. The root is at depth 0: an array or object nested deeper than `maxDepth` (default 8) is replaced by the
 * string "[truncated: too deep]". Undefined, functions, symbols and bigints are dropped (an unsupported root gives
 * undefined). Keys "__proto__", "constructor" and "prototype" are dropped. Returns a new value; never mutates.
 */
export const sanitizeJson = (v: unknown, options?: { readonly maxDepth?: number }): unknown =>
  walkRoot(v, {
    text: sanitizeText,
    maxDepth: options?.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxKeys: Number.POSITIVE_INFINITY,
    maxItems: Number.POSITIVE_INFINITY,
  })

/** Maximum length, in code points, of an attackerInput string in a webhook. */
export const WEBHOOK_STRING_MAX = 256

/**
 * For webhooks: every string of an attackerInput value (object keys too) is cut to `max` (default 256) code points
 * with a final "…" (see truncateCodePoints). It recurses like sanitizeJson (same depth bound, dropped keys and types),
 * and as defence in depth also passes each string through sanitizeText (a no-op on already-sanitized input).
 */
export const shortenStrings = (v: unknown, max: number = WEBHOOK_STRING_MAX): unknown =>
  walkRoot(v, {
    text: (s) => truncateCodePoints(sanitizeText(s), max),
    maxDepth: DEFAULT_MAX_DEPTH,
    maxKeys: Number.POSITIVE_INFINITY,
    maxItems: Number.POSITIVE_INFINITY,
  })
