/**
 * `bun run bench startup`: the embedded PostgreSQL (D35) against DATABASE_URL.
 *
 * - Time from `bun run start` (which builds the bundle first, about half a second) to the first answer of the API (GET /v1/incidents, a 401), on a fresh DATA_DIR
 *   (initdb, then start) and on an existing one (start only).
 * - Memory right after start and at the peak of the list benchmark, as PSS from /proc/<pid>/smaps_rollup: the
 *   service process (`bun dist/server/main.js`, exec'ed by bin/serve), the `bun run` wrapper and its shell around it,
 *   and the database (the postmaster and every
 *   process under it, summed).
 * - The list benchmark (wrk, GET /v1/incidents?limit=50, 16 connections) on the embedded database and on DATABASE_URL
 *   (a fresh database on BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432; the shared server's own memory is
 *   not measured).
 *
 * Options: --seconds N (wrk duration, default 8), --incidents N (default 500).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { serverEnv } from "../test/support/server.ts"
import { APP_URL, log, ROOT, round, table } from "./lib/common.ts"
import { createDatabase, databaseUrl, dropDatabase, newDatabaseName } from "./lib/pg.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name)
  return i >= 0 ? Number(args[i + 1]) : fallback
}
const SECONDS = option("--seconds", 8)
const INCIDENTS = option("--incidents", 500)
const SECRET_KEY = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")

const baseEnv = (extra: Record<string, string>): Record<string, string> =>
  serverEnv({ SECRET_KEY, APP_URL, RATE_LIMIT: "100000000", LOG_LEVEL: "info", ...extra })

// --- /proc ---------------------------------------------------------------------------------------------------------

const pssKiB = (pid: number): number => {
  try {
    const match = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))
    return match ? Number(match[1]) : 0
  } catch {
    return 0
  }
}
const parentOf = (pid: string): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return -1
  }
}
/** `root` and every process under it. */
const tree = (root: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    const parent = parentOf(name)
    children.set(parent, [...(children.get(parent) ?? []), Number(name)])
  }
  const all: Array<number> = []
  const visit = (pid: number) => {
    all.push(pid)
    for (const child of children.get(pid) ?? []) visit(child)
  }
  visit(root)
  return all
}
const cmdline = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")
  } catch {
    return ""
  }
}
const postmasterOf = (dataDir: string): number | undefined => {
  try {
    return Number.parseInt(readFileSync(join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0] ?? "", 10)
  } catch {
    return undefined
  }
}
const MiB = (kib: number) => round(kib / 1024, 1)

interface Memory {
  readonly serviceMiB: number
  readonly wrapperMiB: number
  readonly databaseMiB: number
  readonly databaseProcesses: number
}
const memory = (wrapperPid: number, dataDir: string | undefined): Memory => {
  const all = tree(wrapperPid)
  const service = all.filter((pid) => pid !== wrapperPid && cmdline(pid).includes("dist/server/main.js"))
  const postmaster = dataDir ? postmasterOf(dataDir) : undefined
  const database = postmaster ? tree(postmaster) : []
  // `bun run` and the shell it runs the start script in.
  const wrappers = all.filter((pid) => !service.includes(pid) && !database.includes(pid))
  return {
    serviceMiB: MiB(service.reduce((n, pid) => n + pssKiB(pid), 0)),
    wrapperMiB: MiB(wrappers.reduce((n, pid) => n + pssKiB(pid), 0)),
    databaseMiB: MiB(database.reduce((n, pid) => n + pssKiB(pid), 0)),
    databaseProcesses: database.length,
  }
}

// --- The service ---------------------------------------------------------------------------------------------------

interface Started {
  readonly child: ReturnType<typeof Bun.spawn>
  readonly url: string
  readonly ingestUrl: string
  readonly firstAnswerS: number
}

/** `bun run start`, timed until the API answers. */
const start = async (env: Record<string, string>): Promise<Started> => {
  const began = performance.now()
  const child = Bun.spawn(["bun", "run", "start"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" })
  const ports: { api?: number | undefined; ingest?: number | undefined } = {}
  const lines: Array<string> = []
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 120 s:\n${lines.join("\n")}`)), 120_000)
    const read = async (stream: ReadableStream<Uint8Array>) => {
      let buffer = ""
      for await (const chunk of stream) {
        buffer += new TextDecoder().decode(chunk)
        for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
          const line = buffer.slice(0, i)
          buffer = buffer.slice(i + 1)
          lines.push(line)
          try {
            const entry = JSON.parse(line) as { message?: string; annotations?: { port?: number } }
            if (entry.message === "api listening") ports.api = entry.annotations?.port
            if (entry.message === "ingest listening") ports.ingest = entry.annotations?.port
            if (ports.api && ports.ingest) {
              clearTimeout(timer)
              resolve()
            }
          } catch {}
        }
      }
    }
    void read(child.stdout as ReadableStream<Uint8Array>)
    void read(child.stderr as ReadableStream<Uint8Array>)
    void child.exited.then((code) => reject(new Error(`exited ${code}:\n${lines.join("\n")}`)))
  })
  await ready
  const url = `http://127.0.0.1:${ports.api}`
  const answer = await fetch(`${url}/v1/incidents`)
  await answer.arrayBuffer()
  return { child, url, ingestUrl: `http://127.0.0.1:${ports.ingest}`, firstAnswerS: (performance.now() - began) / 1000 }
}

const stop = async (started: Started) => {
  started.child.kill("SIGTERM")
  await started.child.exited
}

const admin = (env: Record<string, string>, argv: Array<string>) => {
  const run = Bun.spawnSync(["bun", "src/admin/cli.ts", ...argv, "--json"], { cwd: ROOT, env, stdout: "pipe" })
  if (run.exitCode !== 0) throw new Error(`admin ${argv.join(" ")} failed`)
  return JSON.parse(run.stdout.toString())
}

/**
 * An organization with INCIDENTS incidents (one per source address) and a read key. Its name carries a per-run
 * suffix: the admin tool refuses a second organization of the same name, and a rerun may meet the same database.
 */
const seed = async (env: Record<string, string>, started: Started): Promise<string> => {
  const org = admin(env, ["org", "create", "--name", `bench ${crypto.randomUUID().slice(0, 8)}`])
  const sensor = admin(env, ["sensor", "create", "--org", org.id, "--name", "bench-01"])
  const key = admin(env, ["key", "create", "--org", org.id, "--name", "bench", "--scopes", "incidents:read"])
  for (let sent = 0; sent < INCIDENTS; sent += 100) {
    const batch = Array.from({ length: Math.min(100, INCIDENTS - sent) }, (_, i) => ({
      sensorEventId: `bench-${sent + i}`,
      time: new Date().toISOString(),
      sourceIp: `198.18.${Math.floor((sent + i) / 250)}.${((sent + i) % 250) + 1}`,
      sourcePort: 51000,
      type: "ssh.login_attempt",
      attackerInput: { username: "root", password: "hunter2" },
    }))
    const response = await fetch(`${started.ingestUrl}/ingest/v1/events`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${sensor.token}` },
      body: JSON.stringify(batch),
    })
    if (!response.ok) throw new Error(`ingest answered ${response.status}: ${await response.text()}`)
  }
  return key.key
}

const wrk = async (started: Started, key: string) => {
  const run = Bun.spawn(
    [
      "wrk",
      "-t2",
      "-c16",
      `-d${SECONDS}s`,
      "-H",
      `Authorization: Bearer ${key}`,
      `${started.url}/v1/incidents?limit=50`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  )
  const text = await new Response(run.stdout).text()
  await run.exited
  return {
    rps: round(Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? Number.NaN), 0),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0),
  }
}

/**
 * wrk on the list for SECONDS twice: once alone for req/s, once while memory is sampled every second for the peaks
 * (reading smaps_rollup takes the process's memory map lock for tens of ms: sampled runs are slower).
 */
const listBenchmark = async (started: Started, key: string, dataDir: string | undefined) => {
  const measured = await wrk(started, key)
  const peak = { serviceMiB: 0, databaseMiB: 0, totalMiB: 0 }
  let sampling = true
  const sampler = (async () => {
    await Bun.sleep(500)
    while (sampling) {
      const m = memory(started.child.pid, dataDir)
      peak.serviceMiB = Math.max(peak.serviceMiB, m.serviceMiB)
      peak.databaseMiB = Math.max(peak.databaseMiB, m.databaseMiB)
      peak.totalMiB = Math.max(peak.totalMiB, round(m.serviceMiB + m.databaseMiB, 1))
      await Bun.sleep(1000)
    }
  })()
  const sampled = await wrk(started, key)
  sampling = false
  await sampler
  return { ...measured, sampledRps: sampled.rps, peak }
}

// --- The runs ------------------------------------------------------------------------------------------------------

const results: Record<string, unknown> = { loadBefore: loadavg().map((l) => round(l, 2)) }
const rows: Array<Array<string | number>> = []
const row = (label: string, s: number | string, m: Memory | undefined, extra = "") =>
  rows.push([
    label,
    typeof s === "number" ? s.toFixed(2) : s,
    m ? m.serviceMiB : "-",
    m ? m.databaseMiB : "-",
    m ? round(m.serviceMiB + m.databaseMiB, 1) : "-",
    m ? m.wrapperMiB : "-",
    extra,
  ])

const dataDir = mkdtempSync(join(tmpdir(), "dsvc-bench-startup-"))
try {
  log("embedded, fresh DATA_DIR")
  const env = baseEnv({ DATA_DIR: dataDir })
  let started = await start(env)
  await Bun.sleep(1000)
  const fresh = memory(started.child.pid, dataDir)
  row("embedded, fresh DATA_DIR: after start", started.firstAnswerS, fresh)
  results.fresh = { firstAnswerS: round(started.firstAnswerS, 2), ...fresh }
  await stop(started)

  log("embedded, existing DATA_DIR")
  started = await start(env)
  await Bun.sleep(1000)
  const existing = memory(started.child.pid, dataDir)
  row("embedded, existing DATA_DIR: after start", started.firstAnswerS, existing)
  results.existing = { firstAnswerS: round(started.firstAnswerS, 2), ...existing }

  log(`embedded: seeding ${INCIDENTS} incidents, then the list benchmark`)
  const key = await seed(env, started)
  const embedded = await listBenchmark(started, key, dataDir)
  rows.push([
    "embedded: peak during the list benchmark",
    "",
    embedded.peak.serviceMiB,
    embedded.peak.databaseMiB,
    embedded.peak.totalMiB,
    "",
    `${embedded.rps} req/s${embedded.non2xx ? `, ${embedded.non2xx} non-2xx` : ""}`,
  ])
  results.embeddedList = embedded
  await stop(started)

  log("DATABASE_URL: a fresh database, the list benchmark")
  const database = newDatabaseName()
  await createDatabase(database)
  try {
    const urlEnv = baseEnv({ DATABASE_URL: databaseUrl(database) })
    const onUrl = await start(urlEnv)
    await Bun.sleep(1000)
    const afterStart = memory(onUrl.child.pid, undefined)
    row("DATABASE_URL: after start", onUrl.firstAnswerS, afterStart, "(the shared server not measured)")
    const urlKey = await seed(urlEnv, onUrl)
    const url = await listBenchmark(onUrl, urlKey, undefined)
    rows.push([
      "DATABASE_URL: peak during the list benchmark",
      "",
      url.peak.serviceMiB,
      "-",
      "-",
      "",
      `${url.rps} req/s${url.non2xx ? `, ${url.non2xx} non-2xx` : ""}`,
    ])
    results.urlList = url
    results.embeddedVsUrl = round(embedded.rps / url.rps, 2)
    await stop(onUrl)
  } finally {
    await dropDatabase(database)
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true })
}
results.loadAfter = loadavg().map((l) => round(l, 2))

console.log(
  `\nStartup and memory (PSS MiB; wrk -t2 -c16 ${SECONDS} s on GET /v1/incidents?limit=50, ${INCIDENTS} incidents; load average before ${(results.loadBefore as Array<number>).join(" ")}, after ${(results.loadAfter as Array<number>).join(" ")})`,
)
console.log(table(["run", "first answer s", "service", "database", "total", "bun run wrapper", "list"], rows))
console.log(`embedded req/s / DATABASE_URL req/s: ${results.embeddedVsUrl}`)
console.log(JSON.stringify(results))
