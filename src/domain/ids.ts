import { randomBytes } from "node:crypto"

/**
 * Identifiers are a type prefix and a ULID body (48-bit millisecond time, 80 random bits, Crockford
 * base32): time-sortable, URL-safe, and unguessable enough that an id reveals nothing about other records.
 */
export const ID_PREFIXES = {
  incident: "inc",
  event: "evt",
  sensor: "sen",
  organization: "org",
  apiKey: "key",
  webhookChannel: "whc",
  webhookDelivery: "whd",
  transition: "itr",
  deliveryAttempt: "wha",
  consoleUser: "usr",
  auditEntry: "aud",
  ignoreRule: "ign",
  incidentNote: "inn",
  baitCredential: "bcr",
} as const
export type IdKind = keyof typeof ID_PREFIXES

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

export const ulid = (timeMs: number = Date.now()): string => {
  let time = ""
  let t = Math.max(0, Math.floor(timeMs))
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time
    t = Math.floor(t / 32)
  }
  const random = randomBytes(10)
  let rest = ""
  // 80 bits -> 16 base32 characters, 5 bits at a time.
  let buffer = 0
  let bits = 0
  for (const byte of random) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      rest += CROCKFORD[(buffer >> (bits - 5)) & 31]
      bits -= 5
    }
    buffer &= (1 << bits) - 1
  }
  return time + rest
}

export const newId = (kind: IdKind, timeMs?: number): string => `${ID_PREFIXES[kind]}_${ulid(timeMs)}`

/** An id of this kind as a regular expression source (the type prefix and a ULID body); also the OpenAPI pattern. */
export const idPattern = (kind: IdKind): string => `^${ID_PREFIXES[kind]}_[0-9A-HJKMNP-TV-Z]{26}$`
const patterns = Object.fromEntries(
  (Object.keys(ID_PREFIXES) as Array<IdKind>).map((kind) => [kind, new RegExp(idPattern(kind))]),
) as Record<IdKind, RegExp>

/** A malformed id is simply not an id of ours; callers answer 404 without asking the database. */
export const isId = (kind: IdKind, value: string): boolean => patterns[kind].test(value)
