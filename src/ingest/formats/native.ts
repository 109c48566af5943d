/**
 * The native event input, i.e. one item of a `POST /ingest/v1/events` body before validation, and the pieces the
 * honeypot-format mappers (`opencanary.ts`, `cowrie.ts`) share to produce it. Pure functions, no I/O (HMAC and HKDF
 * with `node:crypto` are computation only; every key is an argument).
 *
 * The mappers do not sanitize attacker text (a later stage masks and cleans it); they only make sure that nothing but
 * strings, finite numbers and booleans ends up in `attackerInput` (and, under `username` and password-like names, any
 * JSON value but null).
 */
import { createHmac, hkdfSync } from "node:crypto"
import { isPasswordLikeKey } from "../../domain/attackerInput.ts"
import type { EventTypeSpec } from "../../domain/eventTypes.ts"
import { canonicalIp } from "../../domain/ip.ts"
import { cleanExcerpt } from "../../domain/sanitize.ts"

export interface NativeEventInput {
  /** Sensor-unique id of the event; a resend with the same id is a duplicate. */
  readonly sensorEventId: string
  /** RFC 3339. */
  readonly time: string
  readonly sourceIp: string
  readonly sourcePort: number
  readonly service: string
  readonly port: number
  readonly type: string
  readonly action: string
  readonly severity?: string
  readonly confidence?: string
  readonly tags: ReadonlyArray<string>
  readonly attackerInput: Record<string, unknown>
}

/** What the protocol and ports of a Cowrie session are, as its connect line (or any line naming all three) tells. */
export interface CowrieSession {
  readonly protocol: "ssh" | "telnet"
  readonly sourcePort: number
  readonly port: number
}

/**
 * How a mapped Cowrie line belongs to its session. The Ingestor uses it inside the ingest transaction: a line
 * that did not name its protocol or ports takes them from the session (when known, now or later), and every event of
 * the session carries the session's merged client details.
 */
export interface CowrieLink {
  readonly session: string
  /** The action part of the event type (`login_attempt`, ...): with the session's protocol it names the type. */
  readonly action: string
  /** Whether the line itself named the protocol, the source port and the decoy port (then they are final). */
  readonly ownProtocol: boolean
  readonly ownSourcePort: boolean
  readonly ownPort: boolean
  /** What this line teaches about its session (a connect line, or a line naming protocol and both ports). */
  readonly teaches?: CowrieSession | undefined
}

/** A line that only describes the attacker's client: its details join the session's events. */
export interface CowrieMerge {
  readonly session: string
  readonly sourceIp: string
  /** RFC 3339; the earliest line wins when two lines give the same member. */
  readonly time: string
  /** The line's keyed id (ties between equal times). */
  readonly lineId: string
  /** attackerInput members (not yet cleaned or masked: the Ingestor prepares them like any attackerInput). */
  readonly details: Record<string, unknown>
}

export type MapResult =
  | { readonly _tag: "Mapped"; readonly event: NativeEventInput; readonly cowrie?: CowrieLink | undefined }
  | { readonly _tag: "Rejected"; readonly reason: string }
  /** A well-formed line that records no attacker action; nothing is stored. */
  | { readonly _tag: "Ignored"; readonly reason: string }
  /** A line that describes the attacker's client; its details become members of the session's events. */
  | { readonly _tag: "Merged"; readonly reason: string; readonly merge: CowrieMerge }

export const mapped = (event: NativeEventInput): MapResult => ({ _tag: "Mapped", event })
export const rejected = (reason: string): MapResult => ({ _tag: "Rejected", reason })
export const ignored = (reason: string): MapResult => ({ _tag: "Ignored", reason })

/**
 * Short description of a value for a rejection reason; strings are cleaned (the reason is answered to the
 * sensor and may reach a terminal), cut to 64 code points and quoted, never echoed at length.
 */
export const describe = (v: unknown): string => {
  if (v === null) return "null"
  if (Array.isArray(v)) return "an array"
  switch (typeof v) {
    case "string":
      return JSON.stringify(cleanExcerpt(v))
    case "number":
    case "boolean":
      return String(v)
    case "undefined":
      return "missing"
    case "object":
      return "an object"
    default:
      return `a ${typeof v}`
  }
}

/** Nesting deeper than this makes `canonicalJson` throw (honeypot log lines are two or three levels deep). */
const MAX_CANONICAL_DEPTH = 32

const canonical = (v: unknown, depth: number): string | undefined => {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v)
    case "number":
      return Number.isFinite(v) ? JSON.stringify(v) : "null"
    case "boolean":
      return v ? "true" : "false"
    case "bigint":
      throw new Error("a bigint has no JSON form")
    case "object": {
      if (v === null) return "null"
      if (depth >= MAX_CANONICAL_DEPTH) throw new Error("nested too deeply")
      if (Array.isArray(v)) return `[${v.map((item) => canonical(item, depth + 1) ?? "null").join(",")}]`
      const record = v as Record<string, unknown>
      const parts: Array<string> = []
      for (const key of Object.keys(record).sort()) {
        const value = canonical(record[key], depth + 1)
        if (value !== undefined) parts.push(`${JSON.stringify(key)}:${value}`)
      }
      return `{${parts.join(",")}}`
    }
    default:
      return undefined // undefined, functions and symbols are left out, as JSON.stringify does
  }
}

/**
 * Canonical JSON: JSON.stringify semantics, but object keys sorted (by UTF-16 code units) at every level and no
 * whitespace, so two equal log lines give the same text whatever their key order. Throws on bigints and on nesting
 * deeper than 32 levels (which also catches cycles).
 */
export const canonicalJson = (v: unknown): string => canonical(v, 0) ?? "null"

/**
 * The key of honeypot line ids, derived from the organization's fingerprint key with HKDF-SHA256 under
 * its own salt and info. Not `deriveKey` (an HMAC under the fingerprint key itself): a fingerprint is that very HMAC
 * of an attacker-chosen text, so a password equal to the derivation label would store half of the key. Stable across
 * SECRET_KEY rotations (a reseal keeps the fingerprint key's bytes), so a line resent later is still a duplicate.
 */
export const lineIdKey = (orgFingerprintKey: Uint8Array): Uint8Array =>
  new Uint8Array(hkdfSync("sha256", orgFingerprintKey, "decoy-service honeypot line id", "v1", 32))

/**
 * The `sensorEventId` of a honeypot log line: `prefix` + HMAC-SHA256(lineIdKey, canonical JSON of the line), hex.
 * Deterministic per (organization, line), so a resent line is a duplicate; keyed, so the stored id is no offline
 * oracle for a captured password in the line: without the key nobody can test a guess against it, and two
 * organizations' ids of the same line differ.
 */
export const lineId = (prefix: string, key: Uint8Array, line: unknown): string =>
  `${prefix}${createHmac("sha256", key).update(canonicalJson(line), "utf8").digest("hex")}`

const TIME_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(?:(Z)|([+-])(\d{2}):?(\d{2}))?$/i

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate()

/**
 * Parses a honeypot timestamp into RFC 3339 UTC with milliseconds (`2026-11-21T15:57:42.053Z`), or undefined.
 * Accepts `YYYY-MM-DD HH:MM:SS[.ffffff]` (OpenCanary's `utc_time`, UTC without a zone) and ISO 8601 / RFC 3339 forms
 * with `T` or a space, an optional fraction of up to 9 digits, and `Z`, `±HH:MM`, `±HHMM` or no zone (read as UTC).
 * Calendar-invalid values (month 13, 31 April, hour 24, ...) and years before 1970 are refused. The fraction is cut
 * to milliseconds.
 */
export const parseLogTime = (v: unknown): string | undefined => {
  if (typeof v !== "string" || v.length > 40) return undefined
  const m = TIME_PATTERN.exec(v.trim())
  if (m === null) return undefined
  const [, ys, mos, ds, hs, mis, ss, frac, , sign, ohs, omis] = m
  const year = Number(ys)
  const month = Number(mos)
  const day = Number(ds)
  const hour = Number(hs)
  const minute = Number(mis)
  const second = Number(ss)
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  if (hour > 23 || minute > 59 || second > 59) return undefined
  const millis = frac === undefined ? 0 : Number(frac.slice(0, 3).padEnd(3, "0"))
  let offsetMinutes = 0
  if (sign !== undefined) {
    const oh = Number(ohs)
    const om = Number(omis)
    if (oh > 23 || om > 59) return undefined
    offsetMinutes = (sign === "-" ? -1 : 1) * (oh * 60 + om)
  }
  const ms = Date.UTC(year, month - 1, day, hour, minute, second, millis) - offsetMinutes * 60_000
  const date = new Date(ms)
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString()
}

/**
 * A source address as text, in the one form the domain writes (canonicalIp: IPv6 in RFC 5952 form, an IPv4 address
 * written inside IPv6, `::ffff:203.0.113.7` as a dual-stack listener reports it or `::cb00:7107`, as IPv4). The
 * mappers and validation read an address the same way, so a merged Cowrie line and its session's events lock the
 * same grouping key. Undefined for anything else (host names, zone ids, empty strings, non-strings).
 */
export const normalizeIp = (v: unknown): string | undefined => (typeof v === "string" ? canonicalIp(v) : undefined)

/**
 * A TCP/UDP port from a log field: an integer 0–65535 or a string of digits. `"unknown"` for a missing or null field
 * and for -1 (OpenCanary's "no port"); `"invalid"` for anything else.
 */
export const parsePort = (v: unknown): number | "unknown" | "invalid" => {
  if (v === undefined || v === null || v === -1 || v === "-1" || v === "") return "unknown"
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{1,5}$/.test(v) ? Number(v) : Number.NaN
  return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : "invalid"
}

/** Keys that are never copied into attackerInput. */
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/** attackerInput keeps at most this many members per event. */
export const MAX_ATTACKER_INPUT_KEYS = 64

/** Username and password-like members keep a non-scalar value too (it becomes its JSON text at ingest). */
export const isCredentialKey = (key: string): boolean => key === "username" || isPasswordLikeKey(key)

/** A value that may be copied into attackerInput: a string, a finite number or a boolean. */
export const isScalar = (v: unknown): v is string | number | boolean =>
  typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))

/**
 * Lower camel case of a log field name: `USERAGENT` → `useragent`, `VNC Server Challenge` → `vncServerChallenge`,
 * `UserName` → `userName`, `smb_ver` → `smbVer`. Words are split on anything but ASCII letters and digits; an
 * all-capital word is lowercased. Undefined when nothing usable is left or the key is longer than 64 characters.
 */
export const camelCaseKey = (key: string): string | undefined => {
  if (key.length === 0 || key.length > 64) return undefined
  const words = key.split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0)
  if (words.length === 0) return undefined
  const out = words
    .map((word, index) => {
      const w = word === word.toUpperCase() ? word.toLowerCase() : word
      return index === 0 ? w.charAt(0).toLowerCase() + w.slice(1) : w.charAt(0).toUpperCase() + w.slice(1)
    })
    .join("")
  return FORBIDDEN_KEYS.has(out) ? undefined : out
}

/**
 * Adds `key: value` when the value is a scalar, the key is not taken yet and the object is not full. Under `username`
 * and a password-like name any JSON value but null is kept: ingestion makes it its JSON text, masked when it is a
 * secret, rather than letting a captured password that is an object go unseen.
 */
export const putScalar = (out: Record<string, unknown>, key: string, value: unknown): void => {
  const kept = isScalar(value) || (isCredentialKey(key) && value !== null && typeof value === "object")
  if (!kept || FORBIDDEN_KEYS.has(key) || Object.hasOwn(out, key)) return
  if (Object.keys(out).length >= MAX_ATTACKER_INPUT_KEYS) return
  out[key] = value
}

/**
 * Well-known default or factory credentials (vendor defaults, Mirai's list, empty passwords of database
 * superusers). Usernames are compared case-insensitively, passwords exactly; "" stands for an empty password.
 */
const DEFAULT_CREDENTIALS: ReadonlyMap<string, ReadonlySet<string>> = new Map<string, ReadonlySet<string>>([
  ["admin", new Set(["admin", "password", "1234", "12345", "123456", "admin123", "default", ""])],
  ["administrator", new Set(["administrator", "password", "admin", ""])],
  ["root", new Set(["root", "toor", "admin", "password", "default", "vizxv", "xc3511", "xmhdipc", "888888", ""])],
  ["pi", new Set(["raspberry"])],
  ["sa", new Set(["", "sa", "password"])],
  ["ubnt", new Set(["ubnt"])],
  ["guest", new Set(["guest", ""])],
  ["user", new Set(["user", "password"])],
  ["support", new Set(["support"])],
  ["oracle", new Set(["oracle"])],
  ["postgres", new Set(["postgres"])],
  ["cisco", new Set(["cisco"])],
  ["test", new Set(["test"])],
  ["vagrant", new Set(["vagrant"])],
  ["ftp", new Set(["ftp"])],
])

/** Whether this username/password pair is a well-known default (the `default-credentials` tag). */
export const isDefaultCredential = (username: string | undefined, password: string | undefined): boolean => {
  if (username === undefined || password === undefined) return false
  return DEFAULT_CREDENTIALS.get(username.toLowerCase())?.has(password) ?? false
}

/** Tags in first-seen order, each once. */
export const uniqueTags = (tags: Iterable<string>): ReadonlyArray<string> => [...new Set(tags)]

/**
 * The native event of a honeypot log line (OpenCanary, Cowrie): service, action and type from the mapped event
 * type; an unknown source port is 0 and an unknown or zero destination port is the type's default port.
 */
export const mappedLogEvent = (line: {
  readonly sensorEventId: string
  readonly time: string
  readonly sourceIp: string
  readonly sourcePort: number | "unknown"
  readonly dstPort: number | "unknown"
  readonly spec: EventTypeSpec
  readonly tags: Iterable<string>
  readonly attackerInput: Record<string, unknown>
}): MapResult =>
  mapped({
    sensorEventId: line.sensorEventId,
    time: line.time,
    sourceIp: line.sourceIp,
    sourcePort: line.sourcePort === "unknown" ? 0 : line.sourcePort,
    service: line.spec.service,
    port: line.dstPort === "unknown" || line.dstPort === 0 ? line.spec.port : line.dstPort,
    type: line.spec.type,
    action: line.spec.action,
    tags: uniqueTags(line.tags),
    attackerInput: line.attackerInput,
  })

/** A honeypot line mapper that never throws: anything unusable (say, nested too deeply) is Rejected with a reason. */
export const neverThrowing =
  <Args extends ReadonlyArray<unknown>>(format: string, mapLine: (line: unknown, ...args: Args) => MapResult) =>
  (line: unknown, ...args: Args): MapResult => {
    try {
      return mapLine(line, ...args)
    } catch {
      return rejected(`the ${format} log line could not be read (nested too deeply or not JSON data)`)
    }
  }
