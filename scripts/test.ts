/**
 * `bun run test`: every test under test/, in worker processes.
 *
 * With DATABASE_URL it migrates a template database on that URL's server once and hands both to the workers; on the
 * embedded run each worker starts an embedded PostgreSQL of its own (from the service's own binaries and code) and
 * migrates its template there, so one worker's long transactions never hold back another's change feeds. Each test
 * server then runs on a copy of a template (test/support/runDatabase.ts). When the workers are done, whatever their
 * result, this script drops the run's databases (DATABASE_URL) or stops and removes the workers' embedded servers.
 * Arguments are passed to `bun test` (a file, `-t pattern`, …).
 *
 * Workers: one more than the machine's cores (3 on a 2-core machine). Most of a test's time is spent waiting on a
 * server, a database or a receiver, so more files at once than cores keep the cores busy. TEST_WORKERS sets another
 * number (1: one process, files in order). The slowest files start first (`test/timings.json`, each file's last
 * measured duration; `bun run test --update-timings` measures them again), so no long file is left running alone at
 * the end.
 */
import { availableParallelism } from "node:os"
import { endTestDatabases, prepareRunDatabase, removeAbandonedRuns } from "../test/support/runDatabase.ts"

const workers = Number(process.env.TEST_WORKERS ?? String(availableParallelism() + 1))
if (!Number.isInteger(workers) || workers < 1) {
  console.error(`TEST_WORKERS must be a whole number of at least 1 (it is ${process.env.TEST_WORKERS})`)
  process.exit(2)
}

const shared = await prepareRunDatabase()
const args = ["bun", "test", "--timeout", "120000"]
if (workers > 1) args.push(`--parallel=${workers}`, "--no-isolate", "--timings=test/timings.json")
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
// The embedded servers the workers started (one each) outlive them: stopped and removed now.
removeAbandonedRuns()
process.exit(code)
