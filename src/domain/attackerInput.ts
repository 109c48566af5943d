/**
 * D19/D20: the ingestion step for an event's attackerInput (what the attacker sent to the decoy).
 *
 * Pure computation, no I/O (node:crypto's HMAC is used only as a function). Captured secrets are replaced by
 * `{masked, length, fingerprint}` before anything is stored, so the raw value never reaches the database, the API or
 * a webhook; every other string is sanitized (D20) and the whole value is bounded in depth and size.
 */
import { createHmac } from "node:crypto"
import { DEFAULT_MAX_DEPTH, sanitizeText, truncateCodePoints, walkRoot } from "./sanitize.ts"

/** D19: password-like keys, in normalized form (lowercase, without "_" and "-"). */
export const PASSWORD_LIKE_KEYS: ReadonlyArray<string> = ["password", "passphrase", "token", "secret", "apikey", "key"]

const PASSWORD_LIKE_SET: ReadonlySet<string> = new Set(PASSWORD_LIKE_KEYS)

/**
 * D19: whether an attackerInput key holds a secret. The key is compared after removing invisible characters
 * (sanitizeText), NFKC normalization (so full-width look-alikes match), lowercasing and removing "_" and "-": "PASSWORD",
 * "api_key", "API-KEY" and "apiKey" all match. Only whole keys match ("username", "keyboard" and "access_token" do not).
 */
export const isPasswordLikeKey = (key: string): boolean =>
  PASSWORD_LIKE_SET.has(sanitizeText(key).normalize("NFKC").toLowerCase().replace(/[_-]/g, ""))

/** D19: what is stored instead of a captured secret. */
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

const codePointLength = (s: string): number => {
  let count = 0
  for (const _ of s) count++
  return count
}

/**
 * D19: masks a captured secret. `masked` is "*" repeated min(length, 32); `length` is the number of code points of the
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

/** The text of a non-scalar secret: its JSON, or (for values JSON cannot encode) its String form. */
const secretText = (value: object): string => {
  try {
    const json: unknown = JSON.stringify(value)
    if (typeof json === "string") return json
  } catch {
    // cyclic or containing a bigint: fall through
  }
  return String(value)
}

const maskEntry =
  (orgFingerprintKey: Uint8Array) =>
  (key: string, rawKey: string, value: unknown): unknown => {
    if (!isPasswordLikeKey(key) && !isPasswordLikeKey(rawKey)) return undefined
    if (typeof value === "string" || typeof value === "number") return maskSecret(String(value), orgFingerprintKey)
    // An object here may look like an already-masked secret, but the attacker could have forged it: mask it whole.
    if (typeof value === "object" && value !== null) return maskSecret(secretText(value), orgFingerprintKey)
    return undefined // booleans and null are kept, other types dropped, as anywhere else
  }

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * D19/D20: the ingestion step for an attackerInput object. Returns a new object (the input is never mutated) where:
 * - the value of every password-like key (isPasswordLikeKey) at any depth is replaced by maskSecret(...) when it is a
 *   string or number (numbers through String()), and when it is an object or array (even one shaped like a masked
 *   secret, which an attacker could forge) by maskSecret of its JSON.stringify; booleans and null stay as they are;
 * - every other string, object keys included, is sanitized (sanitizeText) and then cut to 4096 code points
 *   (truncateCodePoints);
 * - the structure is bounded as in sanitizeJson (an array or object deeper than 8 levels below the root becomes
 *   "[truncated: too deep]"; "__proto__", "constructor" and "prototype" keys and non-JSON types are dropped), and at
 *   most the first 64 keys of each object and the first 64 items of each array are kept.
 * A non-object input (including an array or null) gives {}.
 */
export const prepareAttackerInput = (input: unknown, orgFingerprintKey: Uint8Array): Record<string, unknown> => {
  if (!isRecord(input)) return {}
  const out = walkRoot(input, {
    text: (s) => truncateCodePoints(sanitizeText(s), ATTACKER_INPUT_MAX_STRING),
    maxDepth: ATTACKER_INPUT_MAX_DEPTH,
    maxKeys: ATTACKER_INPUT_MAX_KEYS,
    maxItems: ATTACKER_INPUT_MAX_ITEMS,
    onEntry: maskEntry(orgFingerprintKey),
  })
  return isRecord(out) ? out : {}
}
