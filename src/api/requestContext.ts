import type { RateDecision } from "../platform/ratelimit/RateLimiter.ts"

/**
 * What the edge learns about a request from the layers inside it (the caller's organization and key), keyed by
 * the underlying request object, so the access log and the rate-limit headers can use them.
 */
export interface RequestFacts {
  orgId?: string
  keyId?: string
  /** When the request arrived (Clock ms): it is counted at this time in both rate limits. */
  arrivedMs?: number
  /** The per-key rate limit decision (taken after the scope check). */
  keyLimit?: RateDecision
}

const facts = new WeakMap<object, RequestFacts>()

export const requestFacts = (request: { readonly source: unknown }): RequestFacts => {
  const source = request.source as object
  let entry = facts.get(source)
  if (!entry) {
    entry = {}
    facts.set(source, entry)
  }
  return entry
}
