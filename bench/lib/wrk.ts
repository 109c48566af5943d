import { join } from "node:path"
import { BENCH_DIR, log, round } from "./common.ts"

/** wrk (C, epoll) as the load generator, so the generator takes little of the server's CPU. */

export interface WrkResult {
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly errors: {
    readonly connect: number
    readonly read: number
    readonly write: number
    readonly status: number
    readonly timeout: number
  }
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  /** With a body check (bench/wrk/api.lua's <must contain>): responses checked, and those not 200 with it. */
  readonly checked?: number
  readonly failedChecks?: number
}

/** Installs wrk from Debian's packages when missing; returns its version line or throws with apt's answer. */
export const ensureWrk = async (): Promise<string> => {
  const version = () => {
    const probe = Bun.spawnSync(["wrk", "--version"], { stdout: "pipe", stderr: "pipe" })
    return `${probe.stdout.toString()}${probe.stderr.toString()}`.split("\n")[0] ?? ""
  }
  if (Bun.which("wrk")) return version()
  log("wrk is missing: apt-get install -y wrk")
  const run = (args: ReadonlyArray<string>) =>
    Bun.spawnSync([...args], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    })
  let install = run(["apt-get", "install", "-y", "wrk"])
  if (install.exitCode !== 0) {
    run(["apt-get", "update"])
    install = run(["apt-get", "install", "-y", "wrk"])
  }
  if (install.exitCode !== 0 || !Bun.which("wrk")) {
    throw new Error(`could not install wrk with apt-get (exit ${install.exitCode}): ${install.stderr.toString()}`)
  }
  return version()
}

export interface WrkOptions {
  readonly url: string
  readonly connections: number
  readonly seconds: number
  readonly script: "api.lua"
  readonly args: ReadonlyArray<string>
  /** Default 2: one per core. */
  readonly threads?: number
}

export const runWrk = async (options: WrkOptions): Promise<WrkResult> => {
  const threads = Math.min(options.threads ?? 2, options.connections)
  const child = Bun.spawn(
    [
      "wrk",
      `-t${threads}`,
      `-c${options.connections}`,
      `-d${options.seconds}s`,
      "--timeout",
      "10s",
      "-s",
      join(BENCH_DIR, "wrk", options.script),
      options.url,
      "--",
      ...options.args,
    ],
    { stdout: "pipe", stderr: "pipe" },
  )
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const line = stdout.split("\n").find((l) => l.startsWith("BENCH_JSON "))
  if (code !== 0 || line === undefined) throw new Error(`wrk failed (${code}): ${stderr}\n${stdout}`)
  const raw = JSON.parse(line.slice("BENCH_JSON ".length)) as {
    requests: number
    durationUs: number
    errors: WrkResult["errors"]
    latencyUs: { p50: number; p90: number; p99: number; max: number }
    checked?: number
    failedChecks?: number
  }
  const seconds = raw.durationUs / 1e6
  const ms = (us: number) => round(us / 1000, 2)
  return {
    requests: raw.requests,
    seconds: round(seconds, 2),
    rps: round(raw.requests / seconds, 0),
    errors: raw.errors,
    latencyMs: {
      p50: ms(raw.latencyUs.p50),
      p90: ms(raw.latencyUs.p90),
      p99: ms(raw.latencyUs.p99),
      max: ms(raw.latencyUs.max),
    },
    ...(raw.checked !== undefined ? { checked: raw.checked, failedChecks: raw.failedChecks ?? 0 } : {}),
  }
}

export const errorCount = (r: WrkResult) =>
  r.errors.connect + r.errors.read + r.errors.write + r.errors.status + r.errors.timeout + (r.failedChecks ?? 0)
