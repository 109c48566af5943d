/**
 * An incident's indicators: the distinct things its attacker typed, fetched, dropped or presented (commands, URLs,
 * file names, hashes, usernames, masked password fingerprints, client fingerprints), each counted, so an analyst sees
 * at a glance what was done and can look for the same value in every other incident.
 *
 * Pure. The same rules run in two places: `countIndicators` over events in memory (tests, and the first page of
 * events when nothing else is at hand), and `IncidentIndicatorsRepo` in SQL over every member event of an incident,
 * which reads INDICATOR_SOURCES and URL_IN_TEXT_SQL from here and hands its counted rows to `indicatorsFromCounts`,
 * so both give the same answer. A password is never an indicator: only the fingerprint and length the service
 * stores in its place.
 */
import { isMaskedSecretShape } from "./attackerInput.ts"
import { isRecord } from "./json.ts"

export const INDICATOR_KINDS = ["commands", "urls", "files", "hashes", "usernames", "passwords", "clients"] as const
export type IndicatorKind = (typeof INDICATOR_KINDS)[number]

/** The heading of each kind, as the incident page shows it. */
export const INDICATOR_TITLES: Readonly<Record<IndicatorKind, string>> = {
  commands: "Commands run",
  urls: "URLs fetched",
  files: "Files uploaded or opened",
  hashes: "File hashes",
  usernames: "Usernames tried",
  passwords: "Passwords tried (masked)",
  clients: "Client fingerprints",
}

/** At most this many values of each kind are kept (the most frequent); the rest are counted. */
export const INDICATORS_SHOWN = 20

/**
 * Where a kind's values come from: a top-level member of an event's attacker input (a string), with the label it is
 * shown with (a hash's algorithm, which client detail), for events of `action` only when given; `urls` takes the URLs
 * written inside the member's text (a `wget http://…` command) instead of the whole value. `passwords` reads a masked
 * secret as the service stores it: its fingerprint, and its length as the label.
 */
export interface IndicatorSource {
  readonly kind: IndicatorKind
  readonly member: string
  readonly label: string
  readonly action: string | null
  readonly urls: boolean
}

const source = (kind: IndicatorKind, member: string, label = "", more: Partial<IndicatorSource> = {}) => ({
  kind,
  member,
  label,
  action: null,
  urls: false,
  ...more,
})

export const INDICATOR_SOURCES: ReadonlyArray<IndicatorSource> = [
  // Cowrie's typed commands, and the command an exploit ran; OpenCanary's Redis and MongoDB commands.
  source("commands", "command"),
  source("commands", "attemptedCommand"),
  // Cowrie's downloads (and failed ones); the URLs inside commands (wget, curl, tftp).
  source("urls", "url"),
  source("urls", "command", "", { urls: true }),
  // Cowrie's uploads (the attacker's name and where it was written); OpenCanary's SMB file names.
  source("files", "fileName"),
  source("files", "path", "", { action: "file_upload" }),
  // Cowrie writes SHA-256 as `shasum`.
  source("hashes", "shasum", "SHA-256"),
  source("hashes", "sha256", "SHA-256"),
  source("hashes", "sha1", "SHA-1"),
  source("hashes", "md5", "MD5"),
  source("usernames", "username"),
  source("usernames", "originalUsername"),
  source("passwords", "password"),
  // Cowrie's session details (on every event of the session) and OpenCanary's SSH version and HTTP user agent.
  source("clients", "clientVersion", "SSH client version"),
  source("clients", "remoteVersion", "SSH client version"),
  source("clients", "hassh", "HASSH"),
  source("clients", "clientKeyFingerprint", "Client key"),
  source("clients", "ja4", "JA4"),
  source("clients", "ja4h", "JA4H"),
  source("clients", "userAgent", "User agent"),
]

/**
 * A URL inside text: a scheme a downloader takes, then everything up to white space, a quote, a shell operator or a
 * bracket. URL_IN_TEXT_SQL is the same pattern for PostgreSQL's regular expressions (case-insensitive there through
 * the `i` flag).
 */
export const URL_IN_TEXT = /(?:https?|ftp|tftp):\/\/[^\s"'<>|;&\x60()]+/gi
export const URL_IN_TEXT_SQL = "(?:https?|ftp|tftp)://[^[:space:]\"'<>|;&\u0060()]+"

/** One value of a kind: how many times it appeared, and its label (a hash's algorithm, which client detail). */
export interface Indicator {
  readonly value: string
  readonly label: string
  readonly count: number
  /** A masked password's length in characters (its value is the fingerprint). */
  readonly length?: number | undefined
}

/** A kind's most frequent values (at most INDICATORS_SHOWN), and how many distinct values it has in all. */
export interface IndicatorGroup {
  readonly kind: IndicatorKind
  readonly shown: ReadonlyArray<Indicator>
  readonly distinct: number
}

/** What the incident page shows: every kind that has a value, in INDICATOR_KINDS order, over `events` events. */
export interface IncidentIndicators {
  readonly groups: ReadonlyArray<IndicatorGroup>
  /** How many events the values were read from. */
  readonly events: number
}

/** A counted value as the repository reads it: its kind, label, value, count and its kind's distinct values. */
export interface CountedIndicator {
  readonly kind: string
  readonly label: string
  readonly value: string
  readonly count: number
  readonly distinct: number
}

/** Code point order (what PostgreSQL's "C" collation gives for UTF-8), so both places rank ties alike. */
export const compareCodePoints = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) as number
    const y = b.codePointAt(i) as number
    if (x !== y) return x < y ? -1 : 1
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

/** The order values are ranked in: most frequent first, then by value, then by label. */
const ranked = (a: Indicator, b: Indicator) =>
  b.count - a.count || compareCodePoints(a.value, b.value) || compareCodePoints(a.label, b.label)

const isKind = (k: string): k is IndicatorKind => (INDICATOR_KINDS as ReadonlyArray<string>).includes(k)

/**
 * Counted rows (at most `shown` per kind, most frequent first, each carrying its kind's distinct count) as the page's
 * groups. A row of an unknown kind is left out; a password row's label is its length.
 */
export const indicatorsFromCounts = (
  rows: ReadonlyArray<CountedIndicator>,
  events: number,
  shown: number = INDICATORS_SHOWN,
): IncidentIndicators => {
  const byKind = new Map<IndicatorKind, { shown: Array<Indicator>; distinct: number }>()
  for (const row of rows) {
    if (!isKind(row.kind)) continue
    const group = byKind.get(row.kind) ?? { shown: [], distinct: 0 }
    byKind.set(row.kind, group)
    group.distinct = Math.max(group.distinct, row.distinct)
    group.shown.push(
      row.kind === "passwords"
        ? { value: row.value, label: "", count: row.count, length: Number(row.label) }
        : { value: row.value, label: row.label, count: row.count },
    )
  }
  const groups: Array<IndicatorGroup> = []
  for (const kind of INDICATOR_KINDS) {
    const group = byKind.get(kind)
    if (group === undefined) continue
    const list = group.shown.sort(ranked).slice(0, shown)
    groups.push({ kind, shown: list, distinct: Math.max(group.distinct, group.shown.length) })
  }
  return { groups, events }
}

/** The values one member gives a source (none, one, or every URL in its text). */
const valuesOf = (s: IndicatorSource, value: unknown): ReadonlyArray<readonly [label: string, value: string]> => {
  if (s.kind === "passwords") {
    return isMaskedSecretShape(value) && value.fingerprint !== "" ? [[String(value.length), value.fingerprint]] : []
  }
  if (typeof value !== "string" || value === "") return []
  if (s.urls) return [...value.matchAll(URL_IN_TEXT)].map((m) => [s.label, m[0]] as const)
  return [[s.label, value]]
}

/**
 * The indicators of these events, counted in memory by the rules the repository runs in SQL: each value of each
 * source counted once per occurrence, at most `shown` per kind, most frequent first.
 */
export const countIndicators = (
  events: ReadonlyArray<{ readonly action: string; readonly attackerInput: unknown }>,
  shown: number = INDICATORS_SHOWN,
): IncidentIndicators => {
  const counts = new Map<string, { kind: IndicatorKind; label: string; value: string; count: number }>()
  for (const e of events) {
    if (!isRecord(e.attackerInput)) continue
    const input = e.attackerInput
    for (const s of INDICATOR_SOURCES) {
      if (s.action !== null && s.action !== e.action) continue
      if (!Object.hasOwn(input, s.member)) continue
      for (const [label, value] of valuesOf(s, input[s.member])) {
        const key = JSON.stringify([s.kind, label, value])
        const seen = counts.get(key)
        if (seen === undefined) counts.set(key, { kind: s.kind, label, value, count: 1 })
        else seen.count++
      }
    }
  }
  const distinct = new Map<IndicatorKind, number>()
  for (const c of counts.values()) distinct.set(c.kind, (distinct.get(c.kind) ?? 0) + 1)
  const rows = [...counts.values()].map((c) => ({ ...c, distinct: distinct.get(c.kind) ?? 0 }))
  return indicatorsFromCounts(rows, events.length, shown)
}

/** The longest search a value's link asks for: a value's start still finds it (the search is a substring match). */
export const INDICATOR_SEARCH_MAX = 200

/**
 * The console's search for every incident where a value appeared, URL-encoded: the value's first line (the console
 * takes no control character in a search, and a search never spans two lines), at most INDICATOR_SEARCH_MAX code
 * points of it.
 */
export const indicatorSearchHref = (value: string): string => {
  const line = value.split(/\p{Cc}/u).find((part) => part.trim() !== "") ?? ""
  const points = Array.from(line)
  const q = points.length > INDICATOR_SEARCH_MAX ? points.slice(0, INDICATOR_SEARCH_MAX).join("") : line
  return `/incidents?q=${encodeURIComponent(q)}`
}
