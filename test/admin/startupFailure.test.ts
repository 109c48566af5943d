import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { admin } from "../support/cli.ts"
import { serverEnv, TEST_SECRET_KEY } from "../support/server.ts"

/**
 * The admin tool stops on a database it cannot start as the server does: the same one line saying what failed and what
 * to do, exit 1, never a stack trace or an Effect error dump.
 */

const dir = mkdtempSync(join(tmpdir(), "dsvc-admin-fail-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test("a DATA_DIR that cannot hold a database (a file): one line naming the embedded database, exit 1, no stack", async () => {
  const file = join(dir, "not-a-directory")
  writeFileSync(file, "")
  // No DATABASE_URL: the embedded database in DATA_DIR, which is a file.
  const result = await admin(serverEnv({ DATA_DIR: file, SECRET_KEY: TEST_SECRET_KEY }), ["org", "list"])
  expect(result.code).toBe(1)
  expect(result.stdout).toBe("")
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith(`cannot start the embedded database: cannot run the embedded database in ${file}`)
  expect(lines[0]).toContain("set DATABASE_URL")
  expect(result.stderr).not.toMatch(/^\s+at /m)
  expect(result.stderr).not.toContain("EmbeddedDatabaseError")
  expect(result.stderr).not.toContain('"cause"')
}, 30_000)

test("DATABASE_URL unreachable: the server's one line naming the address, never the password, exit 1", async () => {
  // Port 1 on loopback: nothing listens there. The admin tool does not retry: it fails at once.
  const env = serverEnv({ DATABASE_URL: "postgres://app:pw-Secret-31@127.0.0.1:1/x", SECRET_KEY: TEST_SECRET_KEY })
  const result = await admin(env, ["org", "list"])
  expect(result.code).toBe(1)
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith("cannot connect to the database at postgresql://127.0.0.1:1/x (DATABASE_URL)")
  expect(result.stderr).not.toContain("pw-Secret-31")
  expect(result.stderr).not.toMatch(/^\s+at /m)
}, 30_000)
