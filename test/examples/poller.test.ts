import { afterAll, beforeAll, expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant } from "../support/fixtures.ts"
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

test("the README's poller prints every change, saves its token on SIGTERM, and resumes from it", async () => {
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
