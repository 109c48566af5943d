import { closeSync, createReadStream, createWriteStream, fsyncSync, openSync, renameSync, rmSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { createInterface } from "node:readline"
import { createGunzip, createGzip } from "node:zlib"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ADMIN_APPLICATION, APPLICATION_PREFIX } from "../platform/db/client.ts"
import { KEY_CACHE_APPLICATION_NAME } from "../repos/ApiKeysRepo.ts"
import { AdminActor } from "./actor.ts"
import { Forbidden, invalid } from "./errors.ts"

/**
 * D49: `admin backup` / `admin restore`, in the service itself (no pg_dump: the embedded package ships none, and an
 * older system one refuses a PostgreSQL 18 server).
 *
 * The file is gzip'd JSON lines: a header {format, version, migrations, createdAt, tables (name, columns, rows),
 * sequences}; then per table a line {table, rows} and its rows, one `row_to_json` object a line (bytea as \x hex,
 * timestamptz with microseconds and offset, arrays and jsonb as JSON: each type's own text, so the restore's
 * `json_populate_recordset` gives back the very values); then {end, rows}. Every row comes from one REPEATABLE READ,
 * READ ONLY transaction: one snapshot, taken while the service keeps ingesting, with no xid of its own (the feeds'
 * horizon does not wait for it).
 */
export const BACKUP_FORMAT = "decoy-incident-service-backup"
export const BACKUP_VERSION = 1

/** Rows per FETCH of the backup's cursor, and per INSERT of the restore (or fewer, by size): memory stays bounded. */
const PAGE_ROWS = 1000
const BATCH_BYTES = 4 * 1024 * 1024

/**
 * The change feeds' positions (sql/0015_change_feeds.sql): (change_xid, change_seq), where change_xid is an xid of the
 * cluster that wrote the row. Another cluster's xids mean nothing (a restored xid above the new cluster's would hide
 * the row from the feeds until its xids got there), so the restore gives every restored change the restoring
 * transaction's xid and new sequence numbers in the old order (the file holds each organization's changes in
 * position order), and sets the sequence after them.
 */
const FEED_TABLES: ReadonlySet<string> = new Set(["events", "incident_changes"])
const FEED_SEQUENCE = "feed_change_seq"
const FEED_ORDER = ["org_id", "change_xid", "change_seq"]
/**
 * Columns the restore writes itself: the feeds' xids, and the purge's mark (sql/0028), whose old position lies before
 * every restored change and so becomes the start of the restored ones.
 */
const RESTORED_AS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  events: { change_xid: "pg_current_xact_id()" },
  incident_changes: { change_xid: "pg_current_xact_id()" },
  feed_purges: { purged_xid: "pg_current_xact_id()", purged_seq: "0" },
}
/** incidents' insert trigger logs a change per row; the restore drops those and loads the logged ones instead. */
const TRIGGER_LOGGED: Readonly<Record<string, string>> = { incident_changes: "incidents" }

interface TableInfo {
  readonly name: string
  readonly columns: ReadonlyArray<string>
  readonly order: ReadonlyArray<string>
}
interface Header {
  readonly format: string
  readonly version: number
  readonly migrations: ReadonlyArray<string>
  readonly createdAt: string
  readonly tables: ReadonlyArray<{ readonly name: string; readonly columns: ReadonlyArray<string>; rows: number }>
  readonly sequences: ReadonlyArray<{ readonly name: string; readonly lastValue: string; readonly isCalled: boolean }>
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`

const requireOperator = Effect.flatMap(AdminActor, (actor) =>
  actor._tag === "Operator"
    ? Effect.void
    : Effect.fail(new Forbidden({ message: "Only an operator (bun run admin) can do this." })),
)

/** Parents before children (foreign keys), ties by name, so the restore inserts in an order every key accepts. */
const dependencyOrder = (names: ReadonlyArray<string>, edges: ReadonlyArray<{ child: string; parent: string }>) => {
  const parents = new Map(names.map((n) => [n, new Set<string>()]))
  for (const { child, parent } of edges) if (child !== parent) parents.get(child)?.add(parent)
  for (const [child, parent] of Object.entries(TRIGGER_LOGGED)) parents.get(child)?.add(parent)
  const done: Array<string> = []
  const left = new Set([...names].sort())
  while (left.size > 0) {
    const ready = [...left].find((n) => [...(parents.get(n) ?? [])].every((p) => !left.has(p) || p === n))
    // A cycle of foreign keys: none of today's schema has one; refuse rather than write an order that fails.
    if (ready === undefined) throw new Error(`foreign keys form a cycle among: ${[...left].join(", ")}`)
    done.push(ready)
    left.delete(ready)
  }
  return done
}

/** The service's tables (all of its schema but schema_migrations), with columns and row order, in dependency order. */
const catalog = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const columns = yield* sql<{ table: string; column: string }>`
      select c.relname as table, a.attname as column
      from pg_class c join pg_attribute a on a.attrelid = c.oid
      where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p')
        and c.relname <> 'schema_migrations' and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
      order by c.relname, a.attnum`
    const keys = yield* sql<{ table: string; column: string }>`
      select c.relname as table, a.attname as column
      from pg_index i join pg_class c on c.oid = i.indrelid
        join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
      where i.indisprimary and c.relnamespace = current_schema()::regnamespace
      order by c.relname, array_position(i.indkey::int2[], a.attnum)`
    const edges = yield* sql<{ child: string; parent: string }>`
      select c.relname as child, p.relname as parent
      from pg_constraint k join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid
      where k.contype = 'f' and c.relnamespace = current_schema()::regnamespace`
    const byTable = new Map<string, Array<string>>()
    for (const r of columns) byTable.set(r.table, [...(byTable.get(r.table) ?? []), r.column])
    const pk = new Map<string, Array<string>>()
    for (const r of keys) pk.set(r.table, [...(pk.get(r.table) ?? []), r.column])
    return dependencyOrder([...byTable.keys()], edges).map(
      (name): TableInfo => ({
        name,
        columns: byTable.get(name) ?? [],
        order: FEED_TABLES.has(name) ? FEED_ORDER : (pk.get(name) ?? byTable.get(name) ?? []),
      }),
    )
  })

const appliedMigrations = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ version: string; name: string }>`select version, name from schema_migrations order by version`,
    (rows) => rows.map((r) => `${r.version}_${r.name}`),
  )

/** Lines to a gzip'd file, waiting whenever the stream asks to (bounded memory). */
const openWriter = (path: string) => {
  const file = createWriteStream(path, { mode: 0o600, flags: "wx" })
  const gzip = createGzip()
  gzip.pipe(file)
  let failure: Error | undefined
  const fail = (e: Error) => {
    failure ??= e
  }
  file.on("error", fail)
  gzip.on("error", fail)
  return {
    write: (line: string) =>
      new Promise<void>((resolve, reject) => {
        if (failure) return reject(failure)
        if (gzip.write(`${line}\n`)) return resolve()
        gzip.once("drain", () => (failure ? reject(failure) : resolve()))
      }),
    end: () =>
      new Promise<void>((resolve, reject) => {
        if (failure) return reject(failure)
        file.once("close", () => (failure ? reject(failure) : resolve()))
        file.once("error", reject)
        gzip.end()
      }),
    destroy: () => {
      gzip.destroy()
      file.destroy()
    },
  }
}

/** The file's lines, one at a time; a damaged or truncated gzip stream fails the read that meets it. */
const openReader = (path: string) => {
  const input = createReadStream(path)
  const gunzip = createGunzip()
  input.pipe(gunzip)
  input.on("error", (e) => gunzip.destroy(e))
  const lines = createInterface({ input: gunzip, crlfDelay: Number.POSITIVE_INFINITY })[Symbol.asyncIterator]()
  let lineNo = 0
  const damaged = (why: string) =>
    invalid(`${path} is not a complete backup (${why}): it is damaged or was cut short; nothing was restored`)
  return {
    next: Effect.tryPromise({
      try: () => lines.next(),
      catch: (e) => damaged(e instanceof Error ? e.message : String(e)),
    }).pipe(
      Effect.flatMap((r) => (r.done ? Effect.fail(damaged(`it ends after line ${lineNo}`)) : Effect.succeed(r.value))),
      Effect.tap(() => {
        lineNo++
      }),
    ),
    json: (line: string) =>
      Effect.try({ try: () => JSON.parse(line) as unknown, catch: () => damaged(`line ${lineNo} is not JSON`) }),
    damaged,
    close: () => {
      gunzip.destroy()
      input.destroy()
    },
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

export class Backup extends Effect.Service<Backup>()("Backup", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Writes the whole database, as one snapshot, to `file` (atomically: a temporary file renamed, mode 0600). */
    const backup = Effect.fn("Backup.backup")(function* (file: string) {
      yield* requireOperator
      const started = Date.now()
      const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.${Date.now()}.partial`)
      const writer = openWriter(temporary)
      const write = (value: unknown) => Effect.promise(() => writer.write(JSON.stringify(value)))
      const header = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`set transaction isolation level repeatable read, read only`
            const tables = yield* catalog(sql)
            const counts: Array<number> = []
            for (const t of tables) {
              const [row] = yield* sql.unsafe<{ n: string }>(`select count(*)::text as n from ${ident(t.name)}`)
              counts.push(Number(row?.n ?? 0))
            }
            const sequences: Array<Header["sequences"][number]> = []
            const seqNames = yield* sql<{ name: string }>`
              select relname as name from pg_class
              where relkind = 'S' and relnamespace = current_schema()::regnamespace order by relname`
            for (const { name } of seqNames) {
              const [s] = yield* sql.unsafe<{ lastValue: string; isCalled: boolean }>(
                `select last_value::text as last_value, is_called from ${ident(name)}`,
              )
              if (s) sequences.push({ name, lastValue: s.lastValue, isCalled: s.isCalled })
            }
            const header: Header = {
              format: BACKUP_FORMAT,
              version: BACKUP_VERSION,
              migrations: yield* appliedMigrations(sql),
              createdAt: new Date().toISOString(),
              tables: tables.map((t, i) => ({ name: t.name, columns: t.columns, rows: counts[i] ?? 0 })),
              sequences,
            }
            yield* write(header)
            let total = 0
            for (const [i, t] of tables.entries()) {
              yield* write({ table: t.name, rows: counts[i] })
              yield* sql.unsafe(
                `declare backup_rows no scroll cursor for select row_to_json(t)::text as j from ${ident(t.name)} t` +
                  (t.order.length > 0 ? ` order by ${t.order.map((c) => `t.${ident(c)}`).join(", ")}` : ""),
              )
              let written = 0
              for (;;) {
                const page = yield* sql.unsafe<{ j: string }>(`fetch forward ${PAGE_ROWS} from backup_rows`)
                for (const row of page) yield* Effect.promise(() => writer.write(row.j))
                written += page.length
                if (page.length < PAGE_ROWS) break
              }
              yield* sql.unsafe("close backup_rows")
              // One snapshot: the cursor sees exactly the rows the count saw.
              if (written !== counts[i])
                return yield* Effect.dieMessage(`${t.name}: ${written} rows, counted ${counts[i]}`)
              total += written
            }
            yield* write({ end: true, rows: total })
            return header
          }),
        )
        .pipe(
          Effect.zipLeft(Effect.promise(() => writer.end())),
          Effect.onExit((exit) =>
            exit._tag === "Success"
              ? Effect.void
              : Effect.sync(() => {
                  writer.destroy()
                  rmSync(temporary, { force: true })
                }),
          ),
        )
      // Durable before it takes the name: a crash leaves the old file or the whole new one, never a part.
      yield* Effect.sync(() => {
        const fd = openSync(temporary, "r")
        try {
          fsyncSync(fd)
        } finally {
          closeSync(fd)
        }
        renameSync(temporary, file)
      })
      const bytes = Bun.file(file).size
      return {
        file,
        bytes,
        durationMs: Date.now() - started,
        migration: header.migrations.at(-1) ?? null,
        tables: Object.fromEntries(header.tables.map((t) => [t.name, t.rows])),
      }
    })

    /**
     * Loads a backup into this database, which must hold no row: migrations first (the CLI applies them before any
     * command), then every table in dependency order in one transaction, then the sequences. A backup of another
     * migration level is refused: restore it with the version that wrote it, then start this one to upgrade.
     */
    const restore = Effect.fn("Backup.restore")(function* (file: string) {
      yield* requireOperator
      const started = Date.now()
      if (!(yield* Effect.promise(() => Bun.file(file).exists()))) return yield* invalid(`${file}: no such file`)
      const reader = openReader(file)
      return yield* Effect.gen(function* () {
        const header = yield* Effect.flatMap(reader.next, reader.json)
        if (!isRecord(header) || header.format !== BACKUP_FORMAT) {
          return yield* invalid(`${file} is not a backup of this service (bun run admin backup writes one)`)
        }
        if (header.version !== BACKUP_VERSION) {
          return yield* invalid(
            `${file} is a backup of format version ${String(header.version)}; this version reads ${BACKUP_VERSION}`,
          )
        }
        const h = header as unknown as Header
        const ours = yield* appliedMigrations(sql)
        if (JSON.stringify(h.migrations) !== JSON.stringify(ours)) {
          const theirs = h.migrations.at(-1) ?? "none"
          return yield* invalid(
            `${file} was written at migration level ${theirs}; this version is at ${ours.at(-1) ?? "none"}. ` +
              `Restore it with the version that wrote it (its migration ${theirs}) into an empty database, ` +
              `then start this version on that database to upgrade it`,
          )
        }
        const tables = yield* catalog(sql)
        const expected = JSON.stringify(tables.map((t) => [t.name, t.columns]))
        if (JSON.stringify(h.tables.map((t) => [t.name, t.columns])) !== expected) {
          return yield* invalid(
            `${file} holds other tables or columns than this database has at the same migration level`,
          )
        }
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            for (const t of tables) {
              const [row] = yield* sql.unsafe<{ any: boolean }>(`select exists (select from ${ident(t.name)}) as any`)
              if (row?.any) {
                return yield* invalid(
                  `the database is not empty (${t.name} has rows): restore into an empty one (a fresh DATA_DIR or a new database); nothing was changed`,
                )
              }
            }
            // A server on this database would go on from what it holds in memory (cached keys, leases, positions)
            // and write beside the restore: its pools and its key cache name themselves in pg_stat_activity.
            const [serving] = yield* sql<{ n: number }>`
              select count(*)::int as n from pg_stat_activity
              where datname = current_database() and pid <> pg_backend_pid()
                and ((application_name like ${`${APPLICATION_PREFIX}%`} and application_name <> ${ADMIN_APPLICATION})
                  or application_name = ${KEY_CACHE_APPLICATION_NAME})`
            if ((serving?.n ?? 0) > 0) {
              return yield* invalid(
                "a server is using this database (its connections are open): stop every server process on it, then restore; nothing was changed",
              )
            }
            let feedSeq = 0
            let total = 0
            for (const [i, t] of tables.entries()) {
              const section = yield* Effect.flatMap(reader.next, reader.json)
              const rows = h.tables[i]?.rows ?? -1
              if (!isRecord(section) || section.table !== t.name || section.rows !== rows) {
                return yield* reader.damaged(`the rows of ${t.name} were expected`)
              }
              if (t.name in TRIGGER_LOGGED) {
                yield* sql.unsafe(`delete from ${ident(t.name)} where change_xid = pg_current_xact_id()`)
              }
              const feed = FEED_TABLES.has(t.name)
              const columns = new Set(t.columns)
              const list = t.columns.map(ident).join(", ")
              const values = t.columns.map((c) => RESTORED_AS[t.name]?.[c] ?? ident(c))
              const insert = `insert into ${ident(t.name)} (${list}) select ${values.join(", ")} from json_populate_recordset(null::${ident(t.name)}, $1::text::json)`
              let batch: Array<string> = []
              let bytes = 0
              const flush = Effect.suspend(() => {
                if (batch.length === 0) return Effect.void
                const json = `[${batch.join(",")}]`
                batch = []
                bytes = 0
                return sql.unsafe(insert, [json])
              })
              for (let n = 0; n < rows; n++) {
                const line = yield* reader.next
                const value = yield* reader.json(line)
                // json_populate_recordset would take a missing column as null: a row must have exactly the columns.
                if (
                  !isRecord(value) ||
                  Object.keys(value).length !== columns.size ||
                  !Object.keys(value).every((k) => columns.has(k))
                ) {
                  return yield* reader.damaged(`a row of ${t.name} does not have its columns`)
                }
                let text = line
                if (feed) {
                  value.change_seq = ++feedSeq
                  text = JSON.stringify(value)
                }
                batch.push(text)
                bytes += text.length
                if (batch.length >= PAGE_ROWS || bytes >= BATCH_BYTES) yield* flush
              }
              yield* flush
              total += rows
            }
            const end = yield* Effect.flatMap(reader.next, reader.json)
            if (!isRecord(end) || end.end !== true || end.rows !== total) {
              return yield* reader.damaged("its last line is missing")
            }
            for (const s of h.sequences) {
              if (s.name === FEED_SEQUENCE) {
                yield* sql`select setval(${ident(s.name)}::regclass, ${Math.max(feedSeq, 1)}, ${feedSeq > 0})`
              } else {
                yield* sql`select setval(${ident(s.name)}::regclass, ${s.lastValue}::bigint, ${s.isCalled})`
              }
            }
            return {
              file,
              rows: total,
              durationMs: Date.now() - started,
              migration: h.migrations.at(-1) ?? null,
              tables: Object.fromEntries(h.tables.map((t) => [t.name, t.rows])),
            }
          }),
        )
      }).pipe(Effect.ensuring(Effect.sync(() => reader.close())))
    })

    return { backup, restore } as const
  }),
}) {}
