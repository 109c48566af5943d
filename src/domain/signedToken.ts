import { createHmac } from "node:crypto"
import { constantTimeEqual } from "./crypto.ts"

/**
 * The envelope of the API's opaque tokens (list cursors and feed tokens, signed so clients cannot forge positions): a
 * JSON array as base64url, a full stop, and a 128-bit HMAC-SHA256 of that text under a key derived from SECRET_KEY.
 * Each token kind decides what its array holds; this module only seals it and opens it again.
 */
const mac = (key: Uint8Array, body: string): Buffer => createHmac("sha256", key).update(body).digest().subarray(0, 16)

export const sealToken = (key: Uint8Array, fields: ReadonlyArray<unknown>): string => {
  const body = Buffer.from(JSON.stringify(fields)).toString("base64url")
  return `${body}.${mac(key, body).toString("base64url")}`
}

/** The array a token carries, or undefined when it is malformed or its signature does not match. */
export const openToken = (key: Uint8Array, token: string): ReadonlyArray<unknown> | undefined => {
  if (token.length > 512 || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/.test(token)) return undefined
  const [body = "", signature = ""] = token.split(".")
  // Compare the canonical text, not decoded bytes: the last base64url character carries 4 unused bits, so
  // decoding would accept up to 16 spellings of one signature.
  if (!constantTimeEqual(Buffer.from(mac(key, body).toString("base64url")), Buffer.from(signature))) return undefined
  try {
    const parsed: unknown = JSON.parse(Buffer.from(body, "base64url").toString("utf8"))
    return Array.isArray(parsed) ? parsed : undefined
  } catch {
    return undefined
  }
}
