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
import { closeIncident, createSensor, createTenant, get, seedIncident } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Triage in the console, in a real Chromium on the real server and database: closing asks for a reason and keeps
 * the note, notes are added by analysts too, the incident page shows its history, bulk close closes what its
 * preview counted; notes that look like markup or links stay text, the pages pass axe, and the new forms are
 * refused without the session's CSRF token or from another organization.
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@triage.example`
const ANALYST_EMAIL = `analyst-${RUN}@triage.example`
const PASSWORD = "correct horse battery staple"
const HOSTILE = `<script>alert("x")</script> <img src=x onerror=alert(1)> javascript:alert(document.cookie) <a href="javascript:alert(2)">click</a>`

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string; key: string }
let liveSensor: { id: string; token: string }
let bulkSensor: { id: string; token: string }
let foreignIncident: string
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }

const newIncident = async (sourceIp: string) => {
  const res = await ingest(server.ingestUrl, "events", liveSensor.token, nativeEvent({ sourceIp }))
  expect(res.status).toBe(200)
  return res.body.results[0].incidentId as string
}

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Triage console ${RUN}`)
  liveSensor = await createSensor(db, tenant.orgId, "dmz-web-01")
  bulkSensor = await createSensor(db, tenant.orgId, "noisy-scanner-trap")
  const other = await createTenant(db, `Other ${RUN}`)
  const otherSensor = await createSensor(db, other.orgId, "other-01")
  const res = await ingest(server.ingestUrl, "events", otherSensor.token, nativeEvent({ sourceIp: "192.0.2.200" }))
  foreignIncident = res.body.results[0].incidentId
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

test("an analyst adds a note and closes with a reason: both in the history, with who and when, and audited", async () => {
  const id = await newIncident("198.51.100.10")
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/incidents/${id}`)
  expect(await page.textContent(".history")).toContain("Created")
  await page.fill("#note-body", "Checked the firewall: blocked upstream.\nTicket SEC-12.")
  await Promise.all([page.waitForNavigation(), page.click("form[action$='/notes'] button")])
  expect(await page.textContent(".notice-ok")).toContain("Note added.")
  const note = await page.textContent(".notes li")
  expect(note).toContain(ANALYST_EMAIL)
  // The textarea's line break (sent as CRLF) is kept, and shown as a line break.
  expect(await page.textContent(".notes li .note-body")).toBe("Checked the firewall: blocked upstream.\nTicket SEC-12.")
  const whiteSpace = "getComputedStyle(document.querySelector('.notes li .note-body .user-text')).whiteSpace"
  expect(await page.evaluate(whiteSpace)).toBe("pre-wrap")

  // The reason is required: the browser does not send the form without it.
  await page.click("#close button[type=submit]")
  expect(new URL(page.url()).pathname).toBe(`/incidents/${id}`)
  expect(await page.textContent(".status")).toBe("open")
  await page.selectOption("#close-reason", "false_positive")
  await page.fill("#close-note", "Our own vulnerability scanner.")
  await Promise.all([page.waitForNavigation(), page.click("#close button[type=submit]")])
  expect(await page.textContent(".status")).toBe("closed")
  const closed = await page.textContent(".history li:last-child")
  expect(closed).toContain("Closed (False positive)")
  expect(closed).toContain(`by ${ANALYST_EMAIL}`)
  expect(closed).toContain("Our own vulnerability scanner.")
  expect(await page.$$eval(".history li time", (ts) => ts.length)).toBe(2)
  await screenshot(page, "incident-history", shots)
  expect(watch.errors).toEqual([])

  await admin.page.goto(`${consoleUrl}/settings/audit`)
  const audit = (await admin.page.textContent("table")) ?? ""
  expect(audit).toContain("incident.close")
  expect(audit).toContain("reason false_positive, with a note")
  expect(audit).toContain("incident.note")
})

test("a closed and re-opened incident shows each step; the operator's close says so", async () => {
  const id = await newIncident("198.51.100.11")
  await closeIncident(db, id)
  const back = await newIncident("198.51.100.11")
  expect(back).toBe(id)
  await admin.page.goto(`${consoleUrl}/incidents/${id}`)
  const steps = await admin.page.$$eval(".history li", (lis) => lis.map((li) => li.textContent ?? ""))
  expect(steps).toHaveLength(3)
  expect(steps[0]).toContain("Created")
  expect(steps[1]).toContain("Closed (Resolved) by the operator (CLI)")
  expect(steps[2]).toContain("Re-opened")
})

test("notes and close notes that look like markup or links render as inert text; the pages pass axe", async () => {
  const id = await newIncident("198.51.100.12")
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/incidents/${id}`)
  await page.fill("#note-body", HOSTILE)
  await Promise.all([page.waitForNavigation(), page.click("form[action$='/notes'] button")])
  await page.selectOption("#close-reason", "other")
  await page.fill("#close-note", HOSTILE)
  await Promise.all([page.waitForNavigation(), page.click("#close button[type=submit]")])
  // Shown as the text typed, twice (the note, the close's note); no element, handler or link made from it.
  expect(await page.textContent(".notes li .note-body")).toBe(HOSTILE)
  expect(await page.textContent(".history li:last-child .note-body")).toContain(HOSTILE)
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
  expect(watch.errors).toEqual([])
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await page.goto(`${consoleUrl}/incidents/${await newIncident("198.51.100.13")}`)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await page.goto(`${consoleUrl}/incidents`)
  await page.click(".bulk-close summary")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
})

test("the new forms are refused without the session's CSRF token (403) and for another organization's incident (404)", async () => {
  const id = await newIncident("198.51.100.14")
  const { page } = analyst
  await page.goto(`${consoleUrl}/incidents/${id}`)
  const csrf = await csrfOf(page)
  expect(await postFromPage(page, `/incidents/${id}/notes`, { csrf: "forged", note: "x" })).toBe(403)
  expect(await postFromPage(page, `/incidents/${id}/close`, { csrf: "forged", reason: "resolved" })).toBe(403)
  expect(
    await postFromPage(page, "/incidents/bulk-close", { csrf: "forged", source: "198.51.100.14", reason: "resolved" }),
  ).toBe(403)
  expect(await postFromPage(page, `/incidents/${id}/notes`, { note: "x" })).toBe(403)
  // Another organization's incident: the page and each form answer as for an unknown id.
  expect((await page.goto(`${consoleUrl}/incidents/${foreignIncident}`))?.status()).toBe(404)
  await page.goto(`${consoleUrl}/incidents/${id}`)
  expect(await postFromPage(page, `/incidents/${foreignIncident}/notes`, { csrf, note: "mine" })).toBe(404)
  expect(await postFromPage(page, `/incidents/${foreignIncident}/close`, { csrf, reason: "resolved" })).toBe(404)
  const notes = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ n: number }>`select count(*)::int as n from incident_notes where incident_id = ${foreignIncident}`,
    ),
  )
  expect(notes[0]?.n).toBe(0)
  expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.status).toBe("open")
})

test("bulk close: the preview's count is what the confirm closes, and only those", async () => {
  const old = new Date(Date.now() - 10 * 86_400_000)
  const seed = (sourceIp: string, at: Date) =>
    seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: bulkSensor.id,
      sourceIp,
      events: [{ time: at, type: "ssh.login_attempt", severity: "low" }],
    })
  const matching: Array<string> = []
  for (let i = 1; i <= 4; i++) matching.push((await seed(`203.0.113.${i}`, old)).incident.id)
  await seed("203.0.113.99", new Date(Date.now() - 60_000))
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/incidents`)
  await page.click(".bulk-close summary")
  await page.selectOption("#bulk-sensor", bulkSensor.id)
  await page.fill("#bulk-older", "7d")
  await Promise.all([page.waitForNavigation(), page.click(".bulk-close button[type=submit]")])
  expect(new URL(page.url()).pathname).toBe("/incidents/bulk-close")
  expect(await page.textContent("h1")).toBe("Close 4 incidents?")
  expect(await page.textContent("#bulk-count")).toBe("4 open incidents match this filter now.")
  await screenshot(page, "bulk-close", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  // A bad filter is named on the preview, nothing to confirm.
  await page.goto(`${consoleUrl}/incidents/bulk-close?source=not-an-ip`)
  expect(await page.textContent(".notice-error")).toContain("the source IP must be an IP address")
  expect(await page.$("form[method=post][action='/incidents/bulk-close']")).toBeNull()
  await page.goBack()
  await page.selectOption("#bulk-reason", "false_positive")
  await page.fill("#bulk-note", "trap sensor noise")
  await Promise.all([
    page.waitForNavigation(),
    page.click("form[method=post][action='/incidents/bulk-close'] button[type=submit]"),
  ])
  expect(new URL(page.url()).pathname).toBe("/incidents")
  expect(await page.textContent(".notice-ok")).toContain("4 incidents closed.")
  const open = await get(server.url, `/v1/incidents?status=open&limit=100`, tenant.key)
  const openOnTrap = open.body.data.filter((i: { sensor: { id: string } }) => i.sensor.id === bulkSensor.id)
  expect(openOnTrap.map((i: { sourceIp: string }) => i.sourceIp)).toEqual(["203.0.113.99"])
  const audit = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ detail: string }>`select detail from audit_log
        where org_id = ${tenant.orgId} and action = 'incident.bulk_close'`,
    ),
  )
  expect(audit).toHaveLength(1)
  expect(audit[0]?.detail).toStartWith("4 closed, reason false_positive, with a note")
  // Each closed transition names the analyst (their user id) as its closer, with the reason and note given.
  const closes = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ incidentId: string; actor: string | null; closeReason: string | null; closeNote: string | null }>`
        select t.incident_id, t.actor, t.close_reason, t.close_note from incident_transitions t
        where t.kind = 'closed' and t.incident_id in ${sql.in(matching)} order by t.incident_id collate "C"`,
    ),
  )
  const analystIds = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ id: string }>`select id from console_users where email = ${ANALYST_EMAIL}`,
    ),
  )
  expect(analystIds).toHaveLength(1)
  const analystId = analystIds[0]?.id
  expect(analystId).toStartWith("usr_")
  expect(closes).toEqual(
    [...matching].sort().map((incidentId) => ({
      incidentId,
      actor: analystId as string,
      closeReason: "false_positive",
      closeNote: "trap sensor noise",
    })),
  )
  // The incident page's history names the closer.
  await page.goto(`${consoleUrl}/incidents/${matching[0]}`)
  const closedLine = await page.textContent(".history li:last-child")
  expect(closedLine).toContain(`Closed (False positive) by ${ANALYST_EMAIL}`)
  expect(closedLine).toContain("trap sensor noise")
  expect(watch.errors).toEqual([])
})

test("bulk close: the confirm carries the preview's absolute time and count; more matching by then is previewed again, nothing closed", async () => {
  const old = new Date(Date.now() - 10 * 86_400_000)
  const seed = (sourceIp: string, at: Date) =>
    seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: bulkSensor.id,
      sourceIp,
      events: [{ time: at, type: "ssh.login_attempt", severity: "low" }],
    })
  await seed("203.0.113.20", old)
  await seed("203.0.113.21", old)
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/incidents/bulk-close?sensor=${bulkSensor.id}&olderThan=7d`)
  expect(await page.textContent("h1")).toBe("Close 2 incidents?")
  const seenBefore = (await page.getAttribute("input[name=seenBefore]", "value")) ?? ""
  expect(Math.abs(Date.parse(seenBefore) - (Date.now() - 7 * 86_400_000))).toBeLessThan(60_000)
  expect(await page.getAttribute("input[name=expected]", "value")).toBe("2")
  // One more matches before the confirm: nothing is closed, the preview comes back with the new count.
  await seed("203.0.113.22", old)
  await page.selectOption("#bulk-reason", "resolved")
  await Promise.all([
    page.waitForNavigation(),
    page.click("form[method=post][action='/incidents/bulk-close'] button[type=submit]"),
  ])
  expect(await page.textContent(".notice-error")).toContain(
    "Nothing was closed: 3 open incidents match now, more than the 2 previewed.",
  )
  expect(await page.textContent("h1")).toBe("Close 3 incidents?")
  expect(await page.getAttribute("input[name=seenBefore]", "value")).toBe(seenBefore)
  expect(await page.getAttribute("input[name=expected]", "value")).toBe("3")
  const openOnTrap = async () =>
    (await get(server.url, `/v1/incidents?status=open&limit=100`, tenant.key)).body.data
      .filter((i: { sensor: { id: string } }) => i.sensor.id === bulkSensor.id)
      .map((i: { sourceIp: string }) => i.sourceIp)
      .sort()
  expect(await openOnTrap()).toEqual(["203.0.113.20", "203.0.113.21", "203.0.113.22", "203.0.113.99"])
  // Last seen just after the preview's time: "7d" counted back from the confirm would take it, the preview did not.
  await seed("203.0.113.23", new Date(Date.parse(seenBefore) + 1))
  await page.selectOption("#bulk-reason", "resolved")
  await Promise.all([
    page.waitForNavigation(),
    page.click("form[method=post][action='/incidents/bulk-close'] button[type=submit]"),
  ])
  expect(await page.textContent(".notice-ok")).toContain("3 incidents closed.")
  expect(await openOnTrap()).toEqual(["203.0.113.23", "203.0.113.99"])
  expect(watch.errors).toEqual([])
})
