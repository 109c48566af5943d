import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { HEC_SOURCETYPE_OCSF } from "../../src/domain/channels/hec.ts"
import { SYSLOG_SD_ID } from "../../src/domain/channels/syslog.ts"
import { ADAPTIVE_CARD_CONTENT_TYPE } from "../../src/domain/channels/teams.ts"
import {
  type Browser,
  type Page,
  type PageWatch,
  screenshot,
  seriousAccessibilityViolations,
} from "../support/browser.ts"
import { adminAndAnalyst, csrfOf, freePort, postFromPage } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant, listChannels } from "../support/fixtures.ts"
import { type HecReceiver, startHecReceiver } from "../support/hecReceiver.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type Rsyslog, startRsyslog } from "../support/rsyslog.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { issueCertificate, makeTestCa } from "../support/tls.ts"

/**
 * D46, D47 in the console: an admin adds a Slack, a Microsoft Teams, a syslog and a Splunk HEC channel on Settings →
 * Alerts in a real Chromium, presses Send test on each, and each arrives where its kind sends: local HTTPS receivers
 * for Slack and Teams, a real rsyslog over TLS, a receiver with Splunk HEC's rules. All of them trust one throwaway CA
 * (WEBHOOK_CA_FILE, SYSLOG_CA_FILE) and may be on 127.0.0.1 only because WEBHOOK_ALLOW_PRIVATE says so.
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `admin-${RUN}@channels.example`
const ANALYST_EMAIL = `analyst-${RUN}@channels.example`
const PASSWORD = "correct horse battery staple"
const HEC_TOKEN = "6f0e2c1a-4b7d-4e21-9c3a-5d8b7e6f1a20"
/** The secret parts of the chat URLs: never on a page, for anyone. */
const SLACK_PATH = "/services/T0CONSOLE/B0CONSOLE/slackSecretPathToken"
const TEAMS_PATH = "/workflows/teamsSecretWorkflow/triggers/manual/paths/invoke"
const TEAMS_QUERY = "?api-version=1&sig=teamsSecretSignature"

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let orgId: string
let caDir: string
let receiver: Receiver
let hec: HecReceiver
let rsyslog: Rsyslog
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }
/** The channels the first test adds, by kind. */
const ids: Record<string, string> = {}

const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

beforeAll(async () => {
  const ca = makeTestCa("Throwaway Console Channels CA")
  const certificate = issueCertificate(ca, { dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  caDir = mkdtempSync(join(tmpdir(), "dsvc-ca-"))
  const caFile = join(caDir, "ca.pem")
  writeFileSync(caFile, ca.caCert)
  receiver = await startReceiver(certificate)
  hec = startHecReceiver(certificate, HEC_TOKEN)
  rsyslog = await startRsyslog({ certificate })

  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({
      CONSOLE_PORT: String(port),
      APP_URL: consoleUrl,
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      WEBHOOK_CA_FILE: caFile,
      SYSLOG_CA_FILE: caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
  db = testDatabase(server.env)
  orgId = (await createTenant(db, `Channels console ${RUN}`)).orgId
  ;({ browser, admin, analyst } = await adminAndAnalyst(server.env, consoleUrl, {
    orgId: orgId,
    admin: ADMIN_EMAIL,
    analyst: ANALYST_EMAIL,
    password: PASSWORD,
  }))
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
  receiver?.stop()
  await hec?.stop()
  await rsyslog?.stop()
  if (caDir) rmSync(caDir, { recursive: true, force: true })
})

/** How many channels the organization has, as `webhook list` counts them (read through the admin service). */
const channelCount = async () => (await listChannels(db, orgId)).length

/** Opens the Add channel form, behind its button (a <details>) once channels exist. */
const openAddForm = async (page: Page) => {
  if (!(await page.$eval("#add", (d) => (d as unknown as { open: boolean }).open))) await page.click("#add > summary")
}

/** Fills the Add channel form and sends it; the page after the redirect. */
const addChannel = async (
  page: Page,
  fields: {
    kind: string
    url: string
    token?: string
    format?: string
    min?: string
    sensorHealth?: boolean
    settle?: string
  },
) => {
  await page.goto(`${consoleUrl}/settings/alerts`)
  await openAddForm(page)
  await page.selectOption("#channel-kind", fields.kind)
  await page.fill("#channel-url", fields.url)
  if (fields.token !== undefined) await page.fill("#channel-token", fields.token)
  await page.selectOption("#channel-format", fields.format ?? "native")
  await page.selectOption("#channel-min", fields.min ?? "low")
  if (fields.sensorHealth) await page.check("#channel-sensor-health")
  if (fields.settle !== undefined) await page.fill("#channel-settle", fields.settle)
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
}

/** The id in the notice after an Add channel. */
const addedId = async (page: Page): Promise<string> => {
  const text = (await page.textContent(".notice-ok")) ?? ""
  const id = /channel (whc_[0-9A-Za-z]+) added/.exec(text)?.[1]
  if (id === undefined) throw new Error(`no channel added: ${text} ${await page.textContent(".notice")}`)
  return id
}

/** Send test on the channel's panel of the list; the notice on the channel's page it leads to. */
const sendTest = async (page: Page, id: string): Promise<string> => {
  await page.goto(`${consoleUrl}/settings/alerts`)
  await Promise.all([
    page.waitForNavigation(),
    page.click(`form[action='/settings/alerts/channels/${id}/test'] button`),
  ])
  expect(new URL(page.url()).pathname).toBe(`/settings/alerts/channels/${id}`)
  return (await page.textContent(".notice")) ?? ""
}

/** The newest delivery's id on a channel's page. */
const newestDelivery = async (page: Page): Promise<string> =>
  ((await page.textContent("tbody tr td .mono")) ?? "").trim()

test("an admin adds Slack, Teams, syslog and Splunk HEC channels on the page; Send test on each arrives", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/settings/alerts`)
  await openAddForm(page)
  // The form as the docs show it: a HEC channel filled in (example values; the token is masked).
  await page.selectOption("#channel-kind", "splunk_hec")
  await page.fill("#channel-url", "https://splunk.example.com:8088")
  await page.fill("#channel-token", HEC_TOKEN)
  await page.selectOption("#channel-format", "ocsf")
  expect(await page.getAttribute("#channel-token", "type")).toBe("password")
  expect(await page.getAttribute("#channel-token", "autocomplete")).toBe("off")
  expect(await page.$$eval("#channel-kind option", (os) => os.map((o) => o.textContent))).toEqual([
    "Webhook",
    "Slack",
    "Microsoft Teams",
    "Syslog over TLS",
    "Splunk HEC",
    "Email",
  ])
  expect(await page.textContent("label[for=channel-format]")).toContain("webhook, syslog and Splunk HEC")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await screenshot(page, "alerts-add-channel", shots)

  // Slack: a Block Kit message at the incoming-webhook URL.
  await addChannel(page, { kind: "slack", url: `${receiver.url}${SLACK_PATH}` })
  ids.slack = await addedId(page)
  expect(await page.textContent(".notice-ok")).toContain("stored sealed and will not be shown again")
  expect(await page.$("#secret-value")).toBeNull()
  let before = receiver.requests.length
  expect(await sendTest(page, ids.slack)).toContain("Send test: delivered, HTTP 202")
  const slack = receiver.requests.slice(before)
  expect(slack.map((r) => r.path)).toEqual([SLACK_PATH])
  expect(slack[0]?.headers["content-type"]).toContain("application/json")
  const slackBody = JSON.parse(slack[0]?.body ?? "{}")
  expect(Array.isArray(slackBody.blocks)).toBe(true)
  expect(slackBody.blocks.length).toBeGreaterThan(0)
  expect(typeof slackBody.text).toBe("string")

  // Microsoft Teams: an Adaptive Card at the Workflows URL (its query, with the signature, kept).
  await addChannel(page, { kind: "teams", url: `${receiver.url}${TEAMS_PATH}${TEAMS_QUERY}` })
  ids.teams = await addedId(page)
  expect(await page.textContent(".notice-ok")).toContain("stored sealed and will not be shown again")
  before = receiver.requests.length
  expect(await sendTest(page, ids.teams)).toContain("Send test: delivered, HTTP 202")
  const teams = receiver.requests.slice(before)
  expect(teams.map((r) => r.path)).toEqual([TEAMS_PATH])
  const card = JSON.parse(teams[0]?.body ?? "{}")
  expect(card.type).toBe("message")
  expect(card.attachments?.[0]?.contentType).toBe(ADAPTIVE_CARD_CONTENT_TYPE)
  expect(card.attachments?.[0]?.content?.type).toBe("AdaptiveCard")

  // Syslog over TLS: a real rsyslog parses the RFC 5424 message; its structured data names the delivery.
  await addChannel(page, { kind: "syslog", url: `syslog+tls://127.0.0.1:${rsyslog.port}`, min: "high" })
  ids.syslog = await addedId(page)
  expect(await page.$("#secret-value")).toBeNull()
  const syslogNotice = await sendTest(page, ids.syslog)
  expect(syslogNotice).toContain("Send test: delivered in")
  expect(syslogNotice).not.toContain("HTTP")
  const syslogDelivery = await newestDelivery(page)
  expect(syslogDelivery).toMatch(/^whd_/)
  const parsed = await rsyslog.waitFor(1)
  expect(parsed).toHaveLength(1)
  expect(parsed[0]?.["$!"]?.["rfc5424-sd"]?.[SYSLOG_SD_ID]?.messageId).toBe(syslogDelivery)

  // Splunk HEC, OCSF: the collector URL without a path gets the event endpoint; the token is HEC's header.
  await addChannel(page, { kind: "splunk_hec", url: hec.url, token: HEC_TOKEN, format: "ocsf" })
  ids.hec = await addedId(page)
  expect(await page.textContent(".notice-ok")).toContain("token is stored sealed and will not be shown again")
  expect(await page.content()).not.toContain(HEC_TOKEN)
  expect(await sendTest(page, ids.hec)).toContain("Send test: delivered, HTTP 200")
  expect(hec.requests.map((r) => [r.path, r.headers.authorization, r.status])).toEqual([
    ["/services/collector/event", `Splunk ${HEC_TOKEN}`, 200],
  ])
  expect(hec.accepted).toHaveLength(1)
  expect(hec.accepted[0]?.sourcetype).toBe(HEC_SOURCETYPE_OCSF)
  expect((hec.accepted[0]?.event as { class_uid?: number } | undefined)?.class_uid).toBe(2004)

  // The list shows each channel's kind and format; a chat URL's origin only, even to the admin who gave it.
  await page.goto(`${consoleUrl}/settings/alerts`)
  const facts = async (id: string) => [
    (await page.textContent(`#channel-${id} .channel-kind`))?.trim(),
    (await page.textContent(`#channel-${id} .channel-format`))?.trim(),
  ]
  expect(await facts(ids.slack)).toEqual(["Slack", "Slack message (Block Kit)"])
  expect(await facts(ids.teams)).toEqual(["Microsoft Teams", "Adaptive Card"])
  expect(await facts(ids.syslog)).toEqual(["Syslog over TLS", "Native"])
  expect(await facts(ids.hec)).toEqual(["Splunk HEC", "OCSF Detection Finding"])
  const list = await page.content()
  for (const secret of ["slackSecretPathToken", "teamsSecretWorkflow", "teamsSecretSignature", HEC_TOKEN]) {
    expect(list).not.toContain(secret)
  }
  expect(await page.textContent(`#channel-${ids.slack}`)).toContain(`${receiver.url}/…`)
  expect(await page.textContent(`#channel-${ids.syslog}`)).toContain(`syslog+tls://127.0.0.1:${rsyslog.port}`)
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  await screenshot(page, "alerts-channels", shots)
  expect(watch.errors).toEqual([])
  expect(watch.violations).toEqual([])
}, 120_000)

test("rotation offers what each kind needs, and a replaced HEC token or Slack URL is what the next send uses", async () => {
  const { page } = admin
  await page.goto(`${consoleUrl}/settings/alerts`)
  const rotate = (id: string) => `#channel-${id} form[action$='/rotate']`
  expect(await page.$(`${rotate(ids.syslog ?? "")}`)).toBeNull()
  expect(await page.getAttribute(`${rotate(ids.hec ?? "")} input[name=replacement]`, "type")).toBe("password")
  expect(await page.getAttribute(`${rotate(ids.hec ?? "")} input[name=replacement]`, "autocomplete")).toBe("off")
  expect(await page.getAttribute(`${rotate(ids.slack ?? "")} input[name=replacement]`, "type")).toBe("url")
  expect(await page.getAttribute(`${rotate(ids.teams ?? "")} input[name=replacement]`, "type")).toBe("url")
  for (const id of [ids.slack, ids.teams, ids.syslog, ids.hec]) {
    expect(await page.$(`#channel-${id} select[name=grace]`)).toBeNull()
    // Send test and enable/disable for every kind.
    expect(await page.$(`#channel-${id} form[action$='/test']`)).not.toBeNull()
    expect(await page.$(`#channel-${id} form[action$='/disable']`)).not.toBeNull()
  }

  // A token the collector does not know: the next test is refused there (403), and says so; the right one again works.
  const hecId = ids.hec ?? ""
  await page.fill(`${rotate(hecId)} input[name=replacement]`, "0000-not-the-token")
  await Promise.all([page.waitForNavigation(), page.click(`${rotate(hecId)} button`)])
  expect(await page.textContent(".notice-ok")).toContain("Token replaced")
  expect(await page.content()).not.toContain("0000-not-the-token")
  expect(await sendTest(page, hecId)).toContain("failed, HTTP 403")
  await page.fill(`${rotate(hecId)} input[name=replacement]`, HEC_TOKEN)
  await Promise.all([page.waitForNavigation(), page.click(`${rotate(hecId)} button`)])
  expect(await sendTest(page, hecId)).toContain("delivered, HTTP 200")

  // A new Slack URL (rotated on the channel's own page): the test goes there, and the page still shows the origin only.
  const slackId = ids.slack ?? ""
  await page.goto(`${consoleUrl}/settings/alerts/channels/${slackId}`)
  expect(await page.textContent(".channel-kind")).toBe("Slack")
  await page.fill("input[name=replacement]", `${receiver.url}/services/T0CONSOLE/B0CONSOLE/rotatedSecretPath`)
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Replace URL')")])
  expect(await page.textContent(".notice-ok")).toContain("URL replaced")
  const before = receiver.requests.length
  expect(await sendTest(page, slackId)).toContain("delivered")
  expect(receiver.requests.slice(before).map((r) => r.path)).toEqual([
    "/services/T0CONSOLE/B0CONSOLE/rotatedSecretPath",
  ])
  expect(await page.content()).not.toContain("rotatedSecretPath")

  // Disable and enable a Teams channel; redeliver the syslog test through the dispatcher: rsyslog gets it again.
  const teamsId = ids.teams ?? ""
  await page.goto(`${consoleUrl}/settings/alerts`)
  await Promise.all([page.waitForNavigation(), page.click(`#channel-${teamsId} button:has-text('Disable')`)])
  expect(await page.textContent(`#channel-${teamsId}`)).toContain("disabled")
  await Promise.all([page.waitForNavigation(), page.click(`#channel-${teamsId} button:has-text('Enable')`)])
  expect(await page.textContent(`#channel-${teamsId}`)).toContain("enabled")
  await page.goto(`${consoleUrl}/settings/alerts/channels/${ids.syslog}`)
  const delivery = await newestDelivery(page)
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Redeliver')")])
  expect(await page.textContent(".notice-ok")).toContain("queued again")
  const again = await rsyslog.waitFor(2, 15_000)
  expect(again.map((m) => m["$!"]?.["rfc5424-sd"]?.[SYSLOG_SD_ID]?.messageId)).toEqual([delivery, delivery])
  expect(await seriousAccessibilityViolations(page)).toEqual([])
}, 90_000)

test("the Add channel form is refused without the session's CSRF token; an analyst's is 403", async () => {
  const count = await channelCount()
  const fields = { kind: "slack", url: `${receiver.url}/services/T/B/forged`, format: "native", minSeverity: "low" }
  await admin.page.goto(`${consoleUrl}/settings/alerts`)
  expect(await postFromPage(admin.page, "/settings/alerts/channels", fields)).toBe(403)
  expect(await postFromPage(admin.page, "/settings/alerts/channels", { ...fields, csrf: "not-the-token" })).toBe(403)
  await analyst.page.goto(`${consoleUrl}/settings/alerts`)
  const csrf = await csrfOf(analyst.page)
  expect(csrf).not.toBe("")
  expect(await postFromPage(analyst.page, "/settings/alerts/channels", { ...fields, csrf })).toBe(403)
  expect(
    await postFromPage(analyst.page, `/settings/alerts/channels/${ids.hec}/rotate`, { csrf, replacement: "x" }),
  ).toBe(403)
  expect(await channelCount()).toBe(count)
  // The control: the same POST with the admin's token is taken (a redirect, which a manual fetch sees as status 0).
  const adminCsrf = await csrfOf(admin.page)
  expect(await postFromPage(admin.page, "/settings/alerts/channels", { ...fields, csrf: adminCsrf })).toBe(0)
  expect(await channelCount()).toBe(count + 1)
}, 30_000)

test("hostile or refused URLs, and formats a kind cannot take, come back as the error notice; nothing is added", async () => {
  const { page, watch } = admin
  const count = await channelCount()
  const refusals: ReadonlyArray<readonly [Parameters<typeof addChannel>[1], string]> = [
    [{ kind: "webhook", url: "javascript:alert(document.cookie)" }, "refused"],
    [{ kind: "slack", url: "https://169.254.169.254/latest/meta-data/" }, "refused"],
    [{ kind: "teams", url: `https://user:pass@127.0.0.1:${receiver.url.split(":")[2]}/x` }, "refused"],
    [{ kind: "slack", url: "http://127.0.0.1/services/T/B/plain" }, "refused"],
    [{ kind: "syslog", url: "syslog+tls://10.0.0.1:6514" }, "refused"],
    [{ kind: "syslog", url: `syslog+tls://127.0.0.1:${rsyslog.port}/"><img src=x onerror=alert(1)>` }, "refused"],
    [{ kind: "splunk_hec", url: hec.url }, "token"],
    [{ kind: "slack", url: `${receiver.url}/services/T/B/ocsf`, format: "ocsf" }, "ocsf"],
    [{ kind: "syslog", url: `syslog+tls://127.0.0.1:${rsyslog.port}`, format: "ocsf", sensorHealth: true }, "OCSF"],
    [{ kind: "slack", url: `${receiver.url}/services/T/B/token`, token: HEC_TOKEN }, "token"],
  ]
  for (const [fields, says] of refusals) {
    await addChannel(page, fields)
    expect(new URL(page.url()).pathname).toBe("/settings/alerts")
    const notice = (await page.textContent(".notice-error")) ?? `no error notice for ${fields.url}`
    expect(notice).toContain(says)
    // The notice names the form's fields, not the CLI's flags.
    expect(notice).not.toContain("--")
  }
  expect(await page.$$(".notice-error img, .notice-error script, .notice-error a")).toHaveLength(0)
  expect(await channelCount()).toBe(count)
  expect(watch.errors).toEqual([])
}, 90_000)

test("the settle window: the form takes it for Slack and Teams, each channel's form changes it, and a webhook's or an out-of-range one is refused by its name", async () => {
  const { page, watch } = admin
  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.textContent("label[for=channel-settle]")).toContain("Slack, Teams and email")
  expect(await page.textContent("#channel-settle-hint")).toContain("Empty: 30 s; 0: off; at most 3600.")
  const settleOf = async (id: string) => ((await page.textContent(`#channel-${id} .channel-settle`)) ?? "").trim()

  // Left empty, the kind's default; given, the value.
  await addChannel(page, { kind: "slack", url: `${receiver.url}/services/T/B/settleByDefault` })
  const slack = await addedId(page)
  expect(await settleOf(slack)).toStartWith("30 s")
  await addChannel(page, { kind: "teams", url: `${receiver.url}/workflows/settleFive`, settle: "5" })
  const teams = await addedId(page)
  expect(await settleOf(teams)).toStartWith("5 s")
  expect(await page.getAttribute(`#settle-${teams}`, "value")).toBe("5")
  // Machine kinds have none, and nothing to change it with.
  expect(await settleOf(ids.syslog ?? "")).toBe("none: every transition")
  expect(await page.$(`#channel-${ids.syslog} form[action$='/settle']`)).toBeNull()

  // The channel's own form: 0 turns it off.
  await page.fill(`#settle-${teams}`, "0")
  await Promise.all([page.waitForNavigation(), page.click(`#channel-${teams} form[action$='/settle'] button`)])
  expect(await page.textContent(".notice-ok")).toContain("Settle window off: every change is sent at once.")
  expect(await settleOf(teams)).toStartWith("off")
  const audit = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ action: string; detail: string }>`
        select action, detail from audit_log where org_id = ${orgId} and target = ${teams} order by at, id`,
    ),
  )
  expect(audit.map((a) => [a.action, a.detail])).toEqual([
    ["webhook.create", expect.stringContaining("settle 5 s")],
    ["webhook.settle", "settle off (was 5 s)"],
  ])

  // Refused with the field's name, never the CLI's flag: a window on a webhook, and values the browser's own check
  // would stop (switched off here, as a hand-made request would skip it).
  const count = await channelCount()
  await addChannel(page, { kind: "webhook", url: `${receiver.url}/settle-hook`, settle: "30" })
  const notice = async () => (await page.textContent(".notice-error")) ?? ""
  expect(await notice()).toContain("the settle window is for slack, teams and email channels")
  expect(await notice()).not.toContain("--")
  const submitUnchecked = async (form: string, value: string) => {
    await page.$eval(form, (f) => {
      ;(f as unknown as { noValidate: boolean }).noValidate = true
    })
    await page.fill(`${form} input[name=settle]`, value)
    await Promise.all([page.waitForNavigation(), page.click(`${form} button[type=submit]`)])
    expect(new URL(page.url()).pathname).toBe("/settings/alerts")
  }
  const range = "the settle window must be a whole number of seconds from 0 to 3600"
  const slackForm = `#channel-${slack} form[action$='/settle']`
  await submitUnchecked(slackForm, "3601")
  expect(await notice()).toContain(range)
  await submitUnchecked(slackForm, "")
  expect(await notice()).toContain("the settle window is required")
  await openAddForm(page)
  await page.selectOption("#channel-kind", "slack")
  await page.fill("#channel-url", `${receiver.url}/services/T/B/settleBad`)
  await submitUnchecked("form[action='/settings/alerts/channels']", "-5")
  expect(await notice()).toContain(range)
  expect(await channelCount()).toBe(count)
  expect(await settleOf(slack)).toStartWith("30 s")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  expect(watch.errors).toEqual([])
}, 60_000)

test("an analyst sees every channel's kind and format read-only, a chat channel's origin only; the page passes axe", async () => {
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/settings/alerts`)
  expect(await page.$("form[action='/settings/alerts/channels']")).toBeNull()
  expect(await page.$$("form[action^='/settings/alerts/channels/']")).toHaveLength(0)
  expect(await page.textContent(`#channel-${ids.teams} .channel-kind`)).toBe("Microsoft Teams")
  expect(await page.textContent(`#channel-${ids.hec} .channel-format`)).toBe("OCSF Detection Finding")
  expect(await page.textContent(`#channel-${ids.teams}`)).toContain(`${receiver.url}/…`)
  // The HEC collector URL: its origin only, as for a webhook.
  expect(await page.textContent(`#channel-${ids.hec}`)).not.toContain("/services/collector")
  expect(await seriousAccessibilityViolations(page)).toEqual([])
  for (const path of [
    "/settings/alerts",
    `/settings/alerts/channels/${ids.slack}`,
    `/settings/alerts/channels/${ids.teams}`,
  ]) {
    await page.goto(`${consoleUrl}${path}`)
    const html = await page.content()
    for (const secret of ["slackSecretPathToken", "rotatedSecretPath", "teamsSecretWorkflow", "teamsSecretSignature"]) {
      expect(html).not.toContain(secret)
    }
    expect(html).not.toContain(HEC_TOKEN)
  }
  expect(await page.$$("form[action*='/redeliver'], form[action$='/test']")).toHaveLength(0)
  expect(watch.errors).toEqual([])
}, 30_000)
