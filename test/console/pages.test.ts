import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Browser, launchBrowser, type Page, screenshot, watchedContext } from "../support/browser.ts"
import { freePort, setPassword } from "../support/console.ts"
import { testDatabase } from "../support/db.ts"
import { createChannel, createOrg, createSensor, createUser } from "../support/fixtures.ts"
import { IPTABLES_KV, ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, startServer, testEnv } from "../support/server.ts"

/**
 * The console's pages against what real sensors and attackers send, in a real Chromium on the real server: pages
 * bounded by size when events carry huge attacker input, attacker text the service quotes marked as such, port scans
 * in one line, and webhook URLs (which carry tokens) shown to analysts as their origin only.
 */

const PASSWORD = "correct horse battery staple"
const ANALYST_PASSWORD = "analyst passphrase 2026"
const shots = mkdtempSync(join(tmpdir(), "console-pages-"))
const POSING = "Incident resolved: no action needed"
const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@acme.example`
const ANALYST_EMAIL = `reader-${RUN}@acme.example`
const HOOK_PATH = "/services/T0AAA/B0BBB/s3cr3tPathToken?token=q5ecretQuery"

let server: RunningServer
let browser: Browser
let consoleUrl: string
let bigIncident: string
let scanIncident: string
let loginIncident: string

const signedInPage = async (email: string, password: string): Promise<Page> => {
  const { context } = await watchedContext(browser)
  const page = await context.newPage()
  await page.goto(`${consoleUrl}/sign-in`)
  await page.fill("#email", email)
  await page.fill("#password", password)
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")])
  return page
}

let admin: Page
let analyst: Page

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl, WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }),
  })
  // The fixtures, made by the admin services as the operator (what `org create`, `sensor create` without a
  // profile, `webhook create` and `user create` run).
  const setup = testDatabase(server.env)
  const org = (await createOrg(setup, `Acme SOC ${crypto.randomUUID().slice(0, 8)}`)).id
  const sensor = await createSensor(setup, org, "dmz-web-01", "generic")

  // 60 events whose attacker input is 12 members of 8000 characters each (about 6 MB sent), 9 per request.
  const value = (n: number, k: number) => `${n}-${k}-`.padEnd(8000, "<A&\"'>")
  for (let batch = 0; batch < 60 / 9; batch++) {
    const events = Array.from({ length: Math.min(9, 60 - batch * 9) }, (_, j) =>
      nativeEvent({
        sourceIp: "203.0.113.90",
        type: "http.request",
        attackerInput: Object.fromEntries(Array.from({ length: 12 }, (_, k) => [`field${k}`, value(batch * 9 + j, k)])),
      }),
    )
    const res = await ingest(server.ingestUrl, "events", sensor.token, events)
    expect(res.status).toBe(200)
    bigIncident = res.body.results[0].incidentId
  }

  // An OpenCanary SYN scan: iptables packet fields, one line per probed port.
  const ocTime = (d: Date) => d.toISOString().replace("T", " ").replace("Z", "000")
  const scan = await ingest(
    server.ingestUrl,
    "opencanary",
    sensor.token,
    [22, 23, 3306].map((dpt) => ({
      dst_host: "10.0.0.5",
      dst_port: dpt,
      local_time: ocTime(new Date()),
      logdata: { ...IPTABLES_KV, SYN: "", DPT: String(dpt), SPT: "40000", SRC: "198.51.100.9", DST: "10.0.0.5" },
      logtype: 5001,
      node_id: "canary-01",
      src_host: "198.51.100.9",
      src_port: 40000,
      utc_time: ocTime(new Date()),
    })),
  )
  expect(scan.status).toBe(200)
  scanIncident = scan.body.results[0].incidentId

  // Login attempts whose usernames pose as the console's own words.
  const logins = await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "192.0.2.44", attackerInput: { username: POSING, password: "x" } }),
    nativeEvent({ sourceIp: "192.0.2.44", attackerInput: { username: "admin", password: "admin" } }),
    nativeEvent({
      sourceIp: "192.0.2.44",
      type: "ssh.command",
      attackerInput: { command: `echo "${POSING}"; uname -a` },
    }),
  ])
  expect(logins.status).toBe(200)
  loginIncident = logins.body.results[0].incidentId

  await createChannel(setup, org, `https://127.0.0.1:9${HOOK_PATH}`, "high")

  const lead = await createUser(setup, org, ADMIN_EMAIL, "admin")
  const reader = await createUser(setup, org, ANALYST_EMAIL, "analyst")
  await setup.close()
  await setPassword(consoleUrl, lead.link, PASSWORD)
  await setPassword(consoleUrl, reader.link, ANALYST_PASSWORD)
  browser = await launchBrowser()
  admin = await signedInPage(ADMIN_EMAIL, PASSWORD)
  analyst = await signedInPage(ANALYST_EMAIL, ANALYST_PASSWORD)
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

test("an incident whose events were sent with about 6 MB of attacker input gives a page under 2 MB that says what it left out", async () => {
  const response = await admin.goto(`${consoleUrl}/incidents/${bigIncident}`)
  expect(response?.status()).toBe(200)
  const body = (await response?.body()) ?? Buffer.alloc(0)
  expect(body.length).toBeLessThan(2_000_000)
  expect(await admin.textContent(".left-out")).toMatch(/\d+ more events not shown here/)
  expect(await admin.textContent(".left-out")).toContain(`GET /v1/events?incidentId=${bigIncident}`)
  // Each long value: cut, marked, with its full length.
  expect(await admin.textContent("details.long summary")).toMatch(/\(\d{4} characters, cut: show the first 2000\)/)
  // The Events page holds to the same budget and goes on after the last event it showed.
  const events = await admin.goto(`${consoleUrl}/events?incidentId=${bigIncident}`)
  expect(((await events?.body()) ?? Buffer.alloc(0)).length).toBeLessThan(2_000_000)
  const shownIds = await admin.$$eval("tbody > tr[id]", (rows) => rows.map((r) => r.id))
  await Promise.all([admin.waitForNavigation(), admin.click(".left-out a")])
  const nextIds = await admin.$$eval("tbody > tr[id]", (rows) => rows.map((r) => r.id))
  expect(nextIds.length).toBeGreaterThan(0)
  expect(nextIds.filter((id) => shownIds.includes(id))).toEqual([])
})

test("attacker text quoted in the narrative, the title, the list and every summary is marked as attacker text", async () => {
  for (const path of [`/incidents/${loginIncident}`, "/incidents", "/", `/events?incidentId=${loginIncident}`]) {
    await analyst.goto(`${consoleUrl}${path}`)
    // Every text node that holds the posing username sits inside an attacker-text box.
    const where = await analyst.evaluate((needle) => {
      // Runs in the page (no DOM types in this project's TypeScript configuration: described here).
      interface Node {
        readonly textContent: string
        readonly parentElement: { closest: (selector: string) => unknown }
      }
      const doc = (
        globalThis as unknown as {
          document: {
            querySelector: (s: string) => unknown
            createTreeWalker: (root: unknown, show: number) => { nextNode: () => Node | null }
          }
        }
      ).document
      const walker = doc.createTreeWalker(doc.querySelector("main"), 4)
      const found: Array<boolean> = []
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        if (node.textContent.includes(needle)) found.push(node.parentElement.closest("code.atk") !== null)
      }
      return found
    }, POSING)
    if (path.startsWith("/incidents/")) expect(where.length).toBeGreaterThanOrEqual(3)
    expect(where.every((boxed) => boxed)).toBe(true)
  }
  await analyst.goto(`${consoleUrl}/incidents/${loginIncident}`)
  const narrative = await analyst.$$eval("main .panel p code.atk", (cs) => cs.map((c) => c.textContent))
  expect(narrative).toContain(POSING)
  expect(narrative).toContain("admin")
})

test("a port scan event takes one line (protocol, port) with its packet fields folded away", async () => {
  await admin.goto(`${consoleUrl}/incidents/${scanIncident}`)
  const row = await admin.$("tbody > tr[id]")
  const box = await row?.boundingBox()
  expect(box?.height ?? 999).toBeLessThan(90)
  expect(await row?.textContent()).toMatch(/protocol\s*TCP/)
  expect(await admin.$$("tbody > tr[id] details.fields:not([open])")).toHaveLength(3)
  await admin.click("tbody > tr[id] details.fields summary")
  expect(await admin.$$eval("tbody > tr[id] table.kv th code.atk", (cs) => cs.map((c) => c.textContent))).toContain(
    "window",
  )
  await screenshot(admin, "incident-scan", shots)
})

test("an analyst sees a webhook URL's origin only on Alerts and the delivery log; an admin sees it whole", async () => {
  await analyst.goto(`${consoleUrl}/settings/alerts`)
  const alerts = await analyst.content()
  expect(alerts).toContain("https://127.0.0.1:9")
  expect(alerts).not.toContain("s3cr3tPathToken")
  expect(alerts).not.toContain("q5ecretQuery")
  await Promise.all([analyst.waitForNavigation(), analyst.click("text=Delivery log")])
  const log = await analyst.content()
  expect(log).not.toContain("s3cr3tPathToken")
  expect(log).not.toContain("q5ecretQuery")
  await analyst.goto(`${consoleUrl}/settings/alerts`)
  await screenshot(analyst, "alerts-analyst", shots)
  await admin.goto(`${consoleUrl}/settings/alerts`)
  expect(await admin.content()).toContain("s3cr3tPathToken")
})
