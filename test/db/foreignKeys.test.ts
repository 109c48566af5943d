import { afterAll, expect, test } from "bun:test"
import { readdirSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { admin } from "../support/cli.ts"
import { testDatabase } from "../support/db.ts"
import { testEnv } from "../support/server.ts"

const env = await testEnv()
afterAll(() => {
  if (env.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true })
})

/** Every table the service's code deletes rows from (`delete from <table>` in src/). */
const deletedTables = (): ReadonlySet<string> => {
  const root = join(import.meta.dir, "..", "..", "src")
  const tables = new Set<string>()
  for (const file of readdirSync(root, { recursive: true }) as Array<string>) {
    if (!/\.tsx?$/.test(file)) continue
    for (const match of readFileSync(join(root, file), "utf8").matchAll(/delete from ([a-z_]+)/g))
      if (match[1]) tables.add(match[1])
  }
  return tables
}

/**
 * Deleting a row makes PostgreSQL look for rows referencing it in every table with a foreign key to it; without an
 * index starting with the referencing column, that look reads the whole table. The retention purge deletes incidents
 * out of tens of millions of events: with `events (incident_id)` unindexed it spent about 30 s per batch and never
 * finished. So every foreign key to a table the service deletes from has such an index.
 */
test("every foreign key to a table the service deletes rows from has an index starting with its column", async () => {
  const migrated = await admin(env, ["migrate"])
  expect({ code: migrated.code, stderr: migrated.stderr }).toEqual({ code: 0, stderr: "" })
  const db = testDatabase(env)
  try {
    const keys = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ table: string; referenced: string; column: string; indexed: boolean }>`
          select c.conrelid::regclass::text as table, c.confrelid::regclass::text as referenced, a.attname as column,
            exists (select 1 from pg_index i where i.indrelid = c.conrelid and i.indkey[0] = c.conkey[1]) as indexed
          from pg_constraint c
          join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
          where c.contype = 'f' and c.connamespace = 'public'::regnamespace
          order by 1, 3`,
      ),
    )
    const deleted = deletedTables()
    // The check reads what it means to: the purge's tables are among those deleted from, and referenced.
    expect([...deleted]).toEqual(expect.arrayContaining(["incidents", "incident_transitions", "webhook_deliveries"]))
    const watched = keys.filter((k) => deleted.has(k.referenced))
    expect(watched.map((k) => `${k.table}.${k.column}`)).toEqual(
      expect.arrayContaining([
        "events.incident_id",
        "webhook_deliveries.incident_id",
        "webhook_deliveries.transition_id",
      ]),
    )
    expect(watched.filter((k) => !k.indexed).map((k) => `${k.table}.${k.column} → ${k.referenced}`)).toEqual([])
  } finally {
    await db.close()
  }
}, 120_000)
