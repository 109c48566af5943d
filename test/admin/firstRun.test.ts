import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { admin, adminJson } from "../support/cli.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, startServerProcess, testEnv } from "../support/server.ts"

/**
 * Issue #17 item 8, the first run as a new user meets it: the server's start-up on a taken port, its shutdown, the
 * admin tool's help and messages (D24), and a webhook refused by the server (D18) logged so its cause is plain.
 */

const ROOT = join(import.meta.dir, "..", "..")

const logEntries = (server: RunningServer) =>
  server.logs.flatMap((line) => {
    try {
      return [JSON.parse(line) as { message?: unknown; logLevel?: string; annotations?: Record<string, unknown> }]
    } catch {
      return []
    }
  })

const waitFor = async (what: string, check: () => boolean, ms = 20_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(100)
  }
}

describe("the first run", () => {
  let server: RunningServer
  beforeAll(async () => {
    // The server as a new user starts it: no WEBHOOK_ALLOW_PRIVATE.
    // One retry 100 ms later, then dead: the refused delivery leaves nothing queued in a shared test database.
    server = await startServer({
      env: await testEnv({ WEBHOOK_POLL_INTERVAL: "200 millis", WEBHOOK_RETRY_SCHEDULE: "100ms" }),
    })
  })
  afterAll(() => shutdown(server))

  test("`bun run start` on a taken port prints one line naming the port and its variable, exit 1", async () => {
    const child = Bun.spawn(["bun", "src/main.ts"], {
      cwd: ROOT,
      env: { ...(await testEnv()), PORT: String(server.port) },
      stdout: "pipe",
      stderr: "pipe",
    })
    const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
    expect(code).toBe(1)
    expect(stderr.trim().split("\n")).toEqual([
      `cannot listen on 127.0.0.1:${server.port} (PORT): the port is in use by another process; stop it or set PORT to a free port (0 picks any)`,
    ])
  }, 60_000)

  test("`admin help` prints the usage (exit 0); a missing --name says it is required", async () => {
    const help = await admin(server.env, ["help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("$ admin")
    expect(help.stdout).toContain("org create --name <name>")

    const noName = await admin(server.env, ["org", "create"])
    expect(noName.code).not.toBe(0)
    expect(noName.stderr).toContain("--name is required")
    expect(noName.stderr).not.toContain("printable")
    // A name that is there but empty still gets the rule.
    const empty = await admin(server.env, ["org", "create", "--name", " "])
    expect(empty.stderr).toContain("--name must be 1 to 200 printable characters")
  }, 60_000)

  test("a loopback receiver: refused with a pointer to WEBHOOK_ALLOW_PRIVATE; the server's failed attempt is a WARN with its reason", async () => {
    const org = (await adminJson(server.env, [
      "org",
      "create",
      "--name",
      `First run ${crypto.randomUUID().slice(0, 8)}`,
    ])) as { id: string }
    const refused = await admin(server.env, [
      "webhook",
      "create",
      "--org",
      org.id,
      "--url",
      "https://127.0.0.1:3443/hooks",
    ])
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("127.0.0.1 is a loopback address")
    expect(refused.stderr).toContain("WEBHOOK_ALLOW_PRIVATE")

    // The admin tool allowed it; the server was started without it (the README's old mistake).
    await adminJson({ ...server.env, WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }, [
      "webhook",
      "create",
      "--org",
      org.id,
      "--url",
      "https://127.0.0.1:3443/hooks",
    ])
    const sensor = (await adminJson(server.env, ["sensor", "create", "--org", org.id, "--name", "web-01"])) as {
      token: string
    }
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(200)
    const failedAttempt = () =>
      logEntries(server).find((entry) => entry.message === "webhook attempt failed" && entry.annotations)
    await waitFor("the server's webhook attempt", () => failedAttempt() !== undefined)
    const entry = failedAttempt()
    expect(entry?.logLevel).toBe("WARN")
    expect(String(entry?.annotations?.reason)).toContain("127.0.0.1 is a loopback address")
    expect(String(entry?.annotations?.reason)).toContain("WEBHOOK_ALLOW_PRIVATE")
    await waitFor("the delivery to be dead", () =>
      logEntries(server).some((e) => e.message === "webhook attempt failed" && e.annotations?.state === "dead"),
    )
  }, 60_000)
})

test("shutdown: SIGTERM logs `shutting down` (with the signal), then `stopped`; exit 0", async () => {
  const server = await startServerProcess()
  try {
    const code = await server.stop("SIGTERM")
    expect(code).toBe(0)
    const messages = logEntries(server).map((e) => e.message)
    const down = messages.indexOf("shutting down")
    expect(down).toBeGreaterThanOrEqual(0)
    expect(messages.indexOf("stopped")).toBeGreaterThan(down)
    const signal = logEntries(server).find((e) => e.message === "shutting down")?.annotations?.signal
    expect(signal).toBe("SIGTERM")
  } finally {
    await shutdown(server)
  }
}, 60_000)
