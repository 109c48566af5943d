/**
 * D42: lines of one Cowrie session that arrive out of order (Cowrie's HEC output sends them concurrently, one
 * connection each) group exactly as in order. Sessions are taken from a real capture (test/fixtures/real/cowrie/
 * cowrie.json), given a fresh session id, source address and recent times, and optionally written the way Cowrie
 * 2.x wrote them (only the connect line names the protocol and the ports). Each run posts the session one line per
 * request in order, then again (another source address) in a random order, sequentially or all at once, and compares
 * what the read API returns: the same incidents and the same events, ignoring ids, receivedAt and the address.
 * Two ignore rules are in force, which a Cowrie 2.x line only meets once its session's connect completed it: one
 * ignores SSH commands (a telnet session's commands look like them until the connect says telnet), one ignores
 * telnet logins on the capture's telnet port (they look like SSH logins on port 22 until then). Whichever order the
 * lines come in, the rules decide on the finished events, and the incidents hold what they would in order.
 * FC_RUNS and FC_SEED repeat a run.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import fc from "fast-check"
import { asOperator } from "../../src/admin/actor.ts"
import { IgnoreAdmin } from "../../src/admin/IgnoreAdmin.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "cowrie-order")
  const telnetPort = captured.find((l) => l.eventid === "cowrie.session.connect" && l.protocol === "telnet")?.dst_port
  expect(telnetPort).toBeNumber()
  for (const rule of [
    { source: "198.18.0.0/16", type: "ssh.command" },
    { source: "198.18.0.0/16", type: "telnet.login_attempt", port: String(telnetPort) },
  ]) {
    await db.run(asOperator(Effect.flatMap(IgnoreAdmin, (rules) => rules.add(tenant.orgId, rule))))
  }
})

afterAll(() => shutdown(server, db))

type Line = Record<string, unknown>

const captured: ReadonlyArray<Line> = readFileSync(
  new URL("../fixtures/real/cowrie/cowrie.json", import.meta.url),
  "utf8",
)
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l) as Line)

/** The captured sessions with at least three lines, each in its original order. */
const SESSIONS: ReadonlyArray<ReadonlyArray<Line>> = (() => {
  const by = new Map<string, Array<Line>>()
  for (const line of captured) {
    const list = by.get(String(line.session))
    if (list) list.push(line)
    else by.set(String(line.session), [line])
  }
  return [...by.values()].filter((lines) => lines.length >= 3)
})()

let serial = 0

/** A session's lines with a fresh session id, the given source address and times ending a minute ago. */
const freshSession = (
  lines: ReadonlyArray<Line>,
  ip: string,
  session: string,
  oldFormat: boolean,
  now: number,
): Array<Line> => {
  const times = lines.map((l) => Date.parse(String(l.timestamp)))
  const shift = now - 60_000 - Math.max(...times)
  return lines.map((l, i) => {
    const out: Line = { ...l, session, src_ip: ip, timestamp: new Date((times[i] ?? 0) + shift).toISOString() }
    delete out.time
    if (oldFormat && l.eventid !== "cowrie.session.connect") {
      delete out.protocol
      delete out.src_port
      if (!String(l.eventid).startsWith("cowrie.direct-tcpip")) {
        delete out.dst_port
        delete out.dst_ip
      }
    }
    return out
  })
}

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for comparison
const readBack = async (ip: string): Promise<any> => {
  const events = await get(server.url, `/v1/events?sourceIp=${ip}&limit=100`, tenant.key)
  expect(events.status).toBe(200)
  const incidentIds = [...new Set(events.body.data.map((e: { incidentId: string }) => e.incidentId))].sort()
  const incidents = []
  for (const id of incidentIds) {
    const incident = await get(server.url, `/v1/incidents/${id}`, tenant.key)
    const { id: _id, url: _url, events: _events, updatedAt: _u, createdAt: _c, ...rest } = incident.body
    incidents.push(rest)
  }
  const stripped = events.body.data
    .map(({ id: _id, incidentId: _i, receivedAt: _r, ...rest }: Record<string, unknown>) => rest)
    .sort((a: Record<string, unknown>, b: Record<string, unknown>) => {
      const ka = `${a.time} ${a.type} ${JSON.stringify(a.attackerInput)}`
      const kb = `${b.time} ${b.type} ${JSON.stringify(b.attackerInput)}`
      return ka < kb ? -1 : ka > kb ? 1 : 0
    })
  return JSON.parse(JSON.stringify({ incidents, events: stripped }).replaceAll(ip, "<ip>"))
}

const post = (line: Line) => ingest(server.ingestUrl, "cowrie", sensor.token, line)

test("any order of a session's lines, one per request, groups as in order (property)", async () => {
  expect(SESSIONS.length).toBeGreaterThan(0)
  const runs = Number(process.env.FC_RUNS ?? 12)
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...SESSIONS.keys()),
      fc.boolean(),
      fc.boolean(),
      fc.nat(),
      async (which, oldFormat, concurrent, shuffleSeed) => {
        const n = ++serial
        const base = SESSIONS[which] ?? []
        const inOrderIp = `198.18.${n % 250}.1`
        const shuffledIp = `198.18.${n % 250}.2`
        const now = Date.now()
        const inOrder = freshSession(base, inOrderIp, `ord${n}a${shuffleSeed % 1000}`, oldFormat, now)
        const shuffled = freshSession(base, shuffledIp, `ord${n}b${shuffleSeed % 1000}`, oldFormat, now)
        // A random permutation (Fisher-Yates from the drawn seed).
        let state = shuffleSeed + 1
        const random = () => {
          state = (state * 1103515245 + 12345) % 2147483648
          return state / 2147483648
        }
        for (let i = shuffled.length - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1))
          const tmp = shuffled[i] as Line
          shuffled[i] = shuffled[j] as Line
          shuffled[j] = tmp
        }
        for (const line of inOrder) expect((await post(line)).body.rejected).toBe(0)
        if (concurrent) {
          for (const res of await Promise.all(shuffled.map(post))) expect(res.body.rejected).toBe(0)
        } else {
          for (const line of shuffled) expect((await post(line)).body.rejected).toBe(0)
        }
        expect(await readBack(shuffledIp)).toEqual(await readBack(inOrderIp))
      },
    ),
    { numRuns: runs, ...(seed === undefined ? {} : { seed }) },
  )
}, 600_000)
