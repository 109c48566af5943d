import { randomBytes } from "node:crypto"
import { Schema } from "effect"

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
  consoleSession: "ses",
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

/** An id of this kind as a regular expression source (the type prefix and a ULID body); also the OpenAPI pattern. */
export const idPattern = (kind: IdKind): string => `^${ID_PREFIXES[kind]}_[0-9A-HJKMNP-TV-Z]{26}$`
const patterns = Object.fromEntries(
  (Object.keys(ID_PREFIXES) as Array<IdKind>).map((kind) => [kind, new RegExp(idPattern(kind))]),
) as Record<IdKind, RegExp>

/**
 * Branded ids of the records that are passed from one module to another, so that a sensor id handed over where an
 * organization id is wanted is a type error. The schema decodes text (a path parameter, a form field, an argument)
 * and fails unless it has the kind's prefix and a ULID body; `isId` narrows without decoding.
 */
const brandedId = <const B extends string>(kind: IdKind, brand: B) =>
  Schema.String.pipe(Schema.pattern(patterns[kind]), Schema.brand(brand))

export const OrgId = brandedId("organization", "OrgId")
export type OrgId = typeof OrgId.Type
export const SensorId = brandedId("sensor", "SensorId")
export type SensorId = typeof SensorId.Type
export const IncidentId = brandedId("incident", "IncidentId")
export type IncidentId = typeof IncidentId.Type
export const EventId = brandedId("event", "EventId")
export type EventId = typeof EventId.Type
export const ApiKeyId = brandedId("apiKey", "ApiKeyId")
export type ApiKeyId = typeof ApiKeyId.Type
export const ChannelId = brandedId("webhookChannel", "ChannelId")
export type ChannelId = typeof ChannelId.Type
export const UserId = brandedId("consoleUser", "UserId")
export type UserId = typeof UserId.Type

/**
 * The same brands for ids read back from the database, without the format check: the column's primary or foreign
 * key guarantees the kind, and rows are decoded on hot paths.
 */
export const StoredId = {
  OrgId: Schema.String.pipe(Schema.brand("OrgId")),
  SensorId: Schema.String.pipe(Schema.brand("SensorId")),
  IncidentId: Schema.String.pipe(Schema.brand("IncidentId")),
  EventId: Schema.String.pipe(Schema.brand("EventId")),
  ApiKeyId: Schema.String.pipe(Schema.brand("ApiKeyId")),
  ChannelId: Schema.String.pipe(Schema.brand("ChannelId")),
  UserId: Schema.String.pipe(Schema.brand("UserId")),
} as const

/** The branded type of each kind that has one; the other kinds' ids stay plain strings. */
interface BrandedIds {
  readonly organization: OrgId
  readonly sensor: SensorId
  readonly incident: IncidentId
  readonly event: EventId
  readonly apiKey: ApiKeyId
  readonly webhookChannel: ChannelId
  readonly consoleUser: UserId
}
export type IdOf<K extends IdKind> = K extends keyof BrandedIds ? BrandedIds[K] : string

/**
 * The time part of an id (a ULID's first ten characters after the prefix), in milliseconds; undefined when the text
 * is not one. An event's id carries the event's own time, which names the month partition that holds it.
 */
export const idTimeMs = (id: string): number | undefined => {
  const at = id.indexOf("_")
  const time = id.slice(at + 1, at + 11)
  if (at < 0 || time.length !== 10) return undefined
  let ms = 0
  for (const c of time) {
    const digit = CROCKFORD.indexOf(c)
    if (digit < 0) return undefined
    ms = ms * 32 + digit
  }
  return ms <= 8_640_000_000_000_000 ? ms : undefined
}

export const newId = <K extends IdKind>(kind: K, timeMs?: number): IdOf<K> =>
  `${ID_PREFIXES[kind]}_${ulid(timeMs)}` as IdOf<K>

/** A malformed id is simply not an id of ours; callers answer 404 without asking the database. */
export const isId = <K extends IdKind>(kind: K, value: string): value is IdOf<K> => patterns[kind].test(value)
