import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type AdminActor, asOperator } from "../../src/admin/actor.ts"
import { JudgementAdmin } from "../../src/admin/JudgementAdmin.ts"
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
 * How the console shows the service's judgement of incidents, in a real Chromium on the real server and database:
 * Settings → Networks (an administrator saves a list, a bad line is named with the text kept, reset), Settings → Bait
 * credentials (the password never shown back, removal asked first), the incident page leading with a bait credential
 * used, a source inside and the other sensors that saw it, and the source page across sensors. Analysts read the
 * networks but change nothing; another organization's source is 404.
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@judgement.example`
const ANALYST_EMAIL = `analyst-${RUN}@judgement.example`
const PASSWORD = "correct horse battery staple"
const BAIT_PASSWORD = `Planted-${RUN}-pw!`

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string; key: string }
let fileServer: { id: string; token: string }
let webServer: { id: string; token: string }
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }

const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

const judgement = <A, E>(f: (admin: JudgementAdmin) => Effect.Effect<A, E, AdminActor>) =>
  db.run(asOperator(Effect.flatMap(JudgementAdmin, f)))

const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, never>)

/** One event from `sourceIp` on a sensor: the id of the incident it joined. */
const attack = async (token: string, sourceIp: string, overrides: Record<string, unknown> = {}): Promise<string> => {
  const sent = await ingest(server.ingestUrl, "events", token, [
    nativeEvent({ sourceIp, type: "portscan.syn", attackerInput: {}, ...overrides }),
  ])
  expect(sent.status).toBe(200)
  return sent.body.results[0].incidentId as string
}

/** What the page's `main` holds that an injected script would need: none of it may be there. */
const injected = (page: Page) =>
  page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll: (s: string) => { length: number } } })
      .document
    return {
      scripts: doc.querySelectorAll("main script").length,
      images: doc.querySelectorAll("main img").length,
      handlers: doc.querySelectorAll("[onerror]").length,
    }
  })

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Judgement console ${RUN}`)
  fileServer = (await createSensor(db, tenant.orgId, "fs-decoy-01")) as { id: string; token: string }
  webServer = (await createSensor(db, tenant.orgId, "web-decoy-02")) as { id: string; token: string }
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

test("an admin's list of networks is saved and judges incidents again; a bad line is named with the text kept as typed, and nothing changes; reset brings back the private ranges", async () => {
  const office = await attack(fileServer.token, "10.20.1.5")
  const partner = await attack(fileServer.token, "198.51.100.23")
  const { page, watch } = admin

  await page.goto(`${consoleUrl}/settings/networks`)
  expect(await page.textContent("#networks-state")).toContain("The default list")
  expect(await page.locator("main table tbody tr").count()).toBe(4)
  expect(await page.inputValue("#networks-text")).toContain("10.0.0.0/8 Private network (10/8)")

  // A tab between network and label (a list pasted from a spreadsheet) reads as a space.
  await page.fill("#networks-text", "10.20.0.0/16 Office LAN\n198.51.100.0/24\tPartner VPN # their jump host\n")
  await Promise.all([page.waitForNavigation(), page.click("#edit button[type=submit]")])
  expect(await page.textContent(".notice-ok")).toBe("Saved: 2 networks. 2 incidents were judged again.")
  expect(await page.inputValue("#networks-text")).toBe("10.20.0.0/16 Office LAN\n198.51.100.0/24 Partner VPN")
  const stored = await judgement((a) => a.networks(tenant.orgId))
  expect(stored).toEqual({
    custom: true,
    networks: [
      { cidr: "10.20.0.0/16", label: "Office LAN" },
      { cidr: "198.51.100.0/24", label: "Partner VPN" },
    ],
  })
  const judged = await sql(
    (q) => q<{ id: string; sourceScope: string; severity: string }>`
      select id, source_scope, severity from incidents where id in ${q.in([office, partner])} order by source_ip`,
  )
  expect(judged).toEqual([
    { id: office, sourceScope: "internal", severity: "high" },
    { id: partner, sourceScope: "internal", severity: "high" },
  ])
  await screenshot(page, "settings-networks", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  // A bad third line (after a blank first one): named, the text kept exactly, nothing saved.
  const typed = "\n10.0.0.0/8 Corporate\n300.1.2.3/8 Lab\n2001:db8:5::/48 IPv6 lab"
  await page.fill("#networks-text", typed)
  const [answer] = await Promise.all([page.waitForNavigation(), page.click("#edit button[type=submit]")])
  expect(answer?.status()).toBe(400)
  const error = (await page.textContent("#networks-error")) ?? ""
  expect(error).toContain("Nothing was saved: a problem on line 3.")
  expect(error).toContain('"300.1.2.3/8" is not an address or a network')
  expect(await page.textContent("#networks-error code")).toBe("300.1.2.3/8 Lab")
  expect(await page.inputValue("#networks-text")).toBe(typed)
  expect(await page.getAttribute("#networks-text", "aria-invalid")).toBe("true")
  expect((await judgement((a) => a.networks(tenant.orgId))).networks).toEqual(stored.networks)
  await screenshot(page, "settings-networks-error", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  // The form takes a list longer than any other field (the body limit bounds it); the parser's cap names its line.
  const many = Array.from({ length: 501 }, (_, n) => `10.${n >> 8}.${n & 255}.0/24 Site ${n}`).join("\n")
  expect(many.length).toBeGreaterThan(4096)
  await page.fill("#networks-text", many)
  await Promise.all([page.waitForNavigation(), page.click("#edit button[type=submit]")])
  expect(await page.textContent("#networks-error")).toContain("a problem on line 501. More than 500 networks.")
  expect(await page.inputValue("#networks-text")).toBe(many)

  // Reset, behind its own confirmation.
  await page.goto(`${consoleUrl}/settings/networks`)
  await page.click("#reset summary")
  await Promise.all([page.waitForNavigation(), page.click("#reset button[type=submit]")])
  expect(await page.textContent(".notice-ok")).toBe(
    "Reset to the private ranges: 4 networks. 2 incidents were judged again.",
  )
  expect(await page.textContent("#networks-state")).toContain("The default list")
  expect(await page.locator("#reset").count()).toBe(0)
  await page.goto(`${consoleUrl}/settings/audit`)
  const audit = (await page.textContent("main table")) ?? ""
  expect(audit).toContain("networks.set")
  expect(audit).toContain("networks.reset")
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
})

test("an analyst reads the networks but cannot change them (403), and bait credentials are not theirs to see (403)", async () => {
  const { page } = analyst
  await page.goto(`${consoleUrl}/settings/networks`)
  expect(await page.locator("main table tbody tr").count()).toBeGreaterThan(0)
  expect(await page.locator("#edit").count()).toBe(0)
  expect(await page.locator("#reset").count()).toBe(0)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  const csrf = await csrfOf(page)
  const before = await judgement((a) => a.networks(tenant.orgId))
  expect(await postFromPage(page, "/settings/networks", { csrf, networks: "0.0.0.0/0 Everything" })).toBe(403)
  expect(await postFromPage(page, "/settings/networks/reset", { csrf })).toBe(403)
  expect(await judgement((a) => a.networks(tenant.orgId))).toEqual(before)
  expect((await page.goto(`${consoleUrl}/settings/bait`))?.status()).toBe(403)
  expect(await postFromPage(page, "/settings/bait", { csrf, username: "x", password: "y" })).toBe(403)
  expect(await judgement((a) => a.baitList(tenant.orgId))).toEqual([])
  // Without the session's token, an administrator's change is refused too.
  await admin.page.goto(`${consoleUrl}/settings/networks`)
  expect(await postFromPage(admin.page, "/settings/networks", { networks: "10.0.0.0/8 x" })).toBe(403)
})

test("a bait pair added in the console never shows its password again, in no page or audit detail; a login with it leads its incident with the bait banner; removal is asked first", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/settings/bait`)
  expect(await page.getAttribute("#bait-password", "type")).toBe("password")
  await page.fill("#bait-username", "svc-backup")
  await page.fill("#bait-password", BAIT_PASSWORD)
  await page.fill("#bait-label", "/etc/backup.conf on fs-01")
  await Promise.all([page.waitForNavigation(), page.click("#add button[type=submit]")])
  expect(await page.textContent(".notice-ok")).toContain('Bait credential "svc-backup" added')
  const [bait] = await judgement((a) => a.baitList(tenant.orgId))
  expect(bait).toMatchObject({ username: "svc-backup", label: "/etc/backup.conf on fs-01" })
  const row = page.locator(`tr#${bait?.id}`)
  expect(await row.locator("td").nth(0).textContent()).toBe("svc-backup")
  expect(await row.locator("td").nth(1).textContent()).toBe("/etc/backup.conf on fs-01")
  expect(await page.content()).not.toContain(BAIT_PASSWORD)
  await screenshot(page, "settings-bait", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  // The same pair again is refused on the form.
  await page.fill("#bait-username", "svc-backup")
  await page.fill("#bait-password", BAIT_PASSWORD)
  await Promise.all([page.waitForNavigation(), page.click("#add button[type=submit]")])
  expect(await page.textContent(".notice-error")).toContain("already registered as bait")
  expect(await page.content()).not.toContain(BAIT_PASSWORD)

  // A login with it, on a decoy: critical, and the incident page says so first.
  const incidentId = await attack(webServer.token, "203.0.113.80", {
    type: "ssh.login_attempt",
    attackerInput: { username: "svc-backup", password: BAIT_PASSWORD },
  })
  await page.goto(`${consoleUrl}/incidents/${incidentId}`)
  expect(await page.textContent("#banner-bait .banner-title")).toBe("Bait credential used")
  expect(await page.textContent("h1 .sev")).toBe("critical")
  // The banner comes before the facts.
  const order = await page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelector: (s: string) => unknown } }).document
    const banner = doc.querySelector("#banner-bait") as { compareDocumentPosition: (o: unknown) => number }
    return banner.compareDocumentPosition(doc.querySelector("dl.facts")) & 4
  })
  expect(order).toBe(4)
  expect(await page.content()).not.toContain(BAIT_PASSWORD)
  await screenshot(page, "incident-bait", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await page.goto(`${consoleUrl}/incidents`)
  expect(await page.locator(`a[href='/incidents/${incidentId}'] ~ .marker-bait`).textContent()).toBe("bait")

  // The audit names the username, never the password.
  await page.goto(`${consoleUrl}/settings/audit`)
  expect(await page.textContent("main table")).toContain("bait.add")
  expect(await page.content()).not.toContain(BAIT_PASSWORD)
  const details = await sql(
    (q) => q<{ detail: string | null }>`select detail from audit_log where action like 'bait.%'`,
  )
  expect(details.length).toBeGreaterThan(0)
  for (const { detail } of details) expect(detail ?? "").not.toContain(BAIT_PASSWORD)

  // Removal: a confirmation page, then the POST.
  await page.goto(`${consoleUrl}/settings/bait`)
  await Promise.all([page.waitForNavigation(), page.click(`tr#${bait?.id} a`)])
  expect(await page.textContent("h1")).toBe("Remove a bait credential")
  await screenshot(page, "settings-bait-remove", shots)
  expect(await judgement((a) => a.baitList(tenant.orgId))).toHaveLength(1)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await Promise.all([page.waitForNavigation(), page.click("main button.danger")])
  expect(await page.textContent(".notice-ok")).toContain("Bait credential removed")
  expect(await judgement((a) => a.baitList(tenant.orgId))).toEqual([])
  expect((await page.goto(`${consoleUrl}/settings/bait/${bait?.id}/remove`))?.status()).toBe(404)
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
})

test("an incident from inside says where from before anything else, and names the other sensor that saw its source; the source page lists both sensors' incidents", async () => {
  await judgement((a) => a.setNetworks(tenant.orgId, "10.20.0.0/16 Office LAN"))
  const onFiles = await attack(fileServer.token, "10.20.3.7")
  const onWeb = await attack(webServer.token, "10.20.3.7", { type: "ssh.login_attempt" })
  const { page, watch } = analyst

  await page.goto(`${consoleUrl}/incidents/${onWeb}`)
  expect(await page.textContent("#banner-inside .banner-title")).toBe(
    "From inside your network (Office LAN, 10.20.0.0/16)",
  )
  expect(await page.textContent("#banner-other-sensors strong")).toBe("Also seen on 1 other sensor")
  await screenshot(page, "incident-inside", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await Promise.all([page.waitForNavigation(), page.click("#banner-other-sensors a")])
  expect(new URL(page.url()).pathname).toBe("/sources/10.20.3.7")

  expect(await page.textContent("#source-scope")).toContain("Inside your network: Office LAN")
  expect(await page.textContent("#source-counts")).toBe("2 on 2 sensors")
  expect((await page.locator("td.source-sensor").allTextContents()).sort()).toEqual(["fs-decoy-01", "web-decoy-02"])
  expect(await page.locator(`tr#${onFiles} a[href='/incidents/${onFiles}']`).count()).toBe(1)
  expect(await page.locator(`tr#${onWeb} .marker-inside`).count()).toBe(1)
  await screenshot(page, "source-sensors", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  await page.goto(`${consoleUrl}/incidents`)
  expect(await page.locator(`a[href='/incidents/${onWeb}'] ~ .marker-inside`).textContent()).toBe("inside")
  await screenshot(page, "incidents-marked", shots)
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
})

test("the source page shows a reverse DNS name and AS holder as attacker text, escaped, names the ignore rule holding the address; another organization's source, an unseen one and a bad one are 404", async () => {
  const hostile = `<img src=x onerror=alert(1)>.evil.example`
  const holder = `<script>alert(2)</script> Hosting`
  await attack(fileServer.token, "192.0.2.66")
  // What the enrichment job would have written: fresh, so the job leaves it as it is.
  await sql(
    (q) => q`insert into address_enrichment (address, reverse_dns, rdns_status, rdns_looked_up_at, rdns_expires_at,
        asn, as_organization, country, geo_looked_up_at)
      values ('192.0.2.66', ${hostile}, 'ok', now(), now() + interval '30 days', 64496, ${holder}, 'NL', now())
      on conflict (address) do update set reverse_dns = excluded.reverse_dns, rdns_status = 'ok',
        rdns_expires_at = excluded.rdns_expires_at, asn = 64496, as_organization = excluded.as_organization,
        country = 'NL'`,
  )
  const rule = await addIgnoreRule(db, tenant.orgId, { source: "192.0.2.0/24", port: "22", note: "our scanner" })
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/sources/192.0.2.66`)
  const atk = await page.locator("dl.facts code.atk").allTextContents()
  expect(atk).toEqual([hostile, holder])
  expect(await page.textContent("dl.facts")).toContain("AS64496")
  expect(await injected(page)).toEqual({ scripts: 0, images: 0, handlers: 0 })
  expect(await page.textContent("#source-scope")).toContain("External")
  const held = (await page.textContent("#holding-rule")) ?? ""
  expect(held).toContain(rule.id)
  expect(held).toContain("192.0.2.0/24")
  expect(held).toContain("port 22")
  await screenshot(page, "source-enriched", shots)
  expect(await seriousAccessibilityViolations(page)).toEqual([])

  // Another spelling of an address goes to its one form.
  await page.goto(`${consoleUrl}/sources/::ffff:192.0.2.66`)
  expect(new URL(page.url()).pathname).toBe("/sources/192.0.2.66")
  // Another organization's source is no different from one never seen.
  const other = await createTenant(db, `Judgement other ${RUN}`)
  const otherSensor = (await createSensor(db, other.orgId, "elsewhere")) as { token: string }
  await attack(otherSensor.token, "198.18.0.9")
  for (const path of ["/sources/198.18.0.9", "/sources/198.18.0.10", "/sources/not-an-address"]) {
    expect((await page.goto(`${consoleUrl}${path}`))?.status()).toBe(404)
  }
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
})
