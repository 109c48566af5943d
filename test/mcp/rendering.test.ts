import { describe, expect, test } from "bun:test"
import fc from "fast-check"
import { renderResult } from "../../src/mcp/fence.ts"
import { type Backend, runTool, TOOLS, type ToolArgs, type ToolName } from "../../src/mcp/tools.ts"

/**
 * D40, D7, D32: the tools' paging and rendering (mcp/tools.ts runTool over mcp/fence.ts renderResult), driven by a
 * backend that pages a fixed list exactly as the endpoints do (limit, then a cursor or token for "after the last item
 * of the page"). The real endpoints behind it are tested in paging.test.ts and http.test.ts; here the sizes of the
 * items are chosen at random, far past what a database test could store.
 */

type Item = Record<string, unknown>

const LIST_TOOLS = ["list_incidents", "list_events", "incident_changes", "event_changes"] as const
type ListTool = (typeof LIST_TOOLS)[number]
const specOf = (name: ToolName) => {
  const spec = TOOLS.find((t) => t.name === name)
  if (spec === undefined) throw new Error(name)
  return spec
}

/**
 * An item of `size` units of attacker text, of the tool's kind: events carry it in attackerInput (many short strings
 * of "<", six characters each once escaped, so no per-string cut makes them small), incidents in their narrative and
 * in a list of techniques.
 */
const itemOf = (tool: ListTool, index: number, size: number): Item => {
  const strings: Record<string, string> = {}
  for (let k = 0; k * 50 < size; k++) strings[`k${k}`] = "<".repeat(Math.min(50, size - k * 50))
  if (tool === "list_events" || tool === "event_changes") {
    return {
      id: `evt_${index}`,
      time: "2026-11-21T15:57:42.053Z",
      type: "ssh.command",
      summary: `step ${index}`,
      attackerInput: { command: `step-${index}`, ...strings },
    }
  }
  return {
    id: `inc_${index}`,
    title: `Activity ${index}`,
    narrative: "<".repeat(size),
    severity: "high",
    techniques: Array.from({ length: Math.floor(size / 100) }, (_, t) => ({ id: `T${1000 + t}`, name: "Brute Force" })),
  }
}

/** A backend that answers like the endpoints over a fixed list, counting its calls. */
const listBackend = (tool: ListTool, items: ReadonlyArray<Item>) => {
  const calls: Array<ToolArgs> = []
  const backend: Backend = {
    call: async (_name, args) => {
      calls.push(args)
      const limit = args.limit === undefined ? 50 : Number(args.limit)
      const position = String((tool.startsWith("list_") ? args.cursor : args.after) ?? "p0")
      const start = Number(position.slice(1))
      const data = items.slice(start, start + limit)
      const more = start + limit < items.length
      const body = tool.startsWith("list_")
        ? { data, nextCursor: more ? `p${start + data.length}` : null }
        : { data, nextToken: `p${start + data.length}`, hasMore: more }
      return { ok: true, body }
    },
  }
  return { backend, calls }
}

/** The value of a paging line as the text shows it. */
const pagingValue = (text: string, field: string): string | undefined =>
  text
    .split("\n")
    .find((l) => l.startsWith(`${field}: `))
    ?.slice(field.length + 2)

/** Follows a list by what the texts say; returns the texts. */
const follow = async (tool: ListTool, items: ReadonlyArray<Item>, maxChars: number, limit: number | undefined) => {
  const { backend } = listBackend(tool, items)
  const spec = specOf(tool)
  const texts: Array<string> = []
  let position: string | undefined
  for (let pages = 0; pages <= items.length + 1; pages++) {
    const input: Record<string, unknown> = limit === undefined ? {} : { limit }
    if (position !== undefined) input[tool.startsWith("list_") ? "cursor" : "after"] = position
    const result = await runTool(spec, input, backend, maxChars)
    const text = (result.content[0] as { text: string }).text
    expect(text.length).toBeLessThanOrEqual(maxChars)
    texts.push(text)
    const page = result.structuredContent as { data: Array<Item>; nextCursor?: string | null; nextToken?: string }
    // The text shows every item of structuredContent's page, and that page's own cursor or token.
    for (const item of page.data) expect(text).toContain(`id: ${item.id}\n`)
    if (tool.startsWith("list_")) {
      expect(pagingValue(text, "nextCursor")).toBe(page.nextCursor ?? "null")
      if (page.nextCursor === null) return texts
      position = pagingValue(text, "nextCursor")
    } else {
      expect(pagingValue(text, "nextToken")).toBe(page.nextToken)
      position = pagingValue(text, "nextToken")
      if (pagingValue(text, "hasMore") !== "true") return texts
    }
  }
  throw new Error("paging did not end")
}

describe("paging by a result's text shows every item", () => {
  test("for any item sizes and result bound, following the text's cursors and tokens shows every item at least once, in all four list tools", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...LIST_TOOLS),
        fc.array(fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 40_000 })), {
          minLength: 1,
          maxLength: 25,
        }),
        fc.integer({ min: 3000, max: 40_000 }),
        fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
        async (tool, sizes, maxChars, limit) => {
          const items = sizes.map((size, i) => itemOf(tool, i, size))
          const all = (await follow(tool, items, maxChars, limit)).join("\n")
          const missing = items.filter((item) => !all.includes(`id: ${item.id}\n`)).map((item) => item.id)
          expect(missing).toEqual([])
        },
      ),
      { numRuns: 120 },
    )
  })

  test("one event too large for a result on its own is shown cut, with the marker, then the steps after it", async () => {
    const items = [
      itemOf("event_changes", 0, 60_000),
      ...Array.from({ length: 10 }, (_, i) => itemOf("event_changes", i + 1, 10)),
    ]
    const texts = await follow("event_changes", items, 5000, undefined)
    expect(texts[0]).toContain("id: evt_0\n")
    expect(texts[0]).toMatch(/\[cut: \d+ characters not shown here/)
    const all = texts.join("\n")
    for (let i = 1; i <= 10; i++) expect(all).toContain(`step-${i}`)
  })
})

/** Wraps a value so that every property read (and key listing) of it and of what it holds is counted. */
const counted = <T>(value: T, counter: { reads: number }): T => {
  const cache = new WeakMap<object, object>()
  const wrap = (v: unknown): unknown => {
    if (v === null || typeof v !== "object") return v
    const known = cache.get(v)
    if (known !== undefined) return known
    const proxy = new Proxy(v, {
      get: (target, key, receiver) => {
        counter.reads++
        return wrap(Reflect.get(target, key, receiver))
      },
      ownKeys: (target) => {
        const keys = Reflect.ownKeys(target)
        counter.reads += keys.length
        return keys
      },
    })
    cache.set(v, proxy)
    return proxy
  }
  return wrap(value) as T
}

/** A large captured request: 64 members of 64 strings of 100 characters (about 420 KB as JSON). */
const largeInput = (seed: number) => {
  const input: Record<string, Array<string>> = {}
  for (let k = 0; k < 64; k++)
    input[`header${k}`] = Array.from({ length: 64 }, (_, i) => `${seed}-${k}-${i}`.padEnd(100, "x"))
  return input
}
const largeEvent = (i: number, input: unknown) => ({
  id: `evt_${i}`,
  time: "2026-11-21T15:57:42.053Z",
  type: "http.request",
  summary: "S".repeat(50_000),
  attackerInput: input,
})

/** One call of a tool over a backend answering `body`, with the property reads of the rendering counted. */
const workOf = async (
  tool: ToolName,
  body: unknown,
  maxChars: number,
  input: Record<string, unknown> = { limit: 100 },
) => {
  const counter = { reads: 0 }
  let calls = 0
  const backend: Backend = {
    call: async (_name, args) => {
      calls++
      const page = body as { data?: Array<unknown> }
      const limit = args.limit === undefined ? undefined : Number(args.limit)
      const shrunk =
        limit === undefined || !Array.isArray(page.data) ? body : { ...page, data: page.data.slice(0, limit) }
      return { ok: true, body: counted(shrunk, counter) }
    },
  }
  const result = await runTool(specOf(tool), input, backend, maxChars)
  const text = (result.content[0] as { text: string }).text
  if (process.env.SHOW_WORK) console.log(tool, maxChars, counter.reads, calls)
  return { reads: counter.reads, calls, text }
}

describe("one call's rendering work follows MCP_MAX_RESULT_CHARS, not the size of the data", () => {
  test("a page of 100 large events: values read stay within a bound set by the result bound, whatever the events' size", async () => {
    const input = largeInput(1)
    const page = (n: number, inp: unknown) => ({
      data: Array.from({ length: n }, (_, i) => largeEvent(i, inp)),
      nextCursor: "p100",
    })
    const base = await workOf("list_events", page(100, input), 100_000)
    expect(base.text.length).toBeLessThanOrEqual(100_000)
    // About one value read for every 10 characters of text (each value shown takes more than that): the 100 events
    // hold over 400,000 values, read several times over before.
    expect(base.reads).toBeLessThan(100_000 / 2)
    expect(base.calls).toBeLessThanOrEqual(2)
    // Larger events (four times the members) do not cost more; a smaller bound costs less.
    const wide = { ...input, ...Object.fromEntries(Object.entries(largeInput(2)).map(([k, v]) => [`more${k}`, v])) }
    const larger = await workOf("list_events", page(100, wide), 100_000)
    expect(larger.reads).toBeLessThan(base.reads * 1.5)
    const small = await workOf("list_events", page(100, input), 20_000)
    expect(small.reads).toBeLessThan(base.reads / 2)
    // The pure rendering counts what it examines (values and string units) within the same kind of bound.
    const rendered = renderResult("Events", page(100, wide), "0123456789abcdef", 100_000, undefined, true)
    expect(rendered.examined).toBeLessThan(3 * 100_000)
  })

  test("get_incident of an incident with 200 large member events stays within the bound, text and work", async () => {
    const input = largeInput(3)
    const incident = {
      id: "inc_1",
      title: "T".repeat(100_000),
      narrative: "N".repeat(100_000),
      events: Array.from({ length: 200 }, (_, i) => largeEvent(i, input)),
    }
    const one = await workOf("get_incident", incident, 100_000, { id: "inc_1" })
    expect(one.text.length).toBeLessThanOrEqual(100_000)
    expect(one.text).toContain("[result text cut at 100000 characters; the complete result is in structuredContent]")
    expect(one.reads).toBeLessThan(100_000 / 2)
    const rendered = renderResult("Incident", incident, "0123456789abcdef", 100_000)
    expect(rendered.examined).toBeLessThan(3 * 100_000)
  })
})
