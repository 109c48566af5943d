import { Data, type Effect } from "effect"
import ipaddr from "ipaddr.js"

/**
 * The outcome of one request against one bucket.
 *
 * - `remaining`: requests still allowed in the window after this one (0 when rejected).
 * - `resetSeconds`: the IETF RateLimit `t` parameter. With a sliding log the quota never resets all at once; we report
 *   the seconds until the oldest counted request leaves the window, i.e. until at least one more request is allowed
 *   again (ceil, never negative; 0 when nothing is counted, which only happens on fail-open).
 * - `retryAfterSeconds`: 0 when allowed; when rejected, ceil of the wait until a slot frees, at least 1. A client that
 *   waits that long and retries is allowed (unless someone else took the slot first on a shared bucket).
 */
export interface RateDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  readonly resetSeconds: number
  readonly retryAfterSeconds: number
  /** Which counted entry this request is in the store (allowed decisions), so `release` can take it back. */
  readonly ticket?: string
}

/** A counting back end. `nowMs` is supplied by the caller (the RateLimiter reads it from Effect `Clock`). */
export interface RateLimitStore {
  readonly hit: (bucket: string, nowMs: number) => Effect.Effect<RateDecision, RateLimitStoreError>
  /**
   * Takes back a counted request (a refused request counts nowhere: one that ends up rejected with 429 by a later
   * check, e.g. the per-key limit after the per-IP one, does not count). A no-op for rejected decisions.
   */
  readonly release: (bucket: string, counted: RateDecision) => Effect.Effect<void, RateLimitStoreError>
}

/** The store could not decide (Redis down, timed out, bad reply). Its message never carries secrets. */
export class RateLimitStoreError extends Data.TaggedError("RateLimitStoreError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Defaults: 120 requests in any rolling 60 s window. */
export const DEFAULT_LIMIT = 120
export const DEFAULT_WINDOW_MS = 60_000

export interface WindowSettings {
  readonly limit: number
  readonly windowMs: number
}

/** Validates limit/window (programming or configuration errors, so they throw). */
export const windowSettings = (options: { readonly limit?: number; readonly windowMs?: number }): WindowSettings => {
  const limit = options.limit ?? DEFAULT_LIMIT
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`rate limit must be an integer >= 1: ${limit}`)
  if (!Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new RangeError(`rate limit window must be an integer number of milliseconds >= 1: ${windowMs}`)
  }
  return { limit, windowMs }
}

/** Window length for the `w` parameter: whole seconds (ceil, at least 1). */
export const windowSeconds = (windowMs: number): number => Math.max(1, Math.ceil(windowMs / 1000))

/**
 * Builds the decision from the counted state after the request. `counted` includes this request when it was allowed;
 * `oldestMs` is the timestamp of the oldest counted request (undefined when nothing is counted).
 *
 * A counted request with timestamp `t` stays in the window while `now - t < windowMs`, so it leaves at
 * `t + windowMs`; waiting `ceil((oldest + windowMs - now) / 1000)` seconds therefore always frees a slot.
 */
export const decision = (
  settings: WindowSettings,
  allowed: boolean,
  counted: number,
  oldestMs: number | undefined,
  nowMs: number,
): RateDecision => {
  const waitMs = oldestMs === undefined ? 0 : oldestMs + settings.windowMs - nowMs
  const resetSeconds = Math.max(0, Math.ceil(waitMs / 1000))
  return {
    allowed,
    limit: settings.limit,
    remaining: allowed ? Math.max(0, settings.limit - counted) : 0,
    resetSeconds,
    retryAfterSeconds: allowed ? 0 : Math.max(1, resetSeconds),
  }
}

/** The decision used when the store fails (fail-open): allowed, full quota, nothing to wait for. */
export const failOpenDecision = (limit: number): RateDecision => ({
  allowed: true,
  limit,
  remaining: limit,
  resetSeconds: 0,
  retryAfterSeconds: 0,
})

/** `"default";q=<limit>;w=<window seconds>` (by default `"default";q=120;w=60`). */
export const policyHeaderValue = (limit: number, windowSecs: number): string => `"default";q=${limit};w=${windowSecs}`

/**
 * The part of a client address one per-IP bucket counts. An IPv6 client usually holds a whole /64 (SLAAC, privacy
 * addresses) and can rotate through it at will, so IPv6 addresses count per /64 (`2001:db8:1:2::/64`); IPv4 per
 * address. Text that is not an IP address stays as it is. Both stores (memory, Redis) count by this name.
 */
export const addressBucketKey = (address: string): string => {
  if (!address.includes(":") || !ipaddr.IPv6.isValid(address)) return address
  const v6 = ipaddr.IPv6.parse(address)
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString()
  const prefix = ipaddr.IPv6.networkAddressFromCIDR(`${v6.toString()}/64`)
  return `${prefix.toString()}/64`
}
