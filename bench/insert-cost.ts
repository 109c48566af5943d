/**
 * `bun bench/insert-cost.ts --db <dsvc_bench_*> [--rows N] [--rounds R]`
 *
 * What PostgreSQL spends storing one event, part by part: N events (default 20,000) shaped as ingestion stores them
 * (copies of the ingesting organization's newest events, as `bun run bench ingest --db …` left them, with new ids and
 * the current time) inserted into `events` in one statement inside a transaction that is rolled back, with:
 *   1. everything as the schema has it (primary key, the idempotency key, every secondary index, the foreign-key
 *      checks, the attacker-input size trigger),
 *   2. without the trigger,
 *   3. without the trigger and the foreign-key checks (`session_replication_role = replica`, in that transaction only),
 *   4. as 3, and without the secondary indexes (dropped inside the transaction; the rollback restores them),
 * R rounds each (default 5), alternated, the median printed per row in µs of the statement's time (one backend on an
 * otherwise quiet machine: its time is its CPU). Each part's cost is the difference between two neighbouring lines.
 * What it leaves out is what the ingest path adds around the insert: the Cowrie and ignore-rule lookups, the incident
 * upserts, the feed rows, the advisory locks and the commit. Nothing is kept: every transaction is rolled back.
 */
import { SQL } from "bun"
import { median, round, scriptOptions, table } from "./lib/common.ts"
import { databaseUrl } from "./lib/pg.ts"
import { loadManifest } from "./lib/seed.ts"

const { option, database } = scriptOptions("bun bench/insert-cost.ts --db <dsvc_bench_*> [--rows N] [--rounds R]")
const rows = Number(option("--rows", "20000"))
const rounds = Number(option("--rounds", "5"))

const url = databaseUrl(database)
const manifest = await loadManifest({ databaseUrl: url })
if (manifest === undefined) throw new Error(`${database} has no seed manifest`)
const orgId = manifest.ingest.orgId
const sql = new SQL({ url, max: 1 })
const [have] = await sql`select count(*)::int as n from events where org_id = ${orgId}`
if (Number((have as { n: number }).n) < rows) {
  console.error(
    `the ingesting organization holds ${(have as { n: number }).n} events, fewer than ${rows}: run \`bun run bench ingest --db ${database}\` first`,
  )
  process.exit(2)
}

// One session throughout: the source rows are a temporary table of this connection.
const session = await sql.reserve()
await session.unsafe(
  `create temp table insert_cost_rows as
     select * from events where org_id = $1 and ignore_rule_id is null order by received_at desc limit ${rows}`,
  [orgId],
)
await session.unsafe(`update insert_cost_rows set id = 'cost' || id, sensor_event_id = 'cost' || sensor_event_id,
  time = now() + random() * interval '1 second', received_at = now()`)
await session.unsafe("analyze insert_cost_rows")

const secondary = (
  (await session.unsafe(
    `select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid
     where x.indrelid = 'events'::regclass and not x.indisprimary and not x.indisunique order by 1`,
  )) as Array<{ name: string }>
).map((r) => r.name)

const VARIANTS = [
  { name: "everything as stored", setup: [] as Array<string> },
  { name: "without the trigger", setup: ["alter table events disable trigger events_attacker_input_bytes"] },
  { name: "… and without the foreign-key checks", setup: ["set local session_replication_role = replica"] },
  {
    name: `… and without the ${secondary.length} secondary indexes`,
    setup: ["set local session_replication_role = replica", `drop index ${secondary.join(", ")}`],
  },
] as const

const timings: Array<Array<number>> = VARIANTS.map(() => [])
for (let r = 0; r < rounds; r++) {
  for (const [i, variant] of VARIANTS.entries()) {
    await session.unsafe("begin")
    try {
      for (const statement of variant.setup) await session.unsafe(statement)
      const started = performance.now()
      await session.unsafe("insert into events select * from insert_cost_rows")
      timings[i]?.push(((performance.now() - started) * 1000) / rows)
    } finally {
      await session.unsafe("rollback")
    }
  }
}
session.release()
await sql.close()

const medians = timings.map(median)
console.log(
  `events stored in one statement, ${rows} rows, ${rounds} rounds (median; secondary indexes: ${secondary.join(", ")})\n`,
)
console.log(
  table(
    ["what the insert does", "µs per row", "the part left out costs", "rounds"],
    VARIANTS.map((variant, i) => [
      variant.name,
      round(medians[i] ?? Number.NaN, 1),
      i === 0 ? "-" : round((medians[i - 1] ?? Number.NaN) - (medians[i] ?? Number.NaN), 1),
      (timings[i] ?? []).map((t) => round(t, 0)).join(" "),
    ]),
  ),
)
