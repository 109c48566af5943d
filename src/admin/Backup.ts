import { createHmac, type Hmac, timingSafeEqual } from "node:crypto"
import {
  closeSync,
  createReadStream,
  createWriteStream,
  fchmodSync,
  fsyncSync,
  linkSync,
  lstatSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs"
import { basename, dirname, join, resolve } from "node:path"
import { createGunzip, createGzip } from "node:zlib"
import { SqlClient } from "@effect/sql"
import { Effect, Either, ParseResult, Schema } from "effect"
import { hmacSha256 } from "../domain/crypto.ts"
import { ADMIN_APPLICATION, APPLICATION_PREFIX } from "../platform/db/client.ts"
import { Keys } from "../platform/keys.ts"
import { KEY_CACHE_APPLICATION_NAME } from "../repos/ApiKeysRepo.ts"
import { AdminActor } from "./actor.ts"
import { auditing } from "./common.ts"
import { Forbidden, invalid } from "./errors.ts"

/**
 * `admin backup` / `admin restore`, in the service itself (no pg_dump: the embedded package ships none, and an
 * older system one refuses a PostgreSQL 18 server).
 *
 * The file is gzip'd JSON lines: a header {format, version, keyId, migrations, createdAt, tables (name, columns, rows),
 * sequences}; then per table a line {table, rows} and its rows, one `row_to_json` object a line (bytea as \x hex,
 * timestamptz with microseconds and offset, arrays and jsonb as JSON: each type's own text, so the restore's
 * `json_populate_recordset` gives back the very values); then {end, rows, mac}. Every row comes from one REPEATABLE
 * READ, READ ONLY transaction: one snapshot, taken while the service keeps ingesting, with no xid of its own (the
 * feeds' horizon does not wait for it).
 *
 * Integrity: `mac` is HMAC-SHA256, under a key derived from SECRET_KEY (BACKUP_MAC_PURPOSE), of the exact decompressed
 * bytes of every line before the last, each with its newline. Whoever can write to where backups are kept but has not
 * SECRET_KEY cannot change a row (plant an API key hash, a sensor token, a user, a webhook URL) without the restore
 * refusing the file before it writes a row. It is not encryption: the file still holds hashes and sealed secrets.
 * `keyId` (a short HMAC of a fixed label under the same key, not the key) lets the restore tell "written under
 * another SECRET_KEY" from "changed"; the MAC alone decides.
 */
export const BACKUP_FORMAT = "decoy-incident-service-backup"
/** 2: the file carries its MAC. Version 1 had none and is refused (it cannot be told from an edited file). */
export const BACKUP_VERSION = 2
/** The purpose label of the backup's MAC key (deriveKey). */
export const BACKUP_MAC_PURPOSE = "backup-mac"

/** The header's key identifier: names the MAC key (16 hex digits) without telling anything of it. */
export const backupKeyId = (macKey: Uint8Array) => hmacSha256(macKey, "backup-key-id").subarray(0, 8).toString("hex")

/**
 * The longest line a backup may hold, checked while the gunzip stream is read, so a small file that inflates to one
 * huge line (a gzip bomb) costs at most this much memory. A row is far smaller: an event comes from one ingest
 * request (MAX_BODY_BYTES, 1 MiB, src/platform/http/body.ts) and its attacker input is cut at ATTACKER_INPUT_MAX_BYTES
 * (16 KiB, src/domain/attackerInput.ts; its size is kept by sql/0020), notes and reasons at 2,000 characters
 * (sql/0025), the rest are names, ids, hashes and sealed values; row_to_json's escaping turns a byte into at most six
 * ("\u0000"). 16 MiB leaves room for all of that and for the header.
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

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
const FEED_TABLES: ReadonlySet<string> = new Set(["events", "incident_changes", "audit_log"])
const FEED_SEQUENCE = "feed_change_seq"
const FEED_ORDER = ["org_id", "change_xid", "change_seq"]
/**
 * Columns the restore writes itself: the feeds' xids, and the purge's mark (sql/0028), whose old position lies before
 * every restored change and so becomes the start of the restored ones.
 */
const RESTORED_AS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  events: { change_xid: "pg_current_xact_id()" },
  incident_changes: { change_xid: "pg_current_xact_id()" },
  audit_log: { change_xid: "pg_current_xact_id()" },
  feed_purges: { purged_xid: "pg_current_xact_id()", purged_seq: "0" },
}
/** incidents' insert trigger logs a change per row; the restore drops those and loads the logged ones instead. */
const TRIGGER_LOGGED: Readonly<Record<string, string>> = { incident_changes: "incidents" }

interface TableInfo {
  readonly name: string
  readonly columns: ReadonlyArray<string>
  readonly order: ReadonlyArray<string>
}

const Count = Schema.Number.pipe(Schema.int(), Schema.nonNegative())
/** The header as the restore accepts it: any other shape is a one-line refusal, never a TypeError further on. */
const HeaderSchema = Schema.Struct({
  format: Schema.Literal(BACKUP_FORMAT),
  version: Schema.Literal(BACKUP_VERSION),
  keyId: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{16}$/)),
  migrations: Schema.Array(Schema.String),
  createdAt: Schema.String,
  tables: Schema.Array(Schema.Struct({ name: Schema.String, columns: Schema.Array(Schema.String), rows: Count })),
  sequences: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      lastValue: Schema.String.pipe(Schema.pattern(/^-?\d{1,19}$/)),
      isCalled: Schema.Boolean,
    }),
  ),
})
type Header = typeof HeaderSchema.Type
/** The last line. */
const EndSchema = Schema.Struct({ end: Schema.Literal(true), rows: Count, mac: Schema.String })

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`

const requireOperator = Effect.flatMap(AdminActor, (actor) =>
  actor._tag === "Operator" ? Effect.void : Effect.fail(new Forbidden({ reason: "operatorOnly" })),
)

/** A backup file that cannot be written, read or restored: the sentence says which and why. */
const unusable = (detail: string) => invalid({ field: "file", reason: "unusable", detail })

/** The database a restore would load into is not one it may: not empty, or in use. */
const notRestorable = (detail: string) => invalid({ reason: "state", detail })

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

/**
 * The service's tables (all of its schema but schema_migrations; a partitioned table as one, its partitions' rows
 * being its own), with columns and row order, in dependency order.
 */
const catalog = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const columns = yield* sql<{ table: string; column: string }>`
      select c.relname as table, a.attname as column
      from pg_class c join pg_attribute a on a.attrelid = c.oid
      where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p')
        and not c.relispartition and c.relname <> 'schema_migrations' and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
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

const errnoCode = (error: unknown) => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return typeof code === "string" ? code : error instanceof Error ? error.message : String(error)
}

/**
 * Lines to a gzip'd file already opened (`fd`), waiting whenever the stream asks to (bounded memory). Every line but
 * the last goes into the MAC; `end` writes the last line, which carries it.
 */
const openWriter = (fd: number, path: string, macKey: Uint8Array) => {
  const file = createWriteStream(path, { fd })
  const gzip = createGzip()
  const mac = createHmac("sha256", macKey)
  gzip.pipe(file)
  let failure: Error | undefined
  // A write waiting for "drain" when the file fails (a full disk) would wait for ever: it is rejected instead.
  const waiting = new Set<(e: Error) => void>()
  const fail = (e: Error) => {
    failure ??= e
    for (const reject of waiting) reject(failure)
    waiting.clear()
  }
  file.on("error", fail)
  gzip.on("error", fail)
  const put = (text: string) =>
    new Promise<void>((resolve, reject) => {
      if (failure) return reject(failure)
      if (gzip.write(text)) return resolve()
      waiting.add(reject)
      gzip.once("drain", () => {
        waiting.delete(reject)
        if (failure) reject(failure)
        else resolve()
      })
    })
  return {
    write: (line: string) => {
      const text = `${line}\n`
      mac.update(text)
      return put(text)
    },
    end: async (rows: number) => {
      await put(`${JSON.stringify({ end: true, rows, mac: mac.digest("hex") })}\n`)
      await new Promise<void>((resolve, reject) => {
        if (failure) return reject(failure)
        file.once("close", () => (failure ? reject(failure) : resolve()))
        file.once("error", reject)
        gzip.end()
      })
    },
    destroy: () => {
      gzip.destroy()
      file.destroy()
    },
  }
}

class LineTooLong extends Error {}
const NEWLINE = 0x0a

/**
 * The decompressed lines of `path`, as bytes, without their newlines; undefined at the end. Read from the gunzip
 * stream here, not by readline (which keeps any line whole, however long): a line longer than MAX_LINE_BYTES throws
 * LineTooLong once that much of it is held. A damaged or truncated gzip stream fails the read that meets it.
 */
const openLines = (path: string) => {
  const input = createReadStream(path)
  const gunzip = createGunzip()
  input.on("error", (e) => gunzip.destroy(e))
  input.pipe(gunzip)
  const chunks = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  let parts: Array<Buffer> = []
  let held = 0
  let rest: Buffer | undefined
  let ended = false
  const take = (last: Buffer) => {
    const line = parts.length === 0 ? last : Buffer.concat([...parts, last])
    parts = []
    held = 0
    return line
  }
  return {
    next: async (): Promise<Buffer | undefined> => {
      for (;;) {
        if (rest !== undefined) {
          const at = rest.indexOf(NEWLINE)
          const part = at < 0 ? rest : rest.subarray(0, at)
          if (held + part.length > MAX_LINE_BYTES) throw new LineTooLong()
          if (at >= 0) {
            rest = at + 1 < rest.length ? rest.subarray(at + 1) : undefined
            return take(part)
          }
          parts.push(part)
          held += part.length
          rest = undefined
        }
        if (ended) return parts.length > 0 ? take(Buffer.alloc(0)) : undefined
        const chunk = await chunks.next()
        if (chunk.done) ended = true
        else rest = chunk.value
      }
    },
    close: () => {
      gunzip.destroy()
      input.destroy()
    },
  }
}

/** A backup file's lines as effects whose failures are one-line refusals; with a MAC key, `next` feeds the MAC. */
const openReader = (path: string, macKey?: Uint8Array) => {
  const lines = openLines(path)
  const mac: Hmac | undefined = macKey === undefined ? undefined : createHmac("sha256", macKey)
  let lineNo = 0
  const damaged = (why: string) =>
    unusable(`${path} is not a complete backup (${why}): it is damaged or was cut short; nothing was restored`)
  const read = Effect.tryPromise({
    try: () => lines.next(),
    catch: (e) =>
      e instanceof LineTooLong
        ? damaged(`line ${lineNo + 1} is longer than ${MAX_LINE_BYTES / 1024 / 1024} MiB, more than any row can be`)
        : damaged(e instanceof Error ? e.message : String(e)),
  }).pipe(
    Effect.tap((line) => {
      if (line !== undefined) lineNo++
    }),
  )
  const json = (line: Buffer) =>
    Effect.try({
      try: () => JSON.parse(line.toString("utf8")) as unknown,
      catch: () => damaged(`line ${lineNo} is not JSON`),
    })
  /** The next line, which must exist; in the MAC when there is one. */
  const next = Effect.flatMap(read, (line) => {
    if (line === undefined) return Effect.fail(damaged(`it ends after line ${lineNo}`))
    mac?.update(line)
    mac?.update("\n")
    return Effect.succeed(line)
  })
  return {
    /** The next line (which must exist), counted in the MAC. */
    next,
    /** The next line, or undefined at the end; not counted in the MAC. */
    read,
    json,
    damaged,
    /** The MAC of the lines `next` gave so far. */
    digest: () => mac?.digest() ?? Buffer.alloc(0),
    close: () => lines.close(),
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** One line naming the first thing wrong in a value a Schema refused: `migrations: is missing`. */
const firstIssue = (error: ParseResult.ParseError) => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  if (issue === undefined) return "its shape is wrong"
  const where = issue.path.length > 0 ? `${issue.path.map(String).join(".")}: ` : ""
  return `${where}${issue.message}`.replace(/\s+/g, " ")
}

/** Constant-time comparison of a computed MAC with the file's hex text (a malformed one simply does not match). */
const macMatches = (computed: Buffer, given: string) => {
  const wellFormed = /^[0-9a-f]{64}$/.test(given)
  return timingSafeEqual(computed, wellFormed ? Buffer.from(given, "hex") : Buffer.alloc(computed.length)) && wellFormed
}

/** Signals that end the CLI: the temporary file of a backup is removed first, then the signal does what it would. */
const ENDING_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const

export class Backup extends Effect.Service<Backup>()("Backup", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const keys = yield* Keys
    const { audited } = yield* auditing

    /**
     * Refusals before the snapshot: a destination whose directory is missing or not one, a name that is a directory
     * or an existing file (a backup never replaces a file).
     */
    const checkDestination = (file: string) =>
      Effect.suspend(() => {
        const refuse = (why: string) =>
          Effect.fail(unusable(`cannot write the backup to ${file}: ${why}; nothing was written`))
        if (file.endsWith("/")) return refuse("it names a directory; give the backup file's own name")
        const target = resolve(file)
        const dir = dirname(target)
        try {
          if (!statSync(dir).isDirectory()) return refuse(`${dir} is not a directory`)
        } catch (error) {
          const code = errnoCode(error)
          return refuse(
            code === "ENOENT" || code === "ENOTDIR"
              ? `the directory ${dir} does not exist (create it first)`
              : `${dir} cannot be read (${code})`,
          )
        }
        try {
          const existing = lstatSync(target)
          return refuse(
            existing.isDirectory()
              ? "it is a directory; give the backup file's own name, e.g. a file in that directory"
              : "the file already exists (a backup never replaces one); choose a new name",
          )
        } catch (error) {
          const code = errnoCode(error)
          if (code !== "ENOENT") return refuse(`it cannot be checked (${code})`)
        }
        return Effect.succeed({ target, dir })
      })

    /** Writes the whole database, as one snapshot, to `file` (a new file, complete or not at all, mode 0600). */
    const backup = Effect.fn("Backup.backup")(function* (file: string) {
      yield* requireOperator
      const started = Date.now()
      const { target, dir } = yield* checkDestination(file)
      const macKey = keys.derive(BACKUP_MAC_PURPOSE)
      const keyId = backupKeyId(macKey)
      const temporary = join(dir, `.${basename(target)}.${process.pid}.${Date.now()}.partial`)
      const writeFailed = (error: unknown) =>
        unusable(`cannot write the backup to ${file} (${errnoCode(error)}); nothing was left behind`)
      // Removed on every failure, and before a signal ends the process.
      const removeTemporary = () => rmSync(temporary, { force: true })
      const onSignal = (signal: NodeJS.Signals) => {
        removeTemporary()
        for (const s of ENDING_SIGNALS) process.removeListener(s, onSignal)
        process.kill(process.pid, signal)
      }
      const written = Effect.gen(function* () {
        const fd = yield* Effect.try({
          try: () => {
            const fd = openSync(temporary, "wx", 0o600)
            try {
              fchmodSync(fd, 0o600) // whatever the umask
            } catch (error) {
              closeSync(fd)
              throw error
            }
            return fd
          },
          catch: writeFailed,
        })
        // The writer's stream owns the descriptor from here on: it closes it when it ends or is destroyed.
        const writer = openWriter(fd, temporary, macKey)
        const write = (line: string) => Effect.tryPromise({ try: () => writer.write(line), catch: writeFailed })
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
                keyId,
                migrations: yield* appliedMigrations(sql),
                createdAt: new Date().toISOString(),
                tables: tables.map((t, i) => ({ name: t.name, columns: t.columns, rows: counts[i] ?? 0 })),
                sequences,
              }
              yield* write(JSON.stringify(header))
              let total = 0
              for (const [i, t] of tables.entries()) {
                yield* write(JSON.stringify({ table: t.name, rows: counts[i] }))
                yield* sql.unsafe(
                  // The listed columns only (a generated column is computed again by the restoring database).
                  `declare backup_rows no scroll cursor for select row_to_json(r)::text as j from ${ident(t.name)} t ` +
                    `cross join lateral (select ${t.columns.map((c) => `t.${ident(c)}`).join(", ")}) r` +
                    (t.order.length > 0 ? ` order by ${t.order.map((c) => `t.${ident(c)}`).join(", ")}` : ""),
                )
                let rows = 0
                for (;;) {
                  const page = yield* sql.unsafe<{ j: string }>(`fetch forward ${PAGE_ROWS} from backup_rows`)
                  for (const row of page) yield* write(row.j)
                  rows += page.length
                  if (page.length < PAGE_ROWS) break
                }
                yield* sql.unsafe("close backup_rows")
                // One snapshot: the cursor sees exactly the rows the count saw.
                if (rows !== counts[i]) return yield* Effect.dieMessage(`${t.name}: ${rows} rows, counted ${counts[i]}`)
                total += rows
              }
              yield* Effect.tryPromise({ try: () => writer.end(total), catch: writeFailed })
              return header
            }),
          )
          .pipe(Effect.onError(() => Effect.sync(() => writer.destroy())))
        // Durable before it takes the name: a crash leaves no file or the whole new one, never a part.
        yield* Effect.try({
          try: () => {
            const check = openSync(temporary, "r")
            try {
              fsyncSync(check)
            } finally {
              closeSync(check)
            }
          },
          catch: writeFailed,
        })
        const bytes = statSync(temporary).size
        // A hard link takes the name only if nothing has it (a file made since the check is not replaced), and
        // never a part: the temporary file is complete.
        yield* Effect.try({
          try: () => {
            try {
              linkSync(temporary, target)
            } catch (error) {
              const code = errnoCode(error)
              if (code === "EEXIST") throw error
              // A file system without hard links: the name is checked again, then taken by a rename.
              if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error
              if (lstatSync(target, { throwIfNoEntry: false }) !== undefined)
                throw Object.assign(error as Error, { code: "EEXIST" })
              renameSync(temporary, target)
            }
          },
          catch: (error) =>
            errnoCode(error) === "EEXIST"
              ? unusable(
                  `cannot write the backup to ${file}: a file of that name appeared meanwhile; nothing was written`,
                )
              : writeFailed(error),
        })
        return { header, bytes }
      }).pipe(
        // On any failure; and after success the temporary name goes too (the file has its own name now).
        Effect.ensuring(Effect.sync(removeTemporary)),
      )
      const { header, bytes } = yield* Effect.acquireUseRelease(
        Effect.sync(() => {
          for (const s of ENDING_SIGNALS) process.on(s, onSignal)
        }),
        () => written,
        () =>
          Effect.sync(() => {
            for (const s of ENDING_SIGNALS) process.removeListener(s, onSignal)
          }),
      )
      const rows = header.tables.reduce((sum, t) => sum + t.rows, 0)
      const migration = header.migrations.at(-1) ?? null
      // Audited like every command, once the file exists; a backup whose audit row cannot be written is removed again.
      yield* audited(
        null,
        "backup.create",
        target,
        `${rows} rows, ${bytes} bytes, migration ${migration}, key ${keyId}`,
      ).pipe(Effect.tapError(() => Effect.sync(() => rmSync(target, { force: true }))))
      return {
        file,
        bytes,
        durationMs: Date.now() - started,
        migration,
        keyId,
        tables: Object.fromEntries(header.tables.map((t) => [t.name, t.rows])),
      }
    })

    /**
     * The first pass of a restore, before the database is touched: the header's shape, the key, and the MAC over the
     * whole file (the last line carries it). Gives the header and its line's bytes.
     */
    const verify = (file: string) =>
      Effect.gen(function* () {
        const reader = openReader(file)
        return yield* Effect.gen(function* () {
          const first = yield* reader.next
          const raw = yield* reader.json(first)
          if (!isRecord(raw) || raw.format !== BACKUP_FORMAT) {
            return yield* unusable(`${file} is not a backup of this service (bun run admin backup writes one)`)
          }
          if (raw.version === 1) {
            return yield* unusable(
              `${file} is a backup of format version 1, which carries no integrity check and cannot be told from an ` +
                "edited file: restore it with the version that wrote it, then take a new backup with this version",
            )
          }
          if (raw.version !== BACKUP_VERSION) {
            return yield* unusable(
              `${file} is a backup of format version ${String(raw.version)}; this version reads ${BACKUP_VERSION}`,
            )
          }
          const decoded = Schema.decodeUnknownEither(HeaderSchema)(raw)
          if (Either.isLeft(decoded)) {
            return yield* unusable(
              `${file} has a malformed header (${firstIssue(decoded.left)}): it is damaged or not a backup of this service; nothing was restored`,
            )
          }
          const header = decoded.right
          // SECRET_KEY's key, or a SECRET_KEY_PREVIOUS one's for a backup taken before a rotation.
          const macKey = keys.deriveWithPrevious(BACKUP_MAC_PURPOSE).find((k) => backupKeyId(k) === header.keyId)
          if (macKey === undefined) {
            return yield* unusable(
              `${file} was written with another SECRET_KEY (key id ${header.keyId}; this one's is ` +
                `${backupKeyId(keys.derive(BACKUP_MAC_PURPOSE))}): set SECRET_KEY to the key of the service that wrote it ` +
                "(or put that service's secret.key into DATA_DIR); nothing was restored",
            )
          }
          const mac = createHmac("sha256", macKey)
          let last = first
          for (;;) {
            const line = yield* reader.read
            if (line === undefined) break
            mac.update(last)
            mac.update("\n")
            last = line
          }
          const end = Schema.decodeUnknownEither(EndSchema)(yield* reader.json(last))
          if (last === first || Either.isLeft(end)) return yield* reader.damaged("its last line is missing")
          if (!macMatches(mac.digest(), end.right.mac)) {
            return yield* unusable(
              `${file} does not match its integrity check: it was changed after it was written, or is damaged; nothing was restored`,
            )
          }
          return { header, headerLine: first, macKey }
        }).pipe(Effect.ensuring(Effect.sync(() => reader.close())))
      })

    /**
     * Loads a backup into this database, which must hold no row: migrations first (the CLI applies them before any
     * command), then every table in dependency order in one transaction, then the sequences. The whole file's MAC is
     * checked before the transaction opens, and again while loading (the file could change between the two): a
     * mismatch rolls the transaction back. A backup of another migration level is refused: restore it with the
     * version that wrote it, then start this one to upgrade.
     */
    const restore = Effect.fn("Backup.restore")(function* (file: string) {
      yield* requireOperator
      const started = Date.now()
      const stat = yield* Effect.try({
        try: () => statSync(file, { throwIfNoEntry: false }),
        catch: (error) => unusable(`cannot read ${file} (${errnoCode(error)}); nothing was restored`),
      })
      if (stat === undefined) return yield* unusable(`${file}: no such file`)
      if (!stat.isFile()) return yield* unusable(`${file} is not a file (a backup is one file)`)
      const { header: h, headerLine, macKey } = yield* verify(file)
      const ours = yield* appliedMigrations(sql)
      if (JSON.stringify(h.migrations) !== JSON.stringify(ours)) {
        const theirs = h.migrations.at(-1) ?? "none"
        return yield* unusable(
          `${file} was written at migration level ${theirs}; this version is at ${ours.at(-1) ?? "none"}. ` +
            `Restore it with the version that wrote it (its migration ${theirs}) into an empty database, ` +
            `then start this version on that database to upgrade it`,
        )
      }
      const tables = yield* catalog(sql)
      const expected = JSON.stringify(tables.map((t) => [t.name, t.columns]))
      if (JSON.stringify(h.tables.map((t) => [t.name, t.columns])) !== expected) {
        return yield* unusable(
          `${file} holds other tables or columns than this database has at the same migration level`,
        )
      }
      const reader = openReader(file, macKey)
      const changed = unusable(`${file} changed while it was being restored; nothing was restored`)
      return yield* sql
        .withTransaction(
          Effect.gen(function* () {
            for (const t of tables) {
              const [row] = yield* sql.unsafe<{ any: boolean }>(`select exists (select from ${ident(t.name)}) as any`)
              if (row?.any) {
                return yield* notRestorable(
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
              return yield* notRestorable(
                "a server is using this database (its connections are open): stop every server process on it, then restore; nothing was changed",
              )
            }
            // The header the first pass checked, byte for byte.
            if (!(yield* reader.next).equals(headerLine)) return yield* changed
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
                const text = feed ? JSON.stringify({ ...value, change_seq: ++feedSeq }) : line.toString("utf8")
                batch.push(text)
                bytes += text.length
                if (batch.length >= PAGE_ROWS || bytes >= BATCH_BYTES) yield* flush
              }
              yield* flush
              total += rows
            }
            const endLine = yield* reader.read
            const end =
              endLine === undefined ? undefined : Schema.decodeUnknownEither(EndSchema)(yield* reader.json(endLine))
            if (end === undefined || Either.isLeft(end) || end.right.rows !== total) {
              return yield* reader.damaged("its last line is missing")
            }
            // The same file as the first pass checked: its MAC again, and nothing after the last line.
            if (!macMatches(reader.digest(), end.right.mac) || (yield* reader.read) !== undefined) return yield* changed
            for (const s of h.sequences) {
              if (s.name === FEED_SEQUENCE) {
                yield* sql`select setval(${ident(s.name)}::regclass, ${Math.max(feedSeq, 1)}, ${feedSeq > 0})`
              } else {
                yield* sql`select setval(${ident(s.name)}::regclass, ${s.lastValue}::bigint, ${s.isCalled})`
              }
            }
            const migration = h.migrations.at(-1) ?? null
            // Audited in the restored database, after the restored rows (and so after their audit log).
            yield* audited(
              null,
              "backup.restore",
              resolve(file),
              `${total} rows of a backup taken ${h.createdAt}, migration ${migration}, key ${h.keyId}`,
            )
            return {
              file,
              rows: total,
              durationMs: Date.now() - started,
              migration,
              createdAt: h.createdAt,
              tables: Object.fromEntries(h.tables.map((t) => [t.name, t.rows])),
            }
          }),
        )
        .pipe(Effect.ensuring(Effect.sync(() => reader.close())))
    })

    return { backup, restore } as const
  }),
}) {}
