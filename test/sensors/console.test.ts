import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Browser, launchBrowser, screenshot, watchedContext } from "../support/browser.ts"
import { admin, adminJson } from "../support/cli.ts"
import { freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Settings → Sensors in the console (D43, D28–D31), over real HTTP and in a real Chromium: create (the token and
 * its set-up snippets shown once), rename, rotate with grace, revoke; analysts read only; everything audited.
 */

const INGEST_URL = "https://ingest.decoy.example:8443"
const PASSWORD = "sensor admin passphrase 2026"
const shots = mkdtempSync(join(tmpdir(), "sensor-shots-"))
// Emails are unique across organizations: a run on a database kept from an earlier run needs its own.
const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `sensors.admin.${RUN}@acme.example`
const ANALYST_EMAIL = `sensors.analyst.${RUN}@acme.example`

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let otherSensor: string
let adminCookie: string
let analystCookie: string

const cookieOf = (response: Response, name: string) =>
  response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0] ?? "")
    .find((c) => c.startsWith(`${name}=`)) ?? ""

const csrfOf = (page: string) => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? ""

const createUser = async (email: string, role: string) => {
  const created = await adminJson(server.env, ["user", "create", "--org", orgId, "--email", email, "--role", role])
  const path = new URL(created.link).pathname
  const form = await fetch(`${consoleUrl}${path}`)
  const done = await fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie: cookieOf(form, "__Host-form"),
      "content-type": "application/x-www-form-urlencoded",
      origin: consoleUrl,
    },
    body: new URLSearchParams({ csrf: csrfOf(await form.text()), password: PASSWORD }),
  })
  expect(done.status).toBe(303)
  const signInForm = await fetch(`${consoleUrl}/sign-in`)
  const signedIn = await fetch(`${consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie: cookieOf(signInForm, "__Host-form"),
      "content-type": "application/x-www-form-urlencoded",
      origin: consoleUrl,
    },
    body: new URLSearchParams({ csrf: csrfOf(await signInForm.text()), email, password: PASSWORD, next: "/" }),
  })
  expect(signedIn.status).toBe(303)
  return cookieOf(signedIn, "__Host-session")
}

const get = async (cookie: string, path: string) => {
  const response = await fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

/** A console form POST as the browser sends it: same origin, the session's CSRF token from `page`. */
const post = async (cookie: string, path: string, fields: Record<string, string>, csrfFrom = "/settings/sensors") => {
  const csrf = csrfOf((await get(cookie, csrfFrom)).text)
  const response = await fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, ...fields }),
  })
  return { status: response.status, location: response.headers.get("location") ?? "", text: await response.text() }
}

const audit = (target: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ actor: string; action: string; detail: string | null }>`
        select actor, action, detail from audit_log where target = ${target} order by id`,
    ),
  )

const sensorIdOf = (page: string) => /Sensor (sen_[0-9A-Z]{26}) added/.exec(page)?.[1] ?? ""
const tokenOf = (page: string) => /(dst_sen_[0-9A-Z]{26}_[A-Za-z0-9_-]{43})/.exec(page)?.[1] ?? ""

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl, INGEST_URL: INGEST_URL }),
  })
  db = testDatabase(server.env)
  orgId = (
    await adminJson(server.env, ["org", "create", "--name", `Sensor console ${crypto.randomUUID().slice(0, 8)}`])
  ).id
  const other = (
    await adminJson(server.env, ["org", "create", "--name", `Other org ${crypto.randomUUID().slice(0, 8)}`])
  ).id
  otherSensor = (await adminJson(server.env, ["sensor", "create", "--org", other, "--name", "theirs"])).id
  adminCookie = await createUser(ADMIN_EMAIL, "admin")
  analystCookie = await createUser(ANALYST_EMAIL, "analyst")
})

afterAll(() => shutdown(server, db))

describe("Settings → Sensors", () => {
  test("an admin creates a sensor; its token and set-up snippets (INGEST_URL filled in) are shown once", async () => {
    const created = await post(adminCookie, "/settings/sensors", {
      name: "dmz-canary-01",
      profile: "opencanary",
      heartbeatInterval: "5m",
    })
    expect(created.status).toBe(303)
    expect(created.location).toMatch(/^\/settings\/sensors\?flash=/)
    const page = await get(adminCookie, created.location)
    expect(page.status).toBe(200)
    expect(page.headers.get("cache-control")).toContain("no-store")
    const token = tokenOf(page.text)
    const id = sensorIdOf(page.text)
    expect(token).toStartWith(`dst_${id}_`)
    // OpenCanary's handler first (the profile's own), then Cowrie, Vector, Fluent Bit and the heartbeat.
    const at = (s: string) => page.text.indexOf(s)
    expect(at("opencanary.logger.WebhookHandler")).toBeGreaterThan(0)
    expect(at("opencanary.logger.WebhookHandler")).toBeLessThan(at("[output_splunk]"))
    expect(page.text).toContain(`${INGEST_URL}/ingest/v1/opencanary`)
    expect(page.text).toContain(`&quot;Authorization&quot;: &quot;Bearer ${token}&quot;`)
    expect(page.text).toContain(`url = ${INGEST_URL}/services/collector/event`)
    expect(page.text).toContain(`token = ${token}`)
    expect(page.text).toContain("type = &quot;splunk_hec_logs&quot;")
    expect(page.text).toContain(`default_token = &quot;${token}&quot;`)
    expect(page.text).toMatch(/name\s+splunk/)
    expect(page.text).toMatch(/host\s+ingest\.decoy\.example/)
    expect(page.text).toMatch(/port\s+8443/)
    expect(page.text).toMatch(/tls\s+on/)
    expect(page.text).toContain(`${INGEST_URL}/ingest/v1/heartbeat`)

    // Once: the same address again shows the list without the token.
    const again = await get(adminCookie, created.location)
    expect(again.text).not.toContain(token)
    expect(again.text).toContain("dmz-canary-01")
    expect(again.text).toContain("every 5 min")

    // The token works on the ingest listener; the heartbeat makes it alive with a last contact.
    const beat = await fetch(`${server.ingestUrl}/ingest/v1/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    })
    expect(beat.status).toBe(204)
    let list = ""
    for (let i = 0; i < 50 && !list.includes(">alive<"); i++) {
      await Bun.sleep(100)
      list = (await get(adminCookie, "/settings/sensors")).text
    }
    expect(list).toContain(">alive<")
    expect(await audit(id)).toEqual([
      { actor: expect.stringMatching(/^usr_/), action: "sensor.create", detail: "dmz-canary-01 (opencanary)" },
    ])
  })

  test("rename, rotate with grace and revoke from the sensor's page; 303 after each; audited; revoked is 401", async () => {
    const created = await post(adminCookie, "/settings/sensors", { name: "cowrie-01", profile: "cowrie" })
    const page = await get(adminCookie, created.location)
    const id = sensorIdOf(page.text)
    const token = tokenOf(page.text)
    const base = `/settings/sensors/${id}`

    const renamed = await post(adminCookie, `${base}/rename`, { name: "cowrie-02" }, base)
    expect(renamed.status).toBe(303)
    expect((await get(adminCookie, renamed.location)).text).toContain("Renamed to cowrie-02.")

    const rotated = await post(adminCookie, `${base}/rotate`, { grace: "1h" }, base)
    expect(rotated.status).toBe(303)
    const shown = await get(adminCookie, rotated.location)
    const next = tokenOf(shown.text)
    expect(next).toStartWith(`dst_${id}_`)
    expect(next).not.toBe(token)
    expect(shown.text).toContain("the old one also works until")
    // Cowrie's own section first for a cowrie sensor.
    expect(shown.text.indexOf("[output_splunk]")).toBeLessThan(shown.text.indexOf("opencanary.logger.WebhookHandler"))
    expect((await ingest(server.ingestUrl, "events", token, nativeEvent())).status).toBe(200)
    expect((await ingest(server.ingestUrl, "events", next, nativeEvent())).status).toBe(200)

    // Revoke needs the confirmation box.
    const unconfirmed = await post(adminCookie, `${base}/revoke`, {}, base)
    expect(unconfirmed.status).toBe(303)
    expect((await ingest(server.ingestUrl, "events", next, nativeEvent())).status).toBe(200)
    const revoked = await post(adminCookie, `${base}/revoke`, { confirm: "yes" }, base)
    expect(revoked.status).toBe(303)
    expect((await ingest(server.ingestUrl, "events", next, nativeEvent())).status).toBe(401)
    expect((await ingest(server.ingestUrl, "events", token, nativeEvent())).status).toBe(401)
    expect((await get(adminCookie, "/settings/sensors")).text).toContain(">revoked<")

    const rows = await audit(id)
    expect(rows.map((r) => r.action)).toEqual(["sensor.create", "sensor.rename", "sensor.rotate", "sensor.revoke"])
    expect(JSON.stringify(rows)).not.toContain(token.slice(-43))
    expect(JSON.stringify(rows)).not.toContain(next.slice(-43))
  })

  test("an analyst reads the list without forms and cannot change; no CSRF or another org's id is refused", async () => {
    const sensor = await adminJson(server.env, ["sensor", "create", "--org", orgId, "--name", "read-only-01"])
    const list = await get(analystCookie, "/settings/sensors")
    expect(list.status).toBe(200)
    expect(list.text).toContain("read-only-01")
    expect(list.text).not.toContain('action="/settings/sensors"')
    const detail = await get(analystCookie, `/settings/sensors/${sensor.id}`)
    expect(detail.status).toBe(200)
    expect(detail.text).not.toContain("/rotate")
    const refused = await post(analystCookie, `/settings/sensors/${sensor.id}/revoke`, { confirm: "yes" })
    expect(refused.status).toBe(403)
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(200)

    const noCsrf = await fetch(`${consoleUrl}/settings/sensors`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: adminCookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
      body: new URLSearchParams({ name: "x", profile: "generic" }),
    })
    expect(noCsrf.status).toBe(403)
    const crossSite = await fetch(`${consoleUrl}/settings/sensors`, {
      method: "POST",
      redirect: "manual",
      headers: {
        cookie: adminCookie,
        "content-type": "application/x-www-form-urlencoded",
        origin: "https://evil.example",
      },
      body: new URLSearchParams({ name: "x", profile: "generic" }),
    })
    expect(crossSite.status).toBe(403)

    expect((await get(adminCookie, `/settings/sensors/${otherSensor}`)).status).toBe(404)
    expect((await post(adminCookie, `/settings/sensors/${otherSensor}/revoke`, { confirm: "yes" })).status).toBe(404)
    expect((await admin(server.env, ["sensor", "list", "--org", orgId])).stdout).not.toContain(otherSensor)

    const toaster = await post(adminCookie, "/settings/sensors", { name: "t", profile: "toaster" })
    expect(toaster.status).toBe(303)
    expect((await get(adminCookie, toaster.location)).text).toContain("the profile must be one of opencanary")
  })

  test("in Chromium, Add sensor shows the token once with copyable snippets; no CSP violation", async () => {
    let browser: Browser | undefined
    try {
      browser = await launchBrowser()
      const { context, watch } = await watchedContext(browser, { width: 1280, height: 1000 })
      const page = await context.newPage()
      await page.goto(`${consoleUrl}/settings/sensors`)
      await page.fill("#email", ADMIN_EMAIL)
      await page.fill("#password", PASSWORD)
      await Promise.all([page.waitForURL(/\/settings\/sensors/), page.click("button[type=submit]")])
      await page.fill("#sensor-name", "edge-canary-07")
      await page.selectOption("#sensor-profile", "opencanary")
      await page.selectOption("#sensor-heartbeat", "60s")
      await Promise.all([page.waitForURL(/flash=/), page.click("form[action='/settings/sensors'] button[type=submit]")])
      const snippet = (await page.textContent("#snippet-opencanary")) ?? ""
      const token = (await page.textContent("#secret-value"))?.trim() ?? ""
      expect(token).toMatch(/^dst_sen_/)
      expect(snippet).toContain(`"url": "${INGEST_URL}/ingest/v1/opencanary"`)
      expect(snippet).toContain(`Bearer ${token}`)
      expect(JSON.parse(`{${snippet}}`).Webhook.headers.Authorization).toBe(`Bearer ${token}`)
      expect(await page.textContent("#snippet-cowrie")).toContain(`token = ${token}`)
      // Long lines wrap on screen, so no snippet scrolls sideways; the text copied stays as written (one line each).
      const heartbeat = (await page.textContent("#snippet-heartbeat")) ?? ""
      expect(heartbeat.split("\n")[0]).toMatch(/^# crontab: .*curl .*\/ingest\/v1\/heartbeat/)
      const snippetIds = await page.locator("pre.snippet").evaluateAll((pres) => pres.map((p) => p.id))
      expect(snippetIds).toContain("snippet-heartbeat")
      for (const id of snippetIds) {
        const [scroll, client] = await page.locator(`#${id}`).evaluate((p) => [p.scrollWidth, p.clientWidth])
        expect(scroll).toBeLessThanOrEqual(client ?? 0)
      }
      await screenshot(page, "sensors", shots)
      await page.reload()
      expect(await page.content()).not.toContain(token)
      // The list with a silent sensor (its last contact moved back past three heartbeats), and a sensor's page.
      await db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`update sensors
            set last_seen_at = now() - interval '1 hour', created_at = now() - interval '2 hours'
            where org_id = ${orgId} and name = 'edge-canary-07'`,
        ),
      )
      await page.goto(`${consoleUrl}/settings/sensors`)
      expect(await page.content()).toContain("is silent")
      await screenshot(page, "sensors-list", shots)
      await page.locator("tr", { hasText: "edge-canary-07" }).locator("a").click()
      await page.waitForURL(/\/settings\/sensors\/sen_/)
      await screenshot(page, "sensor", shots)
      // The Revoke confirmation: its checkbox and its label on one line.
      const box = await page.locator("#revoke-confirm").boundingBox()
      const label = await page.locator("label[for=revoke-confirm]").boundingBox()
      expect(box && label && Math.abs(box.y + box.height / 2 - (label.y + label.height / 2))).toBeLessThan(6)
      expect(watch.violations).toEqual([])
      expect(watch.errors).toEqual([])
      await context.close()
    } finally {
      await browser?.close()
    }
  })
})
