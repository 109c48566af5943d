import { createHash, createHmac, timingSafeEqual } from "node:crypto"

export const sha256 = (data: string | Uint8Array): Buffer => createHash("sha256").update(data).digest()

export const hmacSha256 = (key: Uint8Array, data: string | Uint8Array): Buffer =>
  createHmac("sha256", key).update(data).digest()

/** Constant-time equality of two byte strings (false, in constant time for the length, when lengths differ). */
export const constantTimeEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) {
    timingSafeEqual(a, a)
    return false
  }
  return timingSafeEqual(a, b)
}

/** Constant-time equality of two texts, as their UTF-8 bytes (tokens a browser sends back). */
export const constantTimeEqualText = (a: string, b: string): boolean =>
  constantTimeEqual(Buffer.from(a), Buffer.from(b))

/** A purpose-bound key derived from the master key, so one master key never serves two purposes directly. */
export const deriveKey = (master: Uint8Array, purpose: string): Buffer => hmacSha256(master, `derive:${purpose}`)
