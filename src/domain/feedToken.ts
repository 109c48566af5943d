import { sha256 } from "./crypto.ts"
import { openToken, sealToken } from "./signedToken.ts"

/**
 * The opaque `nextToken` of a change feed. It holds a feed position (the writer's transaction id and a
 * sequence number, see sql/0015_change_feeds.sql) and, until the follower has caught up once, the `from` time of
 * its first call; a digest of (endpoint, organization) binds it to one feed of one organization; an HMAC under a
 * key derived from SECRET_KEY covers it all, so it survives restarts and works on every replica. A token that is
 * malformed, tampered with, or issued for another endpoint or organization is refused (400).
 */
export type FeedEndpoint = "incidents/changes" | "events/changes" | "audit/changes"

export interface FeedPosition {
  /** xid8 as decimal text (64-bit). */
  readonly xid: string
  /** bigint as decimal text. */
  readonly seq: string
  /** A first call's `from` (ms), applied until the feed has been read to its end once. */
  readonly fromMs: number | null
}

/** Before every change: the position of a first call. */
export const FEED_START: FeedPosition = { xid: "0", seq: "0", fromMs: null }

const DECIMAL = /^(0|[1-9][0-9]{0,19})$/
const isAtMost =
  (max: bigint) =>
  (text: unknown): text is string =>
    typeof text === "string" && DECIMAL.test(text) && BigInt(text) <= max
/** xid8 is unsigned 64-bit, the sequence a signed bigint. */
const isXid = isAtMost(18446744073709551615n)
const isSeq = isAtMost(9223372036854775807n)

const scopeDigest = (endpoint: FeedEndpoint, orgId: string): string =>
  sha256(JSON.stringify(["feed", endpoint, orgId]))
    .subarray(0, 9)
    .toString("base64url")

export const encodeFeedToken = (key: Uint8Array, endpoint: FeedEndpoint, orgId: string, p: FeedPosition): string =>
  sealToken(key, [1, p.xid, p.seq, p.fromMs, scopeDigest(endpoint, orgId)])

export type FeedTokenProblem = "malformed" | "mismatch"

export const decodeFeedToken = (
  key: Uint8Array,
  endpoint: FeedEndpoint,
  orgId: string,
  token: string,
):
  | { readonly ok: true; readonly position: FeedPosition }
  | { readonly ok: false; readonly problem: FeedTokenProblem } => {
  const malformed = { ok: false, problem: "malformed" } as const
  const parsed = openToken(key, token)
  if (parsed === undefined || parsed.length !== 5 || parsed[0] !== 1) return malformed
  const [, xid, seq, fromMs, digest] = parsed as [number, unknown, unknown, unknown, unknown]
  if (!isXid(xid) || !isSeq(seq) || typeof digest !== "string") return malformed
  if (fromMs !== null && (typeof fromMs !== "number" || !Number.isSafeInteger(fromMs))) return malformed
  if (digest !== scopeDigest(endpoint, orgId)) return { ok: false, problem: "mismatch" }
  return { ok: true, position: { xid, seq, fromMs } }
}
