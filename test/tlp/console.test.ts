import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Browser, type Page, type PageWatch, seriousAccessibilityViolations } from "../support/browser.ts"
import { adminAndAnalyst, csrfOf, freePort, postFromPage } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Settings → API and export, "Threat intelligence sharing: TLP for STIX/TAXII", in a real Chromium on the real server
 * and database: an administrator chooses the level (audited as organization.tlp), each level explained; a POST without
 * the page's CSRF token or with an unknown level changes nothing; an analyst reads the level but has no form and is
 * refused (403).
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@tlp.example`
const ANALYST_EMAIL = `analyst-${RUN}@tlp.example`
const PASSWORD = "correct horse battery staple"

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string }
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, SqlClient.SqlClient>)
const tlpOf = async () =>
  (await sqlRun((sql) => sql<{ tlp: string }>`select tlp from organizations where id = ${tenant.orgId}`))[0]?.tlp
const auditOf = async () =>
  (
    await sqlRun(
      (sql) => sql<{ detail: string }>`
        select detail from audit_log where org_id = ${tenant.orgId} and action = 'organization.tlp' order by at, id`,
    )
  ).map((r) => r.detail)

const SAVE = "form[action='/settings/api/tlp'] button[type=submit]"

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `TLP console ${RUN}`)
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

test("an admin chooses the TLP level (audited); without the CSRF token or with an unknown level nothing changes", async () => {
  const { page } = admin
  await page.goto(`${consoleUrl}/settings/api`)
  const main = (await page.textContent("main")) ?? ""
  expect(main).toContain("Threat intelligence sharing: TLP for STIX/TAXII")
  expect(await page.textContent("#tlp-current")).toBe("TLP:AMBER")
  // Every level is offered with what it means for the feed's reader; the current one is chosen.
  for (const level of ["clear", "green", "amber", "amber+strict", "red"]) {
    expect(await page.textContent(`label[for='tlp-${level}']`)).toContain(`TLP:${level.toUpperCase()}:`)
  }
  expect(await page.isChecked("#tlp-amber")).toBe(true)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  await page.check("#tlp-green")
  await Promise.all([page.waitForNavigation(), page.click(SAVE)])
  expect(new URL(page.url()).pathname).toBe("/settings/api")
  expect(await page.textContent("main")).toContain("The TAXII collection's objects are marked TLP:GREEN.")
  expect(await page.textContent("#tlp-current")).toBe("TLP:GREEN")
  expect(await page.isChecked("#tlp-green")).toBe(true)
  expect(await tlpOf()).toBe("green")

  // Without the page's CSRF token: refused, nothing changed.
  expect(await postFromPage(page, "/settings/api/tlp", { csrf: "not-the-token", tlp: "red" })).toBe(403)
  expect(await tlpOf()).toBe("green")

  // An unknown level (a forged form): a notice on the page, nothing changed.
  await page.$eval("#tlp-red", (el) => el.setAttribute("value", "white"))
  await page.check("#tlp-red")
  await Promise.all([page.waitForNavigation(), page.click(SAVE)])
  expect(await page.textContent("main")).toContain(
    "The TLP level must be one of clear, green, amber, amber+strict, red.",
  )
  expect(await tlpOf()).toBe("green")

  expect(await auditOf()).toEqual(["amber -> green"])
  await page.goto(`${consoleUrl}/settings/audit`)
  expect(await page.textContent("main")).toContain("organization.tlp")
}, 120_000)

test("an analyst reads the level and its meaning but has no form and is refused (403)", async () => {
  const { page } = analyst
  await page.goto(`${consoleUrl}/settings/api`)
  expect(await page.textContent("#tlp-current")).toBe(`TLP:${(await tlpOf())?.toUpperCase()}`)
  expect(await page.$("form[action='/settings/api/tlp']")).toBeNull()
  expect(await page.textContent("main")).toContain("An administrator can change it.")
  const refused = await postFromPage(page, "/settings/api/tlp", { csrf: await csrfOf(admin.page), tlp: "red" })
  expect(refused).toBe(403)
  const own = await postFromPage(page, "/settings/api/tlp", { csrf: await csrfOf(page), tlp: "red" })
  expect(own).toBe(403)
  expect(await tlpOf()).not.toBe("red")
  expect(admin.watch.violations).toEqual([])
  expect(analyst.watch.violations).toEqual([])
}, 60_000)
