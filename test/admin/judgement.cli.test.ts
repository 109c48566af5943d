import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { admin } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * `bun run admin network …` and `bait …` as an operator types them: the networks from a file or standard input, a
 * bait password from standard input (never echoed, never stored, never in the audit trail), every refusal one line.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const cli = (args: ReadonlyArray<string>, stdin = "") => admin(server.env, args, stdin)

test("network set, list and reset through the CLI, audited; a bad line is refused with its number", async () => {
  const { orgId } = await createTenant(db, "CLI networks")
  const before = await cli(["network", "list", "--org", orgId, "--json"])
  expect(JSON.parse(before.stdout)).toMatchObject({ custom: false })

  const set = await cli(["network", "set", "--org", orgId, "--networks", "-"], "10.20.0.0/16 Office LAN\n")
  expect(set.code).toBe(0)
  expect(set.stdout).toContain("1 networks")
  const listed = await cli(["network", "list", "--org", orgId])
  expect(listed.stdout).toContain("10.20.0.0/16")
  expect(listed.stdout).toContain("Office LAN")

  const bad = await cli(["network", "set", "--org", orgId, "--networks", "-"], "10.0.0.0/8 ok\nnot-a-network x\n")
  expect(bad.code).toBe(1)
  expect(bad.stderr.split("\n")).toHaveLength(1)
  expect(bad.stderr).toContain("line 2")

  // A list past 1 MiB is refused in one line, whatever it holds, before anything is judged.
  const huge = await cli(["network", "set", "--org", orgId, "--networks", "-"], "# padding\n".repeat(120_000))
  expect(huge.code).toBe(1)
  expect(huge.stderr).toBe("error: --networks: the list is larger than 1 MiB")

  expect((await cli(["network", "reset", "--org", orgId])).stdout).toContain("the default private ranges")
  const actions = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ action: string }>`select action from audit_log where org_id = ${orgId} order by at, id`,
    ),
  )
  expect(actions.map((a) => a.action).filter((a) => a.startsWith("networks."))).toEqual([
    "networks.set",
    "networks.reset",
  ])
})

test("bait add reads the password from standard input; no output, list or audit row holds it", async () => {
  const { orgId } = await createTenant(db, "CLI bait")
  const added = await cli(
    ["bait", "add", "--org", orgId, "--username", "svc_backup", "--password", "-", "--label", "fs-01 share", "--json"],
    "S3cret-planted!\n",
  )
  expect(added.code).toBe(0)
  const { id } = JSON.parse(added.stdout) as { id: string }
  const listed = await cli(["bait", "list", "--org", orgId, "--json"])
  expect(JSON.parse(listed.stdout)).toEqual([
    { id, username: "svc_backup", label: "fs-01 share", createdAt: expect.any(String) },
  ])
  const stored = await db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.all([
        sql`select * from bait_credentials where org_id = ${orgId}`,
        sql`select * from audit_log where org_id = ${orgId}`,
      ]),
    ),
  )
  for (const text of [added.stdout, added.stderr, listed.stdout, JSON.stringify(stored)]) {
    expect(text).not.toContain("S3cret-planted!")
  }
  const missing = await cli(["bait", "add", "--org", orgId, "--username", "x"])
  expect(missing.code).toBe(1)
  expect(missing.stderr).toBe("error: --password is required")
  expect((await cli(["bait", "remove", id])).stdout).toContain("removed")
  const unknown = await cli(["bait", "remove", id])
  expect(unknown.code).toBe(1)
  expect(unknown.stderr).toContain("unknown bait credential")
})
