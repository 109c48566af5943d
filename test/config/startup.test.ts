import { afterAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { admin, adminJson } from "../support/cli.ts"
import { get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { prebuilt } from "../support/prebuilt.ts"
import { type RunningServer, serverEnv, startServer, TEST_RATE_LIMIT, TEST_SECRET_KEY } from "../support/server.ts"

/**
 * Start-up configuration, with real processes: the server and the admin tool as the start command runs them (bundled
 * once for the test run, test/support/prebuilt.ts: a start from the bundle costs a fraction of one from the sources,
 * and this file starts some thirty of them), and the config layer itself. The SECRET_KEY generated in embedded mode,
 * bad values stopping start-up with one line naming the variable, and processes racing to generate the key.
 */

const ROOT = join(import.meta.dir, "..", "..")
const dirs: Array<string> = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "dsvc-config-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** An environment with no SECRET_KEY and no DATABASE_URL: the embedded database in its own DATA_DIR. */
const embeddedEnv = (dataDir: string, extra: Record<string, string> = {}): Record<string, string> =>
  serverEnv({ DATA_DIR: dataDir, RATE_LIMIT: TEST_RATE_LIMIT, ...extra })

const mode = (path: string) => statSync(path).mode & 0o777
/** The service's and the admin tool's command lines. */
const SERVER = () => ["bun", prebuilt().main]
const ADMIN = (...args: ReadonlyArray<string>) => ["bun", prebuilt().cli, ...args]
const GENERATED = "SECRET_KEY is not set: generated one"

/** Runs a command to its end (killed after `limitMs`); all it printed, its exit code and how long it took. */
const runToEnd = async (argv: ReadonlyArray<string>, env: Record<string, string>, limitMs = 20_000) => {
  const started = performance.now()
  const child = Bun.spawn([...argv], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" })
  const timer = setTimeout(() => child.kill("SIGKILL"), limitMs)
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  clearTimeout(timer)
  return { code, stdout, stderr, output: `${stdout}${stderr}`, ms: performance.now() - started }
}

describe("SECRET_KEY generated in embedded mode", () => {
  test("generated once into DATA_DIR/secret.key (0600, directory 0700) with a warning; a restart reuses it, so a cursor issued before still pages", async () => {
    const parent = freshDir()
    // D35: as root the database's own account must pass through DATA_DIR's parents (mkdtemp makes them 0700).
    chmodSync(parent, 0o711)
    const dataDir = join(parent, "data") // does not exist yet: start-up creates it
    const env = embeddedEnv(dataDir)
    const keyFile = join(dataDir, "secret.key")
    let server: RunningServer | undefined = await startServer({ env })
    try {
      const warnings = server.logs.filter((line) => line.includes(GENERATED))
      expect(warnings).toHaveLength(1)
      expect(JSON.parse(warnings[0] ?? "{}")).toMatchObject({ logLevel: "WARN" })
      expect(warnings[0]).toContain(keyFile)
      expect(mode(keyFile)).toBe(0o600)
      // D35: started as root, the database runs as its own account, whose group may pass through DATA_DIR, no more.
      expect(mode(dataDir)).toBe(process.getuid?.() === 0 ? 0o710 : 0o700)
      const content = readFileSync(keyFile, "utf8")
      expect(content).toMatch(/^[0-9a-f]{64}\n$/)
      // The key is never logged.
      expect(server.logs.join("\n")).not.toContain(content.trim())
      // No temporary file left behind.
      expect(readdirSync(dataDir).filter((name) => name.includes("secret.key"))).toEqual(["secret.key"])

      // The admin tool (another process, same DATA_DIR, no SECRET_KEY) uses the same file and generates nothing.
      const org = await adminJson(env, ["org", "create", "--name", "Key reuse"])
      // Three processes at once, as three operators' commands can be.
      const [key, sensor, listed] = await Promise.all([
        adminJson(env, ["key", "create", "--org", org.id, "--name", "k", "--scopes", "events:read"]),
        adminJson(env, ["sensor", "create", "--org", org.id, "--name", "web-01"]),
        admin(env, ["org", "list"]),
      ])
      expect(listed.code).toBe(0)
      expect(listed.stderr).not.toContain(GENERATED)
      const sent = await ingest(server.ingestUrl, "events", sensor.token, [
        nativeEvent({ sourceIp: "203.0.113.7" }),
        nativeEvent({ sourceIp: "203.0.113.8" }),
      ])
      expect(sent.status).toBe(200)
      expect(sent.body.accepted).toBe(2)
      const first = await get(server.url, "/v1/events?limit=1", key.key)
      expect(first.status).toBe(200)
      expect(first.body.data).toHaveLength(1)
      const cursor = first.body.nextCursor as string
      expect(typeof cursor).toBe("string")
      expect(await server.stop()).toBe(0)

      server = await startServer({ env })
      expect(server.logs.filter((line) => line.includes(GENERATED))).toEqual([])
      expect(readFileSync(keyFile, "utf8")).toBe(content)
      expect(mode(keyFile)).toBe(0o600)
      const second = await get(server.url, `/v1/events?limit=1&cursor=${encodeURIComponent(cursor)}`, key.key)
      expect(second.status).toBe(200)
      expect(second.body.data).toHaveLength(1)
      expect(second.body.data[0].id).not.toBe(first.body.data[0].id)
      expect(await server.stop()).toBe(0)

      // Control: under another key the same cursor does not verify, so the pages above did depend on the kept key.
      server = await startServer({ env: { ...env, SECRET_KEY: TEST_SECRET_KEY } })
      const foreign = await get(server.url, `/v1/events?limit=1&cursor=${encodeURIComponent(cursor)}`, key.key)
      expect(foreign.status).toBe(400)
      expect(readFileSync(keyFile, "utf8")).toBe(content)
    } finally {
      await server?.stop()
    }
  }, 180_000)

  test("four processes racing on empty DATA_DIRs all end up with the same key, generated by exactly one", async () => {
    // Each contender walks the same 200 empty directories from the same instant, so they meet at the same moment on
    // many of them. (The previous open-with-"wx" code failed this with EEXIST and with a half-written key read.)
    const ROUNDS = 200
    const base = freshDir()
    const startAt = String(Date.now() + 2_500)
    const results = await Promise.all(
      [0, 1, 2, 3].map(() =>
        runToEnd(
          ["bun", "test/config/keyRace.ts"],
          { ...embeddedEnv(base), START_AT: startAt, ROUNDS: String(ROUNDS) },
          90_000,
        ),
      ),
    )
    for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" })
    const outcomes = results.map((r) =>
      r.stdout
        .trim()
        .split("\n")
        .map(
          (line) => JSON.parse(line) as { round: number; fingerprint?: string; created?: boolean; failure?: string },
        ),
    )
    for (let round = 0; round < ROUNDS; round++) {
      const dataDir = join(base, String(round))
      const onFile = createHash("sha256")
        .update(Buffer.from(readFileSync(join(dataDir, "secret.key"), "utf8").trim(), "hex"))
        .digest("hex")
      const contenders = outcomes.map((lines) => lines[round])
      expect({ round, got: contenders.map((c) => c?.failure ?? c?.fingerprint) }).toEqual({
        round,
        got: [onFile, onFile, onFile, onFile],
      })
      expect({ round, created: contenders.filter((c) => c?.created === true).length }).toEqual({ round, created: 1 })
      expect(mode(join(dataDir, "secret.key"))).toBe(0o600)
      expect(mode(dataDir)).toBe(0o700)
      // No temporary file left behind.
      expect(readdirSync(dataDir)).toEqual(["secret.key"])
    }
  }, 180_000)
})

interface BadCase {
  readonly variable: string
  readonly value: string
  /** A part of the value that must never be printed (a secret, a password). */
  readonly secret?: string
}

const BAD: ReadonlyArray<BadCase> = [
  { variable: "PORT", value: "abc" },
  { variable: "PORT", value: "70000" },
  { variable: "INGEST_PORT", value: "-1" },
  { variable: "OPS_PORT", value: "8080.5" },
  { variable: "BASE_URL", value: "notaurl" },
  { variable: "BASE_URL", value: "https://admin:pw-Secret-51@api.example.com", secret: "pw-Secret-51" },
  { variable: "APP_URL", value: "ftp://x" },
  { variable: "DATABASE_URL", value: "notaurl" },
  { variable: "DATABASE_URL", value: "http://app:pw-Secret-77@x/db", secret: "pw-Secret-77" },
  { variable: "DATABASE_URL", value: "postgres://" },
  { variable: "DATABASE_URL", value: "postgres://app:pw-Secret-78@:5432/db", secret: "pw-Secret-78" },
  { variable: "SECRET_KEY", value: "short-Secret-42", secret: "short-Secret-42" },
  { variable: "SECRET_KEY_PREVIOUS", value: "prev-Secret-43", secret: "prev-Secret-43" },
  { variable: "LOG_LEVEL", value: "loud" },
  { variable: "LOG_FORMAT", value: "xml" },
  { variable: "RATE_LIMIT", value: "0" },
  { variable: "RATE_LIMIT_WINDOW", value: "0 millis" },
  { variable: "REOPEN_WINDOW", value: "a week" },
  { variable: "TRUST_PROXY", value: "not-a-cidr" },
  { variable: "WEBHOOK_RETRY_SCHEDULE", value: "5s,soon" },
  { variable: "WEBHOOK_CONCURRENCY", value: "0" },
]

/** Output of a process stopped by a configuration error: exactly one line, naming the variable, and nothing else. */
const expectConfigError = (result: Awaited<ReturnType<typeof runToEnd>>, bad: BadCase) => {
  expect(result.code).not.toBe(0)
  expect(result.code).not.toBeNull()
  const lines = result.output.split("\n").filter((line) => line.trim() !== "")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith(`configuration error: ${bad.variable} must `)
  // No stack trace, no Effect error dump.
  expect(result.output).not.toMatch(/^\s+at /m)
  expect(result.output).not.toContain("Error:")
  expect(result.output).not.toContain('"cause"')
  if (bad.secret !== undefined) expect(result.output).not.toContain(bad.secret)
}

describe("a bad value stops start-up with one line naming the variable", () => {
  for (const bad of BAD) {
    test(`server: ${bad.variable}=${bad.value}`, async () => {
      const env = embeddedEnv(freshDir(), { SECRET_KEY: TEST_SECRET_KEY, [bad.variable]: bad.value })
      const result = await runToEnd(SERVER(), env)
      expectConfigError(result, bad)
      // It stops at the configuration: no database waited for (its retries alone take about 45 s), no listener.
      expect(result.ms).toBeLessThan(15_000)
      expect(result.output).not.toContain("database not reachable")
      expect(result.output).not.toContain("listening")
    }, 30_000)
  }

  test("server: every bad variable is named, in one line", async () => {
    const env = embeddedEnv(freshDir(), { SECRET_KEY: TEST_SECRET_KEY, PORT: "abc", BASE_URL: "notaurl" })
    const result = await runToEnd(SERVER(), env)
    expect(result.code).toBe(1)
    expect(result.output.trim().split("\n")).toEqual([
      'configuration error: PORT must be an integer from 0 to 65535, 0 for any free port (got "abc"); BASE_URL must be an absolute http(s) URL without query, fragment or credentials, e.g. https://api.example.com (got "notaurl")',
    ])
  }, 30_000)

  test("server: DATABASE_URL without SECRET_KEY is refused before connecting", async () => {
    // Port 1 on loopback: nothing listens there, and the server must not even try.
    const env = embeddedEnv(freshDir(), { DATABASE_URL: "postgres://app:pw-Secret-79@127.0.0.1:1/x" })
    const result = await runToEnd(SERVER(), env)
    expectConfigError(result, { variable: "SECRET_KEY", value: "", secret: "pw-Secret-79" })
    expect(result.output).toContain("when DATABASE_URL is set")
    expect(result.output).not.toContain("database not reachable")
    expect(result.ms).toBeLessThan(15_000)
  }, 30_000)

  for (const bad of BAD.filter((b) => ["BASE_URL", "DATABASE_URL", "SECRET_KEY"].includes(b.variable))) {
    test(`admin: ${bad.variable}=${bad.value}`, async () => {
      const env = embeddedEnv(freshDir(), { SECRET_KEY: TEST_SECRET_KEY, [bad.variable]: bad.value })
      const result = await runToEnd(ADMIN("org", "list"), env)
      expect(result.code).toBe(1)
      expect(result.stdout).toBe("")
      expectConfigError(result, bad)
    }, 30_000)
  }
})

/** A start-up failure's output: exactly one line on stderr, starting with `first`, exit 1, no stack, no Effect dump. */
const expectOneLine = (result: Awaited<ReturnType<typeof runToEnd>>, first: string) => {
  expect(result.code).toBe(1)
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "")
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith(first)
  expect(result.output).not.toMatch(/^\s+at /m)
  expect(result.output).not.toContain('"cause"')
  expect(result.output).not.toContain('"logLevel":"ERROR"')
}

describe("every start-up failure prints one line saying what to do, exit 1", () => {
  test("the embedded database refuses to start (DATA_DIR too long for its socket)", async () => {
    const dataDir = join(freshDir(), "d".repeat(100))
    const result = await runToEnd(SERVER(), embeddedEnv(dataDir, { SECRET_KEY: TEST_SECRET_KEY }))
    expectOneLine(result, "cannot start the embedded database: DATA_DIR path is too long for a Unix socket")
    expect(result.stderr).toContain("choose a shorter DATA_DIR")
    expect(result.stderr).toContain("set DATABASE_URL")
  }, 30_000)

  test("a DATA_DIR holding the former PGlite database", async () => {
    const dataDir = freshDir()
    mkdirSync(join(dataDir, "pgdata"))
    const result = await runToEnd(SERVER(), embeddedEnv(dataDir, { SECRET_KEY: TEST_SECRET_KEY }))
    expectOneLine(result, "configuration error: DATA_DIR: holds the former embedded database (PGlite")
    expect(result.stderr).toContain("move it away to start empty")
  }, 30_000)

  test("DATABASE_URL unreachable: one line after the retries, naming the address, never the password", async () => {
    // Port 1 on loopback: nothing listens there. The server waits DATABASE_STARTUP_WAIT (45 s by default) for a
    // database still starting; the retries and the one line after them are the same with a shorter wait.
    const env = embeddedEnv(freshDir(), {
      SECRET_KEY: TEST_SECRET_KEY,
      DATABASE_STARTUP_WAIT: "3 seconds",
      DATABASE_URL: "postgres://app:pw-Secret-80@127.0.0.1:1/incidents",
    })
    const result = await runToEnd(SERVER(), env, 30_000)
    expectOneLine(result, "cannot connect to the database at postgresql://127.0.0.1:1/incidents (DATABASE_URL): ")
    expect(result.stderr).toContain("ECONNREFUSED")
    expect(result.stderr).toContain("correct DATABASE_URL")
    expect(result.output).not.toContain("pw-Secret-80")
  }, 60_000)
})
