import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigProvider, Effect, Layer, Logger, ManagedRuntime } from "effect"
import { MainLive } from "../../src/main.ts"
import { loggingConfig } from "../../src/platform/config.ts"
import { prebuilt } from "./prebuilt.ts"
import { newTestDatabase } from "./runDatabase.ts"

/**
 * Starts the real service (bundled once per test run, see prebuilt.ts) on random ports, on the embedded database in
 * a fresh DATA_DIR, or on PostgreSQL when the test run has DATABASE_URL. Log lines are captured for assertions.
 */
export const TEST_SECRET_KEY = "8f1c2a0e5b7d4c3a9e6f1b2d3c4a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d"
export const APP_URL = "https://console.test"
const ROOT = join(import.meta.dir, "..", "..")

export interface RunningServer {
  readonly url: string
  readonly port: number
  readonly ingestUrl: string
  /** The operations listener (/healthz, /readyz, /metrics). */
  readonly opsUrl: string
  /** The web console. */
  readonly consoleUrl: string
  readonly env: Record<string, string>
  /** Every log line the server wrote (JSON lines), as they come. */
  readonly logs: Array<string>
  /** A graceful stop (what SIGTERM does); resolves to the exit code, 0 for a server in this process. */
  readonly stop: (signal?: "SIGTERM" | "SIGINT") => Promise<number>
}

/** A server in a process of its own: for tests about the process (signals, exit codes, start-up, a crash). */
export interface RunningServerProcess extends RunningServer {
  readonly process: ReturnType<typeof Bun.spawn>
  readonly stop: (signal?: NodeJS.Signals) => Promise<number>
}

export const usingPostgres = (): boolean => (process.env.DATABASE_URL ?? "") !== ""

/**
 * What every server started by a test or a benchmark runs with: each listener (API, ingest, ops, console) on a port
 * the system picks (0; startServer reads them back from the "listening" lines), so no test binds a fixed port such
 * as the console's :3000; and no idle close of seeded incidents, which are dated in the past and "open" (only the
 * tests of D13 turn it on). `extra` adds or overrides; the database and SECRET_KEY are the caller's.
 */
export const serverEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  HOST: "127.0.0.1",
  PORT: "0",
  INGEST_PORT: "0",
  OPS_PORT: "0",
  CONSOLE_PORT: "0",
  APP_URL,
  INCIDENT_IDLE_CLOSE: "36500 days",
  // A suite can run on either PostgreSQL client (DATABASE_DRIVER=bun|pg bun test …).
  ...(process.env.DATABASE_DRIVER === undefined ? {} : { DATABASE_DRIVER: process.env.DATABASE_DRIVER }),
  ...extra,
})

/** Suites make hundreds of requests from one address: only the D11 tests (test/api/rateLimit) keep the real 120. */
export const TEST_RATE_LIMIT = "1000000"

/**
 * The environment of a test server on a given database (the fault suites' own PostgreSQL, or one a test made).
 */
export const testEnvOn = (databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> => ({
  ...serverEnv({ SECRET_KEY: TEST_SECRET_KEY, RATE_LIMIT: TEST_RATE_LIMIT }),
  DATABASE_URL: databaseUrl,
  ...extra,
})

/**
 * The environment of one test server on a database of its own: a copy of the run's migrated template on the run's
 * PostgreSQL (the embedded one, or DATABASE_URL's server: test/support/runDatabase.ts). Servers that must share a
 * database share one environment.
 */
export const testEnv = async (extra: Record<string, string> = {}): Promise<Record<string, string>> =>
  testEnvOn(await newTestDatabase(), extra)

/**
 * The environment of a server on an embedded database of its own in a fresh DATA_DIR, as an operator without
 * DATABASE_URL runs it: for tests about the embedded database and DATA_DIR themselves.
 */
export const embeddedTestEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  ...serverEnv({ SECRET_KEY: TEST_SECRET_KEY, RATE_LIMIT: TEST_RATE_LIMIT }),
  DATA_DIR: mkdtempSync(join(tmpdir(), "dsvc-")),
  ...extra,
})

const readLines = async (stream: ReadableStream<Uint8Array>, sink: Array<string>, onLine: (line: string) => void) => {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true })
    let index = buffer.indexOf("\n")
    while (index >= 0) {
      const line = buffer.slice(0, index)
      buffer = buffer.slice(index + 1)
      sink.push(line)
      onLine(line)
      index = buffer.indexOf("\n")
    }
  }
}

/**
 * The service in a process of its own. `command`: how it is started (default: the service bundled once for the test
 * run, as the start command bundles it; test/deploy runs the start command itself, bin/serve).
 */
export const startServerProcess = async (
  options: { env?: Record<string, string>; command?: ReadonlyArray<string> } = {},
): Promise<RunningServerProcess> => {
  const env = options.env ?? (await testEnv())
  const logs: Array<string> = []
  const child = Bun.spawn([...(options.command ?? ["bun", prebuilt().main])], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  })
  const ports: { api?: number; ingest?: number; ops?: number; console?: number } = {}
  const {
    api: port,
    ingest: ingestPort,
    ops: opsPort,
    console: consolePort,
  } = await new Promise<{ api: number; ingest: number; ops: number; console: number }>((resolve, reject) => {
    // A server that does not come up is killed, not left running (and loading the machine) after the test failed.
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`server did not start:\n${logs.join("\n")}`))
    }, 30_000)
    const onLine = (line: string) => {
      try {
        const entry = JSON.parse(line) as { message?: unknown; annotations?: { listener?: string; port?: number } }
        if (entry.message === "api listening" && entry.annotations?.port) ports.api = entry.annotations.port
        if (entry.message === "ingest listening" && entry.annotations?.port) ports.ingest = entry.annotations.port
        if (entry.message === "ops listening" && entry.annotations?.port) ports.ops = entry.annotations.port
        if (entry.message === "console listening" && entry.annotations?.port) ports.console = entry.annotations.port
        if (ports.api && ports.ingest && ports.ops && ports.console) {
          clearTimeout(timer)
          resolve({ api: ports.api, ingest: ports.ingest, ops: ports.ops, console: ports.console })
        }
      } catch {}
    }
    void readLines(child.stdout as ReadableStream<Uint8Array>, logs, onLine)
    void readLines(child.stderr as ReadableStream<Uint8Array>, logs, onLine)
    void child.exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${logs.join("\n")}`))
    })
  })
  // A server that dies on its own during a test says why (its last log lines) instead of a bare ECONNREFUSED.
  let stopping = false
  void child.exited.then((code) => {
    if (!stopping)
      console.error(`test server exited unexpectedly (${code}); last log lines:\n${logs.slice(-40).join("\n")}`)
  })
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    stopping = true
    child.kill(signal)
    const code = await child.exited
    return code
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    ingestUrl: `http://127.0.0.1:${ingestPort}`,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    consoleUrl: `http://127.0.0.1:${consolePort}`,
    env,
    logs,
    process: child,
    stop,
  }
}

const LISTENERS = ["api", "ingest", "ops", "console"] as const

/** The in-process servers still running: the preload stops those a file left behind (a test that failed early). */
const running = new Set<() => Promise<number>>()

/** After each test file: stops the in-process servers it did not stop, so none keeps working into the next file. */
export const stopLeftoverServers = async () => {
  const left = [...running]
  await Promise.all(left.map((stop) => stop()))
}

/**
 * The service in this process: `main.ts`'s layers (every face, each on its own pool, migrations, jobs) in a managed
 * runtime configured from `env` alone, its log lines captured as the process would write them. For tests of
 * behaviour: it starts in a fraction of a process's time. Tests about the process itself use startServerProcess.
 */
export const startServer = async (options: { env?: Record<string, string> } = {}): Promise<RunningServer> => {
  const env = options.env ?? (await testEnv())
  const logs: Array<string> = []
  const provider = Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  const level = await Effect.runPromise(
    Effect.map(loggingConfig, (config) => config.level).pipe(
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    ),
  )
  const capture = Logger.replace(
    Logger.defaultLogger,
    Logger.map(Logger.jsonLogger, (line) => {
      logs.push(line)
    }),
  )
  const runtime = ManagedRuntime.make(
    // main.ts launches this layer as it is; its requirements read as `unknown` only through a type the compiler
    // cannot narrow, not a service anyone has to provide.
    (MainLive as Layer.Layer<Layer.Layer.Success<typeof MainLive>, Layer.Layer.Error<typeof MainLive>>).pipe(
      Layer.provide(capture),
      Layer.provide(Logger.minimumLogLevel(level)),
      Layer.provide(provider),
    ),
  )
  try {
    await runtime.runtime()
  } catch (error) {
    await runtime.dispose().catch(() => {})
    throw new Error(
      `server did not start: ${error instanceof Error ? error.message : String(error)}\n${logs.join("\n")}`,
    )
  }
  const ports = new Map<string, number>()
  for (const line of logs) {
    try {
      const entry = JSON.parse(line) as { message?: unknown; annotations?: { port?: number } }
      const listener = LISTENERS.find((name) => entry.message === `${name} listening`)
      if (listener !== undefined && entry.annotations?.port) ports.set(listener, entry.annotations.port)
    } catch {}
  }
  const portOf = (listener: (typeof LISTENERS)[number]) => {
    const port = ports.get(listener)
    if (port === undefined) throw new Error(`the ${listener} listener did not say its port:\n${logs.join("\n")}`)
    return port
  }
  let stopped: Promise<number> | undefined
  const stop = () => {
    running.delete(stop)
    stopped ??= runtime.dispose().then(() => 0)
    return stopped
  }
  running.add(stop)
  const port = portOf("api")
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    ingestUrl: `http://127.0.0.1:${portOf("ingest")}`,
    opsUrl: `http://127.0.0.1:${portOf("ops")}`,
    consoleUrl: `http://127.0.0.1:${portOf("console")}`,
    env,
    logs,
    stop,
  }
}

/** Removes a test server's embedded data directory. */
export const cleanup = (server: RunningServer) => {
  if (server.env.DATA_DIR) rmSync(server.env.DATA_DIR, { recursive: true, force: true })
}

/** afterAll of an integration file: close its database client, stop its server, remove its data. */
export const shutdown = async (server: RunningServer | undefined, db?: { close: () => Promise<void> }) => {
  await db?.close()
  await server?.stop()
  if (server) cleanup(server)
}
