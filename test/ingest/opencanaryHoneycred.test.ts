import { afterAll, beforeAll, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D42: OpenCanary's telnet module marks a login with one of its configured bait credentials (`telnet.honeycreds`)
 * with `"honeycred": true` at the top of the line, outside `logdata`. That flag says the attacker knew a planted
 * credential, so it must reach the event (docs/connect-a-sensor.md: "6001 telnet login (`honeycred` kept)").
 * The two real 6001 lines of the capture (a wrong login, then the bait `admin`), moved to now, are sent and read back.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const realTelnetLines = (): Array<Record<string, unknown>> =>
  readFileSync(join(import.meta.dir, "..", "fixtures", "real", "opencanary", "opencanary.log"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.logtype === 6001)
    .slice(0, 2)

test("OpenCanary's honeycred flag on a real telnet login (6001) is kept in the event's attackerInput", async () => {
  const lines = realTelnetLines()
  expect(lines.map((line) => line.honeycred)).toEqual([false, true])
  const now = new Date().toISOString().replace("T", " ").replace("Z", "000")
  const body = lines.map((line) => JSON.stringify({ ...line, utc_time: now, local_time: now })).join("\n")

  const tenant = await createTenant(db, "Honeycred")
  const sensor = await createSensor(db, tenant.orgId, "canary-honeycred")
  const response = await ingest(server.ingestUrl, "opencanary", sensor.token as string, `${body}\n`, true)
  expect(response.status).toBe(200)

  const events = await get(server.url, "/v1/events?limit=100", tenant.key)
  expect(events.status).toBe(200)
  const telnet = (events.body as { data: Array<{ type: string; attackerInput: Record<string, unknown> }> }).data
    .filter((event) => event.type === "telnet.login_attempt")
    .map((event) => [event.attackerInput.username, event.attackerInput.honeycred])
    .sort()
  expect(telnet).toEqual([
    ["admin", true],
    ["root", false],
  ])
})
