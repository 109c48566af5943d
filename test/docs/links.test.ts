import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

/**
 * The Markdown of the repository holds together for a reader: every relative link (README, docs/, CHANGELOG,
 * BENCHMARKS, fixtures' READMEs) reaches a file and, when it names one, a heading; the README stays short; the pages
 * speak in their own words (no internal decision or issue numbers); every `bun run <script>` they show exists; and
 * the configuration reference lists exactly the variables the code reads.
 */

const ROOT = join(import.meta.dir, "..", "..")
const read = (path: string) => readFileSync(join(ROOT, path), "utf8")

/** Every *.md of the repository (relative paths), outside dependencies, builds, data and dot-directories. */
const markdownFiles = (dir = ""): ReadonlyArray<string> =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === "" ? entry.name : `${dir}/${entry.name}`
    if (entry.isDirectory()) {
      return entry.name.startsWith(".") || ["node_modules", "dist"].includes(entry.name) ? [] : markdownFiles(path)
    }
    return entry.name.endsWith(".md") ? [path] : []
  })

/** Text outside fenced code blocks, line by line (a fenced line becomes empty, so line numbers stay true). */
const prose = (text: string): ReadonlyArray<string> => {
  let fence: string | undefined
  return text.split("\n").map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1]
    if (marker !== undefined) {
      if (fence === undefined) fence = marker[0]
      else if (marker[0] === fence) fence = undefined
      return ""
    }
    return fence === undefined ? line : ""
  })
}

/** GitHub's anchor of a heading: inline markup dropped, lower case, punctuation removed, spaces to hyphens. */
export const slugOf = (heading: string): string =>
  heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-")

/** The anchors a Markdown text offers: one per heading (repeats get -1, -2, …), and explicit id/name attributes. */
export const anchorsOf = (text: string): ReadonlySet<string> => {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const line of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading !== undefined) {
      const slug = slugOf(heading)
      const n = seen.get(slug) ?? 0
      seen.set(slug, n + 1)
      anchors.add(n === 0 ? slug : `${slug}-${n}`)
    }
    for (const m of line.matchAll(/\s(?:id|name)="([^"]+)"/g)) if (m[1]) anchors.add(m[1])
  }
  return anchors
}

/** Links and images outside code: `[text](target)`, `![alt](target)` and `[label]: target`, with their line. */
export const linksOf = (text: string): ReadonlyArray<{ readonly line: number; readonly target: string }> =>
  prose(text).flatMap((raw, index) => {
    const line = raw.replace(/`[^`]*`/g, "``")
    const inline = [...line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? "")
    const reference = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line)?.[1]
    return [...inline, ...(reference === undefined ? [] : [reference])].map((target) => ({ line: index + 1, target }))
  })

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target)

/** Why a relative link of `file` does not resolve (undefined: it does). */
const brokenLink = (file: string, target: string, anchorsCache: Map<string, ReadonlySet<string>>) => {
  const [pathPart = "", anchor] = target.split("#", 2) as [string, string | undefined]
  const path = decodeURIComponent(pathPart)
  const absolute = path === "" ? join(ROOT, file) : resolve(ROOT, dirname(file), path)
  const inRepo = relative(ROOT, absolute)
  if (inRepo.startsWith("..")) return "points outside the repository"
  if (!existsSync(absolute)) return "no such file"
  if (anchor === undefined || anchor === "") return undefined
  if (statSync(absolute).isDirectory() || !absolute.endsWith(".md"))
    return "an anchor on something that is not Markdown"
  let anchors = anchorsCache.get(inRepo)
  if (anchors === undefined) {
    anchors = anchorsOf(readFileSync(absolute, "utf8"))
    anchorsCache.set(inRepo, anchors)
  }
  return anchors.has(decodeURIComponent(anchor)) ? undefined : `no heading #${anchor}`
}

const FILES = markdownFiles()
/**
 * What a reader of the service is sent to: every page but CHANGELOG.md (history, where past issues belong),
 * docs/design.md (where the decision numbers cited in code comments are defined) and the test fixtures' notes.
 */
const READER_PAGES = FILES.filter((f) => f !== "CHANGELOG.md" && f !== "docs/design.md" && !f.startsWith("test/"))
/** Files an operator reads beside the pages: the container and deployment files and the start command. */
const READER_FILES = ["Dockerfile", "compose.yaml", "deploy/haproxy.cfg", "bin/serve"]

/** Each internal decision number (D12) or issue number (#17, issue #15) in `text`, as `file:line match`. */
const internalNumbers = (file: string, text: string): ReadonlyArray<string> =>
  text
    .split("\n")
    .flatMap((line, i) =>
      [
        ...line.matchAll(/(?<![\w-])D\d{1,3}(?![\w])/g),
        ...line.matchAll(/\bissues?\s+#?\d+/gi),
        ...line.matchAll(/(?<![\w&/])#\d+\b/g),
      ].map((m) => `${file}:${i + 1} ${m[0]}`),
    )

describe("the repository's Markdown", () => {
  test("the scan finds the pages it is meant to check", () => {
    for (const page of ["README.md", "CHANGELOG.md", "BENCHMARKS.md", "docs/configuration.md", "docs/operators.md"])
      expect(FILES).toContain(page)
    for (const page of [
      "README.md",
      "BENCHMARKS.md",
      "deploy/README.md",
      "docs/operators.md",
      "docs/channels/syslog.md",
    ])
      expect(READER_PAGES).toContain(page)
  })

  test("every relative link resolves to a file in the repository, and every #anchor to a heading there", () => {
    const cache = new Map<string, ReadonlySet<string>>()
    const broken = FILES.flatMap((file) =>
      linksOf(read(file))
        .filter(({ target }) => !isExternal(target))
        .flatMap(({ line, target }) => {
          const why = brokenLink(file, target, cache)
          return why === undefined ? [] : [`${file}:${line} ${target}: ${why}`]
        }),
    )
    expect(broken).toEqual([])
  })

  test("no page mentions the workspace outside the repository", () => {
    const outside = ["..", "shared"].join("/")
    expect(FILES.filter((file) => read(file).includes(outside))).toEqual([])
  })

  test("README.md stays under 250 lines", () => {
    expect(read("README.md").split("\n").length).toBeLessThan(250)
  })

  test("the pages cite no internal decision number and no issue number (#17, issue #15)", () => {
    const found = READER_PAGES.flatMap((file) => internalNumbers(file, read(file)))
    expect(READER_PAGES.length).toBeGreaterThan(4)
    expect(found).toEqual([])
  })

  test("neither do the container, deployment and start files an operator reads", () => {
    expect(READER_FILES.flatMap((file) => internalNumbers(file, read(file)))).toEqual([])
  })

  test("every `bun run <script>` the pages show names a package.json script or a file that exists", () => {
    const scripts = new Set(Object.keys((JSON.parse(read("package.json")) as { scripts: object }).scripts))
    let seen = 0
    const unknown = READER_PAGES.flatMap((file) =>
      // `bun run` on its own in inline code names the runner, not a script.
      [...read(file).matchAll(/\bbun run\b(?!`)([ \t]*\n?[^\n`|;&)]*)/g)].flatMap((m) => {
        seen++
        // Flags come before the name; `--cwd <dir>` takes a value, the others (`--silent`) do not.
        const tokens = (m[1] ?? "").trim().split(/\s+/)
        let i = 0
        while (tokens[i]?.startsWith("--")) i += tokens[i] === "--cwd" ? 2 : 1
        const name = tokens[i]?.replace(/["',]+$/, "")
        if (name === undefined || name === "") return [`${file}: bun run with no script`]
        const isFile = name.includes("/") || /\.(ts|tsx|js)$/.test(name)
        const ok = isFile ? existsSync(join(ROOT, name)) : scripts.has(name)
        return ok ? [] : [`${file}: bun run ${name}`]
      }),
    )
    expect(seen).toBeGreaterThan(20)
    expect(unknown).toEqual([])
  })
})

// --- The configuration reference --------------------------------------------------------------------------------------

const ENV = "[A-Z][A-Z0-9_]{2,}"

/** Code without comments: a comment naming a variable is not a read of it. */
const transpilers = { ts: new Bun.Transpiler({ loader: "ts" }), tsx: new Bun.Transpiler({ loader: "tsx" }) }
const code = (path: string) => transpilers[path.endsWith(".tsx") ? "tsx" : "ts"].transformSync(read(path))

/** The variables src/platform/config.ts reads: every call whose first argument is a variable's name. */
const readByConfig = (): ReadonlySet<string> =>
  new Set([...code("src/platform/config.ts").matchAll(new RegExp(`\\(\\s*"(${ENV})"`, "g"))].map((m) => m[1] ?? ""))

/** Every variable read anywhere in src/: the configuration's, and `process.env.X` / `Bun.env.X` elsewhere. */
const readInSrc = (): ReadonlySet<string> => {
  const names = new Set(readByConfig())
  const files = (readdirSync(join(ROOT, "src"), { recursive: true }) as Array<string>).filter((f) => /\.tsx?$/.test(f))
  for (const file of files) {
    const js = code(join("src", file))
    for (const m of js.matchAll(
      new RegExp(`\\b(?:process\\.env|Bun\\.env)(?:\\.(${ENV})|\\[\\s*"(${ENV})"\\s*\\])`, "g"),
    ))
      names.add(m[1] ?? m[2] ?? "")
  }
  return names
}

/** The variables docs/configuration.md documents: the first cell of each table row, when it is one `NAME`. */
const documented = (): ReadonlySet<string> =>
  new Set([...read("docs/configuration.md").matchAll(new RegExp(`^\\| \`(${ENV})\` \\|`, "gm"))].map((m) => m[1] ?? ""))

describe("docs/configuration.md", () => {
  test("lists every variable src/platform/config.ts reads", () => {
    const config = readByConfig()
    expect(config.size).toBeGreaterThan(30)
    expect(config.has("SECRET_KEY")).toBe(true)
    expect([...config].filter((name) => !documented().has(name)).sort()).toEqual([])
  })

  test("lists only variables src/ reads", () => {
    const src = readInSrc()
    expect(src.has("API_KEY")).toBe(true)
    expect([...documented()].filter((name) => !src.has(name)).sort()).toEqual([])
  })
})

// --- The checker catches what it claims to ---------------------------------------------------------------------------

describe("the link checker itself", () => {
  test("decision and issue numbers are found, other numbers are not", () => {
    expect(internalNumbers("f", "as D11 says\n(issue 15) and #17; D12–D14")).toEqual([
      "f:1 D11",
      "f:2 D12",
      "f:2 D14",
      "f:2 issue 15",
      "f:2 #17",
    ])
    expect(internalNumbers("f", "sha256 D3D3 &#39; x/#4 ID12 MD5")).toEqual([])
  })

  test("anchors are GitHub's", () => {
    expect(slugOf("Webhooks (D15–D18)")).toBe("webhooks-d15d18")
    expect(slugOf("Health, metrics, logs and shutdown")).toBe("health-metrics-logs-and-shutdown")
    expect(slugOf("The `bun run admin` tool")).toBe("the-bun-run-admin-tool")
    expect([...anchorsOf("# A\n## A\n```\n# not a heading\n```\n### B b")]).toEqual(["a", "a-1", "b-b"])
  })

  test("links in code are not links; links in text are, with their line", () => {
    const text = 'see [a](docs/a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n![i](p.png "t")\n[r]: ref.md'
    expect(linksOf(text)).toEqual([
      { line: 1, target: "docs/a.md#x" },
      { line: 5, target: "p.png" },
      { line: 6, target: "ref.md" },
    ])
  })

  test("a missing file, a missing heading and a way out of the repository are each reported", () => {
    const cache = new Map<string, ReadonlySet<string>>()
    expect(brokenLink("README.md", "docs/no-such-page.md", cache)).toBe("no such file")
    expect(brokenLink("README.md", "docs/operators.md#no-such-heading", cache)).toBe("no heading #no-such-heading")
    expect(brokenLink("docs/operators.md", "../../elsewhere.md", cache)).toBe("points outside the repository")
    expect(brokenLink("docs/operators.md", "#storage", cache)).toBeUndefined()
  })
})
