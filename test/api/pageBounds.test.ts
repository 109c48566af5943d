import { describe, expect, test } from "bun:test"
import { page } from "../../src/api/paging.ts"
import type { EventRow } from "../../src/repos/EventsRepo.ts"
import type { IncidentRow } from "../../src/repos/IncidentsRepo.ts"
import { encodeIncident, serializedAnswer, takeWithinBytes } from "../../src/repos/present.ts"

/**
 * Issue "Hardening 2" item 4: an API answer is bounded in bytes, not only by count. A page stops adding rows before
 * it would pass the bound, and its cursor points right after the last row shown, so a walk never skips one (D7).
 */

interface Row {
  readonly id: string
  readonly time: Date
  readonly text: string
}

const rows: ReadonlyArray<Row> = Array.from({ length: 30 }, (_, i) => ({
  id: `r${String(i).padStart(2, "0")}`,
  time: new Date(Date.UTC(2026, 0, 1, 0, 0, 30 - i)),
  text: "x".repeat(1000 * ((i % 3) + 1)),
}))

/** Walks a "table" of rows through page(), as a client following nextCursor would. */
const walk = (limit: number, maxBytes: number) => {
  const seen: Array<string> = []
  let after = -1
  for (let guard = 0; guard < 100; guard++) {
    const fetched = rows.slice(after + 1, after + 1 + limit + 1)
    const answer = page(
      fetched,
      limit,
      (r) => r.time,
      (r) => ({ id: r.id, text: r.text }),
      (at) => at.id,
      maxBytes,
    )
    const text = serializedAnswer(answer)
    expect(text).toBe(JSON.stringify(answer))
    expect(Buffer.byteLength(text ?? "")).toBeLessThanOrEqual(Math.max(maxBytes, 4000))
    seen.push(...answer.data.map((d) => d.id))
    if (answer.nextCursor === null) break
    expect(answer.nextCursor).toBe(answer.data.at(-1)?.id ?? "")
    after = rows.findIndex((r) => r.id === answer.nextCursor)
  }
  return seen
}

describe("Hardening 2 item 4: API pages bounded by size", () => {
  test("a page stops before its byte bound, its cursor right after the last row shown; the walk returns every row once", () => {
    const all = rows.map((r) => r.id)
    expect(walk(10, 1024 * 1024)).toEqual(all)
    // 6 KiB pages: two or three rows each, never one skipped or repeated.
    expect(walk(10, 6 * 1024 + 1024)).toEqual(all)
    // A bound smaller than one row still shows one row per page.
    expect(walk(10, 10)).toEqual(all)
  })

  test("a single incident's events stop before the bound (oldest first, never an empty answer for a big event)", () => {
    const incident = {
      id: "inc_1",
      eventTypes: ["ssh.login_attempt"],
      tags: [],
      firstSeenAt: new Date(Date.UTC(2026, 0, 1)),
      lastSeenAt: new Date(Date.UTC(2026, 0, 2)),
      resolvedAt: null,
    } as unknown as IncidentRow
    const event = (i: number): EventRow =>
      ({
        id: `evt_${i}`,
        time: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
        type: "ssh.login_attempt",
        tags: [],
        attackerInput: { username: "root", note: "n".repeat(10_000) },
      }) as unknown as EventRow
    const events = Array.from({ length: 200 }, (_, i) => event(i))
    const whole = encodeIncident(incident, events, "https://console.test")
    expect(whole.events).toHaveLength(200)
    const bounded = encodeIncident(incident, events, "https://console.test", 100_000)
    // Each event shows about 4.2 KB (a string reads back at most 4096 code points).
    expect(bounded.events.length).toBeGreaterThan(15)
    expect(bounded.events.length).toBeLessThan(25)
    expect(bounded.events.map((e) => e.id)).toEqual(events.slice(0, bounded.events.length).map((e) => e.id))
    const text = serializedAnswer(bounded)
    expect(text).toBe(JSON.stringify(bounded))
    expect(Buffer.byteLength(text ?? "")).toBeLessThanOrEqual(100_000)
    expect(encodeIncident(incident, events, "https://console.test", 10).events).toHaveLength(1)
  })

  test("takeWithinBytes keeps the first items that fit, at least one", () => {
    const items = Array.from({ length: 10 }, (_, i) => ({ i, pad: "p".repeat(100) }))
    const one = JSON.stringify(items[0]).length
    expect(takeWithinBytes(items, one * 3 + 2)).toHaveLength(3)
    expect(takeWithinBytes(items, 1)).toHaveLength(1)
    expect(takeWithinBytes([], 1)).toHaveLength(0)
  })
})
