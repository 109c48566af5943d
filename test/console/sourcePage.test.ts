import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type Browser,
  type Page,
  type PageWatch,
  screenshot,
  seriousAccessibilityViolations,
} from "../support/browser.ts"
import { adminAndAnalyst, freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The source page, /sources/<address>: everything the organization knows of one address across its sensors (its
 * incidents on each, linked; its events counted by type and sensor; a search of its events), "Ignore activity like
 * this" for administrators, filled with the address and confirmed before anything is stored; a clear page for a path
 * that is no address and for an address nobody saw.
 */

const RUN = Date.now().toString(36)
const PASSWORD = "correct horse battery staple"
const SOURCE = "198.51.100.23"

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let orgId: string
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }
const sensors = { web: { id: "", token: "" }, files: { id: "", token: "" } }
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  orgId = (await createTenant(db, `Source page ${RUN}`)).orgId
  ;({ browser, admin, analyst } = await adminAndAnalyst(server.env, consoleUrl, {
    orgId,
    admin: `admin-${RUN}@source-page.example`,
    analyst: `analyst-${RUN}@source-page.example`,
    password: PASSWORD,
  }))
  for (const [key, name] of [
    ["web", "web-decoy-01"],
    ["files", "fs-decoy-02"],
  ] as const) {
    const made = (await createSensor(db, orgId, name)) as { id: string; token: string }
    sensors[key] = { id: made.id, token: made.token }
  }
  // Two logins and a web request on one sensor, one login on the other.
  const send = async (token: string, events: ReadonlyArray<Record<string, unknown>>) =>
    expect((await ingest(server.ingestUrl, "events", token, events)).status).toBe(200)
  await send(sensors.web.token, [
    nativeEvent({ sourceIp: SOURCE, type: "ssh.login_attempt" }),
    nativeEvent({ sourceIp: SOURCE, type: "ssh.login_attempt" }),
    nativeEvent({ sourceIp: SOURCE, type: "http.request", attackerInput: { path: "/<script>alert(1)</script>" } }),
  ])
  await send(sensors.files.token, [nativeEvent({ sourceIp: SOURCE, type: "ssh.login_attempt" })])
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

/** The cells of the "Events by type and sensor" table, row by row. */
const rowsOf = async (page: Page) => {
  const rows = page.locator("#source-event-counts ~ .table-wrap tbody tr")
  const out: Array<Array<string>> = []
  for (let i = 0; i < (await rows.count()); i++) {
    out.push((await rows.nth(i).locator("td").allTextContents()).map((text) => text.trim()))
  }
  return out
}

test("an analyst reads the address across sensors: incidents on each, linked; events by type and sensor; a search of its events; no ignore form", async () => {
  const { page, watch } = analyst
  const response = await page.goto(`${consoleUrl}/sources/${SOURCE}`)
  expect(response?.status()).toBe(200)
  expect(await page.textContent("#source-scope")).toContain("External")
  expect(await page.textContent("#source-counts")).toBe("2 on 2 sensors")
  const incidentLinks = await page.$$eval("main table a[href^='/incidents/inc_']", (as) =>
    as.map((a) => a.getAttribute("href")),
  )
  expect(incidentLinks).toHaveLength(2)
  expect((await page.locator("td.source-sensor").allTextContents()).sort()).toEqual(["fs-decoy-02", "web-decoy-01"])

  const events = ((await page.textContent("#source-events")) ?? "").replace(/\s+/g, " ")
  expect(events).toContain("4 (3 on web-decoy-01, 1 on fs-decoy-02)")
  expect(await page.getAttribute("#source-events a", "href")).toBe(`/events?sourceIp=${SOURCE}`)
  expect(await page.textContent("#source-events a")).toBe("Search its events")

  const rows = (await rowsOf(page)).map((r) => r.slice(0, 3))
  expect(rows).toEqual([
    ["ssh.login_attempt", "web-decoy-01", "2"],
    ["http.request", "web-decoy-01", "1"],
    ["ssh.login_attempt", "fs-decoy-02", "1"],
  ])
  // Each count opens the Events page filtered to it, and the page shows those events.
  await Promise.all([page.waitForNavigation(), page.click("text=These events >> nth=0")])
  const url = new URL(page.url())
  expect(url.pathname).toBe("/events")
  expect(Object.fromEntries(url.searchParams)).toEqual({
    sourceIp: SOURCE,
    sensorId: sensors.web.id,
    type: "ssh.login_attempt",
  })
  await page.goBack()

  expect(await page.$("#ignore")).toBeNull()
  expect(await page.$$("main form")).toHaveLength(0)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(watch.errors).toEqual([])
}, 60_000)

test("an administrator's Ignore activity like this comes filled with the address, is confirmed, and then holds the address", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/sources/${SOURCE}`)
  expect(await page.$eval("#ignore", (d) => (d as unknown as { open: boolean }).open)).toBe(false)
  await page.click("#ignore > summary")
  expect(await page.inputValue("#src-ignore-source")).toBe(SOURCE)
  const options = await page.$$eval("#src-ignore-sensor option", (os) => os.map((o) => o.textContent ?? ""))
  expect(options[0]).toBe("Any sensor")
  expect(options.slice(1).sort()).toEqual(["fs-decoy-02", "web-decoy-01"])
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await screenshot(page, "source", shots)
  await page.fill("#src-ignore-note", "our own scanner")
  await Promise.all([page.waitForNavigation(), page.click("#ignore button[type=submit]")])
  // The confirmation first: nothing is stored yet.
  expect(await page.textContent("main")).toContain(SOURCE)
  await page.goto(`${consoleUrl}/sources/${SOURCE}`)
  expect(await page.$("#holding-rule")).toBeNull()
  await page.click("#ignore > summary")
  await page.fill("#src-ignore-note", "our own scanner")
  await Promise.all([page.waitForNavigation(), page.click("#ignore button[type=submit]")])
  await Promise.all([page.waitForNavigation(), page.click("main button:has-text('Add the rule')")])
  expect(await page.textContent(".notice-ok")).toContain("added")

  await page.goto(`${consoleUrl}/sources/${SOURCE}`)
  expect(await page.textContent("#holding-rule")).toContain(SOURCE)
  expect(watch.errors).toEqual([])
}, 60_000)

test("a path that is no address, and an address nobody saw, each get a page saying so", async () => {
  const { page, watch } = analyst
  const bad = await page.goto(`${consoleUrl}/sources/not-an-address`)
  expect(bad?.status()).toBe(404)
  expect(await page.textContent("h1")).toBe("Not an IP address")
  expect(await page.textContent("main")).not.toContain("not-an-address")
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  const unseen = await page.goto(`${consoleUrl}/sources/198.51.100.99`)
  expect(unseen?.status()).toBe(404)
  expect(((await page.textContent("h1")) ?? "").replace(/\s+/g, " ")).toBe("Nothing is known of 198.51.100.99")
  expect(await page.getAttribute("#source-unknown a", "href")).toBe("/events?sourceIp=198.51.100.99")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(watch.errors).toEqual([])
}, 60_000)
