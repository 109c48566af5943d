import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { EVENT_TYPE_NAMES } from "../../src/domain/eventTypeNames.ts"
import { EVENT_TYPES } from "../../src/domain/eventTypes.ts"
import { ISOLATE_SOURCE } from "../../src/domain/recommendedActions.ts"

/**
 * The published client bundle carries the event type names (the API contract's `type` filter lists them) and none
 * of the server's event type table: its labels, incident titles and recommended actions are the server's own words,
 * of no use to a client and only weight in every install. Built here exactly as `bun run build:client` builds it
 * (its `bun build` steps, read from package.json), into a temporary directory.
 */

const ROOT = join(import.meta.dir, "..", "..")
const out = mkdtempSync(join(tmpdir(), "client-bundle-"))

afterAll(() => rmSync(out, { recursive: true, force: true }))

const builtJs = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return builtJs(path)
    return entry.name.endsWith(".js") ? [readFileSync(path, "utf8")] : []
  })

test("the client bundle holds the event type names and none of the event type table's texts", () => {
  const packageJson = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"))
  const script: string = packageJson.scripts["build:client"]
  const builds = script
    .split("&&")
    .map((step) => step.trim())
    .filter((step) => step.startsWith("bun build "))
  expect(builds.length).toBeGreaterThan(0)
  for (const step of builds) {
    const argv = step.replaceAll("dist/client", out).split(/\s+/)
    const build = Bun.spawnSync(argv, { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
    expect({ step, exitCode: build.exitCode, stderr: build.stderr.toString() }).toEqual({
      step,
      exitCode: 0,
      stderr: "",
    })
  }
  const bundle = builtJs(out).join("\n")

  for (const name of EVENT_TYPE_NAMES) expect(bundle).toContain(JSON.stringify(name))

  const ssh = EVENT_TYPES.get("ssh.login_attempt")
  const llmnr = EVENT_TYPES.get("llmnr.poisoning")
  const serverOnly = [
    // A recommended action shared by many types, one of a single type, an incident title.
    ISOLATE_SOURCE,
    llmnr?.recommendedAction ?? "",
    ssh?.incidentTitle ?? "",
  ]
  expect(serverOnly).toEqual([ISOLATE_SOURCE, expect.stringContaining("Responder"), "SSH brute force"])
  for (const text of serverOnly) expect({ text, inBundle: bundle.includes(text) }).toEqual({ text, inBundle: false })
}, 120_000)
