import { afterAll } from "bun:test"
import { endTestDatabases } from "./runDatabase.ts"

// Once, after the last test file: the run's PostgreSQL databases dropped, its embedded server stopped and removed.
afterAll(endTestDatabases)
