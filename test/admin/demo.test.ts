import { afterAll, expect, test } from "bun:test"
import { join } from "node:path"
import { Effect } from "effect"
import { TransitionsRepo } from "../../src/repos/TransitionsRepo.ts"
import { freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { get, idOf } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Issue "`bun run demo`": with the server running or alone (embedded or DATABASE_URL), the demo creates an
 * organization, a sensor, a key and a realistic attack sent through the real ingestion pipeline (a port scan, SSH
 * brute force with a few dozen passwords, a successful login and commands, from two source addresses, one of them
 * re-opening a closed incident), then prints the key and a curl command that works.
 */

const ROOT = join(import.meta.dir, "..", "..")
const ATTACKER = "203.0.113.66"
const RETURNING = "198.51.100.14"

const servers: Array<RunningServer> = []
const databases: Array<TestDatabase> = []

afterAll(async () => {
  for (const db of databases) await db.close()
  for (const server of servers) await shutdown(server)
})

const runDemo = async (env: Record<string, string>, args: ReadonlyArray<string> = []) => {
  const child = Bun.spawn(["bun", "src/demo.ts", ...args], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" })
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { out, err, code }
}

/** The key and the first curl command the demo printed. */
const printed = (out: string) => {
  const key = /\n {2}(dsk_\S+)\n/.exec(out)?.[1]
  const curl = /\n {2}curl -H "Authorization: Bearer (\S+)" (\S+\/v1\/incidents)\n/.exec(out)
  return { key: key ?? "", curlKey: curl?.[1] ?? "", curlUrl: curl?.[2] ?? "" }
}

interface ApiEvent {
  readonly id: string
  readonly time: string
  readonly type: string
  readonly port: number
  readonly sourcePort: number
  readonly attackerInput: Record<string, unknown>
}

/** Every event of the demo's organization from one address, through the API (all pages). */
const eventsFrom = async (apiUrl: string, key: string, sourceIp: string): Promise<Array<ApiEvent>> => {
  const out: Array<ApiEvent> = []
  let cursor: string | null = null
  do {
    const query: string = `sourceIp=${sourceIp}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`
    const page = await get(apiUrl, `/v1/events?${query}`, key)
    expect(page.status).toBe(200)
    out.push(...page.body.data)
    cursor = page.body.nextCursor
  } while (cursor !== null)
  return out
}

/** The story the issue asks for, read back through the API with the printed key (and the transitions table). */
const checkStory = async (apiUrl: string, key: string, db: TestDatabase, ranFrom: number, ranUntil: number) => {
  const list = await get(apiUrl, "/v1/incidents", key)
  expect(list.status).toBe(200)
  expect(list.body.data).toHaveLength(2)
  const bySource = new Map(list.body.data.map((i: { sourceIp: string }) => [i.sourceIp, i]))
  expect([...bySource.keys()].sort()).toEqual([RETURNING, ATTACKER].sort())

  // The attacker: port scan, brute force, login, commands; created low, escalated as it got worse.
  const attack = bySource.get(ATTACKER) as { id: string }
  const detail = await get(apiUrl, `/v1/incidents/${attack.id}`, key)
  expect(detail.status).toBe(200)
  expect(detail.body).toMatchObject({ status: "open", severity: "high", highConfidence: true, resolvedAt: null })
  expect(detail.body.eventTypes).toEqual(
    expect.arrayContaining(["portscan.syn", "ssh.login_attempt", "ssh.login_success", "ssh.command"]),
  )
  const events = await eventsFrom(apiUrl, key, ATTACKER)
  expect(events).toHaveLength(detail.body.eventCount)
  const ofType = (type: string) => events.filter((e) => e.type === type)
  // The OpenCanary mapper took each SYN's destination port as the event's port.
  const scanned = new Set(ofType("portscan.syn").map((e) => e.port))
  expect(scanned.size).toBeGreaterThanOrEqual(10)
  expect(scanned).toContain(22)
  // ... and kept the logged packet's fields (logdata PROTO, TTL) as attacker input.
  expect(ofType("portscan.syn")[0]?.attackerInput).toMatchObject({ proto: "TCP", ttl: expect.any(String) })
  const attempts = ofType("ssh.login_attempt")
  const fingerprints = new Set(
    attempts.map((e) => {
      const password = e.attackerInput.password as { masked: string; length: number; fingerprint: string }
      expect(password).toMatchObject({ masked: expect.stringMatching(/^\*+$/), fingerprint: expect.any(String) })
      return password.fingerprint
    }),
  )
  expect(fingerprints.size).toBeGreaterThanOrEqual(24)
  expect(ofType("ssh.login_success").length).toBeGreaterThanOrEqual(1)
  expect(ofType("ssh.command").length).toBeGreaterThanOrEqual(3)
  for (const e of [...attempts, ...ofType("ssh.command")]) expect(e.port).toBe(22)
  expect(JSON.stringify(events)).not.toContain("P@ssw0rd")
  expect(JSON.stringify(events)).not.toContain("Winter2026!")
  const attackTransitions = await db.run(
    Effect.flatMap(TransitionsRepo, (t) => t.forIncident(idOf("incident", attack.id))),
  )
  expect(attackTransitions.map((t) => t.kind)).toEqual(["created", "escalated", "escalated"])

  // The first wave is in the past; nothing is dated after the demo ran.
  expect(Date.parse(detail.body.firstSeenAt)).toBeLessThan(ranFrom - 60 * 60_000)
  const returningEvents = await eventsFrom(apiUrl, key, RETURNING)
  for (const e of [...events, ...returningEvents]) expect(Date.parse(e.time)).toBeLessThanOrEqual(ranUntil)

  // The second address: its incident was closed, then re-opened by activity dated after the close.
  const reopened = bySource.get(RETURNING) as { id: string }
  expect(reopened).toMatchObject({ status: "open", resolvedAt: null })
  const transitions = await db.run(Effect.flatMap(TransitionsRepo, (t) => t.forIncident(idOf("incident", reopened.id))))
  expect(transitions.map((t) => t.kind)).toEqual(["created", "closed", "reopened"])
  const closedAt = new Date(transitions[1]?.at ?? Number.NaN).getTime()
  expect(new Date(transitions[2]?.at ?? Number.NaN).getTime()).toBeGreaterThanOrEqual(closedAt)
  const before = returningEvents.filter((e) => Date.parse(e.time) < closedAt)
  const after = returningEvents.filter((e) => Date.parse(e.time) > closedAt)
  expect(before.length).toBeGreaterThanOrEqual(1)
  expect(after.length).toBeGreaterThanOrEqual(1)
  expect(before.length + after.length).toBe(returningEvents.length)
  expect(Math.max(...before.map((e) => Date.parse(e.time)))).toBeLessThan(ranFrom)
}

test("`bun run demo` alone on a fresh database sends the attack through the ingest listener; its key and curl work", async () => {
  const port = freePort()
  // A fresh DATA_DIR (or the run's PostgreSQL); no BASE_URL: the curl command names http://localhost:<PORT>.
  const env = await testEnv({ PORT: String(port) })
  const ranFrom = Date.now()
  const demo = await runDemo(env)
  const ranUntil = Date.now()
  // No WARN or ERROR line (the dispatcher started after the migrations), nothing on stderr at all.
  expect({ code: demo.code, err: demo.err }).toEqual({ code: 0, err: "" })
  expect(demo.out).not.toMatch(/WARN|ERROR/)
  const { key, curlKey, curlUrl } = printed(demo.out)
  expect(key).toMatch(/^dsk_key_/)
  expect(curlKey).toBe(key)
  expect(curlUrl).toBe(`http://localhost:${port}/v1/incidents`)

  const server = await startServer({ env })
  servers.push(server)
  expect(server.port).toBe(port)
  // The printed curl command, as printed.
  const curl = await fetch(curlUrl, { headers: { Authorization: `Bearer ${curlKey}` } })
  expect(curl.status).toBe(200)
  expect(((await curl.json()) as { data: Array<unknown> }).data).toHaveLength(2)

  const db = testDatabase(server.env)
  databases.push(db)
  await checkStory(server.url, key, db, ranFrom, ranUntil)
}, 120_000)

test("`bun run demo` with the server running prints BASE_URL in its curl command, and the story reads back", async () => {
  const server = await startServer()
  servers.push(server)
  const ranFrom = Date.now()
  const demo = await runDemo({ ...server.env, BASE_URL: server.url })
  const ranUntil = Date.now()
  expect({ code: demo.code, err: demo.err }).toEqual({ code: 0, err: "" })
  const { key, curlKey, curlUrl } = printed(demo.out)
  expect(curlKey).toBe(key)
  expect(curlUrl).toBe(`${server.url}/v1/incidents`)
  const curl = await fetch(curlUrl, { headers: { Authorization: `Bearer ${curlKey}` } })
  expect(curl.status).toBe(200)

  const db = testDatabase(server.env)
  databases.push(db)
  await checkStory(server.url, key, db, ranFrom, ranUntil)
}, 120_000)

test("a bad setting stops the demo with the one configuration line naming the variable, as the server gives", async () => {
  const result = await runDemo({ ...(await testEnv()), BASE_URL: "notaurl" })
  expect(result.code).toBe(1)
  expect(result.err.trim().split("\n")).toEqual([expect.stringMatching(/^configuration error: BASE_URL must be /)])
})
