import { Effect } from "effect"
import { decision, type RateDecision, type RateLimitStore, type WindowSettings, windowSettings } from "./core.ts"

/**
 * In-process exact sliding log (so a burst at a minute boundary cannot double the rate) for a single replica.
 *
 * Each bucket keeps the timestamps of its counted requests: a single timestamp is held inline as the Map value (no
 * object: a client seen once costs its Map entry and key string, ~120-160 heap bytes), two or more in a ring buffer (a
 * Float64Array growing by doubling up to `limit` slots). A request at `now` counts entries with `now - t < windowMs`;
 * rejected requests are not recorded.
 *
 * Memory stays bounded without a timer:
 * - The Map is kept in order of each bucket's newest counted request (a counted hit deletes and re-inserts its key),
 *   so the buckets at the front are the quietest. Every hit first drops front buckets whose newest entry has left the
 *   window; each bucket is dropped once, so this is amortized O(1) per hit, and expired buckets of a burst go away at
 *   the first hit after their window ends (100,000 of them in ~15-35 ms, once; see bench/ratelimit-memory.ts).
 * - At `maxBuckets` (default 200_000) a new bucket evicts the least recently counted bucket first (after the expired
 *   ones). An evicted bucket that was still active restarts from zero: the cap trades exactness for a memory bound
 *   under an address-spraying flood.
 *
 * Timestamps come from the caller. If `nowMs` goes backwards for a bucket (fibers reading the clock out of order, a
 * clock step), the request is recorded at the bucket's newest timestamp instead, which keeps each log sorted and only
 * ever counts a request slightly longer than its real age.
 */
export interface MemoryStoreOptions {
  readonly limit?: number
  readonly windowMs?: number
  readonly maxBuckets?: number
}

export interface MemoryRateLimitStore extends RateLimitStore {
  readonly settings: WindowSettings
  readonly maxBuckets: number
  /** Number of buckets currently held (tests, bench). */
  readonly size: () => number
  /** Drops every bucket with nothing left in the window at `nowMs`; returns how many were dropped. */
  readonly sweep: (nowMs: number) => number
}

export const DEFAULT_MAX_BUCKETS = 200_000

/** Ring buffer of sorted timestamps (oldest at `head`). */
class Log {
  times: Float64Array
  head = 0
  length = 0

  constructor(capacity: number) {
    this.times = new Float64Array(capacity)
  }

  oldest(): number {
    return this.times[this.head] ?? 0
  }

  newest(): number {
    return this.times[(this.head + this.length - 1) % this.times.length] ?? 0
  }

  /** Drops entries with `t <= cutoff` (they have left the window). */
  prune(cutoff: number): void {
    const capacity = this.times.length
    while (this.length > 0 && (this.times[this.head] ?? 0) <= cutoff) {
      this.head = (this.head + 1) % capacity
      this.length--
    }
    if (this.length === 0) this.head = 0
  }

  /** Removes one entry equal to `t`, searching from the newest (a released request is nearly always the newest). */
  removeOne(t: number): boolean {
    const capacity = this.times.length
    for (let i = this.length - 1; i >= 0; i--) {
      if (this.times[(this.head + i) % capacity] !== t) continue
      for (let j = i; j < this.length - 1; j++) {
        this.times[(this.head + j) % capacity] = this.times[(this.head + j + 1) % capacity] ?? 0
      }
      this.length--
      if (this.length === 0) this.head = 0
      return true
    }
    return false
  }

  /** Appends `t`; the caller guarantees `length < limit`. */
  push(t: number, limit: number): void {
    const capacity = this.times.length
    if (this.length === capacity) {
      const grown = new Float64Array(Math.min(limit, capacity * 2))
      for (let i = 0; i < this.length; i++) grown[i] = this.times[(this.head + i) % capacity] ?? 0
      this.times = grown
      this.head = 0
    }
    this.times[(this.head + this.length) % this.times.length] = t
    this.length++
  }
}

/** A bucket: one counted timestamp held inline (most clients), or a log once a second request is counted. */
type Entry = number | Log

/** An allowed decision with the timestamp under which the request was recorded. */
const counted = (decided: RateDecision, recordedMs: number): RateDecision => ({
  ...decided,
  ticket: String(recordedMs),
})

const newestOf = (entry: Entry): number => (typeof entry === "number" ? entry : entry.newest())

export const makeMemoryStore = (options: MemoryStoreOptions = {}): MemoryRateLimitStore => {
  const settings = windowSettings(options)
  const { limit, windowMs } = settings
  const maxBuckets = options.maxBuckets ?? DEFAULT_MAX_BUCKETS
  if (!Number.isSafeInteger(maxBuckets) || maxBuckets < 1) {
    throw new RangeError(`maxBuckets must be an integer >= 1: ${maxBuckets}`)
  }
  // Insertion order = order of the newest counted request (least recently counted first).
  const buckets = new Map<string, Entry>()

  // The front of `buckets`, read through one live iterator. A fresh `buckets.keys()` would start at slot 0 and step
  // over every deleted slot the Map has not compacted yet (O(deletions) per hit); the live iterator keeps its place.
  // Invariant: `pending` (the front entry, read but not dropped) plus what `cursor` has not returned yet is the whole
  // Map, because every entry the cursor returned was dropped, except `pending`.
  let cursor: MapIterator<[string, Entry]> | undefined
  let pending: [string, Entry] | undefined

  const front = (): [string, Entry] | undefined => {
    if (pending !== undefined) return pending
    cursor ??= buckets.entries()
    const next = cursor.next()
    if (next.done) {
      cursor = undefined
      return undefined
    }
    pending = next.value
    return pending
  }

  const dropFront = (): void => {
    if (pending === undefined) return
    buckets.delete(pending[0])
    pending = undefined
  }

  /** Removes a key before it is re-inserted at the back (or for good). */
  const remove = (key: string): void => {
    buckets.delete(key)
    if (pending !== undefined && pending[0] === key) pending = undefined
  }

  const hitSync = (bucket: string, nowMs: number) => {
    const cutoff = nowMs - windowMs
    // Amortized O(1): each bucket is dropped once.
    for (let first = front(); first !== undefined && newestOf(first[1]) <= cutoff; first = front()) dropFront()

    const entry = buckets.get(bucket)
    if (entry === undefined) {
      while (buckets.size >= maxBuckets && front() !== undefined) dropFront()
      buckets.set(bucket, nowMs)
      return counted(decision(settings, true, 1, nowMs, nowMs), nowMs)
    }
    if (typeof entry === "number") {
      if (entry > cutoff && limit <= 1) return decision(settings, false, 1, entry, nowMs)
      remove(bucket)
      if (entry <= cutoff) {
        buckets.set(bucket, nowMs)
        return counted(decision(settings, true, 1, nowMs, nowMs), nowMs)
      }
      const log = new Log(2)
      const recorded = Math.max(nowMs, entry)
      log.push(entry, limit)
      log.push(recorded, limit)
      buckets.set(bucket, log)
      return counted(decision(settings, true, 2, entry, nowMs), recorded)
    }
    entry.prune(cutoff)
    if (entry.length >= limit) return decision(settings, false, entry.length, entry.oldest(), nowMs)
    remove(bucket)
    if (entry.length === 0) {
      buckets.set(bucket, nowMs)
      return counted(decision(settings, true, 1, nowMs, nowMs), nowMs)
    }
    const recorded = Math.max(nowMs, entry.newest())
    entry.push(recorded, limit)
    buckets.set(bucket, entry)
    return counted(decision(settings, true, entry.length, entry.oldest(), nowMs), recorded)
  }

  const releaseSync = (bucket: string, ticket: string | undefined) => {
    const recorded = Number(ticket)
    if (ticket === undefined || !Number.isFinite(recorded)) return
    const entry = buckets.get(bucket)
    if (entry === undefined) return
    if (typeof entry === "number") {
      if (entry === recorded) remove(bucket)
      return
    }
    entry.removeOne(recorded)
    // An empty log stays until the front sweep drops it (its newest time is 0, so the next hit does).
  }

  return {
    settings,
    maxBuckets,
    hit: (bucket, nowMs) => Effect.sync(() => hitSync(bucket, nowMs)),
    release: (bucket, decided) =>
      Effect.sync(() => (decided.allowed ? releaseSync(bucket, decided.ticket) : undefined)),
    size: () => buckets.size,
    sweep: (nowMs) => {
      // Checks every bucket (the Map order is only approximately by newest entry if clocks went backwards).
      let dropped = 0
      const cutoff = nowMs - windowMs
      for (const [key, entry] of buckets) {
        if (typeof entry !== "number") entry.prune(cutoff)
        if (typeof entry === "number" ? entry <= cutoff : entry.length === 0) {
          buckets.delete(key)
          dropped++
        }
      }
      // Start reading the front afresh (once; the cursor stays live afterwards).
      cursor = undefined
      pending = undefined
      return dropped
    },
  }
}
