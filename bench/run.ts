/**
 * `bun run bench [name]`: runs the benchmark scripts in bench/ one after another (or the one named) and lets each
 * print its own figures. The full API / ingestion / webhook suite against PostgreSQL is the performance issue's
 * work; what exists today is listed here.
 */
import { join } from "node:path"

const BENCHMARKS: Record<string, string> = {
  "ratelimit-memory": "ratelimit-memory.ts",
}

const wanted = process.argv[2]
const names = wanted ? [wanted] : Object.keys(BENCHMARKS)
for (const name of names) {
  const file = BENCHMARKS[name]
  if (!file) {
    console.error(`unknown benchmark ${name}; known: ${Object.keys(BENCHMARKS).join(", ")}`)
    process.exit(2)
  }
  console.log(`== ${name}`)
  const child = Bun.spawn(["bun", join(import.meta.dir, file)], { stdout: "inherit", stderr: "inherit" })
  const code = await child.exited
  if (code !== 0) process.exit(code)
}
