/**
 * What the baseline (bench/baseline.ts) and the conventional peer (bench/peer/fastify.ts) share of the read
 * endpoints: the service's response headers and its `limit` rule. No Bun API here: the peer runs on Node.js.
 */

/** The headers the service sends with a JSON answer. */
export const READ_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
}

/** `limit`: 50 when absent, otherwise an integer 1–100; undefined for anything else. */
export const parseLimit = (raw: string | null | undefined): number | undefined => {
  if (raw === null || raw === undefined) return 50
  const n = Number(raw)
  return /^\d+$/.test(raw) && n >= 1 && n <= 100 ? n : undefined
}
