import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { deriveKey, sha256 } from "./crypto.ts"

/**
 * Secrets at rest (D16 webhook signing secrets, D19 fingerprint keys): AES-256-GCM under a key derived from
 * SECRET_KEY. Text form `v1.<key id>.<iv>.<ciphertext+tag>` (base64url); the key id names the master key, so a
 * rotated SECRET_KEY can tell old ciphertexts from new ones.
 */
export interface Sealer {
  readonly keyId: string
  readonly seal: (plaintext: Uint8Array) => string
  /** Undefined when the text was not sealed by this key or was altered. */
  readonly open: (sealed: string) => Uint8Array | undefined
}

export const makeSealer = (master: Uint8Array): Sealer => {
  const key = deriveKey(master, "seal-v1")
  const keyId = sha256(key).subarray(0, 4).toString("hex")
  return {
    keyId,
    seal: (plaintext) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, iv)
      cipher.setAAD(Buffer.from(keyId))
      const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
      return `v1.${keyId}.${iv.toString("base64url")}.${body.toString("base64url")}`
    },
    open: (sealed) => {
      const [version, kid, ivText, bodyText] = sealed.split(".")
      if (version !== "v1" || kid !== keyId || !ivText || !bodyText) return undefined
      const iv = Buffer.from(ivText, "base64url")
      const body = Buffer.from(bodyText, "base64url")
      if (iv.length !== 12 || body.length < 16) return undefined
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, iv)
        decipher.setAAD(Buffer.from(keyId))
        decipher.setAuthTag(body.subarray(body.length - 16))
        return new Uint8Array(Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]))
      } catch {
        return undefined
      }
    },
  }
}
