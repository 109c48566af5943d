import { afterAll, describe, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DATABASE_ACCOUNT } from "../../src/platform/db/embedded.ts"
import { admin, adminJson } from "../support/cli.ts"
import { prebuilt } from "../support/prebuilt.ts"
import { embeddedTestEnv, type RunningServerProcess, startServerProcess } from "../support/server.ts"

/**
 * D35: the embedded database is a real PostgreSQL server in DATA_DIR/pg, shared by every process on that DATA_DIR
 * and stopped by the last one to leave. Always embedded (DATABASE_URL empty), in both test runs: each test uses real
 * service and admin processes on DATA_DIRs of its own.
 */

const dirs: Array<string> = []
const freshDataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "dsvc-pg-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const embeddedEnv = (dataDir: string) => {
  const env = embeddedTestEnv()
  // embeddedTestEnv made a DATA_DIR of its own: this test names its own.
  if (env.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true })
  return { ...env, DATA_DIR: dataDir }
}

/** The postmaster's pid from DATA_DIR/pg/postmaster.pid, or undefined when the file is gone. */
const postmasterPid = (dataDir: string): number | undefined => {
  try {
    return Number.parseInt(readFileSync(join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0] ?? "", 10)
  } catch {
    return undefined
  }
}
/** Whether a process `pid` exists, a zombie (exited, not reaped yet) included. */
const exists = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
/**
 * Whether `pid` still runs. A process that has exited and only waits to be reaped (a zombie) does not: the
 * postmaster is detached from whoever started it, so the machine's init reaps it, when it gets to it (seconds later
 * on some), and the service itself counts a zombie postmaster as gone.
 */
const alive = (pid: number) => {
  if (!exists(pid)) return false
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}
/** Every process whose parent is `pid` (the postmaster's backends and helpers), from /proc. */
const childrenOf = (pid: number): Array<number> =>
  Array.from(new Bun.Glob("[0-9]*").scanSync({ cwd: "/proc", onlyFiles: false })).flatMap((name) => {
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      return ppid === pid ? [Number(name)] : []
    } catch {
      return []
    }
  })

/** After the last user left: no postmaster, none of its processes, and a clean shutdown (postmaster.pid removed). */
const expectStopped = async (dataDir: string, pid: number | undefined) => {
  expect(pid).toBeNumber()
  const children = childrenOf(pid ?? 0)
  for (let i = 0; i < 100 && alive(pid ?? 0); i++) await Bun.sleep(50)
  expect(alive(pid ?? 0)).toBe(false)
  expect(children.filter(alive)).toEqual([])
  expect(postmasterPid(dataDir)).toBeUndefined()
}

const orgNames = async (env: Record<string, string>) =>
  ((await adminJson(env, ["org", "list"])) as Array<{ name: string }>).map((org) => org.name).sort()

describe("the embedded PostgreSQL server", () => {
  test("is PostgreSQL 18 in DATA_DIR/pg on a Unix socket only; as root it runs as its own account; SIGTERM stops it with the service", async () => {
    const dataDir = freshDataDir()
    const env = embeddedEnv(dataDir)
    const server = await startServerProcess({ env })
    const pid = postmasterPid(dataDir)
    try {
      expect(pid).toBeNumber()
      expect(existsSync(join(dataDir, "pg", "PG_VERSION"))).toBe(true)
      expect(readFileSync(join(dataDir, "pg", "PG_VERSION"), "utf8").trim()).toBe("18")
      expect(statSync(join(dataDir, "pg", ".s.PGSQL.5432")).isSocket()).toBe(true)
      const conf = readFileSync(join(dataDir, "pg", "postgresql.conf"), "utf8")
      expect(conf).toContain("listen_addresses = ''")
      // The postmaster's environment holds none of the service's secrets.
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8")
      expect(environ).not.toContain("SECRET_KEY")
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])
      if (process.getuid?.() === 0) {
        const account = Bun.spawnSync(["id", "-u", DATABASE_ACCOUNT]).stdout.toString().trim()
        expect(uid).toBe(Number(account))
        expect(uid).not.toBe(0)
        expect(statSync(dataDir).mode & 0o777).toBe(0o710)
      } else {
        expect(uid).toBe(process.getuid?.() ?? -1)
      }
      expect((await fetch(`${server.opsUrl}/readyz`)).status).toBe(200)
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0)
    }
    await expectStopped(dataDir, pid)
  })

  test("server and admin commands started together, in either order, ten rounds: every one succeeds, and the database stops after the last", async () => {
    const oneRound = async (round: number, dataDir: string) => {
      const env = embeddedEnv(dataDir)
      const adminFirst = round % 4 < 2
      const delay = Math.floor(Math.random() * 300)
      const launchAdmin = async () => {
        if (!adminFirst) await Bun.sleep(delay)
        return admin(env, ["org", "create", "--name", `round-${round}`])
      }
      const launchServer = async () => {
        if (adminFirst) await Bun.sleep(delay)
        return startServerProcess({ env })
      }
      const [created, server] = await Promise.all([launchAdmin(), launchServer()])
      let pid: number | undefined
      try {
        expect({ round, code: created.code, stderr: created.stderr }).toEqual({ round, code: 0, stderr: "" })
        expect((await fetch(`${server.opsUrl}/readyz`)).status).toBe(200)
        pid = postmasterPid(dataDir)
        // The second round on a DATA_DIR sees both rounds' organizations: the data of the first survived its stop.
        if (round % 2 === 1) expect(await orgNames(env)).toEqual([`round-${round - 1}`, `round-${round}`])
      } finally {
        expect(await server.stop("SIGTERM")).toBe(0)
      }
      await expectStopped(dataDir, pid)
    }
    // Five DATA_DIRs, each with two rounds in order: the even one on it fresh (both race to initialise it), the odd
    // one on the data the even one left. The DATA_DIRs have nothing in common, so two of them are taken at a time.
    const lane = async (pairs: ReadonlyArray<number>) => {
      for (const pair of pairs) {
        const dataDir = freshDataDir()
        await oneRound(2 * pair, dataDir)
        await oneRound(2 * pair + 1, dataDir)
      }
    }
    // Both lanes run to their end (and stop their servers) before a failure of either is reported.
    const lanes = await Promise.allSettled([lane([0, 2, 4]), lane([1, 3])])
    for (const result of lanes) if (result.status === "rejected") throw result.reason
  }, 300_000)

  test("a server killed with SIGKILL leaves nothing that blocks: started again, it finds its data", async () => {
    const dataDir = freshDataDir()
    const env = embeddedEnv(dataDir)
    const first = await startServerProcess({ env })
    await adminJson(env, ["org", "create", "--name", "before-the-kill"])
    const pid = postmasterPid(dataDir)
    await first.stop("SIGKILL")
    const startedAt = performance.now()
    const second = await startServerProcess({ env })
    try {
      const seconds = (performance.now() - startedAt) / 1000
      console.log(`restart after SIGKILL: first answer in ${seconds.toFixed(2)} s (bench figure, not asserted)`)
      expect((await fetch(`${second.opsUrl}/readyz`)).status).toBe(200)
      expect(await orgNames(env)).toEqual(["before-the-kill"])
      // The server the killed process left running is the one used again.
      expect(postmasterPid(dataDir)).toBe(pid as number)
    } finally {
      expect(await second.stop("SIGTERM")).toBe(0)
    }
    await expectStopped(dataDir, pid)
  })

  test("a server killed with SIGKILL together with its database (a power cut) starts again and finds its data", async () => {
    const dataDir = freshDataDir()
    const env = embeddedEnv(dataDir)
    const first = await startServerProcess({ env })
    await adminJson(env, ["org", "create", "--name", "before-the-cut"])
    const pid = postmasterPid(dataDir) ?? 0
    const children = childrenOf(pid)
    await first.stop("SIGKILL")
    process.kill(pid, "SIGKILL")
    for (const child of children) {
      try {
        process.kill(child, "SIGKILL")
      } catch {}
    }
    // Gone as after a power cut, reaped too: PostgreSQL refuses a socket lock file whose process still exists, and
    // a zombie does (after a clean stop there is no lock file left to check).
    for (let i = 0; i < 100 && [pid, ...children].some(exists); i++) await Bun.sleep(50)
    const second = await startServerProcess({ env })
    try {
      expect(await orgNames(env)).toEqual(["before-the-cut"])
      expect(postmasterPid(dataDir)).not.toBe(pid)
    } finally {
      expect(await second.stop("SIGTERM")).toBe(0)
    }
  })

  test("two servers on one DATA_DIR share the database; it runs until the second one stops", async () => {
    const dataDir = freshDataDir()
    const env = embeddedEnv(dataDir)
    const [one, two] = await Promise.all([startServerProcess({ env }), startServerProcess({ env })])
    let stopped: Array<RunningServerProcess> = []
    try {
      await adminJson(env, ["org", "create", "--name", "shared"])
      const pid = postmasterPid(dataDir)
      expect(one.logs.concat(two.logs).filter((line) => line.includes("embedded database: started"))).toHaveLength(1)
      expect(await one.stop("SIGTERM")).toBe(0)
      stopped = [one]
      expect(alive(pid ?? 0)).toBe(true)
      expect((await fetch(`${two.opsUrl}/readyz`)).status).toBe(200)
      expect(await orgNames(env)).toEqual(["shared"])
      expect(await two.stop("SIGTERM")).toBe(0)
      stopped = [one, two]
      await expectStopped(dataDir, pid)
    } finally {
      for (const server of [one, two]) if (!stopped.includes(server)) await server.stop("SIGKILL")
    }
  })

  test("a DATA_DIR holding the former PGlite database stops start-up (service and admin) with one line saying what to do", async () => {
    const dataDir = freshDataDir()
    mkdirSync(join(dataDir, "pgdata"))
    const env = embeddedEnv(dataDir)
    // As the start command runs them (the bundle of test/support/prebuilt.ts).
    for (const argv of [
      ["bun", prebuilt().main],
      ["bun", prebuilt().cli, "org", "list"],
    ]) {
      const child = Bun.spawnSync(argv, { cwd: join(import.meta.dir, "..", ".."), env, stdout: "pipe", stderr: "pipe" })
      const lines = child.stderr.toString().trim().split("\n")
      expect({ argv, code: child.exitCode }).toEqual({ argv, code: 1 })
      expect(lines).toHaveLength(1)
      expect(lines[0]).toContain("DATA_DIR")
      expect(lines[0]).toContain(join(dataDir, "pgdata"))
      expect(lines[0]).toContain("PGlite")
      expect(lines[0]).toContain('README "Storage"')
    }
    // Nothing was started or created over it.
    expect(existsSync(join(dataDir, "pg"))).toBe(false)
  })
})
