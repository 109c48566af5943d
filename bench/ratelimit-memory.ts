/**
 * Memory of the in-process rate limit store (D11): heap and RSS at baseline, after 100,000 distinct client IPs made
 * one request each, and after their window has passed and the store has swept them. The store gets an injected clock
 * (a plain number), so the script does not wait 60 s.
 *
 *   bun bench/ratelimit-memory.ts [ips]
 */
import { heapStats } from "bun:jsc"
import { Effect } from "effect"
import { makeMemoryStore } from "../src/platform/ratelimit/memoryStore.ts"

const IPS = Number(process.argv[2] ?? 100_000)
const WINDOW_MS = 60_000

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

interface Sample {
  readonly heap: number
  readonly rss: number
}

const measure = (label: string, buckets: number): Sample => {
  Bun.gc(true)
  const heap = heapStats().heapSize
  const rss = process.memoryUsage().rss
  console.log(
    `${label.padEnd(44)} buckets=${String(buckets).padStart(7)}  heap=${mib(heap).padStart(9)}  rss=${mib(rss).padStart(9)}`,
  )
  return { heap, rss }
}

const ipOf = (i: number) => `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`

let now = 1_700_000_000_000
const store = makeMemoryStore({ windowMs: WINDOW_MS })
const hit = (bucket: string) => Effect.runSync(store.hit(bucket, now))

const base = measure("baseline", store.size())

const started = performance.now()
for (let i = 0; i < IPS; i++) {
  if (!hit(ipOf(i)).allowed) throw new Error("unexpected rejection")
  if (i % 1000 === 0) now += 1 // requests spread over ~100 ms
}
const elapsed = performance.now() - started
const full = measure(`after ${IPS.toLocaleString("en")} distinct IPs x 1 request`, store.size())
console.log(
  `  ${((full.heap - base.heap) / IPS) | 0} heap bytes per bucket, ${((elapsed * 1000) / IPS).toFixed(2)} µs per hit`,
)

now += WINDOW_MS + 1
const sweepStarted = performance.now()
for (let i = 0; i < 3; i++) hit(`ip:192.0.2.${i}`) // the first hit after the window drops the expired buckets
const sweepMs = performance.now() - sweepStarted
measure("after the window passed + 3 new requests", store.size())
console.log(
  `  first hits after the window (incl. dropping ${IPS.toLocaleString("en")} buckets): ${sweepMs.toFixed(1)} ms`,
)
