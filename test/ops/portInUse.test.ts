import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { testEnv } from "../support/server.ts"

/**
 * `bun run start` with one listener's port held by another process: one line on stderr naming that listener's own
 * variable (PORT, INGEST_PORT, OPS_PORT, CONSOLE_PORT), exit 1, no stack trace. Real processes on real ports.
 */

const ROOT = join(import.meta.dir, "..", "..")

describe("a taken port names its own variable", () => {
  // Another process holding a port on the listeners' host.
  let holder: ReturnType<typeof Bun.serve>
  beforeAll(() => {
    holder = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") })
  })
  afterAll(() => holder.stop(true))

  for (const variable of ["PORT", "INGEST_PORT", "OPS_PORT", "CONSOLE_PORT"]) {
    test(`${variable} in use`, async () => {
      const port = String(holder.port)
      const child = Bun.spawn(["bun", "src/main.ts"], {
        cwd: ROOT,
        env: await testEnv({ [variable]: port }),
        stdout: "pipe",
        stderr: "pipe",
      })
      const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
      const [stdout, stderr, code] = await Promise.all([
        new Response(child.stdout).text(),
        new Response(child.stderr).text(),
        child.exited,
      ])
      clearTimeout(timer)
      expect(code).toBe(1)
      expect(stderr.trim().split("\n")).toEqual([
        `cannot listen on 127.0.0.1:${port} (${variable}): the port is in use by another process; stop it or set ${variable} to a free port (0 picks any)`,
      ])
      expect(`${stdout}${stderr}`).not.toMatch(/^\s+at /m)
    }, 90_000)
  }
})
