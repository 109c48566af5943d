import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { deriveKey, sha256 } from "./crypto.ts"

/**
 * Secrets the service must use again (webhook signing secrets, fingerprint keys), at rest: AES-256-GCM under a key
 * derived from SECRET_KEY. Text form `v1.<key id>.<iv>.<ciphertext+tag>` (base64url); the key id names the master key,
 * so a rotated SECRET_KEY can tell old ciphertexts from new ones.
 */
export interface Sealer {
  readonly keyId: string
  readonly seal: (plaintext: Uint8Array) => string
  /** Undefined when the text was not sealed by this key or was altered. */
  readonly open: (sealed: string) => Uint8Array | undefined
}

/** Whether `sealed` was sealed under the current master key (reseal skips those). */
export const sealedKeyId = (sealed: string): string | undefined => sealed.split(".")[1]

/**
 * A sealer that seals under `master` and opens what was sealed under `master` or any of `previous` (a rotated
 * SECRET_KEY kept as SECRET_KEY_PREVIOUS until `admin secrets reseal` has moved everything to the new key).
 */
export const makeSealer = (master: Uint8Array, previous: ReadonlyArray<Uint8Array> = []): Sealer => {
  const keys = [master, ...previous].map((m) => {
    const key = deriveKey(m, "seal-v1")
    return { key, keyId: sha256(key).subarray(0, 4).toString("hex") }
  })
  const current = keys[0] as { key: Buffer; keyId: string }
  return {
    keyId: current.keyId,
    seal: (plaintext) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", current.key, iv)
      cipher.setAAD(Buffer.from(current.keyId))
      const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
      return `v1.${current.keyId}.${iv.toString("base64url")}.${body.toString("base64url")}`
    },
    open: (sealed) => {
      const [version, kid, ivText, bodyText] = sealed.split(".")
      const match = keys.find((k) => k.keyId === kid)
      if (version !== "v1" || match === undefined || !ivText || !bodyText) return undefined
      const iv = Buffer.from(ivText, "base64url")
      const body = Buffer.from(bodyText, "base64url")
      if (iv.length !== 12 || body.length < 16) return undefined
      try {
        const decipher = createDecipheriv("aes-256-gcm", match.key, iv)
        decipher.setAAD(Buffer.from(match.keyId))
        decipher.setAuthTag(body.subarray(body.length - 16))
        return new Uint8Array(Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]))
      } catch {
        return undefined
      }
    },
  }
}
