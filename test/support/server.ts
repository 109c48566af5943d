import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { prebuilt } from "./prebuilt.ts"

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
  /** The web console (D25). */
  readonly consoleUrl: string
  readonly env: Record<string, string>
  readonly logs: Array<string>
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
 * The environment of one test server: on `databaseUrl` when given (the fault suites' own PostgreSQL), otherwise on
 * the test run's PostgreSQL when it has DATABASE_URL, otherwise on its own embedded database in a fresh DATA_DIR.
 */
export const testEnv = (extra: Record<string, string> = {}, databaseUrl?: string): Record<string, string> => {
  const base = serverEnv({ SECRET_KEY: TEST_SECRET_KEY, RATE_LIMIT: TEST_RATE_LIMIT })
  const database = databaseUrl ?? (usingPostgres() ? (process.env.DATABASE_URL ?? "") : undefined)
  if (database !== undefined) base.DATABASE_URL = database
  else base.DATA_DIR = mkdtempSync(join(tmpdir(), "dsvc-"))
  return { ...base, ...extra }
}

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
 * `command`: how the server is started (default: the service bundled once for the test run, as the start command
 * bundles it; test/deploy runs the start command itself, bin/serve).
 */
export const startServer = async (
  options: { env?: Record<string, string>; command?: ReadonlyArray<string> } = {},
): Promise<RunningServer> => {
  const env = options.env ?? testEnv()
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
