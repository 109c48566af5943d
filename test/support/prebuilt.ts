import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"

const ROOT = join(import.meta.dir, "..", "..")

/**
 * The service and the admin CLI bundled once per test process, as `bun run start` bundles the service: the suites
 * start servers and run the CLI hundreds of times, and from the sources each start transpiles every module again
 * (about twice the CPU of the bundle on a 2-core machine). The bundle lives under dist/ in the checkout, so it finds
 * node_modules, sql/ and the embedded PostgreSQL as the sources do; the console's static files are copied beside it.
 * Tests that are about running from the sources spawn `bun src/main.ts` themselves.
 */
let built: { readonly main: string; readonly cli: string } | undefined
const KEEP_MS = 6 * 3_600_000

export const prebuilt = (): { readonly main: string; readonly cli: string } => {
  if (built !== undefined && existsSync(built.main) && existsSync(built.cli)) return built
  const dist = join(ROOT, "dist")
  mkdirSync(dist, { recursive: true })
  // A test run does not get to remove its bundle at its end (bun test exits without the process's exit event), so
  // each run removes those older than a few hours, which no run still uses.
  for (const name of readdirSync(dist)) {
    const old = join(dist, name)
    if (name.startsWith(".test-") && Date.now() - statSync(old).mtimeMs > KEEP_MS)
      rmSync(old, { recursive: true, force: true })
  }
  const dir = mkdtempSync(join(dist, ".test-"))
  for (const [entry, out] of [
    ["src/main.ts", "main.js"],
    ["src/admin/cli.ts", "cli.js"],
  ] as const) {
    const result = Bun.spawnSync(["bun", "build", entry, "--target", "bun", "--outfile", join(dir, out)], {
      cwd: ROOT,
      stdout: "pipe",
      stderr: "pipe",
    })
    if (result.exitCode !== 0) throw new Error(`bundling ${entry} for the tests failed:\n${result.stderr.toString()}`)
  }
  cpSync(join(ROOT, "src", "console", "static"), join(dir, "static"), { recursive: true })
  built = { main: join(dir, "main.js"), cli: join(dir, "cli.js") }
  return built
}
