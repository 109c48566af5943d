import { afterAll, beforeAll, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { JudgementAdmin } from "../../src/admin/JudgementAdmin.ts"
import { capturedNow, captureLines, type Json } from "../support/captureTime.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * docs/ingestion.md "How the real captures are judged" shows, for each real capture of test/fixtures/real, the
 * incident it becomes (title and severity). This replays each one into a fresh organization and sensor (named as the
 * table says) and requires the table to be exactly what the service produces, so the page cannot drift from the code.
 */

const ROOT = join(import.meta.dir, "..", "..")
const PAGE = join(ROOT, "docs", "ingestion.md")
const START = "<!-- judged captures: start -->"
const END = "<!-- judged captures: end -->"

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

interface Capture {
  /** The table's first column. */
  readonly name: string
  readonly route: "cowrie" | "opencanary"
  readonly lines: () => ReadonlyArray<Json>
  readonly sensor: string
  /** What the organization set before the replay: a bait pair, its networks. */
  readonly setup?: (orgId: string) => Promise<unknown>
}

const openCanaryRun = () => captureLines("opencanary/opencanary.log").slice(0, 15)
const withoutBait = () => openCanaryRun().filter((l) => l.honeycred !== true)

const CAPTURES: ReadonlyArray<Capture> = [
  {
    name: "Cowrie `cowrie.json`, every line",
    route: "cowrie",
    lines: () => captureLines("cowrie/cowrie.json"),
    sensor: "cowrie-1",
  },
  {
    name: "the same, with `root`/`hunter2` registered as bait",
    route: "cowrie",
    lines: () => captureLines("cowrie/cowrie.json"),
    sensor: "cowrie-1",
    setup: (orgId) =>
      db.run(
        asOperator(Effect.flatMap(JudgementAdmin, (a) => a.baitAdd(orgId, { username: "root", password: "hunter2" }))),
      ),
  },
  { name: "OpenCanary `opencanary.log`, one run", route: "opencanary", lines: openCanaryRun, sensor: "canary-1" },
  {
    name: "the same run without the honeycred login",
    route: "opencanary",
    lines: withoutBait,
    sensor: "canary-1",
  },
  {
    name: "the same, with `127.0.0.0/8 Lab` as the organization's network",
    route: "opencanary",
    lines: withoutBait,
    sensor: "canary-1",
    setup: (orgId) =>
      db.run(asOperator(Effect.flatMap(JudgementAdmin, (a) => a.setNetworks(orgId, "127.0.0.0/8 Lab")))),
  },
]

const row = (cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`

test("docs/ingestion.md shows each real capture judged exactly as the service judges it", async () => {
  const rows: Array<string> = [row(["Capture", "Incident title", "Severity"]), row(["---", "---", "---"])]
  for (const capture of CAPTURES) {
    const tenant = await createTenant(db, "Judged capture")
    const sensor = await createSensor(db, tenant.orgId, capture.sensor)
    await capture.setup?.(tenant.orgId)
    const answer = await ingest(
      server.ingestUrl,
      capture.route,
      sensor.token as string,
      capturedNow(capture.lines()),
      true,
    )
    expect(answer.status).toBe(200)
    const list = await get(server.url, "/v1/incidents?limit=100", tenant.key)
    const incidents = (list.body as { data: Array<{ title: string; severity: string }> }).data
    expect(incidents.length).toBeGreaterThan(0)
    for (const incident of incidents) {
      rows.push(row([capture.name, incident.title.replaceAll("|", "\\|"), incident.severity]))
    }
  }
  const produced = rows.join("\n")
  const page = readFileSync(PAGE, "utf8")
  const start = page.indexOf(START)
  const end = page.indexOf(END)
  expect(start, `docs/ingestion.md has no ${START} … ${END} block`).toBeGreaterThan(-1)
  const shown = page.slice(start + START.length, end).trim()
  if (shown !== produced) console.log(`docs/ingestion.md should show:\n${produced}`)
  expect(shown).toBe(produced)
})
