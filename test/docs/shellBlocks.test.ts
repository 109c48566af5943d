import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { shellBlocks } from "../support/shellBlocks.ts"

/**
 * Every command the documentation shows is run by a test, or says right before it why it is not run here: each ```sh
 * block of README.md and docs/ is either listed below (its page, the start of its first line, the test that runs it
 * and a string of that test which names it) or preceded by `<!-- not run by the tests: <why> -->`. A new block with
 * neither fails here.
 */

const ROOT = join(import.meta.dir, "..", "..")

const PAGES = [
  "README.md",
  ...(readdirSync(join(ROOT, "docs"), { recursive: true }) as Array<string>)
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`)
    .sort(),
]

/** The blocks a test runs: [page, start of the block's first line, the test file, how that file names the block]. */
const RUN: ReadonlyArray<readonly [string, string, string, string?]> = [
  ["README.md", "bun run demo", "test/admin/demo.test.ts", "`bun run demo`"],
  ["README.md", 'ORG=$(bun run --silent admin org create --name "Acme"', "test/docs/commands.test.ts"],
  ["README.md", "openssl req -x509 -newkey ec", "test/docs/commands.test.ts", 'runWebhookWalkThrough("README.md")'],
  [
    "docs/webhooks.md",
    "openssl req -x509 -newkey ec",
    "test/docs/commands.test.ts",
    'runWebhookWalkThrough("docs/webhooks.md")',
  ],
  ["docs/webhooks.md", "printf '%s.%s' \"$T\"", "test/docs/commands.test.ts", '"printf \'%s.%s\' \\"$T\\""'],
  ["docs/api.md", "touch .incident-feed-token", "test/examples/poller.test.ts", 'readmeBlock("sh")'],
  [
    "docs/api.md",
    "BASE_URL=https://incidents.example.com API_KEY=dsk_… bun examples/poller.ts",
    "test/examples/poller.test.ts",
    '["bun", "examples/poller.ts"]',
  ],
  [
    "docs/channels/README.md",
    "read -rs SLACK_URL",
    "test/docs/commands.test.ts",
    '"docs/channels/README.md", "read -rs SLACK_URL"',
  ],
  [
    "docs/channels/slack.md",
    "read -rs SLACK_URL",
    "test/docs/commands.test.ts",
    '"docs/channels/slack.md", "read -rs SLACK_URL"',
  ],
  ["docs/channels/teams.md", "read -rs TEAMS_URL", "test/docs/commands.test.ts"],
  ["docs/channels/splunk-hec.md", "read -rs HEC_TOKEN", "test/docs/commands.test.ts"],
  [
    "docs/channels/syslog.md",
    "bun run admin channel create --org <org-id> --kind syslog",
    "test/docs/commands.test.ts",
    '"docs/channels/syslog.md", "bun run admin channel create"',
  ],
  [
    "docs/channels/syslog.md",
    "openssl req -x509 -newkey ec",
    "test/docs/commands.test.ts",
    '"docs/channels/syslog.md", "openssl req -x509 -newkey ec"',
  ],
  [
    "docs/channels/ocsf.md",
    "bun run admin channel create",
    "test/docs/commands.test.ts",
    '"docs/channels/ocsf.md", "bun run admin channel create"',
  ],
  [
    "docs/console.md",
    "bun run admin org list",
    "test/docs/commands.test.ts",
    '"docs/console.md", "bun run admin org list"',
  ],
]

describe("the documentation's shell blocks", () => {
  const blocks = PAGES.flatMap(shellBlocks)

  test("every ```sh block is run by a test or says why it is not run here", () => {
    expect(blocks.length).toBeGreaterThan(25)
    const unaccounted = blocks
      .filter((b) => b.notRun === undefined)
      .filter((b) => !RUN.some(([page, first]) => page === b.page && b.first.startsWith(first)))
      .map((b) => `${b.page}:${b.line} ${b.first}`)
    expect(unaccounted).toEqual([])
  })

  test("each listed block exists once, is not also marked as not run, and its test names it", () => {
    const wrong = RUN.flatMap(([page, first, file, names = first]) => {
      const found = blocks.filter((b) => b.page === page && b.first.startsWith(first))
      if (found.length !== 1) return [`${page}: ${found.length} blocks start with ${first}`]
      if (found[0]?.notRun !== undefined) return [`${page}: ${first} is listed as run and marked as not run`]
      if (!existsSync(join(ROOT, file))) return [`${page}: ${first}: no ${file}`]
      return readFileSync(join(ROOT, file), "utf8").includes(names) ? [] : [`${page}: ${first}: ${file} lacks ${names}`]
    })
    expect(wrong).toEqual([])
  })

  test("a block is found with its marking comment, blank lines between allowed, indented or not", () => {
    const marked = blocks.filter((b) => b.notRun !== undefined)
    expect(marked.length).toBeGreaterThan(5)
    expect(marked.every((b) => (b.notRun ?? "").trim().length > 10)).toBe(true)
  })
})
