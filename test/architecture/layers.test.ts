import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"

/**
 * The shape of src/, read from the code's own imports: layers that only point down (domain → platform → repos →
 * faces → main.ts), faces that do not import each other except where this file says why, and no circle between files
 * or between folders. docs/architecture.md draws the same map for a reader.
 */

const SRC = join(import.meta.dir, "..", "..", "src")

/** A top-level unit of src/: its first folder, or a file at the top. */
const LAYER: Record<string, number> = {
  domain: 0,
  platform: 1,
  repos: 2,
  api: 3,
  ingest: 3,
  alerts: 3,
  // The webhook receiver's helper, published as the package's ./webhooks/verify: it imports nothing of the service.
  webhooks: 3,
  console: 3,
  admin: 3,
  mcp: 3,
  taxii: 3,
  ops: 3,
  client: 3,
  jobs: 3,
  "main.ts": 4,
  "demo.ts": 4,
}

/** The only imports from one face into another, each with its reason. */
const FACE_TO_FACE: ReadonlyArray<{ from: string; to: RegExp; why: string }> = [
  { from: "console", to: /^admin\//, why: "the console is a second face of the admin services (the CLI is the first)" },
  { from: "mcp", to: /^api\//, why: "the MCP door runs the API's own queries, authentication and contract" },
  { from: "taxii", to: /^api\/auth\.ts$/, why: "the TAXII server checks keys with the API's own authentication" },
  { from: "mcp", to: /^client\//, why: "over stdio the MCP door reaches a remote API through the client" },
  { from: "client", to: /^api\/contract\//, why: "the client is built from the API contract, and nothing else" },
  {
    from: "jobs",
    to: /^ingest\/CowrieSessionsRepo\.ts$/,
    why: "the idle close also forgets old Cowrie sessions, whose table only ingestion writes",
  },
]

/** Entry points: run, never imported. */
const ENTRIES = new Set(["main.ts", "demo.ts", "admin/cli.ts", "mcp/stdio.ts"])

const IMPORT =
  /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|import\s*['"]([^'"]+)['"]/g

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : []
  })

type Graph = Map<string, { relative: Set<string>; packages: Set<string> }>

/** Every file of src/ (relative to src/) with the files and packages it imports. */
const readGraph = (root: string): Graph => {
  const files = sourceFiles(root).map((f) => relative(root, f))
  const known = new Set(files)
  const resolve = (from: string, spec: string): string | undefined => {
    const base = normalize(join(dirname(from), spec))
    return [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")].find((c) => known.has(c))
  }
  const graph: Graph = new Map()
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8")
    const node = { relative: new Set<string>(), packages: new Set<string>() }
    for (const match of text.matchAll(IMPORT)) {
      const spec = match[1] ?? match[2] ?? match[3] ?? ""
      if (spec.startsWith(".")) {
        const target = resolve(file, spec)
        if (target === undefined) throw new Error(`${file}: cannot resolve ${spec}`)
        node.relative.add(target)
      } else node.packages.add(spec)
    }
    graph.set(file, node)
  }
  return graph
}

const unitOf = (file: string): string => file.split("/")[0] ?? file

/** Strongly connected groups of more than one node (Tarjan). */
const circles = (edges: Map<string, ReadonlySet<string>>): string[][] => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  let next = 0
  const visit = (v: string) => {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0))
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = []
      let w: string | undefined
      do {
        w = stack.pop()
        if (w !== undefined) {
          onStack.delete(w)
          group.push(w)
        }
      } while (w !== undefined && w !== v)
      if (group.length > 1) found.push(group.sort())
    }
  }
  for (const v of edges.keys()) if (!index.has(v)) visit(v)
  return found
}

/** Every rule broken by a graph, as one line each (empty: the shape holds). */
const violations = (graph: Graph): string[] => {
  const found: string[] = []
  for (const [file, { relative: targets, packages }] of graph) {
    const from = unitOf(file)
    const fromLayer = LAYER[from]
    if (fromLayer === undefined) {
      found.push(`${file}: ${from} is in no layer (add it to the map, with docs/architecture.md)`)
      continue
    }
    for (const target of targets) {
      const to = unitOf(target)
      const toLayer = LAYER[to]
      if (ENTRIES.has(target)) found.push(`${file} imports the entry point ${target}`)
      if (to === from || toLayer === undefined) continue
      if (toLayer > fromLayer) found.push(`${file} imports ${target}: up from ${from} to ${to}`)
      else if (toLayer === 3 && fromLayer === 3 && !FACE_TO_FACE.some((r) => r.from === from && r.to.test(target)))
        found.push(`${file} imports ${target}: face ${from} into face ${to}`)
    }
    // domain/ is pure: no I/O, no database, no HTTP server (uuid: the STIX ids' UUIDv5, a hash).
    if (from === "domain") {
      for (const p of packages)
        if (!/^(effect|ipaddr\.js|node:crypto|uuid)$/.test(p) && p !== "@effect/platform")
          found.push(`${file} (domain, pure) imports ${p}`)
    }
    // webhooks/ is the receiver helper, published and copied on its own: node:crypto, and nothing of the service.
    if (from === "webhooks") {
      for (const target of targets)
        if (!target.startsWith("webhooks/")) found.push(`${file} (the receiver helper) imports ${target}`)
      for (const p of packages) if (p !== "node:crypto") found.push(`${file} (the receiver helper) imports ${p}`)
    }
    // the API contract, which the client is built from, imports only the domain.
    if (file.startsWith("api/contract/")) {
      for (const target of targets)
        if (!target.startsWith("api/contract/") && !target.startsWith("domain/"))
          found.push(`${file} (the API contract) imports ${target}`)
    }
  }
  const fileEdges = new Map([...graph].map(([f, n]) => [f, n.relative as ReadonlySet<string>]))
  for (const group of circles(fileEdges)) found.push(`files import each other in a circle: ${group.join(", ")}`)
  const unitEdges = new Map<string, Set<string>>()
  for (const [file, node] of graph) {
    const set = unitEdges.get(unitOf(file)) ?? new Set<string>()
    for (const t of node.relative) if (unitOf(t) !== unitOf(file)) set.add(unitOf(t))
    unitEdges.set(unitOf(file), set)
  }
  for (const group of circles(unitEdges)) found.push(`folders import each other in a circle: ${group.join(", ")}`)
  return found
}

describe("the shape of src/", () => {
  test("imports only point down a layer, faces import each other only where allowed, and nothing is circular", () => {
    expect(violations(readGraph(SRC))).toEqual([])
  })

  test("every face exports the layer main.ts composes, and main.ts imports no repository: each face brings its own", () => {
    const main = readFileSync(join(SRC, "main.ts"), "utf8")
    expect(main).not.toMatch(/from "\.\/repos\//)
    for (const face of [
      "api/server.ts",
      "ingest/layer.ts",
      "alerts/layer.ts",
      "console/",
      "mcp/http.ts",
      "taxii/server.ts",
      "ops/server.ts",
    ])
      expect(main).toContain(`./${face}`)
  })

  // The checker must catch what it claims to: each rule, broken on purpose in a small graph.
  describe("the checker itself", () => {
    const graphOf = (edges: Record<string, string[]>, packages: Record<string, string[]> = {}): Graph =>
      new Map(
        Object.entries(edges).map(([f, ts]) => [f, { relative: new Set(ts), packages: new Set(packages[f] ?? []) }]),
      )
    test("an import up a layer", () => {
      expect(violations(graphOf({ "repos/A.ts": ["api/B.ts"], "api/B.ts": [] }))).toEqual([
        "repos/A.ts imports api/B.ts: up from repos to api",
      ])
    })
    test("a face into another face, unless allowed", () => {
      expect(violations(graphOf({ "ingest/A.ts": ["alerts/B.ts"], "alerts/B.ts": [] }))).toEqual([
        "ingest/A.ts imports alerts/B.ts: face ingest into face alerts",
      ])
      expect(violations(graphOf({ "console/A.ts": ["admin/B.ts"], "admin/B.ts": [] }))).toEqual([])
      expect(violations(graphOf({ "client/A.ts": ["api/queries.ts"], "api/queries.ts": [] }))[0]).toContain(
        "face client into face api",
      )
    })
    test("a circle between files, and between folders", () => {
      const found = violations(graphOf({ "api/a.ts": ["api/b.ts"], "api/b.ts": ["api/a.ts"] }))
      expect(found).toEqual(["files import each other in a circle: api/a.ts, api/b.ts"])
      const folders = violations(
        graphOf({
          "console/a.ts": ["admin/b.ts"],
          "admin/b.ts": ["admin/c.ts"],
          "admin/c.ts": ["console/d.ts"],
          "console/d.ts": [],
        }),
      )
      expect(folders).toContain("folders import each other in a circle: admin, console")
    })
    test("a receiver helper that reaches into the service or past node:crypto", () => {
      expect(violations(graphOf({ "webhooks/verify.ts": ["domain/a.ts"], "domain/a.ts": [] }))).toEqual([
        "webhooks/verify.ts (the receiver helper) imports domain/a.ts",
      ])
      expect(
        violations(graphOf({ "webhooks/verify.ts": [] }, { "webhooks/verify.ts": ["node:crypto", "effect"] })),
      ).toEqual(["webhooks/verify.ts (the receiver helper) imports effect"])
    })
    test("an impure domain module, a contract that reaches past the domain, an imported entry point", () => {
      expect(violations(graphOf({ "domain/a.ts": [] }, { "domain/a.ts": ["pg"] }))).toEqual([
        "domain/a.ts (domain, pure) imports pg",
      ])
      expect(violations(graphOf({ "api/contract/a.ts": ["repos/b.ts"], "repos/b.ts": [] }))).toEqual([
        "api/contract/a.ts (the API contract) imports repos/b.ts",
      ])
      expect(violations(graphOf({ "demo.ts": ["main.ts"], "main.ts": [] }))).toEqual([
        "demo.ts imports the entry point main.ts",
      ])
    })
  })
})
