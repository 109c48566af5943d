import { join } from "node:path"
import { ROOT } from "./common.ts"

/** `bun run admin … --json`, as an operator runs it, against the benchmark database. */
export const adminJson = async <A = Record<string, string>>(
  env: Record<string, string>,
  args: ReadonlyArray<string>,
): Promise<A> => {
  const child = Bun.spawn(["bun", join(ROOT, "src/admin/cli.ts"), ...args, "--json"], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (code !== 0) throw new Error(`admin ${args.join(" ")} failed (${code}): ${stderr.trim()}`)
  return JSON.parse(stdout.trim()) as A
}
