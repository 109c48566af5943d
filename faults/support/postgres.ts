import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SQL } from "bun"
import { freePort } from "./ports.ts"

/**
 * A throwaway PostgreSQL cluster of the fault suite's own: initdb into a temporary directory owned by the
 * `postgres` OS user, served on its own free port (TCP on 127.0.0.1 only, its socket in that directory), trust
 * authentication. The machine's shared PostgreSQL (127.0.0.1:5432) is never touched: every pg_ctl call names this
 * cluster's data directory.
 */

const BIN = "/usr/local/bin"
const OS_USER = "postgres"

export interface OwnPostgres {
  readonly port: number
  /** DATABASE_URL for the service. */
  readonly url: string
  readonly dir: string
  /** pg_ctl stop: `immediate` is a crash (no checkpoint, connections cut), `fast` a clean stop. */
  readonly stop: (mode: "fast" | "immediate") => Promise<void>
  /** pg_ctl start on the same port and data directory; resolves once it accepts connections. */
  readonly start: () => Promise<void>
  /**
   * SIGSTOP to the cluster's postmaster and every backend: the port still accepts TCP connections (the kernel
   * does), but nothing answers, as with a hung or partitioned database host.
   */
  readonly freeze: () => void
  /** SIGCONT to what freeze stopped (safe to call when nothing is frozen). */
  readonly thaw: () => void
  /** The test's own client (Bun's built-in SQL), opened on first use. */
  readonly sql: () => SQL
  /** Closes the client, stops the cluster and removes its directory (afterAll). */
  readonly destroy: () => Promise<void>
}

const idOf = (flag: "-u" | "-g") => {
  const result = Bun.spawnSync(["id", flag, OS_USER], { stdout: "pipe", stderr: "pipe" })
  const value = Number(result.stdout.toString().trim())
  if (result.exitCode !== 0 || !Number.isInteger(value)) throw new Error(`no ${OS_USER} OS user`)
  return value
}

const asPostgres = async (args: ReadonlyArray<string>) => {
  const child = Bun.spawn(["runuser", "-u", OS_USER, "--", ...args], { stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, output: `${stdout}${stderr}`.trim() }
}

export const startPostgres = async (): Promise<OwnPostgres> => {
  const dir = mkdtempSync(join(tmpdir(), "faults-pg-"))
  chownSync(dir, idOf("-u"), idOf("-g"))
  const data = join(dir, "data")
  const logFile = join(dir, "server.log")
  const port = await freePort()
  const init = await asPostgres([
    `${BIN}/initdb`,
    "-D",
    data,
    "-U",
    "postgres",
    "-A",
    "trust",
    "-E",
    "UTF8",
    "--no-sync",
  ])
  if (init.code !== 0) throw new Error(`initdb failed (${init.code}):\n${init.output}`)

  // fsync off: a stop, even `immediate`, is a process crash, not a power cut; the kernel keeps what was written.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off`
  const start = async () => {
    const result = await asPostgres([
      `${BIN}/pg_ctl`,
      "-D",
      data,
      "-o",
      options,
      "-l",
      logFile,
      "-w",
      "-t",
      "60",
      "start",
    ])
    if (result.code !== 0) {
      let log = ""
      try {
        log = readFileSync(logFile, "utf8").split("\n").slice(-30).join("\n")
      } catch {}
      throw new Error(`pg_ctl start failed (${result.code}):\n${result.output}\n${log}`)
    }
  }
  const stop = async (mode: "fast" | "immediate") => {
    const result = await asPostgres([`${BIN}/pg_ctl`, "-D", data, "-m", mode, "-w", "-t", "60", "stop"])
    if (result.code !== 0) throw new Error(`pg_ctl stop -m ${mode} failed (${result.code}):\n${result.output}`)
  }
  await start()

  // Only this cluster's processes: the postmaster named in its own postmaster.pid, and that postmaster's children.
  let frozen: Array<number> = []
  const freeze = () => {
    const postmaster = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0])
    if (!Number.isInteger(postmaster) || postmaster <= 1) throw new Error("no postmaster.pid")
    const children = Bun.spawnSync(["pgrep", "-P", String(postmaster)], { stdout: "pipe" })
      .stdout.toString()
      .split("\n")
      .map(Number)
      .filter((pid) => Number.isInteger(pid) && pid > 1)
    frozen = [postmaster, ...children]
    for (const pid of frozen) process.kill(pid, "SIGSTOP")
  }
  const thaw = () => {
    for (const pid of frozen) {
      try {
        process.kill(pid, "SIGCONT")
      } catch {}
    }
    frozen = []
  }

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  let client: SQL | undefined
  const sql = () => {
    client ??= new SQL({ url, max: 4 })
    return client
  }
  const destroy = async () => {
    thaw()
    await client?.close().catch(() => undefined)
    client = undefined
    await asPostgres([`${BIN}/pg_ctl`, "-D", data, "-m", "immediate", "-w", "stop"])
    rmSync(dir, { recursive: true, force: true })
  }
  return { port, url, dir, stop, start, freeze, thaw, sql, destroy }
}
