import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import {
  type Browser,
  type Page,
  type PageWatch,
  screenshot,
  seriousAccessibilityViolations,
} from "../support/browser.ts"
import { adminAndAnalyst, csrfOf, freePort, postFromPage } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { addIgnoreRule, createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Settings → Ignore rules and "Ignore activity like this" in a real Chromium on the real server and database: an
 * administrator adds a rule from an incident (source and sensor filled in, a confirmation, the incident closed with
 * its reason), the rule's hits show, ignored events are listed behind Events → Show ignored events with their rule;
 * a note that looks like markup stays text, the pages pass axe; an analyst reads but cannot add (403), and a form
 * without the session's CSRF token is refused (403).
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@ignore.example`
const ANALYST_EMAIL = `analyst-${RUN}@ignore.example`
const PASSWORD = "correct horse battery staple"
const HOSTILE = `<script>alert("x")</script> <img src=x onerror=alert(1)> <a href="javascript:alert(2)">click</a>`

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }

const rulesOf = (orgId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ id: string; source: string; sensorId: string | null; note: string; createdBy: string }>`
          select id, host(source) || '/' || masklen(source) as source, sensor_id, note, created_by
          from ignore_rules where org_id = ${orgId} and removed_at is null order by created_at`,
    ),
  )

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Ignore console ${RUN}`)
  sensor = await createSensor(db, tenant.orgId, "dmz-web-01")
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

/** Screenshots of the pages: docs/screenshots/ with UPDATE_SCREENSHOTS=1, else a temporary directory. */
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

test("Ignore activity like this: source and sensor filled in, a confirmation, the incident closed as an authorized test; later events are ignored and listed with their rule", async () => {
  const first = await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: "198.51.100.23" }))
  const incidentId = first.body.results[0].incidentId as string
  const { page, watch } = admin

  await page.goto(`${consoleUrl}/incidents/${incidentId}`)
  await Promise.all([page.waitForNavigation(), page.click("text=Ignore activity like this")])
  expect(await page.inputValue("#ignore-source")).toBe("198.51.100.23")
  expect(await page.inputValue("#ignore-sensor")).toBe(sensor.id)
  expect(await page.inputValue("#ignore-close")).toBe("authorized_test")
  await page.fill("#ignore-note", HOSTILE)
  await page.fill("#ignore-expires", "7d")
  await Promise.all([page.waitForNavigation(), page.click("#add button[type=submit]")])

  // The confirmation: nothing stored yet; the note shown as typed.
  expect(await page.textContent("h1")).toBe("Add this ignore rule?")
  expect(await page.textContent("dd.user-text")).toBe(HOSTILE)
  expect(await rulesOf(tenant.orgId)).toEqual([])
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await Promise.all([page.waitForNavigation(), page.click("text=Add the rule")])

  const rules = await rulesOf(tenant.orgId)
  expect(rules).toHaveLength(1)
  expect(rules[0]).toMatchObject({ source: "198.51.100.23/32", sensorId: sensor.id, note: HOSTILE })
  expect(rules[0]?.createdBy).toMatch(/^usr_/)
  expect(await page.textContent(".notice-ok")).toContain(`Incident ${incidentId} closed.`)
  const incident = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ status: string; closeReason: string | null }>`
        select i.status, t.close_reason from incidents i
        left join incident_transitions t on t.incident_id = i.id and t.kind = 'closed'
        where i.id = ${incidentId}`,
    ),
  )
  expect(incident[0]).toEqual({ status: "closed", closeReason: "authorized_test" })

  // Later events from the source are ignored: no new incident, one hit, listed behind the Events filter.
  const later = await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "198.51.100.23", attackerInput: { username: HOSTILE } }),
  ])
  expect(later.body.results[0].incidentId).toBeNull()
  await page.goto(`${consoleUrl}/settings/ignore`)
  const row = page.locator(`tr#${rules[0]?.id}`)
  expect((await row.locator("td").nth(2).textContent())?.trim()).toBe("1")
  expect(await row.locator("td.user-text").textContent()).toBe(HOSTILE)
  expect(await row.textContent()).toContain(ADMIN_EMAIL)
  const made = await page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll: (s: string) => { length: number } } })
      .document
    return {
      scripts: doc.querySelectorAll("main script").length,
      images: doc.querySelectorAll("main img").length,
      jsLinks: doc.querySelectorAll("a[href^='javascript']").length,
      handlers: doc.querySelectorAll("[onerror]").length,
    }
  })
  expect(made).toEqual({ scripts: 0, images: 0, jsLinks: 0, handlers: 0 })
  await screenshot(page, "ignore-rules", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  await page.goto(`${consoleUrl}/events`)
  expect(await page.locator(`tr#${later.body.results[0].id}`).count()).toBe(0)
  await Promise.all([page.waitForNavigation(), page.click("text=Show ignored events")])
  const ignoredRow = page.locator(`tr#${later.body.results[0].id}`)
  expect(await ignoredRow.count()).toBe(1)
  await screenshot(page, "events-ignored", shots)
  expect(await ignoredRow.textContent()).toContain(rules[0]?.id ?? "-")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(watch.errors).toEqual([])
})

test("an analyst reads the rules but cannot add or remove one (403), sees no Ignore button; a form without the CSRF token is refused (403); removal by an admin works", async () => {
  const added = await addIgnoreRule(db, tenant.orgId, { source: "2001:db8:77::/48", port: "22", note: "v6 monitor" })
  const { page } = analyst
  await page.goto(`${consoleUrl}/settings/ignore`)
  expect(await page.locator(`tr#${added.id}`).count()).toBe(1)
  expect(await page.locator("#add").count()).toBe(0)
  expect(await page.locator(`form[action$='/remove']`).count()).toBe(0)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  const csrf = await csrfOf(page)
  expect(await postFromPage(page, "/settings/ignore", { csrf, source: "192.0.2.1", confirmed: "yes" })).toBe(403)
  expect(await postFromPage(page, `/settings/ignore/${added.id}/remove`, { csrf })).toBe(403)
  const first = await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: "192.0.2.99" }))
  await page.goto(`${consoleUrl}/incidents/${first.body.results[0].incidentId}`)
  expect(await page.locator("text=Ignore activity like this").count()).toBe(0)

  const lead = admin.page
  await lead.goto(`${consoleUrl}/settings/ignore`)
  const leadCsrf = await csrfOf(lead)
  expect(await postFromPage(lead, "/settings/ignore", { csrf: "forged", source: "192.0.2.1", confirmed: "yes" })).toBe(
    403,
  )
  expect(await postFromPage(lead, "/settings/ignore", { source: "192.0.2.1", confirmed: "yes" })).toBe(403)
  expect(await postFromPage(lead, `/settings/ignore/${added.id}/remove`, { csrf: "forged" })).toBe(403)
  expect((await rulesOf(tenant.orgId)).map((r) => r.id)).toContain(added.id)
  // A bad source is refused on the form, nothing stored.
  await lead.fill("#ignore-source", "not-an-ip")
  await Promise.all([lead.waitForNavigation(), lead.click("#add button[type=submit]")])
  expect(await lead.textContent(".notice-error")).toContain("the source must be an IP address or a network")
  // Removal, by the administrator.
  // A redirect (303) answers an accepted form; fetch in the page sees it as an opaque redirect (status 0).
  expect(await postFromPage(lead, `/settings/ignore/${added.id}/remove`, { csrf: leadCsrf })).toBe(0)
  expect((await rulesOf(tenant.orgId)).map((r) => r.id)).not.toContain(added.id)
})

test("a value longer than the service keeps is refused, never cut to fit; a network broader than a /8 is refused", async () => {
  const lead = admin.page
  await lead.goto(`${consoleUrl}/settings/ignore`)
  const csrf = await csrfOf(lead)
  // The form's POST as the browser sends it, the redirect followed: the page it lands on.
  const submit = (fields: Record<string, string>) =>
    lead.evaluate(
      async ([f]) => {
        const res = await fetch("/settings/ignore", {
          method: "POST",
          body: new URLSearchParams(f as Record<string, string>),
        })
        return res.text()
      },
      [{ csrf, ...fields }] as const,
    )
  const before = (await rulesOf(tenant.orgId)).map((r) => r.id)
  const long = "n".repeat(501)
  for (const confirmed of ["", "yes"]) {
    const page = await submit({ source: "192.0.2.45", note: long, confirmed })
    expect(page).toContain("the note must be at most 500 printable characters")
  }
  const broad = await submit({ source: "10.0.0.0/7", note: "all of it", confirmed: "yes" })
  expect(broad).toContain("the source is too broad: 10.0.0.0/7")
  expect((await rulesOf(tenant.orgId)).map((r) => r.id)).toEqual(before)
  // At the bound it is kept whole.
  await submit({ source: "192.0.2.45", note: "k".repeat(500), confirmed: "yes" })
  const added = (await rulesOf(tenant.orgId)).filter((r) => !before.includes(r.id))
  expect(added.map((r) => r.note.length)).toEqual([500])
})
