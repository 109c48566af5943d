import { afterAll, beforeAll, expect, test } from "bun:test"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { API_KEY_TOKEN, parseToken } from "../../src/domain/secretToken.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/** examples/poller.ts as README shows it: run as a process, stopped with SIGTERM, restarted from its saved token. */
const ROOT = join(import.meta.dir, "..", "..")
let server: RunningServer
let db: TestDatabase
const dir = mkdtempSync(join(tmpdir(), "poller-"))

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})
afterAll(async () => {
  await shutdown(server, db)
  rmSync(dir, { recursive: true, force: true })
})

const runPoller = (key: string) => {
  const child = Bun.spawn(["bun", "examples/poller.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      BASE_URL: server.url,
      API_KEY: key,
      TOKEN_FILE: join(dir, "token"),
      POLL_INTERVAL_MS: "100",
    },
    stdout: "pipe",
    stderr: "pipe",
  })
  const lines: Array<{ id: string; status: string; title: string }> = []
  const reading = (async () => {
    let buffer = ""
    for await (const chunk of child.stdout as ReadableStream<Uint8Array>) {
      buffer += new TextDecoder().decode(chunk)
      let i = buffer.indexOf("\n")
      while (i >= 0) {
        lines.push(JSON.parse(buffer.slice(0, i)))
        buffer = buffer.slice(i + 1)
        i = buffer.indexOf("\n")
      }
    }
  })()
  const waitFor = async (n: number) => {
    const until = Date.now() + 60_000
    while (lines.length < n && Date.now() < until) await Bun.sleep(50)
    expect(lines.length).toBe(n)
  }
  const stop = async () => {
    child.kill("SIGTERM")
    expect(await child.exited).toBe(0)
    await reading
  }
  return { lines, waitFor, stop }
}

test("the documented poller prints every change, saves its token on SIGTERM, and resumes from it", async () => {
  const { orgId, key } = await createTenant(db, "Poller Co")
  const sensor = await createSensor(db, orgId, "web-poller")
  await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "192.0.2.71" }),
    nativeEvent({ sourceIp: "192.0.2.72" }),
  ])
  const first = runPoller(key)
  await first.waitFor(2)
  await Bun.sleep(300)
  await first.stop()
  expect(existsSync(join(dir, "token"))).toBe(true)
  expect(readFileSync(join(dir, "token"), "utf8")).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)

  // While it is stopped, one incident gets a new event and one is new.
  await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "192.0.2.72" }),
    nativeEvent({ sourceIp: "192.0.2.73" }),
  ])
  const second = runPoller(key)
  await second.waitFor(2)
  await Bun.sleep(300)
  await second.stop()
  // Exactly the two changes made while it was stopped: the seen incident again (its new event) and the new one.
  expect(second.lines).toHaveLength(2)
  const firstIds = new Set(first.lines.map((l) => l.id))
  expect(second.lines.filter((l) => firstIds.has(l.id))).toHaveLength(1)
  expect(second.lines.filter((l) => !firstIds.has(l.id))).toHaveLength(1)
})

/** The code blocks of docs/api.md under "Following new incidents", as written. */
const readmeBlock = (language: "ts" | "sh") => {
  const readme = readFileSync(join(ROOT, "docs", "api.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Following new incidents"))
  const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section)
  if (!match?.[1]) throw new Error(`no ${language} block in the docs/api.md section`)
  return match[1]
}

const linesOf = (child: ReturnType<typeof Bun.spawn>) => {
  const lines: Array<string> = []
  const reading = (async () => {
    let buffer = ""
    for await (const chunk of child.stdout as ReadableStream<Uint8Array>) {
      buffer += new TextDecoder().decode(chunk)
      const parts = buffer.split("\n")
      buffer = parts.pop() ?? ""
      lines.push(...parts.filter((l) => l !== ""))
    }
  })()
  return { lines, reading }
}

const waitUntil = async (check: () => boolean) => {
  const until = Date.now() + 60_000
  while (!check() && Date.now() < until) await Bun.sleep(50)
  expect(check()).toBe(true)
}

test("the documented poller with the client runs as written: prints the changes, saves the token on SIGINT", async () => {
  const { orgId, key } = await createTenant(db, "Readme Co")
  const sensor = await createSensor(db, orgId, "web-readme")
  await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.81" })])
  // Beside the package (so its `decoy-incident-service/client` import resolves), run from a scratch directory.
  const script = join(ROOT, ".data", `readme-poller-${process.pid}.ts`)
  mkdirSync(join(ROOT, ".data"), { recursive: true })
  writeFileSync(script, readmeBlock("ts"))
  const cwd = mkdtempSync(join(dir, "readme-"))
  try {
    const child = Bun.spawn(["bun", script], {
      cwd,
      env: { PATH: process.env.PATH ?? "", BASE_URL: server.url, API_KEY: key },
      stdout: "pipe",
      stderr: "pipe",
    })
    const { lines, reading } = linesOf(child)
    await waitUntil(() => lines.length >= 1)
    expect(lines[0]).toStartWith("inc_")
    expect(lines[0]).toContain("open")
    child.kill("SIGINT")
    expect(await child.exited).toBe(0)
    await reading
    expect(readFileSync(join(cwd, ".incident-feed-token"), "utf8")).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
  } finally {
    rmSync(script, { force: true })
  }
})

test("the documented curl and jq poller runs as written and resumes from its token file", async () => {
  const { orgId, key } = await createTenant(db, "Curl Co")
  const sensor = await createSensor(db, orgId, "web-curl")
  await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.91" })])
  const cwd = mkdtempSync(join(dir, "curl-"))
  const run = () =>
    Bun.spawn(["bash", "-c", readmeBlock("sh")], {
      cwd,
      env: { PATH: process.env.PATH ?? "", BASE_URL: server.url, API_KEY: key },
      stdout: "pipe",
      stderr: "pipe",
    })
  const first = run()
  const a = linesOf(first)
  await waitUntil(() => a.lines.length >= 1)
  await Bun.sleep(500)
  first.kill("SIGTERM")
  await first.exited
  await a.reading
  expect(a.lines.map((l) => JSON.parse(l).title)).toHaveLength(1)
  await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.92" })])
  const second = run()
  const b = linesOf(second)
  await waitUntil(() => b.lines.length >= 1)
  await Bun.sleep(500)
  second.kill("SIGTERM")
  await second.exited
  await b.reading
  // Only the change made while it was stopped.
  expect(b.lines).toHaveLength(1)
  expect(JSON.parse(b.lines[0] ?? "{}").id).not.toBe(JSON.parse(a.lines[0] ?? "{}").id)
})

/** examples/poller.ts on its own token file; its output lines, and a way to end it. */
const startPoller = (key: string, tokenFile: string) => {
  const child = Bun.spawn(["bun", "examples/poller.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      BASE_URL: server.url,
      API_KEY: key,
      TOKEN_FILE: tokenFile,
      POLL_INTERVAL_MS: "100",
    },
    stdout: "pipe",
    stderr: "pipe",
  })
  return { child, ...linesOf(child) }
}

test("the poller saves its token after each page (atomically), so a kill -9 replays nothing it had handled", async () => {
  const { orgId, key } = await createTenant(db, "Killed Co")
  const sensor = await createSensor(db, orgId, "web-killed")
  await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "192.0.2.61" }),
    nativeEvent({ sourceIp: "192.0.2.62" }),
  ])
  const tokenDir = mkdtempSync(join(dir, "killed-"))
  const tokenFile = join(tokenDir, "token")
  const first = startPoller(key, tokenFile)
  await waitUntil(() => first.lines.length >= 2)
  // The page is handled and the feed caught up: the token is on disk without any signal.
  await waitUntil(() => existsSync(tokenFile))
  await Bun.sleep(300)
  first.child.kill("SIGKILL")
  await first.child.exited
  await first.reading
  expect(first.lines).toHaveLength(2)
  expect(readFileSync(tokenFile, "utf8")).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
  // Written to a temporary file and renamed: nothing else is left beside it.
  expect(readdirSync(tokenDir)).toEqual(["token"])

  await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.63" })])
  const second = startPoller(key, tokenFile)
  await waitUntil(() => second.lines.length >= 1)
  await Bun.sleep(500)
  second.child.kill("SIGTERM")
  expect(await second.child.exited).toBe(0)
  await second.reading
  // Only the incident made while it was down; none of the two it had handled before the kill.
  expect(second.lines).toHaveLength(1)
  const before = new Set(first.lines.map((line) => JSON.parse(line).id))
  expect(before.has(JSON.parse(second.lines[0] ?? "{}").id)).toBe(false)
})

/** Runs the poller with `key` until it ends by itself; its exit code, its stderr lines and its stdout lines. */
const pollerFailure = async (key: string) => {
  const tokenFile = join(mkdtempSync(join(dir, "badkey-")), "token")
  const { child, lines, reading } = startPoller(key, tokenFile)
  const [stderr, code] = await Promise.all([new Response(child.stderr as ReadableStream).text(), child.exited])
  await reading
  return {
    code,
    stderr,
    lines: stderr.split("\n").filter((line) => line.trim() !== ""),
    stdout: lines,
    savedToken: existsSync(tokenFile),
  }
}

test("a wrong key ends the poller with one line saying so, exit 1, no stack trace", async () => {
  const run = await pollerFailure(`dsk_${"x".repeat(40)}`)
  expect(run.code).toBe(1)
  expect(run.lines).toHaveLength(1)
  expect(run.lines[0]).toStartWith("poller: 401 unauthorized")
  expect(run.lines[0]).toContain("check API_KEY")
  expect(run.stderr).not.toMatch(/^\s+at /m)
})

test("every kind of bad key (a real key's id with a wrong secret, none at all, a key without incidents:read) ends the poller with one line naming what to fix, exit 1, nothing on stdout, no token saved", async () => {
  const { orgId, key } = await createTenant(db, "Bad Keys Co")
  const eventsOnly = await createKey(db, orgId, "events:read")
  // The same key id with another 43-character secret: the server looks the key up and refuses the secret.
  const wrongSecret = `${API_KEY_TOKEN.prefix}_${parseToken(API_KEY_TOKEN, key)?.id}_${"A".repeat(43)}`
  expect(wrongSecret).not.toBe(key)
  const cases = [
    { key: wrongSecret, starts: "poller: 401 unauthorized", hint: "(check API_KEY)" },
    { key: "", starts: "poller: 401 unauthorized", hint: "(check API_KEY)" },
    { key: eventsOnly.key, starts: "poller: 403 insufficient_scope", hint: "(the key needs the incidents:read scope)" },
  ]
  for (const c of cases) {
    const run = await pollerFailure(c.key)
    expect({ code: run.code, lines: run.lines.length, stdout: run.stdout, savedToken: run.savedToken }).toEqual({
      code: 1,
      lines: 1,
      stdout: [],
      savedToken: false,
    })
    expect(run.lines[0]).toStartWith(c.starts)
    expect(run.lines[0]).toEndWith(c.hint)
    expect(run.stderr).not.toMatch(/^\s+at /m)
    // Never the key itself, even a wrong one: stderr ends up in logs.
    // The secret is the whole part after the id: it may itself hold "_", so a cut at the last one can be a single
    // character that any message contains.
    if (c.key !== "") expect(run.stderr).not.toContain(parseToken(API_KEY_TOKEN, c.key)?.secret ?? c.key)
  }
}, 60_000)
