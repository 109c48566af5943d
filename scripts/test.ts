/**
 * `bun run test`: every test under test/, in two worker processes, on one PostgreSQL for the whole run.
 *
 * It starts that PostgreSQL before the workers (the embedded one from the service's own binaries and code, or, with
 * DATABASE_URL, that URL's server), migrates a template database once, and hands both to the workers: each test
 * server then runs on a copy of the template (test/support/runDatabase.ts). The workers share the run's PostgreSQL,
 * so it belongs to none of them: this script stops it (embedded) or drops the run's databases (DATABASE_URL) when
 * they are done, whatever their result. Arguments are passed to `bun test` (a file, `-t pattern`, …).
 *
 * The two workers suit a 2-core machine: most of a test's time is spent waiting on a server, a database or a
 * receiver, so two files at once keep both cores busy. TEST_WORKERS sets another number (1: one process, in order).
 */
import { endTestDatabases, prepareRunDatabase } from "../test/support/runDatabase.ts"

const workers = Number(process.env.TEST_WORKERS ?? "2")
if (!Number.isInteger(workers) || workers < 1) {
  console.error(`TEST_WORKERS must be a whole number of at least 1 (it is ${process.env.TEST_WORKERS})`)
  process.exit(2)
}

const shared = await prepareRunDatabase()
const args = ["bun", "test", "--timeout", "120000"]
if (workers > 1) args.push(`--parallel=${workers}`, "--no-isolate")
args.push(...process.argv.slice(2))

const child = Bun.spawn(args, {
  env: { ...process.env, ...shared },
  stdin: "inherit",
  stdout: "inherit",
  stderr: "inherit",
})
// ^C or a CI time-out reaches the workers through the process group; the database is still cleaned up after them.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal))
const code = await child.exited
await endTestDatabases()
process.exit(code)
