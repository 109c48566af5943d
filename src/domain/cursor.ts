import { sha256 } from "./crypto.ts"
import { openToken, sealToken } from "./signedToken.ts"

/**
 * Opaque, signed keyset cursors (no OFFSET: a deep page costs what the first costs). The body holds the position (time
 * in ms and id) and a digest of what the cursor is valid for (endpoint, organization, filters); an HMAC under a key
 * derived from SECRET_KEY covers it. A cursor that is malformed, tampered with, or issued for other filters, another
 * endpoint or another organization is refused (400 invalid_request), so replaying one can never widen what a caller
 * sees.
 */
export interface CursorScope {
  readonly endpoint: "incidents" | "events" | "audit"
  readonly orgId: string
  readonly filters: Readonly<Record<string, string | undefined>>
}

export interface CursorPosition {
  readonly time: Date
  readonly id: string
}

export type CursorProblem = "malformed" | "mismatch"

const scopeDigest = (scope: CursorScope): string => {
  const filters = Object.keys(scope.filters)
    .sort()
    .filter((k) => scope.filters[k] !== undefined)
    .map((k) => [k, scope.filters[k]])
  return sha256(JSON.stringify([scope.endpoint, scope.orgId, filters]))
    .subarray(0, 9)
    .toString("base64url")
}

export const encodeCursor = (key: Uint8Array, scope: CursorScope, position: CursorPosition): string =>
  sealToken(key, [1, position.time.getTime(), position.id, scopeDigest(scope)])

export const decodeCursor = (
  key: Uint8Array,
  scope: CursorScope,
  cursor: string,
):
  | { readonly ok: true; readonly position: CursorPosition }
  | { readonly ok: false; readonly problem: CursorProblem } => {
  const malformed = { ok: false, problem: "malformed" } as const
  const parsed = openToken(key, cursor)
  if (parsed === undefined || parsed.length !== 4 || parsed[0] !== 1) return malformed
  const [, time, id, digest] = parsed as [number, unknown, unknown, unknown]
  if (typeof time !== "number" || !Number.isSafeInteger(time) || typeof id !== "string" || typeof digest !== "string") {
    return malformed
  }
  if (digest !== scopeDigest(scope)) return { ok: false, problem: "mismatch" }
  return { ok: true, position: { time: new Date(time), id } }
}
