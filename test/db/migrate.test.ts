import { afterAll, describe, expect, test } from "bun:test"
import { rmSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { readMigrations } from "../../src/db/migrate.ts"
import { admin } from "../support/cli.ts"
import { testDatabase } from "../support/db.ts"
import { testEnv, usingPostgres } from "../support/server.ts"

const created: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const drop of created) await drop()
})

/** A database no test has touched: a fresh DATA_DIR, or a fresh PostgreSQL database. */
const freshEnv = async () => {
  const env = testEnv()
  if (!usingPostgres()) {
    created.push(async () => rmSync(env.DATA_DIR as string, { recursive: true, force: true }))
    return env
  }
  const name = `dsvc_mig_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`
  const base = testDatabase(env)
  await base.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`create database ${name}`)))
  await base.close()
  const url = new URL(env.DATABASE_URL as string)
  url.pathname = `/${name}`
  created.push(async () => {
    const db = testDatabase(env)
    await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`drop database if exists ${name} with (force)`)),
    )
    await db.close()
  })
  return { ...env, DATABASE_URL: url.toString() }
}

describe("migrations", () => {
  test("two processes migrating one fresh database together apply each migration exactly once", async () => {
    const env = await freshEnv()
    const results = await Promise.all([admin(env, ["migrate"]), admin(env, ["migrate"]), admin(env, ["migrate"])])
    for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    const db = testDatabase(env)
    const rows = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ version: string }>`select version from schema_migrations order by version`,
      ),
    )
    await db.close()
    expect(rows.map((r) => r.version)).toEqual(readMigrations().map((m) => m.version))
  })
})
