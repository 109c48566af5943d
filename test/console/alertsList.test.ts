import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
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
import { adminAndAnalyst, freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { eventually } from "../support/eventually.ts"
import { channelDeliveries, createChannelOf, createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { issueCertificate, makeTestCa } from "../support/tls.ts"

/**
 * Settings → Alerts as a list: each channel with its latest delivery (never used, delivered, failed with the
 * receiver's answer, retrying with the next try) and its failed attempts of the last 24 hours, against a real local
 * HTTPS receiver; the Add a channel form behind its button; the analyst's read-only view.
 */

const RUN = Date.now().toString(36)
const PASSWORD = "correct horse battery staple"

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let orgId: string
let caDir: string
let receiver: Receiver
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }
const ids = { unused: "", delivered: "", failing: "", retrying: "" }

const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

beforeAll(async () => {
  const ca = makeTestCa("Throwaway Alerts List CA")
  const certificate = issueCertificate(ca, { dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  caDir = mkdtempSync(join(tmpdir(), "dsvc-ca-"))
  const caFile = join(caDir, "ca.pem")
  writeFileSync(caFile, ca.caCert)
  receiver = await startReceiver(certificate)

  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({
      CONSOLE_PORT: String(port),
      APP_URL: consoleUrl,
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      WEBHOOK_CA_FILE: caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
      // One retry, an hour later: a failed incident delivery stays "retrying" for the whole test.
      WEBHOOK_RETRY_SCHEDULE: "1h",
    }),
  })
  db = testDatabase(server.env)
  orgId = (await createTenant(db, `Alerts list ${RUN}`)).orgId
  ;({ browser, admin, analyst } = await adminAndAnalyst(server.env, consoleUrl, {
    orgId,
    admin: `admin-${RUN}@alerts-list.example`,
    analyst: `analyst-${RUN}@alerts-list.example`,
    password: PASSWORD,
  }))
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
  receiver?.stop()
  if (caDir) rmSync(caDir, { recursive: true, force: true })
})

/** The list's words for one channel: its latest delivery, and its failures. */
const stateOf = async (page: Page, id: string) => ({
  last: ((await page.textContent(`#channel-${id} .alerts-last`)) ?? "").replace(/\s+/g, " ").trim(),
  failures: ((await page.textContent(`#channel-${id} .alerts-failures`)) ?? "").trim(),
})

const sendTest = async (page: Page, id: string) => {
  await page.goto(`${consoleUrl}/settings/alerts`)
  await Promise.all([
    page.waitForNavigation(),
    page.click(`form[action='/settings/alerts/channels/${id}/test'] button`),
  ])
}

test("the admin's alerts page: the channels first, each with its latest delivery and its failures of the last 24 h", async () => {
  const { page, watch } = admin
  // The add form is open while there is nothing else on the page.
  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.textContent(".alerts-summary")).toContain("No channels yet")
  expect(await page.$eval("#add", (d) => (d as unknown as { open: boolean }).open)).toBe(true)

  // Only the retrying channel takes the incident below; the others are for Send test alone.
  const made = async (path: string, minSeverity: string) =>
    (await createChannelOf(db, orgId, { url: `${receiver.url}${path}`, minSeverity })).id
  ids.unused = await made("/hooks/never", "critical")
  ids.delivered = await made("/hooks/delivered", "critical")
  ids.failing = await made("/status/500", "critical")
  ids.retrying = await made("/status/503", "low")

  await sendTest(page, ids.delivered)
  expect(await page.textContent(".notice-ok")).toContain("delivered, HTTP 202")
  await sendTest(page, ids.failing)
  await sendTest(page, ids.failing)
  expect(await page.textContent(".notice-error")).toContain("failed, HTTP 500")

  // An incident's delivery, through the dispatcher: 503, then a retry due in an hour.
  const sensor = await createSensor(db, orgId, `alerts-list-${RUN}`)
  const accepted = await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "198.51.100.77", type: "ssh.login_attempt" }),
  ])
  expect(accepted.status).toBe(200)
  await eventually("the incident's delivery to fail once", async () =>
    (await channelDeliveries(db, ids.retrying)).some((d) => d.status === "failed" && d.attempts === 1),
  )

  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.textContent(".alerts-summary")).toContain("4 channels; 2 with failed attempts in the last 24 h.")

  const unused = await stateOf(page, ids.unused)
  expect(unused.last).toBe("Last delivery: never used (no delivery yet)")
  expect(unused.failures).toBe("No failed attempt in the last 24 h.")

  const delivered = await stateOf(page, ids.delivered)
  expect(delivered.last).toStartWith("Last delivery: delivered HTTP 202 ")
  expect(delivered.last).toEndWith("webhook.test")
  expect(delivered.failures).toBe("No failed attempt in the last 24 h.")

  const failing = await stateOf(page, ids.failing)
  expect(failing.last).toStartWith("Last delivery: failed HTTP 500")
  expect(failing.last).toContain("no more retries")
  expect(failing.failures).toBe("2 failed attempts in the last 24 h.")

  const retrying = await stateOf(page, ids.retrying)
  expect(retrying.last).toStartWith("Last delivery: retrying after HTTP 503")
  expect(retrying.last).toMatch(/; next retry in \d+ (min|h) /)
  expect(retrying.last).toEndWith("incident.created")
  expect(retrying.failures).toBe("1 failed attempt in the last 24 h.")
  const nextRetry = await page.getAttribute(`#channel-${ids.retrying} .alerts-last time:last-of-type`, "datetime")
  const [stored] = await channelDeliveries(db, ids.retrying)
  expect(nextRetry).toBe(stored?.nextAttemptAt ?? "no next retry")

  // The list comes first; the add form after it, behind its button, closed now that channels exist.
  const order = await page.$$eval("section.channel, #add", (nodes) => nodes.map((n) => n.id))
  expect(order[order.length - 1]).toBe("add")
  expect(order).toHaveLength(5)
  expect(await page.$eval("#add", (d) => (d as unknown as { open: boolean }).open)).toBe(false)
  expect(await page.isVisible("#channel-url")).toBe(false)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await screenshot(page, "alerts", shots)

  // A failed attempt older than 24 hours no longer counts.
  await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`
        update webhook_delivery_attempts set started_at = now() - interval '25 hours'
        where id = (select a.id from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
                    where d.channel_id = ${ids.failing} order by a.id limit 1)`,
    ),
  )
  await page.reload()
  expect((await stateOf(page, ids.failing)).failures).toBe("1 failed attempt in the last 24 h.")
  expect(watch.errors).toEqual([])
}, 90_000)

test("the Add a channel button opens the form without a script; a refused add comes back with the form open", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.isVisible("#channel-url")).toBe(false)
  await page.click("#add > summary")
  expect(await page.isVisible("#channel-url")).toBe(true)
  await page.fill("#channel-url", "http://example.com/hook")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  expect(await page.textContent(".notice-error")).toContain("webhook URL refused")
  expect(new URL(page.url()).searchParams.get("add")).toBe("1")
  expect(await page.isVisible("#channel-url")).toBe(true)

  await page.fill("#channel-url", `${receiver.url}/hooks/added`)
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  expect(await page.textContent(".notice-ok")).toContain("added")
  expect(new URL(page.url()).searchParams.get("add")).toBeNull()
  expect(await page.isVisible("#channel-url")).toBe(false)
  expect(watch.errors).toEqual([])

  // Without JavaScript the button works the same: it is a <details>.
  const context = await browser.newContext({ javaScriptEnabled: false })
  try {
    const plain = await context.newPage()
    await context.addCookies(await page.context().cookies())
    await plain.goto(`${consoleUrl}/settings/alerts`)
    await plain.click("#add > summary")
    expect(await plain.isVisible("#channel-url")).toBe(true)
  } finally {
    await context.close()
  }
}, 60_000)

test("an analyst reads every channel's latest delivery, with no form and no button; the page passes axe", async () => {
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.$("#add")).toBeNull()
  expect(await page.$$("form[action^='/settings/alerts']")).toHaveLength(0)
  expect((await stateOf(page, ids.failing)).last).toStartWith("Last delivery: failed HTTP 500")
  expect((await stateOf(page, ids.retrying)).last).toStartWith("Last delivery: retrying after HTTP 503")
  expect((await stateOf(page, ids.unused)).last).toContain("never used")
  // The receiver's path stays hidden from an analyst in the channel's heading too.
  expect(await page.textContent(`#channel-title-${ids.delivered}`)).not.toContain("/hooks/delivered")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(watch.errors).toEqual([])
}, 60_000)
