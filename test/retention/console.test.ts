import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Browser, Page, PageWatch } from "../support/browser.ts"
import { adminAndAnalyst, csrfOf, freePort, postFromPage } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D49: Settings → Retention in a real Chromium on the real server and database: an administrator sets the
 * organization's own number of days and returns to the default, each audited; 0 is refused with a notice; an analyst
 * reads the setting but cannot change it (403).
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@retention.example`
const ANALYST_EMAIL = `analyst-${RUN}@retention.example`
const PASSWORD = "correct horse battery staple"

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string }
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }

const retentionOf = (orgId: string) =>
  db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(
        sql<{ retentionDays: number | null }>`select retention_days from organizations where id = ${orgId}`,
        (rows) => rows[0]?.retentionDays,
      ),
    ),
  )

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl, RETENTION_DAYS: "400" }),
  })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Retention console ${RUN}`)
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

test("an admin sets the organization's retention and returns it to the default (audited); 0 is refused; an analyst reads it but cannot change it", async () => {
  const { page } = admin
  await page.goto(`${consoleUrl}/settings/retention`)
  expect(await page.textContent("main")).toContain("400 days")
  await page.fill("#retention-days", "90")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/retention'] button[type=submit]")])
  expect(await retentionOf(tenant.orgId)).toBe(90)
  expect(await page.textContent("main")).toContain("Events are kept for 90 days.")

  // The browser's own check (min=1) would stop the form: turned off, so the service's refusal is what is seen.
  await page.$eval("form[action='/settings/retention']", (f) => {
    ;(f as unknown as { noValidate: boolean }).noValidate = true
  })
  await page.fill("#retention-days", "0")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/retention'] button[type=submit]")])
  expect(await retentionOf(tenant.orgId)).toBe(90)
  expect(await page.textContent("main")).toContain("a whole number of days from 1 to 100000")

  await page.fill("#retention-days", "")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/retention'] button[type=submit]")])
  expect(await retentionOf(tenant.orgId)).toBeNull()

  await page.goto(`${consoleUrl}/settings/audit`)
  const audit = (await page.textContent("main")) ?? ""
  expect(audit).toContain("org.retention")

  await analyst.page.goto(`${consoleUrl}/settings/retention`)
  expect(await analyst.page.textContent("main")).toContain("400 days")
  expect(await analyst.page.$("#retention-days")).toBeNull()
  const refused = await postFromPage(analyst.page, "/settings/retention", {
    csrf: await csrfOf(admin.page),
    days: "7",
  })
  expect(refused).toBe(403)
  expect(await retentionOf(tenant.orgId)).toBeNull()
}, 120_000)
