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

/**
 * The Standard Webhooks `webhook-signature` value: `v1,<base64 HMAC-SHA256>` per secret, space-separated, in the given
 * order (current secret first, then the previous one during a rotation grace), duplicates signed once. Each is keyed
 * with the secret's exact UTF-8 bytes, the same key as `X-Service-Signature` (our secrets are `whsec_` + unpadded
 * base64url, which the Standard Webhooks libraries' default decoding does not read, so receivers pass the shown secret
 * to them as a raw key), over `${id}.${t}.` + raw body bytes. Throws on programming errors like `signatureHeader`, and
 * on an id that is empty, longer than 256 characters or not printable ASCII without spaces.
 */
export const standardSignatureHeader = (
  secrets: ReadonlyArray<string>,
  id: string,
  timestampSeconds: number,
  rawBody: string | Uint8Array,
): string => {
  // The same checks on the secrets and the timestamp: the two headers are always made from the same inputs.
  signatureHeader(secrets, timestampSeconds, "")
  if (!/^[\x21-\x7e]{1,256}$/.test(id))
    throw new TypeError("the webhook id must be 1 to 256 printable ASCII characters")
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody
  const signed = `${id}.${timestampSeconds}.`
  return [...new Set(secrets)]
    .map(
      (secret) =>
        `v1,${createHmac("sha256", Buffer.from(secret, "utf8")).update(signed, "utf8").update(body).digest("base64")}`,
    )
    .join(" ")
}

/** A new signing secret: `whsec_` followed by 32 random bytes in unpadded base64url (43 characters). */
export const generateSigningSecret = (): string => `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64url")}`
