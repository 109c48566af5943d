import { randomBytes } from "node:crypto"
import { constantTimeEqual, sha256 } from "./crypto.ts"
import { ID_PREFIXES, type IdOf, isId, newId } from "./ids.ts"

/**
 * API keys and sensor tokens: `<prefix>_<record id>_<secret>`, the secret 32 random bytes
 * (256 bits) in base64url. The record id makes lookup a primary-key read; only SHA-256 of the secret is stored,
 * and the comparison is constant-time. The recognisable prefix lets secret scanners find leaked keys.
 */
export interface TokenKind<K extends "apiKey" | "sensor" = "apiKey" | "sensor"> {
  readonly prefix: string
  readonly idKind: K
}
export const API_KEY_TOKEN: TokenKind<"apiKey"> = { prefix: "dsk", idKind: "apiKey" }
export const SENSOR_TOKEN: TokenKind<"sensor"> = { prefix: "dst", idKind: "sensor" }

export interface IssuedToken<K extends "apiKey" | "sensor" = "apiKey" | "sensor"> {
  readonly id: IdOf<K>
  readonly token: string
  readonly secretHash: Uint8Array
}

export const issueToken = <K extends "apiKey" | "sensor">(kind: TokenKind<K>): IssuedToken<K> => {
  const id = newId(kind.idKind)
  const secret = randomBytes(32).toString("base64url")
  return { id, token: `${kind.prefix}_${id}_${secret}`, secretHash: sha256(secret) }
}

export interface ParsedToken<K extends "apiKey" | "sensor" = "apiKey" | "sensor"> {
  readonly id: IdOf<K>
  readonly secret: string
}

/** Splits a presented token; undefined when it cannot be one of ours (then nothing is looked up). */
export const parseToken = <K extends "apiKey" | "sensor">(
  kind: TokenKind<K>,
  token: string,
): ParsedToken<K> | undefined => {
  const prefix = `${kind.prefix}_`
  if (!token.startsWith(prefix) || token.length > 200) return undefined
  const rest = token.slice(prefix.length)
  const idLength = ID_PREFIXES[kind.idKind].length + 1 + 26
  const id = rest.slice(0, idLength)
  if (!isId(kind.idKind, id) || rest[idLength] !== "_") return undefined
  const secret = rest.slice(idLength + 1)
  if (!/^[A-Za-z0-9_-]{43}$/.test(secret)) return undefined
  return { id, secret }
}

/** The token of an `Authorization: Bearer <token>` header (RFC 7235: scheme case-insensitive, one token). */
export const bearerToken = (authorization: string | undefined): string | undefined =>
  authorization === undefined ? undefined : /^Bearer +([^\s]+) *$/i.exec(authorization)?.[1]

export const secretMatches = (secret: string, storedHash: Uint8Array): boolean =>
  constantTimeEqual(sha256(secret), storedHash)
