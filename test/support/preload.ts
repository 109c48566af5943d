import { afterAll } from "bun:test"
import { endTestDatabases } from "./runDatabase.ts"
import { stopLeftoverServers } from "./server.ts"

// After each file when `bun run test` runs files in workers, after the last file when `bun test` runs them in one
// process: the in-process servers a file left running are stopped, then the run's PostgreSQL is cleaned up by its
// owner (a worker handed the database by `bun run test` leaves that to it).
afterAll(async () => {
  await stopLeftoverServers()
  await endTestDatabases()
})
