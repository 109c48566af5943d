import { closeSync, existsSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { connect } from "node:net"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Data, Effect, type Scope } from "effect"

/**
 * The embedded PostgreSQL (PGlite) for running without DATABASE_URL.
 *
 * One process hosts the database (PGlite is single-process) and serves it on a Unix socket in DATA_DIR,
 * `DATA_DIR/.s.PGSQL.5432`; every user of the database, the host included, talks to it through the ordinary
 * `pg` client over that socket. So the server, `bun run admin` and `psql -h <abs DATA_DIR>` reach the same
 * database while the server runs, through one SQL dialect. A Unix socket (not TCP) keeps the database reachable
 * only to users who may read DATA_DIR (created 0700).
 */

export class EmbeddedDatabaseError extends Data.TaggedError("EmbeddedDatabaseError")<{ readonly message: string }> {}

export interface EmbeddedEndpoint {
  /** Directory of the Unix socket: the `host` for pg and psql. */
  readonly socketDir: string
  readonly port: number
  /** True when this process hosts the database, false when another process does. */
  readonly hosted: boolean
}

const SOCKET_PORT = 5432
// Generous: on a loaded machine the other processes (admin commands started together) can need more than 10 s.
const HANDOVER_WAIT_MS = 30_000
const socketPath = (dir: string) => join(dir, `.s.PGSQL.${SOCKET_PORT}`)

const canConnect = (path: string): Promise<boolean> =>
  new Promise((resolvePromise) => {
    if (!existsSync(path)) return resolvePromise(false)
    const socket = connect(path)
    const done = (ok: boolean) => {
      socket.destroy()
      resolvePromise(ok)
    }
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
    setTimeout(() => done(false), 1000).unref()
  })

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Takes DATA_DIR/embedded.lock (O_EXCL, holding our pid); a lock of a dead process is stale and replaced. */
const tryLock = (lockFile: string): boolean => {
  try {
    const fd = openSync(lockFile, "wx", 0o600)
    writeSync(fd, String(process.pid))
    closeSync(fd)
    return true
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
    const pid = Number.parseInt(readFileSync(lockFile, "utf8"), 10)
    if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) return false
    unlinkSync(lockFile)
    return tryLock(lockFile)
  }
}

/**
 * pglite-socket's own queue interleaves protocol messages of different connections outside explicit
 * transactions, so a Parse of one client could meet the Bind of another. This queue keeps the database with one
 * connection from its first extended-protocol message until its Sync (or simple Query), and for a whole
 * transaction, exactly as a real server keeps one backend per connection.
 */
interface QueueItem {
  readonly handlerId: number
  readonly message: Uint8Array
  readonly onData: (data: Uint8Array) => void
  readonly resolve: (bytes: number) => void
  readonly reject: (error: unknown) => void
}

// Parse, Bind, Describe, Execute, Close, Flush, CopyData: the unit of work continues until Sync.
const CONTINUING = new Set([0x50, 0x42, 0x44, 0x45, 0x43, 0x48, 0x64])
const SYNC = new Uint8Array([0x53, 0, 0, 0, 4])

export class ProtocolSafeQueue {
  private queue: Array<QueueItem> = []
  private processing = false
  private owner: number | null = null
  private resetPending = false

  constructor(private readonly db: PGlite) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.queue.push({ handlerId, message, onData, resolve, reject })
      void this.process()
    })
  }

  getQueueLength(): number {
    return this.queue.length
  }

  clearQueueForHandler(handlerId: number): void {
    this.queue = this.queue.filter((item) => {
      if (item.handlerId !== handlerId) return true
      item.reject(new Error("Handler disconnected"))
      return false
    })
  }

  /** Called by pglite-socket for every connection that goes away. */
  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    // Every connection shares PGlite's one session, so what a client SETs for its session (pg_dump empties
    // search_path, a psql user may SET anything) would stay in force for the service after it left: the session's
    // settings go back to their defaults once it is gone, as a real server's backend would end with it.
    this.resetPending = true
    if (this.owner !== handlerId) return void this.process()
    // The owner went away mid-unit: end its extended-protocol sequence and roll back what it left open.
    await this.db.runExclusive(() => this.db.execProtocolRawStream(SYNC, { onRawData: () => {} }))
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK")
    this.owner = null
    void this.process()
  }

  /** RESET ALL between units of work, never inside another connection's unit or transaction. */
  private async resetSessionIfPending(): Promise<void> {
    if (!this.resetPending || this.owner !== null || this.db.isInTransaction()) return
    this.resetPending = false
    await this.db.exec("RESET ALL") // takes PGlite's query lock itself (inside runExclusive it would deadlock)
  }

  private next(): QueueItem | undefined {
    if (this.owner === null) return this.queue.shift()
    const index = this.queue.findIndex((item) => item.handlerId === this.owner)
    return index === -1 ? undefined : this.queue.splice(index, 1)[0]
  }

  private async process(): Promise<void> {
    if (this.processing) return
    this.processing = true
    try {
      await this.resetSessionIfPending()
      for (let item = this.next(); item !== undefined; item = this.next()) {
        const current = item
        let bytes = 0
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(current.message, {
              onRawData: (data) => {
                bytes += data.length
                current.onData(data)
              },
            }),
          )
          const kind = current.message[0] ?? 0
          this.owner = CONTINUING.has(kind) || this.db.isInTransaction() ? current.handlerId : null
          current.resolve(bytes)
        } catch (error) {
          current.reject(error)
        }
        await this.resetSessionIfPending()
      }
    } finally {
      this.processing = false
    }
  }
}

/**
 * Hosts the embedded database in this process, or finds the process that already hosts it.
 * The scope's close stops the socket server and closes PGlite cleanly (a checkpoint, so no recovery next time).
 */
export const embeddedDatabase = (
  dataDir: string,
): Effect.Effect<EmbeddedEndpoint, EmbeddedDatabaseError, Scope.Scope> =>
  Effect.gen(function* () {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const path = socketPath(dataDir)
    if (Buffer.byteLength(path) > 100) {
      return yield* new EmbeddedDatabaseError({
        message: `DATA_DIR path is too long for a Unix socket (${path}); choose a shorter DATA_DIR`,
      })
    }
    const lockFile = join(dataDir, "embedded.lock")
    // Another process may be starting the database right now: wait for its socket rather than fail.
    for (let attempt = 0; attempt < 300; attempt++) {
      if (yield* Effect.promise(() => canConnect(path))) {
        return { socketDir: dataDir, port: SOCKET_PORT, hosted: false }
      }
      const locked = yield* Effect.try({
        try: () => tryLock(lockFile),
        catch: (e) => new EmbeddedDatabaseError({ message: `cannot lock ${lockFile}: ${String(e)}` }),
      })
      if (locked) break
      yield* Effect.sleep("100 millis")
      if (attempt === 299) {
        return yield* new EmbeddedDatabaseError({ message: `the embedded database in ${dataDir} did not come up` })
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        try {
          if (readFileSync(lockFile, "utf8") === String(process.pid)) unlinkSync(lockFile)
        } catch {}
      }),
    )
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => PGlite.create(join(dataDir, "pgdata")),
        catch: (e) => new EmbeddedDatabaseError({ message: `cannot open the embedded database: ${String(e)}` }),
      }),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore),
    )
    if (existsSync(path)) unlinkSync(path)
    const server = new PGLiteSocketServer({ db, path, maxConnections: 64 })
    Object.assign(server, { queryQueue: new ProtocolSafeQueue(db) })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => server.start(),
        catch: (e) => new EmbeddedDatabaseError({ message: `cannot serve the embedded database: ${String(e)}` }),
      }),
      () =>
        Effect.gen(function* () {
          // Other processes (an admin command, psql) may still be mid-work on this database: let them finish
          // (bounded) before the host goes away. Our own pool is already closed by now.
          for (let waited = 0; waited < HANDOVER_WAIT_MS && server.getStats().activeConnections > 0; waited += 50) {
            yield* Effect.sleep("50 millis")
          }
          yield* Effect.promise(() => server.stop()).pipe(Effect.ignore)
        }),
    )
    return { socketDir: dataDir, port: SOCKET_PORT, hosted: true }
  })
