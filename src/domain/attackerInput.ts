/**
 * Masking and cleaning at ingestion for an event's attackerInput (what the attacker sent to the decoy).
 *
 * Pure computation, no I/O (node:crypto's HMAC is used only as a function). Captured secrets are replaced by
 * `{masked, length, fingerprint}` before anything is stored, so the raw value never reaches the database, the API or
 * a webhook; secrets inside attacker text (URL and form parameters, header lines) become `*`s; every other string is
 * cleaned of invisible characters and the whole value is bounded in depth and size. The same rules read any stored
 * value back as a valid API value (readableAttackerInput), so no stored row can make a read fail.
 */
import { createHmac } from "node:crypto"
import { isRecord } from "./json.ts"
import {
  CUT,
  CUT_MEMBER,
  codePointLength,
  countLeftOut,
  DEFAULT_MAX_DEPTH,
  newBudget,
  OMIT,
  sanitizeText,
  truncateCodePoints,
  type WalkBudget,
  WEBHOOK_STRING_MAX,
  walkRoot,
} from "./sanitize.ts"

/**
 * The words that make a member name password-like, so its value is masked (after splitting the name into words): any of
 * these, `api` or `private` followed by `key`, or a name that is the one word `key`. A few plurals are included;
 * `apikey` and `privatekey` written as one word count too.
 */
export const PASSWORD_LIKE_WORDS: ReadonlyArray<string> = [
  "password",
  "passwords",
  "passwd",
  "pwd",
  "pass",
  "passphrase",
  "passcode",
  "secret",
  "secrets",
  "token",
  "tokens",
  "credential",
  "credentials",
  "authorization",
  "cookie",
  "cookies",
  "pin",
  "otp",
  "apikey",
  "privatekey",
]

const PASSWORD_LIKE_SET: ReadonlySet<string> = new Set(PASSWORD_LIKE_WORDS)

// A run of capitals before a capitalised word ("API" in "APIKey"), a capitalised or lowercase word, a run of
// capitals, a run of other letters (no case), digits.
const WORD = /\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{Lo}+|\p{N}+/gu

/**
 * A member name split into lowercase words, on case changes and on anything that is not a letter or digit
 * (`_`, `-`, `.`, spaces, ...), after removing invisible characters and NFKC normalization (full-width
 * look-alikes): `access_token` → access, token; `APIKey` → api, key; `VNC Password` → vnc, password.
 */
export const nameWords = (name: string): ReadonlyArray<string> =>
  (sanitizeText(name).normalize("NFKC").match(WORD) ?? []).map((w) => w.toLowerCase())

const passwordLikeCache = new Map<string, boolean>()
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/
// Every password-like name contains one of these (case-insensitively): pass, pwd, secret, token, credential,
// authorization, cookie, pin, otp, key.
const SECRET_HINT = /pass|pwd|secret|token|credential|authorization|cookie|pin|otp|key/i

/**
 * Whether a member name holds a secret to mask: one of its words is password-like (PASSWORD_LIKE_WORDS), it has `api`
 * or `private` followed by `key`, or it is the single word `key`. "PASSWORD", "access_token", "x-api-key", "userPIN"
 * and "VNC Password" match; "username", "keyboard", "compass" and "hostKey" do not.
 */
export const isPasswordLikeKey = (name: string): boolean => {
  // Most names are printable ASCII (unchanged by cleaning and NFKC) without any of the words: answered at once.
  if (PRINTABLE_ASCII.test(name) && !SECRET_HINT.test(name)) return false
  const hit = passwordLikeCache.get(name)
  if (hit !== undefined) return hit
  const words = nameWords(name)
  let result = words.length === 1 && words[0] === "key"
  for (let i = 0; !result && i < words.length; i++) {
    const word = words[i] as string
    result = PASSWORD_LIKE_SET.has(word) || ((word === "api" || word === "private") && words[i + 1] === "key")
  }
  if (name.length <= 64) {
    if (passwordLikeCache.size >= 4096) passwordLikeCache.clear()
    passwordLikeCache.set(name, result)
  }
  return result
}

/** What is stored instead of a captured secret, so no credential sits in the database. */
export interface MaskedSecret {
  /** "*" repeated min(length, 32). */
  readonly masked: string
  /** Length of the captured value in code points. */
  readonly length: number
  /** First 32 lowercase hex characters of HMAC-SHA256(organization fingerprint key, captured value as UTF-8). */
  readonly fingerprint: string
}

const MASK_MAX = 32
const FINGERPRINT_HEX_LENGTH = 32

/**
 * Masks a captured secret. `masked` is "*" repeated min(length, 32); `length` is the number of code points of the
 * raw value (not sanitized); `fingerprint` is the first 32 lowercase hex characters of
 * HMAC-SHA256(orgFingerprintKey, raw value as UTF-8), so equal secrets can be correlated within one organization but
 * not across organizations. (A lone surrogate is encoded as U+FFFD for the HMAC, as UTF-8 cannot represent it.)
 */
export const maskSecret = (raw: string, orgFingerprintKey: Uint8Array): MaskedSecret => {
  const length = codePointLength(raw)
  return {
    masked: "*".repeat(Math.min(length, MASK_MAX)),
    length,
    fingerprint: createHmac("sha256", orgFingerprintKey)
      .update(raw, "utf8")
      .digest("hex")
      .slice(0, FINGERPRINT_HEX_LENGTH),
  }
}

/** Size bounds of a stored attackerInput. */
export const ATTACKER_INPUT_MAX_DEPTH = DEFAULT_MAX_DEPTH
export const ATTACKER_INPUT_MAX_KEYS = 64
export const ATTACKER_INPUT_MAX_ITEMS = 64
export const ATTACKER_INPUT_MAX_STRING = 4096
/**
 * The UTF-8 size of an event's stored attackerInput as compact JSON, cut mark included.
 * Masking makes a short secret about 7 times larger (`{"pwd":"1"}` becomes an 80-byte object), so the bound applies
 * after masking. 16 KiB keeps a single incident (its first 200 events) under the API's 4 MiB page bound.
 */
export const ATTACKER_INPUT_MAX_BYTES = 16 * 1024
/** At most this many masked secrets per event; the rest is cut. */
export const ATTACKER_INPUT_MAX_MASKED = 64
/** Room kept for the cut mark: the content is cut at ATTACKER_INPUT_MAX_BYTES minus this. */
const CUT_MARK_ROOM = 96

/** Webhook bounds of one event's attackerInput (strings cut at 256 code points; a body always under 256 KiB). */
export const WEBHOOK_INPUT_MAX_BYTES = 4 * 1024
export const WEBHOOK_INPUT_MAX_MASKED = 16
export const WEBHOOK_INPUT_MAX_DEPTH = 6
export const WEBHOOK_INPUT_MAX_KEYS = 32
export const WEBHOOK_INPUT_MAX_ITEMS = 32

/** The compact JSON text of a non-string value, so consumers get a string (String() for what JSON cannot encode). */
const jsonText = (value: unknown): string => {
  try {
    const json: unknown = JSON.stringify(value)
    if (typeof json === "string") return json
  } catch {
    // cyclic, too deep or containing a bigint: fall through
  }
  return String(value)
}

/** `*` for each code point of `value` (at most 32): a value masked inside text. */
const stars = (value: string): string => "*".repeat(Math.min(codePointLength(value), MASK_MAX))

/** A parameter name as written in a URL or form body, decoded for masking ("pass%77ord" is "password"). */
const paramName = (raw: string): string => {
  try {
    return decodeURIComponent(raw.replace(/\+/g, " "))
  } catch {
    return raw
  }
}

/** A member name as written inside JSON text, its escapes decoded for masking ("p\\u0061ssword"). */
const jsonName = (raw: string): string => {
  if (!raw.includes("\\")) return raw
  try {
    const name: unknown = JSON.parse(`"${raw}"`)
    return typeof name === "string" ? name : raw
  } catch {
    return raw
  }
}

// `name=value` in a URL's query, a path's `;` parameters, a query string or a form body: the name starts the text
// or follows `?`, `&`, `;` or white space; the value runs to the next `&`, `;`, `#` or white space (a `?` inside a
// value is part of it: `password=abc?def`).
const PARAM = /(^|[?&;\s])([^\s=&?#;]{1,128})=([^\s&#;]*)/g
// A header line (`Authorization: Basic …`, `Cookie: …`, `X-Api-Key: …`) at the start of the text or of a line.
const HEADER_LINE = /(^|[\r\n])([A-Za-z0-9_-]{1,64})([ \t]*:[ \t]*)([^\r\n]*)/g
// An authentication scheme kept in front of a masked header value ("Bearer ****").
const AUTH_SCHEME = /^((?:Basic|Bearer|Digest|Token|Negotiate|NTLM|AWS4-HMAC-SHA256)\s+)/i
// A JSON member inside text (a JSON request body captured as a string): `"password": "…"`.
const JSON_MEMBER = /("((?:[^"\\\r\n]|\\.){1,128})"\s*:\s*")((?:[^"\\]|\\.)*)"/g
// Credentials in a URL: scheme://user:password@host.
const URL_USERINFO = /(\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s/?#:@]*:)([^\s/?#@]*)@/gi

/**
 * Password-like parameters: a secret's value runs to the next `&`, `;`, `#` or space (a `?` inside it is part of the
 * secret); any other value stops at a `?`, which may start a query of its own (`;jsessionid=abc?api_key=…`).
 */
const maskParams = (text: string): string =>
  text.replace(PARAM, (whole, lead: string, name: string, value: string) => {
    if (value === "") return whole
    if (isPasswordLikeKey(paramName(name))) return `${lead}${name}=${stars(value)}`
    const query = value.indexOf("?")
    return query < 0 ? whole : `${lead}${name}=${value.slice(0, query)}${maskParams(value.slice(query))}`
  })

/**
 * Masking inside attacker text: the value of a password-like parameter in a URL, path, query string or form body
 * (`/login?password=hunter2` → `/login?password=*******`), of a password-like header line (`Authorization: Bearer x`
 * → `Authorization: Bearer *`), of a password-like member of JSON text, and the password of URL credentials become
 * `*`s (one per code point, at most 32); names and the rest of the text are kept. Idempotent.
 */
export const maskSecretsInText = (text: string): string => {
  if (!text.includes("=") && !text.includes(":")) return text
  let out = text
  if (out.includes("=")) out = maskParams(out)
  if (out.includes(":")) {
    out = out.replace(HEADER_LINE, (whole, lead: string, name: string, sep: string, value: string) => {
      if (value === "" || !isPasswordLikeKey(name)) return whole
      const scheme = AUTH_SCHEME.exec(value)?.[1] ?? ""
      return `${lead}${name}${sep}${scheme}${stars(value.slice(scheme.length))}`
    })
    if (out.includes('"')) {
      out = out.replace(JSON_MEMBER, (whole, head: string, name: string, value: string) =>
        value !== "" && isPasswordLikeKey(jsonName(name)) ? `${head}${stars(value)}"` : whole,
      )
    }
    if (out.includes("@") && out.includes("://")) {
      out = out.replace(URL_USERINFO, (whole, head: string, password: string) =>
        password !== "" ? `${head}${stars(password)}@` : whole,
      )
    }
  }
  return out
}

/**
 * An attacker string as stored: secrets inside it masked, invisible characters removed, bounded. Masked
 * before cleaning (header lines are still lines) and again after (a name with an invisible character in it).
 */
const storedText = (s: string): string =>
  truncateCodePoints(maskSecretsInText(sanitizeText(maskSecretsInText(s))), ATTACKER_INPUT_MAX_STRING)

/**
 * Whether a stored value is exactly a MaskedSecret as this service writes one: `masked` is `*` × min(length, 32) and
 * `fingerprint` 32 lowercase hex characters (or empty).
 */
export const isMaskedSecretShape = (u: unknown): u is MaskedSecret => {
  if (!isRecord(u)) return false
  return (
    typeof u.length === "number" &&
    Number.isSafeInteger(u.length) &&
    u.length >= 0 &&
    u.masked === "*".repeat(Math.min(u.length, MASK_MAX)) &&
    typeof u.fingerprint === "string" &&
    /^(?:[0-9a-f]{32})?$/.test(u.fingerprint)
  )
}

interface EntryRules {
  /** Every string and member name (storedText unless given). */
  readonly text?: (s: string) => string
  /** Masks a captured secret's text. */
  readonly mask: (raw: string) => MaskedSecret
  /** Stored rows: a masked secret written by this service is kept as it is. Never at ingest (it may be forged). */
  readonly trustMasked: boolean
}

/** The bounds of one walk: counts, and the size and masked-secret budget (see walkAttackerInput). */
interface Bounds {
  readonly maxDepth: number
  readonly maxKeys: number
  readonly maxItems: number
  /** The budget of the content: the cut mark comes on top. */
  readonly maxBytes: number
  readonly maxMasked: number
  /** Whether what is cut is measured exactly (at ingestion) or within a bounded work (stored rows). */
  readonly exact: boolean
}

/** A walk's mutable state: the size budget and the masked secrets still allowed. */
interface WalkState {
  readonly budget: WalkBudget
  maskedLeft: number
}

/**
 * Masking and typing of one member: a password-like member becomes a MaskedSecret (a non-string through its compact
 * JSON text; null or absent leaves it out); the root's `username` becomes a string (its JSON text unless it is one;
 * null leaves it out). Anything else is walked as usual (undefined).
 */
const entryRule =
  (rules: EntryRules, state: WalkState) =>
  (key: string, rawKey: string, value: unknown, depth: number): unknown => {
    if (isPasswordLikeKey(key) || isPasswordLikeKey(rawKey)) {
      if (value === null || value === undefined) return OMIT
      // Past the last masked secret allowed, the rest of the value is cut (and no more HMACs are computed).
      if (state.maskedLeft <= 0) return CUT
      state.maskedLeft--
      if (rules.trustMasked && isMaskedSecretShape(value)) {
        return { masked: value.masked, length: value.length, fingerprint: value.fingerprint }
      }
      return rules.mask(typeof value === "string" ? value : jsonText(value))
    }
    if (depth === 0 && key === "username") {
      if (value === null || value === undefined) return OMIT
      if (typeof value !== "string") return storedText(jsonText(value))
    }
    return undefined
  }

/**
 * Masking of headers or fields captured as pairs: the value of a `[name, value]` pair (an item of a list of pairs) or
 * of a `{name, value}` object (HAR) whose name is password-like (Authorization, Proxy-Authorization, Cookie, password,
 * ...) is masked like a password-like member's value.
 */
const pairRule =
  (rules: EntryRules, state: WalkState, maxItems: number) =>
  (value: object): object | typeof CUT | undefined => {
    const masked = (secret: unknown): unknown =>
      secret === null || secret === undefined || (rules.trustMasked && isMaskedSecretShape(secret))
        ? secret
        : rules.mask(typeof secret === "string" ? secret : jsonText(secret))
    if (Array.isArray(value)) {
      let out: Array<unknown> | undefined
      for (let i = 0; i < value.length && i < maxItems; i++) {
        const item: unknown = value[i]
        if (Array.isArray(item) && item.length === 2 && typeof item[0] === "string" && isPasswordLikeKey(item[0])) {
          out ??= [...value]
          if (state.maskedLeft <= 0) {
            // No more masked secrets allowed: the list ends here, the rest is left out (counted) and the walk cut.
            for (let j = i; j < value.length; j++) countLeftOut(state.budget, value[j])
            state.budget.cut = true
            return out.slice(0, i)
          }
          state.maskedLeft--
          out[i] = [item[0], masked(item[1])]
        }
      }
      return out
    }
    const record = value as Record<string, unknown>
    if (typeof record.name === "string" && Object.hasOwn(record, "value") && isPasswordLikeKey(record.name)) {
      if (record.value === null || record.value === undefined) return undefined
      if (state.maskedLeft <= 0) return CUT
      state.maskedLeft--
      return { ...record, value: masked(record.value) }
    }
    return undefined
  }

/** The bounds of a stored attackerInput at ingestion. */
const STORED_BOUNDS: Bounds = {
  maxDepth: ATTACKER_INPUT_MAX_DEPTH,
  maxKeys: ATTACKER_INPUT_MAX_KEYS,
  maxItems: ATTACKER_INPUT_MAX_ITEMS,
  maxBytes: ATTACKER_INPUT_MAX_BYTES - CUT_MARK_ROOM,
  maxMasked: ATTACKER_INPUT_MAX_MASKED,
  exact: true,
}
/**
 * The bounds of a stored attackerInput read back: a row stored within STORED_BOUNDS (its cut mark included) reads
 * back unchanged; an older, larger row is cut to the same total size.
 */
const READ_BOUNDS: Bounds = { ...STORED_BOUNDS, maxBytes: ATTACKER_INPUT_MAX_BYTES, exact: false }

/** The cut mark's value: how many members and items were left out, and their size as compact JSON. */
export const cutMark = (leftOut: number, bytes: number, inexact = false): string =>
  `cut: ${leftOut} more member${leftOut === 1 ? "" : "s"}, ${inexact ? "over " : ""}${bytes} bytes`

const FIRST_KEYS: ReadonlyArray<string> = ["username", "password"]

/**
 * What a root member that the sensor itself named CUT_MEMBER ("…", once cleaned) is stored as: the cut mark is
 * written by this service only, so an attacker cannot make an event look cut (or forge how much was cut). When the
 * sensor also sent a member of that name, the next free one of "… (sent 2)", "… (sent 3)", ... is used.
 */
export const SENT_CUT_MEMBER = "… (sent)"

/** The input with each root member named CUT_MEMBER once cleaned renamed as SENT_CUT_MEMBER says (order kept). */
const renameSentCutMember = (input: Record<string, unknown>, text: (s: string) => string): Record<string, unknown> => {
  const keys = Object.keys(input)
  // Only a name containing "…" can clean to it (cleaning removes characters and cuts long strings).
  const isMark = (k: string) => k.includes(CUT_MEMBER) && text(k) === CUT_MEMBER
  if (!keys.some(isMark)) return input
  const taken = new Set(keys)
  const entries = keys.map((k): [string, unknown] => {
    if (!isMark(k)) return [k, input[k]]
    let name = SENT_CUT_MEMBER
    for (let n = 2; taken.has(name); n++) name = `${CUT_MEMBER} (sent ${n})`
    taken.add(name)
    return [name, input[k]]
  })
  // fromEntries defines own properties: a "__proto__" member stays a member (the walk drops it).
  return Object.fromEntries(entries)
}

/**
 * The walk behind every attackerInput rule. `username` and `password` are walked first (the spec's members survive a
 * cut). Past the size budget or the masked-secret count, everything after that point is left out and the root gets
 * one more member, CUT_MEMBER ("…"), whose value says how much was cut (cutMark); entries beyond maxKeys/maxItems
 * are counted there too. At ingestion (`renameSent`) a member the sensor itself named "…" is renamed
 * SENT_CUT_MEMBER first; on a stored row a "…" member is this service's mark, and gives way to a new one when the
 * walk cuts again. `cut` says whether this walk cut anything.
 */
const walkWithCut = (
  input: unknown,
  rules: EntryRules,
  bounds: Bounds,
  renameSent = false,
): { readonly value: Record<string, unknown>; readonly cut: boolean } => {
  if (!isRecord(input)) return { value: {}, cut: false }
  const text = rules.text ?? storedText
  const source = renameSent ? renameSentCutMember(input, text) : input
  const state: WalkState = { budget: newBudget(bounds.maxBytes, bounds.exact), maskedLeft: bounds.maxMasked }
  const out = walkRoot(source, {
    text,
    maxDepth: bounds.maxDepth,
    maxKeys: bounds.maxKeys,
    maxItems: bounds.maxItems,
    onEntry: entryRule(rules, state),
    onValue: pairRule(rules, state, bounds.maxItems),
    firstKeys: FIRST_KEYS,
    budget: state.budget,
  })
  const result = isRecord(out) ? out : {}
  const { budget } = state
  const cut = budget.cut || budget.leftOut > 0
  if (cut) {
    delete result[CUT_MEMBER]
    result[CUT_MEMBER] = cutMark(budget.leftOut, budget.leftOutBytes, budget.inexact)
  }
  return { value: result, cut }
}

const walkAttackerInput = (input: unknown, rules: EntryRules, bounds: Bounds): Record<string, unknown> =>
  walkWithCut(input, rules, bounds).value

/**
 * The ingestion step (masking, cleaning, typing) for an attackerInput object. Returns a new object (the input is never
 * mutated) where:
 * - the value of every password-like member (isPasswordLikeKey) at any depth is replaced by maskSecret(...) of its
 *   text: a string as it is, anything else (number, boolean, array, object, even one shaped like a masked secret,
 *   which an attacker could forge) as its compact JSON text; a null leaves the member out;
 * - the root's `username` is a string: its JSON text unless it is one (then cleaned like any string); null leaves it
 *   out;
 * - every other string, object keys included, is sanitized (sanitizeText), secrets inside it are masked
 *   (maskSecretsInText: URL, path, query and form parameters, header lines, JSON members, URL credentials) and it is
 *   cut to 4096 code points (truncateCodePoints);
 * - the structure is bounded as in sanitizeJson (an array or object deeper than 8 levels below the root becomes
 *   "[truncated: too deep]"; "__proto__", "constructor" and "prototype" keys and non-JSON types are dropped), and at
 *   most the first 64 keys of each object and the first 64 items of each array are kept.
 * A root member the sensor named "…" (the cut mark's name) is stored as "… (sent)" (SENT_CUT_MEMBER), so the mark
 * is only ever this service's; it counts toward the member limit like any other. A non-object input (including an array or null) gives {}.
 */
export const prepareAttackerInput = (input: unknown, orgFingerprintKey: Uint8Array): Record<string, unknown> =>
  walkWithCut(input, { mask: (raw) => maskSecret(raw, orgFingerprintKey), trustMasked: false }, STORED_BOUNDS, true)
    .value

/**
 * The same masking and cleaning for a stored attackerInput (the repair of rows written by older versions): as
 * prepareAttackerInput, except that a masked secret already stored is kept as it is (its fingerprint was computed at
 * ingestion).
 */
export const repairAttackerInput = (stored: unknown, orgFingerprintKey: Uint8Array): Record<string, unknown> =>
  walkAttackerInput(stored, { mask: (raw) => maskSecret(raw, orgFingerprintKey), trustMasked: true }, READ_BOUNDS)

/**
 * On read: any stored attackerInput (any jsonb) as a valid API value, so no stored row can make a read fail. As
 * repairAttackerInput, but with no key at hand: a secret still stored in clear (a row the repair has not reached) is
 * masked with an empty fingerprint. On a row in the stored shape it changes nothing.
 */
const maskWithoutKey = (raw: string): MaskedSecret => {
  const length = codePointLength(raw)
  return { masked: "*".repeat(Math.min(length, MASK_MAX)), length, fingerprint: "" }
}

export const readableAttackerInput = (stored: unknown): Record<string, unknown> =>
  walkAttackerInput(
    stored,
    {
      // Stored text was cleaned at ingestion: one masking pass is enough here.
      text: (s) => truncateCodePoints(maskSecretsInText(sanitizeText(s)), ATTACKER_INPUT_MAX_STRING),
      mask: maskWithoutKey,
      trustMasked: true,
    },
    READ_BOUNDS,
  )

const WEBHOOK_BOUNDS: Bounds = {
  maxDepth: WEBHOOK_INPUT_MAX_DEPTH,
  maxKeys: WEBHOOK_INPUT_MAX_KEYS,
  maxItems: WEBHOOK_INPUT_MAX_ITEMS,
  maxBytes: WEBHOOK_INPUT_MAX_BYTES - CUT_MARK_ROOM,
  maxMasked: WEBHOOK_INPUT_MAX_MASKED,
  exact: false,
}

/**
 * For webhooks: any stored attackerInput as readableAttackerInput reads it, shortened: every string and member
 * name cut to 256 code points (ending in "…"), at most 6 levels, 32 members per object and 32 items per array, 16
 * masked secrets and 4 KiB of compact JSON, past which the rest is cut with the CUT_MEMBER mark. With at most 20
 * events, this keeps a webhook body far under 256 KiB whatever was stored. `cut` says whether this walk cut
 * anything (a "…" member alone does not: a row stored before sensor-sent "…" members were renamed may hold one).
 */
export const webhookAttackerInputWithCut = (
  stored: unknown,
): { readonly value: Record<string, unknown>; readonly cut: boolean } =>
  walkWithCut(
    stored,
    {
      text: (s) => truncateCodePoints(maskSecretsInText(sanitizeText(s)), WEBHOOK_STRING_MAX),
      mask: maskWithoutKey,
      trustMasked: true,
    },
    WEBHOOK_BOUNDS,
  )

export const webhookAttackerInput = (stored: unknown): Record<string, unknown> =>
  webhookAttackerInputWithCut(stored).value
