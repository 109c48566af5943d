import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SQL } from "bun"
import { ConfigProvider, Effect, Exit, Layer, Logger, LogLevel, Scope } from "effect"
import { AppConfigLive } from "../../src/platform/config.ts"
import { DatabaseLive } from "../../src/platform/db/client.ts"
import { clusterDir, embeddedDatabase } from "../../src/platform/db/embedded.ts"
import { migrate } from "../../src/platform/db/migrate.ts"

/**
 * One PostgreSQL server for the whole test run, and one database per test server made from a template migrated once.
 *
 * Starting an embedded PostgreSQL (initdb, start) costs about 2.6 s and migrating a database about as much again; a
 * server on a database copied from a migrated template starts in a fraction of that. So the embedded run starts one
 * embedded PostgreSQL from the very binaries and code the service uses (src/platform/db/embedded.ts) in a directory of
 * the run's own, and the PostgreSQL run (DATABASE_URL) uses that URL's server. Either way, the first database a test
 * asks for migrates a template with the service's own migrations; every later one is `create database … template`.
 * Tests about the embedded database's own life (start, stop, DATA_DIR, leases) still give their servers a DATA_DIR.
 */

const RUN_PREFIX = "dsvc-run-"

interface RunServer {
  /** A URL of the server with `{db}` where the database name goes. */
  readonly urlFor: (database: string) => string
  /** The maintenance database, where databases are created and dropped. */
  readonly adminUrl: string
  readonly close: () => Promise<void>
}

const usingPostgresRun = () => (process.env.DATABASE_URL ?? "") !== ""

/**
 * A run killed before its end (a test time-out of the whole job, ^C) leaves its embedded server running in its
 * directory: the next run stops the servers of runs whose process is gone and removes their directories.
 */
export const removeAbandonedRuns = () => {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(RUN_PREFIX)) continue
    const pid = Number(name.slice(RUN_PREFIX.length).split("-")[0])
    if (!Number.isInteger(pid) || pid === process.pid) continue
    try {
      process.kill(pid, 0)
      continue // still running
    } catch {}
    const dir = join(tmpdir(), name)
    const pidFile = join(clusterDir(dir), "postmaster.pid")
    if (existsSync(pidFile)) {
      const postmaster = Number(readFileSync(pidFile, "utf8").split("\n")[0])
      try {
        if (Number.isInteger(postmaster) && postmaster > 0) {
          process.kill(postmaster, "SIGQUIT")
          // Gone before its directory is: a server still writing would leave files behind the removal.
          for (let waited = 0; waited < 5_000; waited += 50) {
            process.kill(postmaster, 0)
            Bun.sleepSync(50)
          }
        }
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

const startEmbedded = async (): Promise<RunServer> => {
  removeAbandonedRuns()
  const dataDir = join(tmpdir(), `${RUN_PREFIX}${process.pid}-${Date.now()}`)
  mkdirSync(dataDir, { recursive: true })
  const scope = Effect.runSync(Scope.make())
  const endpoint = await Effect.runPromise(Scope.extend(embeddedDatabase(dataDir), scope))
  const urlFor = (database: string) =>
    `postgres://postgres@localhost:${endpoint.port}/${database}?host=${encodeURIComponent(endpoint.socketDir)}`
  // A test cluster holds nothing worth a flush to disk: without fsync and synchronous commits its writes cost what
  // memory costs, and nothing a test checks depends on surviving a crash of PostgreSQL itself.
  const root = new SQL({ url: urlFor("postgres"), max: 1 })
  try {
    await root.unsafe("alter system set fsync = off")
    await root.unsafe("alter system set synchronous_commit = off")
    await root.unsafe("alter system set full_page_writes = off")
    await root.unsafe("select pg_reload_conf()")
  } finally {
    await root.close()
  }
  return {
    urlFor,
    adminUrl: urlFor("postgres"),
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

const externalServer = (): RunServer => {
  const given = new URL(process.env.DATABASE_URL ?? "")
  const urlFor = (database: string) => {
    const url = new URL(given)
    url.pathname = `/${database}`
    return url.toString()
  }
  return { urlFor, adminUrl: urlFor("postgres"), close: async () => {} }
}

/** What `bun run test` (scripts/test.ts) hands its workers: the run's PostgreSQL, already up, and its template. */
const HANDED_URL = "TEST_RUN_POSTGRES_URL"
const HANDED_TEMPLATE = "TEST_RUN_TEMPLATE"

/**
 * On the embedded run `bun run test` hands no database: each worker starts an embedded server of its own (lazily, as
 * a single `bun test` process does) and leaves it running for its next files; `bun run test` removes them all at the
 * end (removeAbandonedRuns). A change feed shows a change only once every older writing transaction of its server
 * has ended, so files that share a server delay each other's feeds; a server per worker keeps that within a worker.
 */
const WORKER_CLUSTERS = "TEST_RUN_WORKER_CLUSTERS"
const ownClusterPerWorker = process.env[WORKER_CLUSTERS] === "1"

const handed = process.env[HANDED_URL] !== undefined && process.env[HANDED_TEMPLATE] !== undefined
const runTag = handed
  ? (process.env[HANDED_TEMPLATE] ?? "").replace("dsvc_template_", "")
  : `${process.pid}_${Date.now().toString(36)}`
const TEMPLATE = `dsvc_template_${runTag}`
let server: Promise<RunServer> | undefined
let template: Promise<void> | undefined
let counter = 0

const serverAt = (adminUrl: string): RunServer => ({
  urlFor: (database) => {
    const url = new URL(adminUrl)
    url.pathname = `/${database}`
    return url.toString()
  },
  adminUrl,
  close: async () => {},
})

const runServer = (): Promise<RunServer> => {
  server ??= handed
    ? Promise.resolve(serverAt(process.env[HANDED_URL] ?? ""))
    : usingPostgresRun()
      ? Promise.resolve(externalServer())
      : startEmbedded()
  return server
}

const onAdmin = async <T = unknown>(statement: string): Promise<T> => {
  const { adminUrl } = await runServer()
  const client = new SQL({ url: adminUrl, max: 1 })
  try {
    return (await client.unsafe(statement)) as T
  } finally {
    await client.close()
  }
}

/** The template: created and migrated with the service's own migrations, once per run. */
const migratedTemplate = (): Promise<void> => {
  if (handed) return Promise.resolve()
  template ??= (async () => {
    const run = await runServer()
    await onAdmin(`create database ${TEMPLATE}`)
    const env = { DATABASE_URL: run.urlFor(TEMPLATE), SECRET_KEY: "0".repeat(64) }
    await Effect.runPromise(
      migrate.pipe(
        Effect.provide(
          DatabaseLive.pipe(
            Layer.provide(AppConfigLive),
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
          ),
        ),
        Effect.provide(Logger.minimumLogLevel(LogLevel.Warning)),
      ),
    )
  })()
  return template
}

/**
 * A new database with every migration applied, on the run's PostgreSQL: its URL. Named after the run and the
 * process (two workers make databases at once), so the run's end finds every one of them.
 */
export const newTestDatabase = async (): Promise<string> => {
  await migratedTemplate()
  const run = await runServer()
  const name = `dsvc_t_${runTag}_${process.pid}_${++counter}`
  await onAdmin(`create database ${name} template ${TEMPLATE}`)
  // Nothing a test checks depends on a commit surviving a crash of PostgreSQL (the machine's own server included).
  await onAdmin(`alter database ${name} set synchronous_commit = off`)
  return run.urlFor(name)
}

/** A new database without any migration (as an operator's new database is), on the run's PostgreSQL: its URL. */
export const newEmptyTestDatabase = async (): Promise<string> => {
  const run = await runServer()
  const name = `dsvc_t_${runTag}_${process.pid}_${++counter}`
  await onAdmin(`create database ${name}`)
  return run.urlFor(name)
}

/**
 * For `bun run test`: the run's PostgreSQL started and its template migrated before any worker starts; the variables
 * that hand both to the workers.
 */
export const prepareRunDatabase = async (): Promise<Record<string, string>> => {
  if (!usingPostgresRun()) return { [WORKER_CLUSTERS]: "1" }
  await migratedTemplate()
  return { [HANDED_URL]: (await runServer()).adminUrl, [HANDED_TEMPLATE]: TEMPLATE }
}

/**
 * At the end of the run, by whoever started its PostgreSQL (`bun run test`, or a single `bun test` process): on
 * DATABASE_URL's server the run's databases are dropped; the embedded server is stopped and removed. A worker handed
 * the database by `bun run test` leaves it alone.
 */
export const endTestDatabases = async () => {
  if (handed || ownClusterPerWorker || server === undefined) return
  const run = await server
  if (usingPostgresRun()) {
    const rows = await onAdmin<Array<{ datname: string }>>(
      `select datname from pg_database where datname like 'dsvc\\_%' and datname like '%${runTag}%'`,
    )
    for (const { datname } of rows) await onAdmin(`drop database if exists ${datname} with (force)`).catch(() => {})
  }
  await run.close()
}
