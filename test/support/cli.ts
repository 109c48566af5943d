import { join } from "node:path"
import { prebuilt } from "./prebuilt.ts"

const ROOT = join(import.meta.dir, "..", "..")

/**
 * Runs `bun run admin …` as an operator would (the CLI bundled once for the test run), with a server's environment and,
 * when given, `stdin` as its standard input (a secret typed or piped in).
 */
export const admin = async (env: Record<string, string>, args: ReadonlyArray<string>, stdin?: string) => {
  const child = Bun.spawn(["bun", prebuilt().cli, ...args], {
    cwd: ROOT,
    env,
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, stdout: stdout.trim(), stderr: stderr.trim() }
}

export const adminJson = async (env: Record<string, string>, args: ReadonlyArray<string>) => {
  const result = await admin(env, [...args, "--json"])
  if (result.code !== 0) throw new Error(`admin ${args.join(" ")} failed: ${result.stderr}`)
  return JSON.parse(result.stdout)
}
