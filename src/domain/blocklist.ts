import { createHash } from "node:crypto"

/**
 * The firewall blocklist's rules: the window a caller may ask for, how long the list may grow, and its validators
 * (ETag, If-None-Match), so a firewall that polls every minute gets a 304 without a body while nothing changed.
 */

export const BLOCKLIST_DAYS_DEFAULT = 30
export const BLOCKLIST_DAYS_MAX = 365
/** Firewalls cap their external lists (tens of thousands to a few hundred thousand entries); so does the service. */
export const BLOCKLIST_MAX_LINES = 100_000

/** `?days=`: a whole number 1–365 written plainly (no sign, no exponent), the default when absent. */
export const parseBlocklistDays = (text: string | undefined): number | undefined => {
  if (text === undefined) return BLOCKLIST_DAYS_DEFAULT
  if (!/^[0-9]{1,3}$/.test(text)) return undefined
  const days = Number(text)
  return days >= 1 && days <= BLOCKLIST_DAYS_MAX ? days : undefined
}

/** The list's body: one address a line, each line ended by a newline; empty when there is nothing to block. */
export const blocklistBody = (addresses: ReadonlyArray<string>): string =>
  addresses.length === 0 ? "" : `${addresses.join("\n")}\n`

/** A strong ETag from the body's bytes: the same list always gets the same tag, on every replica. */
export const blocklistEtag = (body: string): string =>
  `"${createHash("sha256").update(body, "utf8").digest("base64url").slice(0, 32)}"`

/**
 * Whether an If-None-Match header matches `etag` (RFC 9110 §13.1.2: weak comparison, a list of tags or `*`). A header
 * longer than any honest one is no match.
 */
export const ifNoneMatchHits = (header: string | undefined, etag: string): boolean => {
  if (header === undefined || header.length > 4096) return false
  const wanted = header.trim()
  if (wanted === "*") return true
  const opaque = (tag: string) => (tag.startsWith("W/") ? tag.slice(2) : tag)
  return wanted
    .split(",")
    .map((tag) => opaque(tag.trim()))
    .includes(opaque(etag))
}
