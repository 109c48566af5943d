import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { log, PROFILES_DIR, ROOT, sleep } from "./common.ts"

/**
 * Spawns the service (`bun src/main.ts`) or the baseline with stdout and stderr going to a log file (so reading
 * the logs costs the load generator nothing), waits for its "… listening" lines, and samples its memory from
 * /proc/<pid>/status every 100 ms.
 */

export interface MemorySample {
  /** VmRSS 1 s after the listeners were up (before any load), in MiB. */
  readonly startRssMiB: number
  /** VmRSS at the moment the last listener was up, in MiB. */
  readonly listenRssMiB?: number
  /** Peak resident set (VmHWM) in MiB, as the kernel counts it since the process started. */
  readonly peakRssMiB: number
  /** Highest VmRSS seen by the 100 ms poller, in MiB. */
  readonly maxPolledRssMiB: number
  /** CPU time of the process so far (user + system, all threads), in seconds. */
  readonly cpuSeconds?: number
  /** What the highest resident set the process saw itself was made of (bench/lib/memoryProbe.ts; bun only). */
  readonly atPeak?: PeakMakeup
}

/** MiB: the resident set, the JavaScript heap (its size and what is live in it) and everything outside the heap. */
export interface PeakMakeup {
  readonly rssMiB: number
  readonly heapTotalMiB: number
  readonly heapUsedMiB: number
  readonly outsideHeapMiB: number
}

const PROBE = join(ROOT, "bench", "lib", "memoryProbe.ts")

const readProbe = (file: string): PeakMakeup | undefined => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as PeakMakeup
  } catch {
    return undefined
  }
}

export interface Spawned {
  readonly pid: number
  readonly ports: Record<string, number>
  readonly logFile: string
  /** Memory so far. */
  readonly memory: () => MemorySample
  /** SIGTERM, wait for exit (the profile, if any, is written on exit); returns the final memory figures. */
  readonly stop: () => Promise<MemorySample & { readonly exitCode: number | null; readonly profile?: string }>
}

const statusKb = (pid: number, field: string): number => {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8")
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)
    return match ? Number(match[1]) : 0
  } catch {
    return 0
  }
}

/** utime + stime of a process from /proc/<pid>/stat, in seconds (fields 14 and 15, in clock ticks of 1/100 s). */
export const cpuSecondsOf = (pid: number): number | undefined => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
}

/** CPU seconds of every `postgres` process on the machine (the server's backends serving a load). */
export const postgresCpuSeconds = (): number => {
  let total = 0
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (!readFileSync(`/proc/${pid}/stat`, "utf8").includes("(postgres)")) continue
    } catch {
      continue // gone meanwhile
    }
    total += cpuSecondsOf(Number(pid)) ?? 0
  }
  return total
}

const mib = (kb: number) => Math.round((kb / 1024) * 10) / 10

export interface SpawnOptions {
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly workDir: string
  /** Listener names whose ports to wait for: a JSON log line {message: "<name> listening", annotations: {port}}. */
  readonly listeners: ReadonlyArray<string>
  /** Profile with `bun --cpu-prof`; the file goes to bench/results/profiles. */
  readonly profile?: boolean
  /** Extra flags for bun itself (e.g. --smol). */
  readonly bunFlags?: ReadonlyArray<string>
  /** The program that runs `args` (default bun; the conventional peer runs on node). */
  readonly runtime?: "bun" | "node"
}

export const spawnListening = async (options: SpawnOptions): Promise<Spawned> => {
  const logFile = join(options.workDir, `${options.name}-${Date.now()}.log`)
  const profileName = `${options.name}-${new Date().toISOString().replace(/[:.]/g, "-")}.cpuprofile`
  const profileArgs = options.profile
    ? ["--cpu-prof", `--cpu-prof-dir=${PROFILES_DIR}`, `--cpu-prof-name=${profileName}`]
    : []
  if (options.profile) mkdirSync(PROFILES_DIR, { recursive: true })
  const out = Bun.file(logFile)
  // The service's start command (bin/serve) takes bun's flags from BUN_SERVE_FLAGS; anything else is run by bun.
  const serve = options.args[0] === "bin/serve"
  const probeFile = join(options.workDir, `${options.name}-${Date.now()}-memory.json`)
  const flags = [...(options.bunFlags ?? []), ...profileArgs, "--preload", PROBE]
  const nodeFlags = options.profile
    ? ["--cpu-prof", `--cpu-prof-dir=${PROFILES_DIR}`, `--cpu-prof-name=${profileName}`]
    : []
  const command = serve
    ? ["sh", ...options.args]
    : options.runtime === "node"
      ? ["node", ...nodeFlags, ...options.args]
      : ["bun", ...flags, ...options.args]
  const child = Bun.spawn(command, {
    cwd: ROOT,
    env: {
      ...options.env,
      MEMORY_PROBE_FILE: probeFile,
      ...(serve ? { BUN_SERVE_FLAGS: flags.join(" ") } : {}),
    },
    stdout: out,
    stderr: out,
  })
  const ports: Record<string, number> = {}
  const deadline = Date.now() + 60_000
  let exited: number | null = null
  void child.exited.then((code) => {
    exited = code
  })
  while (options.listeners.some((l) => ports[l] === undefined)) {
    if (exited !== null) throw new Error(`${options.name} exited with ${exited}:\n${tail(logFile)}`)
    if (Date.now() > deadline) throw new Error(`${options.name} did not start:\n${tail(logFile)}`)
    await sleep(50)
    for (const line of safeRead(logFile).split("\n")) {
      if (!line.includes("listening")) continue
      try {
        const entry = JSON.parse(line) as { message?: unknown; annotations?: { port?: number } }
        for (const l of options.listeners) {
          if (entry.message === `${l} listening` && entry.annotations?.port) ports[l] = entry.annotations.port
        }
      } catch {}
    }
  }

  // "Right after start-up": 1 s after the last listener is up, before any load (start-up's own work, migrations and
  // the first collection, is over by then; the figure at the moment of listening is kept too).
  const listenRssMiB = mib(statusKb(child.pid, "VmRSS"))
  await sleep(1000)
  const startRssMiB = mib(statusKb(child.pid, "VmRSS"))
  let maxPolled = 0
  const poll = setInterval(() => {
    maxPolled = Math.max(maxPolled, statusKb(child.pid, "VmRSS"))
  }, 100)
  let hwm = 0
  let cpu: number | undefined
  const memory = (): MemorySample => {
    hwm = Math.max(hwm, statusKb(child.pid, "VmHWM"))
    maxPolled = Math.max(maxPolled, statusKb(child.pid, "VmRSS"))
    cpu = cpuSecondsOf(child.pid) ?? cpu
    const atPeak = options.runtime === "node" ? undefined : readProbe(probeFile)
    return {
      startRssMiB,
      listenRssMiB,
      peakRssMiB: mib(hwm),
      maxPolledRssMiB: mib(maxPolled),
      ...(cpu !== undefined ? { cpuSeconds: cpu } : {}),
      ...(atPeak !== undefined ? { atPeak } : {}),
    }
  }

  const stop = async () => {
    const final = memory()
    clearInterval(poll)
    child.kill("SIGTERM")
    const killer = setTimeout(() => {
      log(`${options.name} did not stop within 20 s: SIGKILL`)
      child.kill("SIGKILL")
    }, 20_000)
    const exitCode = await child.exited
    clearTimeout(killer)
    return {
      ...final,
      exitCode,
      ...(options.profile ? { profile: join(PROFILES_DIR, profileName) } : {}),
    }
  }
  return { pid: child.pid, ports, logFile, memory, stop }
}

const safeRead = (file: string) => {
  try {
    return readFileSync(file, "utf8")
  } catch {
    return ""
  }
}

const tail = (file: string) => safeRead(file).split("\n").slice(-30).join("\n")

/**
 * The service's command: the start command of `bun run start` and the container (`bin/serve`: the bundle built by
 * `bun run build:server`, which the bench runs first, with its heap sizing), or BENCH_SERVICE_ENTRY (e.g.
 * `src/main.ts`, the sources as the tests run them, with bun's defaults).
 */
export const SERVICE_ENTRY = process.env.BENCH_SERVICE_ENTRY ?? "bin/serve"

/** Builds the bundle the service runs from (once per bench process). */
let built: Promise<void> | undefined
export const buildService = () => {
  built ??= (async () => {
    const child = Bun.spawn(["bun", "run", "build:server"], { cwd: ROOT, stdout: "ignore", stderr: "inherit" })
    if ((await child.exited) !== 0) throw new Error("bun run build:server failed")
  })()
  return built
}

/**
 * The service with the benchmark's environment. The command is the default start command (`sh bin/serve`, which
 * execs `bun dist/server/main.js`: what `bun run start` and the container's CMD run); `bunFlags` (default:
 * BENCH_SERVICE_BUN_FLAGS, e.g. "--smol") compares a setting of the runtime without touching the service.
 */
export const startService = async (
  workDir: string,
  env: Record<string, string>,
  profile: boolean,
  name = "service",
  bunFlags: ReadonlyArray<string> = (process.env.BENCH_SERVICE_BUN_FLAGS ?? "").split(" ").filter((f) => f !== ""),
  entry: string = SERVICE_ENTRY,
): Promise<Spawned> => {
  if (entry === "bin/serve" || entry.startsWith("dist/")) await buildService()
  return spawnListening({
    name,
    args: [entry],
    env,
    workDir,
    listeners: ["api", "ingest", "ops", "console"],
    profile,
    bunFlags,
  })
}

/** bench/baseline.ts: a bare Bun.serve with Bun's SQL client running the service's queries. */
export const startBaseline = (workDir: string, env: Record<string, string>, profile = false): Promise<Spawned> =>
  spawnListening({
    name: "baseline",
    args: ["bench/baseline.ts"],
    env,
    workDir,
    listeners: ["baseline"],
    profile,
  })

/** The conventional peer's bundle for node (bench/peer/fastify.ts), built once per bench process. */
const PEER_BUNDLE = "dist/bench-peer/fastify.mjs"
let peerBuilt: Promise<void> | undefined
const buildPeer = () => {
  peerBuilt ??= (async () => {
    const child = Bun.spawn(
      [
        "bun",
        "build",
        "bench/peer/fastify.ts",
        "--target=node",
        `--outfile=${PEER_BUNDLE}`,
        ...["fastify", "@fastify/rate-limit", "pg"].flatMap((p) => ["--external", p]),
      ],
      { cwd: ROOT, stdout: "ignore", stderr: "inherit" },
    )
    if ((await child.exited) !== 0) throw new Error("building bench/peer/fastify.ts failed")
  })()
  return peerBuilt
}

/** bench/peer/fastify.ts on node: the same endpoints as a team would build them on Fastify and `pg`. */
export const startPeer = async (workDir: string, env: Record<string, string>, profile = false): Promise<Spawned> => {
  await buildPeer()
  return spawnListening({
    name: "peer",
    args: [PEER_BUNDLE],
    env,
    workDir,
    listeners: ["peer"],
    profile,
    runtime: "node",
  })
}

/** bench/httpapi-floor.ts: the HttpApi stack alone, answering a constant page (the body in `bodyFile`). */
export const startFloor = (workDir: string, bodyFile: string, profile = false): Promise<Spawned> =>
  spawnListening({
    name: "floor",
    args: ["bench/httpapi-floor.ts"],
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      HOST: "127.0.0.1",
      PORT: "0",
      FLOOR_BODY_FILE: bodyFile,
    },
    workDir,
    listeners: ["floor"],
    profile,
  })

/** VmRSS of a process now, in MiB (0 once it has exited). */
export const rssMiB = (pid: number) => mib(statusKb(pid, "VmRSS"))

/** Number of lines of the log file that contain `needle` (e.g. failed webhook attempts). */
export const countLogLines = (file: string, needle: string) =>
  safeRead(file)
    .split("\n")
    .filter((l) => l.includes(needle)).length

/** The memory figures of a stopped process, as the results report them. */
export const memoryFigures = (m: MemorySample): MemorySample => ({
  startRssMiB: m.startRssMiB,
  peakRssMiB: m.peakRssMiB,
  maxPolledRssMiB: m.maxPolledRssMiB,
  ...(m.cpuSeconds !== undefined ? { cpuSeconds: m.cpuSeconds } : {}),
  ...(m.atPeak !== undefined ? { atPeak: m.atPeak } : {}),
})
