import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
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

export const prebuilt = (): { readonly main: string; readonly cli: string } => {
  if (built !== undefined && existsSync(built.main) && existsSync(built.cli)) return built
  mkdirSync(join(ROOT, "dist"), { recursive: true })
  const dir = mkdtempSync(join(ROOT, "dist", ".test-"))
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }))
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
