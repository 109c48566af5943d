import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../support/console.ts"
import { prebuilt } from "../support/prebuilt.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { shellBlocks } from "../support/shellBlocks.ts"

/**
 * What README.md tells a first-time reader, checked against what really happens on this machine: what `bun install`
 * prints at its end, what a second server on the same ports says (the webhook walk-through starts the server again),
 * and the programs its blocks run (each installed here, named in its text, none that only macOS has).
 */

const ROOT = join(import.meta.dir, "..", "..")
const README = readFileSync(join(ROOT, "README.md"), "utf8")
/** The README's text outside its fenced blocks. */
const prose = README.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "")

const run = async (argv: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) => {
  const child = Bun.spawn([...argv], { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { stdout, stderr, code }
}

test("`bun install` ends with the line the README says to expect, and the README names the packages it blocked", async () => {
  // A fresh install of this package.json and lockfile, as a fresh clone gets (packages come from Bun's cache).
  const dir = mkdtempSync(join(tmpdir(), "dsvc-install-"))
  try {
    for (const file of ["package.json", "bun.lock"]) copyFileSync(join(ROOT, file), join(dir, file))
    const install = await run(["bun", "install"], dir)
    expect({ code: install.code, stderr: install.code === 0 ? "" : install.stderr }).toEqual({ code: 0, stderr: "" })
    const output = `${install.stdout}\n${install.stderr}`
    const blocked = output.split("\n").find((line) => line.startsWith("Blocked "))
    expect(blocked).toMatch(/^Blocked \d+ postinstalls?\. Run `bun pm untrusted` for details\.$/)
    expect({ blocked, inReadme: prose.includes(blocked ?? "") }).toEqual({ blocked, inReadme: true })
    // The packages it blocked, as `bun pm untrusted` lists them: each named in the README.
    const untrusted = await run(["bun", "pm", "untrusted"], dir)
    const names = [...untrusted.stdout.matchAll(/^\.\/node_modules\/(\S+) @/gm)].map((m) => m[1] as string)
    expect(names.length).toBe(Number(/Blocked (\d+)/.exec(blocked ?? "")?.[1]))
    expect(names.filter((name) => !prose.includes(`\`${name}\``))).toEqual([])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 120_000)

describe("the webhook walk-through, which starts the server again", () => {
  let first: RunningServer
  beforeAll(async () => {
    const ports = { PORT: freePort(), INGEST_PORT: freePort(), OPS_PORT: freePort(), CONSOLE_PORT: freePort() }
    first = await startServer({
      env: await testEnv(Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, `${v}`]))),
    })
  }, 120_000)
  afterAll(() => shutdown(first))

  test("the webhook walk-through says to stop the server first: a second one on the same ports exits with the line it quotes", async () => {
    // `bun run start` again while the first server runs: the same settings, so the same ports.
    const second = await run(["bun", prebuilt().main], ROOT, first.env)
    expect(second.code).toBe(1)
    const line = second.stderr.trim().split("\n").at(-1) ?? ""
    expect(line).toMatch(/^cannot listen on 127\.0\.0\.1:\d+ \(\w+\): the port is in use by another process; /)
    // The walk-through's words before its block: stop the first server, and what a second one would say.
    const start = README.indexOf("**Webhooks to the example receiver")
    // Its words before its block, a line break read as the space Markdown shows.
    const intro = README.slice(start, README.indexOf("```sh", start)).replace(/\s+/g, " ")
    const quoted = line.slice(line.indexOf("("), line.indexOf(";"))
    expect({ quoted, saysStop: /\bstop\b/i.test(intro), quotes: intro.includes(quoted) }).toEqual({
      quoted,
      saysStop: true,
      quotes: true,
    })
  }, 120_000)
})

test("every program the README's blocks run is named in its text, those of the blocks the tests run are installed here, and none is macOS-only", () => {
  // Shell words, and programs every system has (the README's blocks are for bash).
  const SHELL = new Set(["export", "echo", "read", "cd", "set", "for", "do", "done", "then", "fi", "if", "wait"])
  const BASE = new Set(["bun", "bash", "sh", "kill", "sleep"])
  /** The programs a block runs: the first word of each command, past assignments, pipes, lists and `$(…)`. */
  const programsOf = (text: string): Array<string> =>
    text
      .replace(/\\\n/g, " ")
      .split("\n")
      .map((line) => line.replace(/(^|\s)#.*$/, ""))
      .flatMap((code) => code.split(/\$\(|\)|&&|\|\||[|;&]/))
      .map((segment) =>
        segment
          .trim()
          .split(/\s+/)
          .find((w) => w !== "" && !/^[A-Z_][A-Z0-9_]*=/.test(w)),
      )
      .filter((program): program is string => program !== undefined && !SHELL.has(program))
  const blocks = shellBlocks("README.md")
  const programs = new Set(blocks.flatMap((block) => programsOf(block.text)))
  expect([...programs]).toContain("bun")
  // macOS's `open` (a browser for a URL): on Debian `open` is `openvt`, which runs a program on a new console.
  expect([...programs].filter((program) => program === "open" || program === "xdg-open")).toEqual([])
  const unnamed = [...programs].filter((program) => !BASE.has(program) && !prose.includes(`\`${program}\``))
  expect({ unnamed }).toEqual({ unnamed: [] })
  // The blocks the tests run (the others say why not: Docker, the network) need nothing this machine lacks.
  const tested = blocks.filter((block) => block.notRun === undefined).flatMap((block) => programsOf(block.text))
  const missing = [...new Set(tested)].filter((program) => Bun.which(program) === null)
  expect({ missing }).toEqual({ missing: [] })
})
