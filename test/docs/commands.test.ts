import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { admin } from "../support/cli.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The commands the documentation gives a reader, run: every `bun run admin …` written in README.md or docs/ is a
 * command the admin tool lists, with flags that command takes; and the README's "by hand" block runs as written
 * against a running server (only its address is the test server's). The poller, receiver, demo and webhook examples
 * have tests of their own (test/examples/, test/admin/demo.test.ts).
 */

const ROOT = join(import.meta.dir, "..", "..")
// docs/design.md records decisions, some not built yet; the other pages tell a reader what to run.
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md") && f !== "design.md")
    .map((f) => `docs/${f}`),
]
const read = (page: string) => readFileSync(join(ROOT, page), "utf8")

/** Every `bun run [--silent] admin <words and flags>` in a page, up to a shell operator, quote or comment. */
const adminCommands = (page: string): Array<{ page: string; words: string[]; flags: string[] }> =>
  [...read(page).matchAll(/bun run (?:--silent )?admin ([^`|#)\n;&"]+)/g)].map((m) => {
    const parts = (m[1] ?? "").trim().split(/\s+/)
    return {
      page,
      words: parts.filter((p) => /^[a-z][a-z-]*$/.test(p)).slice(0, 2),
      flags: parts.filter((p) => /^--[a-z-]+$/.test(p)),
    }
  })

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: testEnv() })
})
afterAll(() => shutdown(server))

describe("commands in the documentation", () => {
  test("every `bun run admin …` in README.md and docs/ is a command the admin tool lists, with flags it takes", async () => {
    const usage = await admin(server.env, ["help"])
    expect(usage.code).toBe(0)
    const lines = usage.stdout.split("\n")
    const commands = PAGES.flatMap(adminCommands).filter((c) => c.words.length > 0)
    expect(commands.length).toBeGreaterThan(20)
    const unknown: string[] = []
    for (const { page, words, flags } of commands) {
      const [group, command] = words
      // A group alone (`bun run admin org`) lists its commands; otherwise the usage has a line for the command.
      const entries = lines.filter((l) => l.trim().startsWith(`${group} ${command ?? ""}`.trim()))
      if (entries.length === 0) {
        unknown.push(`${page}: admin ${words.join(" ")}`)
        continue
      }
      // Flags: on the command's line or its continuation lines (indented under it).
      const at = lines.indexOf(entries[0] ?? "")
      const block = [lines[at] ?? ""]
      for (let i = at + 1; i < lines.length && /^ {4,}/.test(lines[i] ?? ""); i++) block.push(lines[i] ?? "")
      const text = [...entries, ...block].join(" ")
      for (const flag of flags)
        if (flag !== "--json" && !text.includes(flag)) unknown.push(`${page}: admin ${words.join(" ")} ${flag}`)
    }
    expect(unknown).toEqual([])
  })

  test("the README's by-hand block runs as written: an organization, a key, and curl reads the incidents", async () => {
    const readme = read("README.md")
    const start = readme.indexOf("The same by hand")
    const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start))?.[1] ?? ""
    expect(block).toContain("admin org create")
    const address = new URL(server.url).host
    const script = block
      .split("\n")
      // `open` starts a browser; the demo has a test of its own (it plays a two-minute story).
      .filter((line) => !line.startsWith("open ") && !line.startsWith("bun run demo"))
      .join("\n")
      .replaceAll("localhost:8080", address)
      // Organization names are unique in a database that other tests share.
      .replaceAll('--name "Acme"', `--name "Acme ${Date.now()}"`)
    const run = Bun.spawn(["bash", "-euo", "pipefail", "-c", `${script}\necho\necho "KEY=$KEY"`], {
      cwd: ROOT,
      env: { ...server.env, PATH: process.env.PATH ?? "" },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [stdout, stderr, code] = await Promise.all([
      new Response(run.stdout).text(),
      new Response(run.stderr).text(),
      run.exited,
    ])
    expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" })
    const [answer, keyLine] = stdout.trim().split("\n")
    expect(JSON.parse(answer ?? "")).toEqual({ data: [], nextCursor: null })
    expect(keyLine).toMatch(/^KEY=dsk_/)
  }, 60_000)
})
