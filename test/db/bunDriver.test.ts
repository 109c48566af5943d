import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Reactivity } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { ConfigProvider, Deferred, Effect, Fiber, Layer, ManagedRuntime, type Scope } from "effect"
import fc from "fast-check"
import { AppConfigLive } from "../../src/platform/config.ts"
import * as BunPg from "../../src/platform/db/bunPg.ts"
import { DatabaseLive } from "../../src/platform/db/client.ts"
import { readRows } from "../../src/platform/db/directReads.ts"
import { migrate } from "../../src/platform/db/migrate.ts"
import { testEnv } from "../support/server.ts"

/**
 * Bun's built-in PostgreSQL client (platform/db/bunPg.ts) under the same statements as the `pg` driver: every column
 * type the schema uses reads back the same through both (value and JavaScript type), whichever wrote it; parameters
 * of every kind the repositories pass, including `sql.json` and JSON text cast to jsonb; errors carry PostgreSQL's
 * SQLSTATE as `code`; transactions and savepoints roll back; several statements run as one (migrations).
 */

const ROOT = join(import.meta.dir, "..", "..")
const env = await testEnv()

type Driver = "pg" | "bun"
/** One client of each driver for the whole file, on the same database (embedded or the run's PostgreSQL). */
const clientOf = (driver: Driver) =>
  ManagedRuntime.make(
    DatabaseLive.pipe(
      Layer.provide(AppConfigLive),
      Layer.provide(
        Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ ...env, DATABASE_DRIVER: driver })))),
      ),
    ),
  )
const clients = { pg: clientOf("pg"), bun: clientOf("bun") }
const run = <A, E>(
  driver: Driver,
  effect: Effect.Effect<A, E, SqlClient.SqlClient | PgClient.PgClient | Scope.Scope>,
) => clients[driver].runPromise(Effect.scoped(effect))

beforeAll(async () => {
  await run("pg", migrate)
})
afterAll(async () => {
  await clients.bun.dispose()
  await clients.pg.dispose()
  if (env.DATA_DIR !== undefined) rmSync(env.DATA_DIR, { recursive: true, force: true })
})

/** A value with its JavaScript type, so `"1"` and `1`, a Buffer and a Uint8Array, are told apart. */
const typed = (value: unknown): unknown => {
  if (value === null || value === undefined) return value
  if (value instanceof Date) return ["Date", value.toISOString()]
  if (Array.isArray(value)) return ["Array", value.map(typed)]
  if (value instanceof Uint8Array) return [value.constructor.name, [...value]]
  if (typeof value === "object")
    return [
      "Object",
      Object.fromEntries(
        Object.entries(value as Record<string, unknown>)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([k, v]) => [k, typed(v)]),
      ),
    ]
  return [typeof value, value]
}

const TABLE = `driver_parity_${process.pid}`
// One column of each type the schema uses (the first test checks that the list is complete).
const COLUMNS = {
  big: "bigint",
  flag: "boolean",
  bytes: "bytea",
  net: "cidr",
  small: "integer",
  doc: "jsonb",
  words: "text",
  list: "text[]",
  at: "timestamp with time zone",
  tx: "xid8",
} as const

const schemaTypes = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ type: string }>`
    select distinct format_type(a.atttypid, a.atttypmod) as type
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped
      and c.relname not like 'driver_parity_%'
    order by 1`,
).pipe(Effect.map((rows) => rows.map((r) => r.type)))

const text = fc.string({ unit: "grapheme", maxLength: 40 }).map((s) => s.replaceAll("\u0000", ""))
const jsonDoc = fc.dictionary(
  text,
  fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(text, { maxLength: 3 })),
  { maxKeys: 5 },
)
const row = fc.record({
  big: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  flag: fc.boolean(),
  bytes: fc.uint8Array({ maxLength: 32 }).map((b) => Buffer.from(b)),
  net: fc
    .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 8, max: 32 }))
    .map(([a, b, bits]) => `${bits >= 16 ? a : 0}.${bits >= 24 ? b : 0}.0.0/${Math.min(bits, 16)}`),
  small: fc.integer(),
  doc: jsonDoc,
  words: text,
  list: fc.array(text, { maxLength: 4 }),
  at: fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true }),
  nullable: fc.boolean(),
})
type Row = typeof row extends fc.Arbitrary<infer A> ? A : never

/** Writes `r` through the driver: jsonb once as `sql.json` (the events' column) and once as JSON text (the batches). */
const write = (r: Row, id: number) =>
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    yield* sql`insert into ${sql(TABLE)} (id, big, flag, bytes, net, small, doc, doc_text, words, list, at, tx)
      values (${id}, ${r.nullable ? null : r.big}, ${r.flag}, ${r.bytes}, ${r.net}::cidr, ${r.small}, ${sql.json(r.doc)},
        ${JSON.stringify(r.doc)}::text::jsonb, ${r.words}, ${r.list}, ${r.at}, pg_current_xact_id())`
  })

const read = (id: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`select *, count(*) over () as total, null::text as nothing from ${sql(TABLE)} where id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** The same row by a statement without parameters: Bun runs it as a simple query, whose values come as text. */
const readUnprepared = (id: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe(`select *, count(*) over () as total, null::text as nothing from ${TABLE} where id = ${Number(id)}`),
  ).pipe(Effect.map((rows) => rows[0]))

describe("Bun's PostgreSQL client behind the service's SQL client", () => {
  test("the schema uses no column type this test does not compare", async () => {
    const used = await run("pg", schemaTypes)
    expect(used.length).toBeGreaterThan(5)
    expect(used.filter((t) => !(Object.values(COLUMNS) as ReadonlyArray<string>).includes(t))).toEqual([])
  })

  test("every column type reads the same through both drivers, whichever wrote it", async () => {
    const columns = Object.entries(COLUMNS)
      .map(([name, type]) => `${name} ${type}`)
      .join(", ")
    await run(
      "pg",
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe(`create table ${TABLE} (id integer primary key, ${columns}, doc_text jsonb)`),
      ),
    )
    try {
      let id = 0
      await fc.assert(
        fc.asyncProperty(row, async (r) => {
          for (const writer of ["pg", "bun"] as const) {
            id++
            await run(writer, write(r, id))
            const [viaPg, viaBun] = [await run("pg", read(id)), await run("bun", read(id))]
            expect(typed(viaBun)).toEqual(typed(viaPg))
            expect(typed(await run("bun", readUnprepared(id)))).toEqual(typed(viaPg))
            // And what was written is what was meant.
            const back = viaPg as Record<string, unknown>
            expect(typed(back.doc)).toEqual(typed(r.doc))
            expect(typed(back.docText)).toEqual(typed(r.doc))
            expect(back.big).toBe(r.nullable ? null : r.big)
            expect(back.list).toEqual(r.list)
            expect((back.at as Date).getTime()).toBe(r.at.getTime())
            expect([...(back.bytes as Uint8Array)]).toEqual([...r.bytes])
          }
        }),
        { numRuns: 200 },
      )
    } finally {
      await run(
        "pg",
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`drop table if exists ${TABLE}`)),
      )
    }
  }, 120_000)

  test("no statement (the service's or a test's) casts a parameter straight to json: Bun's client would send a string as a JSON string", () => {
    const offenders: Array<string> = []
    for (const file of new Bun.Glob("{src,test}/**/*.ts").scanSync({ cwd: ROOT })) {
      if (file.endsWith("bunDriver.test.ts")) continue
      const source = readFileSync(join(ROOT, file), "utf8")
      for (const m of source.matchAll(/(?:\}|\$\d+)::jsonb?\b/g))
        offenders.push(`${file}: …${source.slice(m.index - 40, m.index + 8)}`)
    }
    expect(offenders).toEqual([])
  })

  test("a failed statement carries PostgreSQL's SQLSTATE as the cause's code, as with pg", async () => {
    const codeOf = (driver: Driver, statement: string) =>
      run(
        driver,
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(
          Effect.flip,
          Effect.map((e) => (e.cause as { code?: unknown }).code),
        ),
      )
    for (const [statement, code] of [
      ["select 1/0", "22012"],
      ["select * from no_such_table", "42P01"],
      ["select 'x'::int", "22P02"],
    ] as const) {
      expect(await codeOf("pg", statement)).toBe(code)
      expect(await codeOf("bun", statement)).toBe(code)
    }
  })

  test("transactions commit and roll back, savepoints too, on one reserved connection", async () => {
    const outcome = await run(
      "bun",
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`create temporary table if not exists t_tx (n integer)`.pipe(Effect.ignore)
        const table = `driver_tx_${process.pid}`
        yield* sql.unsafe(`create table ${table} (n integer)`)
        yield* sql.withTransaction(sql`insert into ${sql(table)} values (1)`)
        yield* sql
          .withTransaction(Effect.zipRight(sql`insert into ${sql(table)} values (2)`, Effect.fail("undo" as const)))
          .pipe(Effect.ignore)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`insert into ${sql(table)} values (3)`
            yield* sql
              .withTransaction(Effect.zipRight(sql`insert into ${sql(table)} values (4)`, Effect.fail("inner")))
              .pipe(Effect.ignore)
            // The same session: its backend pid is the transaction's.
            const [a, b] = yield* Effect.all([sql`select pg_backend_pid() as p`, sql`select pg_backend_pid() as p`])
            if (a?.[0]?.p !== b?.[0]?.p) return yield* Effect.die("two sessions in one transaction")
          }),
        )
        const rows = yield* sql<{ n: number }>`select n from ${sql(table)} order by n`
        yield* sql.unsafe(`drop table ${table}`)
        return rows.map((r) => r.n)
      }),
    )
    expect(outcome).toEqual([1, 3])
  })

  test("a statement that finds no free connection fails within the pool's wait as busy; a held one at the query time-out; every permit comes back", async () => {
    const url = await run(
      "bun",
      Effect.map(PgClient.PgClient, (pg) => pg.config.url),
    )
    if (url === undefined) throw new Error("no URL")
    const table = `driver_wait_${process.pid}`
    await run(
      "pg",
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`create table ${table} (n integer)`)),
    )
    const outcome = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* BunPg.make({
            url,
            maxConnections: 2,
            applicationName: "driver-wait-test",
            poolWait: "300 millis",
            queryTimeout: "900 millis",
          })
          // Another session holds the table, so the pool's two connections wait on it.
          const lock = yield* BunPg.make({
            url,
            maxConnections: 1,
            applicationName: "driver-wait-lock",
            poolWait: "1 second",
          })
          const held = yield* Deferred.make<void>()
          const done = yield* Deferred.make<void>()
          yield* Effect.forkScoped(
            lock.withTransaction(
              Effect.zipRight(
                lock.unsafe(`lock table ${table} in access exclusive mode`),
                Effect.zipRight(Deferred.succeed(held, undefined), Deferred.await(done)),
              ),
            ),
          )
          yield* Deferred.await(held)
          const started = Date.now()
          const attempt = (statement: Effect.Effect<unknown, unknown>) =>
            statement.pipe(
              Effect.map(() => "ok"),
              Effect.catchAll((e) => Effect.succeed(String((e as { cause?: unknown }).cause))),
              Effect.map((what) => ({ what, ms: Date.now() - started })),
            )
          const read = sql`select count(*) from ${sql(table)}`
          // The one-step read (readRows) waits and times out as a statement does, and shares the pool with them.
          const direct = readRows(sql, `select count(*) from ${table}`, [])
          const results = yield* Effect.all(
            [attempt(read), attempt(direct), attempt(read), attempt(sql.withTransaction(read)), attempt(direct)],
            { concurrency: "unbounded" },
          )
          yield* Deferred.succeed(done, undefined)
          // Every permit is back: as many statements as connections run at once, and a transaction.
          const after = yield* Effect.all([read, direct, sql.withTransaction(read)], { concurrency: "unbounded" })
          return { results, after: after.length }
        }),
      ).pipe(Effect.provide(Reactivity.layer)),
    )
    await run(
      "pg",
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`drop table ${table}`)),
    )
    const timedOut = outcome.results.filter((r) => r.what.includes("Query read timeout"))
    const noConnection = outcome.results.filter((r) => r.what.includes("timeout exceeded when trying to connect"))
    expect(timedOut.length).toBe(2)
    expect(noConnection.length).toBe(3)
    for (const r of noConnection) expect(r.ms).toBeLessThan(850)
    for (const r of timedOut) expect(r.ms).toBeGreaterThanOrEqual(850)
    expect(outcome.after).toBe(3)
  }, 30_000)

  test("a one-step read (readRows) gives the statement's rows on both drivers, and inside a transaction runs on its connection", async () => {
    const table = `driver_direct_${process.pid}`
    await run(
      "pg",
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe(`create table ${table} (id integer, at timestamptz, doc jsonb, words text[], big bigint)`),
      ),
    )
    const statement = `select *, $1::text as echo from ${table} where id >= $2 order by id`
    const outcome = (driver: Driver) =>
      run(
        driver,
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe(
            `insert into ${table} values (1, '2026-01-02T03:04:05.678Z', '{"a":[1,"x"]}', '{a,"b c"}', 9007199254740993)`,
          )
          const direct = yield* readRows<object>(sql, statement, ["é\u{1F600}", 0])
          const plain = yield* sql.unsafe<object>(statement, ["é\u{1F600}", 0]).withoutTransform
          // In a transaction the read sees the transaction's own uncommitted row, from the same session.
          let inside: { ids: ReadonlyArray<number>; samePid: boolean } | undefined
          yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* sql.unsafe(`insert into ${table} values (2, null, null, null, null)`)
                const rows = yield* readRows<{ id: number }>(sql, statement, ["t", 0])
                const [a, b] = yield* Effect.all([
                  readRows<{ p: number }>(sql, "select pg_backend_pid() as p", []),
                  sql<{ p: number }>`select pg_backend_pid() as p`,
                ])
                inside = { ids: rows.map((r) => r.id), samePid: a[0]?.p === b[0]?.p }
                return yield* Effect.fail("undo" as const)
              }),
            )
            .pipe(
              Effect.catchIf(
                (e) => e === "undo",
                () => Effect.void,
              ),
            )
          const afterUndo = yield* readRows<{ id: number }>(sql, statement, ["t", 0])
          yield* sql.unsafe(`delete from ${table}`)
          return { direct: typed(direct), plain: typed(plain), inside, afterUndo: afterUndo.map((r) => r.id) }
        }),
      )
    const bun = await outcome("bun")
    const pg = await outcome("pg")
    await run(
      "pg",
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`drop table ${table}`)),
    )
    expect(bun.direct).toEqual(bun.plain)
    expect(pg.direct).toEqual(pg.plain)
    expect(bun.inside).toEqual({ ids: [1, 2], samePid: true })
    expect(pg.inside).toEqual({ ids: [1, 2], samePid: true })
    expect(bun.afterUndo).toEqual([1])
    expect(pg.afterUndo).toEqual([1])
  })

  test("a one-step read interrupted while it waits or while it runs gives its connection back, its query cancelled", async () => {
    const url = await run(
      "bun",
      Effect.map(PgClient.PgClient, (pg) => pg.config.url),
    )
    if (url === undefined) throw new Error("no URL")
    const outcome = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* BunPg.make({
            url,
            maxConnections: 1,
            applicationName: "driver-direct-interrupt",
            poolWait: "2 seconds",
            queryTimeout: "5 seconds",
          })
          const sleep = readRows(sql, "select pg_sleep(30)", [])
          // The running one holds the only connection; the second waits for it. Both are interrupted.
          const running = yield* Effect.fork(sleep)
          yield* Effect.sleep("200 millis")
          const waiting = yield* Effect.fork(sleep)
          yield* Effect.sleep("200 millis")
          const started = Date.now()
          yield* Fiber.interrupt(waiting)
          yield* Fiber.interrupt(running)
          // The connection is free and idle at once: a read gets it and answers well within the pool's wait.
          const rows = yield* readRows<{ n: number }>(sql, "select 1 as n", [])
          return { n: rows[0]?.n, ms: Date.now() - started }
        }),
      ).pipe(Effect.provide(Reactivity.layer)),
    )
    expect(outcome.n).toBe(1)
    expect(outcome.ms).toBeLessThan(1500)
  }, 30_000)

  test("connections a burst opened are closed once idle for 10 s, as pg's pool closes them", async () => {
    const url = await run(
      "bun",
      Effect.map(PgClient.PgClient, (pg) => pg.config.url),
    )
    if (url === undefined) throw new Error("no URL")
    const name = `driver-idle-${process.pid}`
    const count = Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where application_name = ${name}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? -1),
      ),
    )
    const seen = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* BunPg.make({ url, maxConnections: 6, applicationName: name, poolWait: "2 seconds" })
          yield* Effect.all(
            Array.from({ length: 6 }, () => sql`select pg_sleep(0.2)`),
            { concurrency: "unbounded" },
          )
          const open = yield* Effect.promise(() => run("pg", count))
          yield* Effect.sleep("12 seconds")
          const later = yield* Effect.promise(() => run("pg", count))
          return { open, later }
        }),
      ).pipe(Effect.provide(Reactivity.layer)),
    )
    expect(seen.open).toBeGreaterThanOrEqual(2)
    expect(seen.later).toBe(0)
  }, 30_000)

  test("several statements without parameters run as one, as a migration file does", async () => {
    const table = `driver_multi_${process.pid}`
    const n = await run(
      "bun",
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(`create table ${table} (n integer); insert into ${table} values (1), (2); -- a comment
          insert into ${table} values (3);`)
        const rows = yield* sql<{ c: number }>`select count(*)::int as c from ${sql(table)}`
        yield* sql.unsafe(`drop table ${table}`)
        return rows[0]?.c
      }),
    )
    expect(n).toBe(3)
  })
})
