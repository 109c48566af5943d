import { afterAll, beforeAll, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { cleanup, type RunningServerProcess, shutdown, startServerProcess, testEnv } from "../support/server.ts"

/**
 * Issue #15: the start command (`bun run start` = `bun run build:server && sh bin/serve`, and the Dockerfile's CMD)
 * runs the bundled service, dist/server/main.js, with JavaScriptCore's heap sized for 384 MiB (or a lower container
 * limit). The bundle must be the whole service: migrations, API, docs, console and its static files, operations, a
 * clean stop on SIGTERM.
 */

const ROOT = join(import.meta.dir, "..", "..")
let server: RunningServerProcess

/** What bin/serve computes when the operator sets nothing: 384 MiB, or the cgroup's memory limit when lower. */
const expectedRamSize = () => {
  let ram = 384 * 1024 * 1024
  for (const file of ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]) {
    try {
      const limit = readFileSync(file, "utf8").trim()
      if (/^\d+$/.test(limit) && Number(limit) < ram) ram = Number(limit)
    } catch {}
  }
  return String(ram)
}

const environOf = (pid: number) =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter((kv) => kv.includes("="))
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  )

beforeAll(async () => {
  const build = Bun.spawnSync(["bun", "run", "build:server"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" })
  if (build.exitCode !== 0) throw new Error(`build:server failed: ${build.stderr.toString()}`)
  server = await startServerProcess({ command: ["sh", "bin/serve"] })
})

afterAll(() => shutdown(server))

test("issue #15: bin/serve execs bun on the bundle (same process) with the heap sized for 384 MiB", () => {
  const pid = server.process.pid
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
  expect(cmdline[0]).toMatch(/(^|\/)bun$/)
  expect(cmdline.some((arg) => arg.endsWith("dist/server/main.js"))).toBe(true)
  expect(environOf(pid).BUN_JSC_forceRAMSize).toBe(expectedRamSize())
})

test("issue #15: the bundled service serves the API, the docs, the console with its static files and the ops listener", async () => {
  const unauthorized = await fetch(`${server.url}/v1/incidents`)
  expect(unauthorized.status).toBe(401)
  expect(unauthorized.headers.get("content-type")).toContain("application/problem+json")
  expect((await fetch(`${server.url}/docs`)).status).toBe(200)
  expect((await fetch(`${server.url}/openapi.json`)).status).toBe(200)
  const signIn = await fetch(`${server.consoleUrl}/sign-in`)
  expect(signIn.status).toBe(200)
  const assets = [...(await signIn.text()).matchAll(/\/static\/[\w.]+/g)].map((m) => m[0])
  expect(assets.length).toBeGreaterThanOrEqual(2)
  for (const asset of assets)
    expect({ asset, status: (await fetch(`${server.consoleUrl}${asset}`)).status }).toEqual({ asset, status: 200 })
  expect((await fetch(`${server.opsUrl}/readyz`)).status).toBe(200)
})

test("issue #15: an operator's BUN_JSC_forceRAMSize is kept, and SIGTERM stops the bundled service cleanly", async () => {
  const other = await startServerProcess({
    command: ["sh", "bin/serve"],
    env: await testEnv({ BUN_JSC_forceRAMSize: "0" }),
  })
  try {
    expect(environOf(other.process.pid).BUN_JSC_forceRAMSize).toBe("0")
    expect((await fetch(`${other.url}/v1/incidents`)).status).toBe(401)
  } finally {
    expect(await other.stop("SIGTERM")).toBe(0)
    cleanup(other)
  }
})

test("two `bun run start` at once from one checkout: both builds succeed, whole, and both servers start", async () => {
  const builds = [0, 1].map(() =>
    Bun.spawn(["bun", "run", "build:server"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" }),
  )
  const results = await Promise.all(
    builds.map(async (child) => ({ code: await child.exited, stderr: await new Response(child.stderr).text() })),
  )
  for (const result of results) expect(result).toMatchObject({ code: 0 })
  // The build in place is whole: the bundle, and the static files once (not a static/static copied over another).
  const built = join(ROOT, "dist", "server")
  expect(existsSync(join(built, "main.js"))).toBe(true)
  expect(readdirSync(join(built, "static")).sort()).toEqual(readdirSync(join(ROOT, "src", "console", "static")).sort())
  const servers: Array<RunningServerProcess> = []
  try {
    servers.push(
      ...(await Promise.all(
        [0, 1].map(async () => startServerProcess({ env: await testEnv(), command: ["sh", "bin/serve"] })),
      )),
    )
    for (const started of servers) {
      expect((await fetch(`${started.opsUrl}/healthz`)).status).toBe(200)
      expect((await fetch(`${started.consoleUrl}/sign-in`)).status).toBe(200)
    }
  } finally {
    for (const started of servers) {
      await started.stop()
      cleanup(started)
    }
  }
}, 180_000)
