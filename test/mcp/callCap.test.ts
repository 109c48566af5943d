import { expect, test } from "bun:test"
import { type Backend, runTool, TOOLS, type ToolArgs } from "../../src/mcp/tools.ts"

/**
 * D40: one tool call makes at most four API calls, whatever the API answers. A page that does not fit the result
 * bound is asked for again ending at its last item shown, then for one item; an API that ignores the limit (or data
 * that keeps changing) must not keep the tool asking forever. The backend here answers every call with the same
 * page of large events, ignoring `limit`, and gives up (throws) long after the cap.
 */

const spec = TOOLS.find((t) => t.name === "list_events")
if (spec === undefined) throw new Error("list_events")

const bigEvent = (i: number) => ({
  id: `evt_${i}`,
  time: "2026-11-21T15:57:42.053Z",
  type: "ssh.command",
  summary: `step ${i}`,
  attackerInput: Object.fromEntries(Array.from({ length: 40 }, (_, k) => [`k${k}`, "<".repeat(50)])),
})

test("a tool call makes at most 4 API calls when the API keeps sending more than fits, then answers its text", async () => {
  const calls: Array<ToolArgs> = []
  const backend: Backend = {
    call: async (_name, args) => {
      calls.push(args)
      if (calls.length > 50) throw new Error("the tool kept asking")
      return { ok: true, body: { data: Array.from({ length: 10 }, (_, i) => bigEvent(i)), nextCursor: "p10" } }
    },
  }
  const result = await runTool(spec, {}, backend, 5_000)
  expect(calls.length).toBe(4)
  // The last call asked for one item, and its text is the answer, within the bound, showing the first item.
  expect(calls[3]?.limit).toBe("1")
  const text = (result.content[0] as { text: string }).text
  expect(text.length).toBeLessThanOrEqual(5_000)
  expect(text).toContain("id: evt_0\n")
  expect(result.isError).toBeUndefined()
})
