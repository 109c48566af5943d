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
import { adminAndAnalyst, freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { type SmtpServer, startSmtpServer } from "../support/smtp.ts"

/**
 * Email channels in the console, in a real Chromium against a real SMTP server: an admin adds one with two recipients,
 * a recipient confirms from the mailed link (page, then button), the channel's page shows who is confirmed and who is
 * waiting, an admin mails a new link and removes a recipient, Send test reaches the confirmed one; an analyst sees the
 * recipients without the forms.
 */

const RUN = Date.now().toString(36)
const PASSWORD = "correct horse battery staple"
const SMTP_USER = "alerts"
const SMTP_PASSWORD = "smtp secret"

let smtp: SmtpServer
let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

beforeAll(async () => {
  smtp = await startSmtpServer({ mode: "starttls", user: SMTP_USER, password: SMTP_PASSWORD })
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({
      CONSOLE_PORT: String(port),
      APP_URL: consoleUrl,
      SMTP_URL: smtp.url,
      SMTP_FROM: "Decoy alerts <alerts@decoy.example>",
      SMTP_CA_FILE: smtp.caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
  db = testDatabase(server.env)
  const orgId = (await createTenant(db, `Email console ${RUN}`)).orgId
  ;({ browser, admin, analyst } = await adminAndAnalyst(server.env, consoleUrl, {
    orgId,
    admin: `admin-${RUN}@email.example`,
    analyst: `analyst-${RUN}@email.example`,
    password: PASSWORD,
  }))
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
  await smtp?.stop()
})

const linkFor = async (address: string, nth = 0) => {
  const mails = (await smtp.messages()).filter((m) => m.rcptTos.includes(address))
  const link = /http:\/\/127\.0\.0\.1:\d+\/email\/confirm\/[A-Za-z0-9_-]+/.exec(mails[nth]?.textPart ?? "")?.[0]
  if (link === undefined) throw new Error(`no confirmation link for ${address}`)
  return link
}

test("an admin adds an email channel; a recipient confirms from the link; the page shows recipients; Send test mails the confirmed", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.$$eval("#channel-kind option", (os) => os.map((o) => o.textContent))).toContain("Email")
  await page.selectOption("#channel-kind", "email")
  await page.fill("#channel-recipients", "SOC@Example.test\noncall@example.test")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  const notice = (await page.textContent(".notice-ok")) ?? ""
  const id = /Email channel (whc_[0-9A-Za-z]+) added/.exec(notice)?.[1]
  expect(id).toBeDefined()
  expect(notice).toContain("confirmation link")
  await smtp.waitFor(2)

  // The recipient opens the link in a browser without any session, and presses Confirm.
  const recipient = await browser.newContext()
  const link = await recipient.newPage()
  await link.goto(await linkFor("soc@example.test"))
  expect(await link.textContent("h1")).toBe("Confirm email alerts")
  expect(await link.textContent("body")).toContain("soc@example.test")
  expect(await seriousAccessibilityViolations(link)).toEqual([])
  await screenshot(link, "email-confirm", shots)
  await Promise.all([link.waitForLoadState(), link.click("button[type=submit]")])
  expect(await link.textContent("h1")).toBe("Confirmed")
  await recipient.close()

  // The channel's page: one confirmed, one waiting; the waiting one gets a new link (the old one stops working).
  await page.goto(`${consoleUrl}/settings/alerts/channels/${id}`)
  const rows = await page.$$eval("#recipients tbody tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 2).map((td) => td.textContent?.trim())),
  )
  expect(rows).toEqual([
    ["oncall@example.test", "waiting for confirmation"],
    ["soc@example.test", "confirmed"],
  ])
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await screenshot(page, "alerts-email-channel", shots)
  const old = await linkFor("oncall@example.test")
  // Within 10 minutes of a link, no new one (nobody's mailbox is flooded); as if it were mailed 11 minutes ago, one.
  await Promise.all([
    page.waitForNavigation(),
    page.click("#recipients form[action$='/invite'] input[value='oncall@example.test'] + button"),
  ])
  expect(await page.textContent(".notice-ok")).toContain("not again yet: oncall@example.test")
  await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`update email_recipients set invited_at = invited_at - interval '11 minutes'
        where channel_id = ${id ?? ""}`,
    ),
  )
  await Promise.all([
    page.waitForNavigation(),
    page.click("#recipients form[action$='/invite'] input[value='oncall@example.test'] + button"),
  ])
  expect(await page.textContent(".notice-ok")).toContain("Confirmation link mailed to oncall@example.test")
  await smtp.waitFor(3)
  expect((await fetch(old)).status).toBe(410)
  expect(await linkFor("oncall@example.test", 1)).not.toBe(old)

  // Send test: the confirmed recipient only.
  const before = (await smtp.messages()).length
  await Promise.all([
    page.waitForNavigation(),
    page.click(`form[action='/settings/alerts/channels/${id}/test'] button`),
  ])
  expect(await page.textContent(".notice")).toContain("Send test: delivered")
  const [testMail] = (await smtp.waitFor(before + 1)).slice(before)
  expect(testMail?.rcptTos).toEqual(["soc@example.test"])
  expect(testMail?.subject).toStartWith("[test] ")
  // The delivery log shows the mail server's reply where a webhook shows its HTTP status.
  await page.goto(`${consoleUrl}/settings/alerts/channels/${id}`)
  expect(await page.textContent("#deliveries")).toMatch(/250 /)

  // Remove: gone from the page.
  await Promise.all([
    page.waitForNavigation(),
    page.click("#recipients form[action$='/remove-recipient'] input[value='oncall@example.test'] + button"),
  ])
  expect(await page.textContent(".notice-ok")).toContain("oncall@example.test no longer receives")
  expect(await page.$$eval("#recipients tbody tr", (trs) => trs.length)).toBe(1)
  expect(watch.errors).toEqual([])

  // An analyst reads the recipients, with no form to change them.
  await analyst.page.goto(`${consoleUrl}/settings/alerts/channels/${id}`)
  expect(await analyst.page.textContent("#recipients")).toContain("soc@example.test")
  expect(await analyst.page.$$("#recipients form")).toEqual([])
})

test("an email channel without recipients, or with a malformed one, is refused on the form and nothing is mailed", async () => {
  const { page } = admin
  const before = (await smtp.messages()).length
  await page.goto(`${consoleUrl}/settings/alerts?add=1`)
  await page.selectOption("#channel-kind", "email")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  expect(await page.textContent(".notice-error")).toContain("the recipient list is required")
  await page.selectOption("#channel-kind", "email")
  await page.fill("#channel-recipients", "soc@example.test, <script>alert(1)</script>")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  expect(await page.textContent(".notice-error")).toContain("must hold email addresses")
  expect((await smtp.messages()).length).toBe(before)
})
