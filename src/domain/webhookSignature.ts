/**
 * Webhook signing for the service's sender (spec "Webhook signature"; Stripe-style, so any such verifier works).
 *
 * Deliberately does not share code with `verify.ts`: the two are independent implementations of the same spec, so
 * the round-trip tests between them actually test something.
 */
import { createHmac, randomBytes } from "node:crypto"

const SECRET_PREFIX = "whsec_"
const SECRET_BYTES = 32

/**
 * The `X-Service-Signature` value `t=<t>,v1=<hex>[,v1=<hex>]`: one `v1` per secret, in the given order (the current
 * secret first, then the previous one while a rotation grace period lasts, so receivers can switch). Duplicate secrets
 * are signed once. Each `v1` is the lowercase-hex HMAC-SHA256, keyed with the secret's exact UTF-8 bytes, of `${t}.` +
 * raw body bytes. Throws on programming errors: no secret, an empty secret, or a timestamp that is not a non-negative
 * integer of at most 12 digits (what verifiers accept).
 */
export const signatureHeader = (
  secrets: ReadonlyArray<string>,
  timestampSeconds: number,
  rawBody: string | Uint8Array,
): string => {
  if (secrets.length === 0) throw new TypeError("signatureHeader needs at least one signing secret")
  if (secrets.some((secret) => typeof secret !== "string" || secret.length === 0)) {
    throw new TypeError("signing secrets must be non-empty strings")
  }
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0 || timestampSeconds > 999_999_999_999) {
    throw new RangeError("timestampSeconds must be a non-negative integer number of seconds")
  }
  const t = String(timestampSeconds)
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody
  const parts = [`t=${t}`]
  for (const secret of new Set(secrets)) {
    const v1 = createHmac("sha256", Buffer.from(secret, "utf8")).update(`${t}.`, "utf8").update(body).digest("hex")
    parts.push(`v1=${v1}`)
  }
  return parts.join(",")
}

/** A new signing secret: `whsec_` followed by 32 random bytes in unpadded base64url (43 characters). */
export const generateSigningSecret = (): string => `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64url")}`
