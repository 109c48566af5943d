import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import type { ChangePage, ChangeQuery, Positioned } from "../../src/api/ChangesRepo.ts"
import { feedPage } from "../../src/api/feeds.ts"
import { StoredId } from "../../src/domain/ids.ts"
import { serializedAnswer } from "../../src/repos/present.ts"

/**
 * D32 and issue "Hardening 2" item 4: a change feed page is bounded in bytes like the lists. It stops adding changes
 * before the answer would pass the bound (at least one is shown), says hasMore, and its token points right after
 * the last change shown: a follower sees every change exactly once, in order.
 */

interface Row {
  readonly id: string
  readonly text: string
}

const key = new Uint8Array(32).fill(9)
const ORG = StoredId.OrgId.make("org_feed")

const table: ReadonlyArray<Positioned<Row>> = Array.from({ length: 40 }, (_, i) => ({
  id: `c${String(i).padStart(2, "0")}`,
  // Sizes from 1 KB to 3 KB, and one change larger than the whole bound.
  text: "x".repeat(i === 17 ? 9000 : 1000 * ((i % 3) + 1)),
  // Several changes per transaction, as a batch writes them.
  changeXid: String(100 + Math.floor(i / 4)),
  changeSeq: String(i),
}))

/** The feed "storage": changes after the position, in position order, with a horizon past them all. */
const read = (q: ChangeQuery): Effect.Effect<ChangePage<Row>> => {
  const after = (r: Positioned<Row>) =>
    BigInt(r.changeXid) > BigInt(q.after.xid) ||
    (BigInt(r.changeXid) === BigInt(q.after.xid) && BigInt(r.changeSeq) > BigInt(q.after.seq))
  return Effect.succeed({ rows: table.filter(after).slice(0, q.fetch), horizon: "1000" })
}

const walk = (limit: number, maxBytes: number) => {
  const seen: Array<string> = []
  let token: string | undefined
  for (let guard = 0; guard < 200; guard++) {
    const answer = Effect.runSync(
      feedPage(
        key,
        "events/changes",
        ORG,
        token === undefined ? { limit: String(limit) } : { after: token, limit: String(limit) },
        read,
        (r) => ({ id: r.id, text: r.text }),
        maxBytes,
      ),
    )
    const text = serializedAnswer(answer)
    expect(text).toBe(JSON.stringify(answer))
    const size = Buffer.byteLength(text ?? "")
    if (answer.data.length > 1) expect(size).toBeLessThanOrEqual(maxBytes)
    else expect(answer.data.length === 1 || !answer.hasMore).toBe(true)
    seen.push(...answer.data.map((d) => d.id))
    token = answer.nextToken
    if (!answer.hasMore) return seen
  }
  throw new Error("the walk did not end")
}

describe("change feeds bounded in bytes", () => {
  test("a page stops before its byte bound with hasMore and the token after the last change shown; a walk sees every change once", () => {
    for (const [limit, maxBytes] of [
      [10, 6000],
      [25, 8000],
      [3, 5000],
      [50, 2_000_000],
    ] as const) {
      expect({ limit, maxBytes, seen: walk(limit, maxBytes) }).toEqual({
        limit,
        maxBytes,
        seen: table.map((r) => r.id),
      })
    }
  })

  test("a page within the bound is unchanged: every row up to limit, hasMore only when more rows exist", () => {
    const first = Effect.runSync(
      feedPage(key, "events/changes", ORG, { limit: "5" }, read, (r) => ({ id: r.id }), 4 * 1024 * 1024),
    )
    expect(first.data.map((d) => d.id)).toEqual(["c00", "c01", "c02", "c03", "c04"])
    expect(first.hasMore).toBe(true)
    const bounded = Effect.runSync(
      feedPage(key, "events/changes", ORG, { limit: "5" }, read, (r) => ({ id: r.id, text: r.text }), 5000),
    )
    expect(bounded.data.map((d) => d.id)).toEqual(["c00", "c01"])
    expect(bounded.hasMore).toBe(true)
  })
})
