import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import {
  type Browser,
  type BrowserContext,
  launchBrowser,
  type Page,
  type PageWatch,
  screenshot,
  seriousAccessibilityViolations,
  watchedContext,
} from "../support/browser.ts"
import { adminJson } from "../support/cli.ts"
import { freePort, setPassword } from "../support/console.ts"
import { testDatabase } from "../support/db.ts"
import { createKey, createOrg, createSensor, createUser } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * The web console in a real Chromium (D25–D31): one server, one browser, data seeded once for the whole file.
 */

const PASSWORD = "correct horse battery staple"
const ANALYST_PASSWORD = "analyst passphrase 2026"
const shots = mkdtempSync(join(tmpdir(), "console-shots-"))

let server: RunningServer
let browser: Browser
let receiver: Receiver
let admin: { context: BrowserContext; watch: PageWatch; page: Page }
let consoleUrl: string
let orgA: string
let otherOrgIncident: string
let apiKey: string
let sensorToken: string
const adminEmail = "soc.lead@acme.example"
const analystEmail = "analyst@acme.example"
/** incident id → what the attacker sent that must show as text */
const payloadIncidents: Array<string> = []

/** Attacker payloads (D29): markup, handlers, URLs, SVG, CSS, bidi controls, a very long value. */
const PAYLOADS = [
  `<script>window.__xss = "script"</script>`,
  `"><img src=x onerror="window.__xss='img'">`,
  `javascript:window.__xss='href'`,
  `<svg onload="window.__xss='svg'"><script>window.__xss='svg2'</script></svg>`,
  `<style>body{display:none}</style><div style="background:url(javascript:alert(1))">css</div>`,
  `admin\u202Etxt.exe\u2066 bidi`,
  `<a href="javascript:window.__xss='a'">click</a>`,
  `${"A".repeat(5000)}<b>long</b>`,
]

const signIn = async (page: Page, email: string, password: string) => {
  await page.fill("#email", email)
  await page.fill("#password", password)
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")])
}

const expectAccessible = async (page: Page) => {
  expect(await seriousAccessibilityViolations(page)).toEqual([])
}

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  const caFile = join(shots, "ca.pem")
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({
      CONSOLE_PORT: String(port),
      // D25: every incident's url opens its console page.
      APP_URL: consoleUrl,
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      WEBHOOK_CA_FILE: caFile,
    }),
  })
  // The fixtures, made by the admin services as the operator (what `org create`, `sensor create` without a
  // profile, `key create` and `user create` run).
  const setup = testDatabase(server.env)
  orgA = (await createOrg(setup, `Acme SOC ${crypto.randomUUID().slice(0, 8)}`)).id
  const orgB = (await createOrg(setup, `Other Corp ${crypto.randomUUID().slice(0, 8)}`)).id
  const sensorA = await createSensor(setup, orgA, "dmz-web-01", "generic")
  const sensorB = await createSensor(setup, orgB, "b-sensor", "generic")
  sensorToken = sensorA.token
  apiKey = (await createKey(setup, orgA, "incidents:read")).key

  // Native: every payload in the username, a command and a path, each from its own address (its own incident).
  for (const [i, payload] of PAYLOADS.entries()) {
    const res = await ingest(server.ingestUrl, "events", sensorA.token, [
      nativeEvent({ sourceIp: `203.0.113.${10 + i}`, attackerInput: { username: payload, password: "x" } }),
      nativeEvent({
        sourceIp: `203.0.113.${10 + i}`,
        type: "http.request",
        severity: "high",
        attackerInput: { path: `/${payload}`, userAgent: payload, command: payload },
      }),
    ])
    expect(res.status).toBe(200)
    payloadIncidents.push(res.body.results[0].incidentId)
  }
  // OpenCanary: an HTTP login with payloads in the user agent and path.
  const ocTime = (d: Date) => d.toISOString().replace("T", " ").replace("Z", "000")
  const oc = await ingest(server.ingestUrl, "opencanary", sensorA.token, [
    {
      dst_host: "10.0.0.5",
      dst_port: 80,
      local_time: ocTime(new Date()),
      logdata: { HOSTNAME: "intranet", PATH: `/${PAYLOADS[1]}`, SKIN: "nasLogin", USERAGENT: PAYLOADS[0] },
      logtype: 3000,
      node_id: "canary-01",
      src_host: "198.51.100.77",
      src_port: 40004,
      utc_time: ocTime(new Date()),
    },
  ])
  expect(oc.status).toBe(200)
  payloadIncidents.push(oc.body.results[0].incidentId)
  // Cowrie: a login and a command with payloads.
  const t = new Date().toISOString()
  const base = { src_ip: "192.0.2.66", session: "c0ffee00", sensor: "cowrie-01", timestamp: t }
  const cowrie = await ingest(server.ingestUrl, "cowrie", sensorA.token, [
    {
      ...base,
      eventid: "cowrie.session.connect",
      src_port: 50123,
      dst_ip: "10.0.0.6",
      dst_port: 2222,
      protocol: "ssh",
    },
    { ...base, eventid: "cowrie.login.success", username: PAYLOADS[3], password: "root" },
    { ...base, eventid: "cowrie.command.input", input: `echo '${PAYLOADS[6]}'; ${PAYLOADS[4]}` },
  ])
  expect(cowrie.status).toBe(200)
  payloadIncidents.push(cowrie.body.results[1].incidentId)
  const other = await ingest(server.ingestUrl, "events", sensorB.token, [nativeEvent({ sourceIp: "192.0.2.200" })])
  otherOrgIncident = other.body.results[0].incidentId

  // Users through the admin service (`user create`), passwords through their one-time links.
  const lead = await createUser(setup, orgA, adminEmail, "admin")
  const analyst = await createUser(setup, orgA, analystEmail, "analyst")
  await setup.close()
  await setPassword(consoleUrl, lead.link, PASSWORD)
  await setPassword(consoleUrl, analyst.link, ANALYST_PASSWORD)

  browser = await launchBrowser()
  const watched = await watchedContext(browser)
  admin = { ...watched, page: await watched.context.newPage() }
}, 120_000)

afterAll(async () => {
  await browser?.close()
  receiver?.stop()
  await server?.stop()
})

test("an incident's url from the API opens its page after sign-in, then straight back to it", async () => {
  const list = await fetch(`${server.url}/v1/incidents?limit=1`, { headers: { authorization: `Bearer ${apiKey}` } })
  const incident = ((await list.json()) as { data: Array<{ id: string; url: string; title: string }> }).data[0]
  if (incident === undefined) throw new Error("no incident listed")
  expect(incident.url).toBe(`${consoleUrl}/incidents/${incident.id}`)
  const { page } = admin
  await page.goto(incident.url)
  expect(new URL(page.url()).pathname).toBe("/sign-in")
  await expectAccessible(page)
  await screenshot(page, "sign-in", shots)
  await signIn(page, adminEmail, PASSWORD)
  expect(page.url()).toBe(incident.url)
  expect(await page.textContent("h1")).toContain(incident.title)
  // D25: the console never accepts an API key, the API never a console cookie.
  const withKey = await fetch(incident.url, { headers: { authorization: `Bearer ${apiKey}` }, redirect: "manual" })
  expect(withKey.status).toBe(303)
  const cookies = await admin.context.cookies()
  const session = cookies.find((c) => c.name === "__Host-session")
  const viaCookie = await fetch(`${server.url}/v1/incidents`, {
    headers: { cookie: `__Host-session=${session?.value}` },
  })
  expect(viaCookie.status).toBe(401)
})

test("the session cookie is __Host-, HttpOnly, Secure, SameSite=Lax, Path=/; every response has the console's security headers", async () => {
  const session = (await admin.context.cookies()).find((c) => c.name === "__Host-session")
  expect(session).toBeDefined()
  expect(session?.httpOnly).toBe(true)
  expect(session?.secure).toBe(true)
  expect(session?.sameSite).toBe("Lax")
  expect(session?.path).toBe("/")
  expect(session?.value.length).toBeGreaterThanOrEqual(43)
  for (const path of ["/", "/sign-in", "/no-such-page"]) {
    const response = await fetch(`${consoleUrl}${path}`, { redirect: "manual" })
    expect(response.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    expect(response.headers.get("x-content-type-options")).toBe("nosniff")
    expect(response.headers.get("referrer-policy")).toBe("same-origin")
    expect(response.headers.get("cache-control")).toBe("no-store")
  }
})

test("attacker payloads from the native, OpenCanary and Cowrie routes render as inert text, no script, no CSP violation", async () => {
  const { page, watch } = admin
  for (const id of payloadIncidents) {
    await page.goto(`${consoleUrl}/incidents/${id}`)
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined()
    // Only the console's own script element; no attacker element, handler or javascript: link in the DOM.
    expect(await page.$$eval("script", (s) => s.map((e) => e.getAttribute("src")))).toHaveLength(1)
    expect(await page.$$("main img, main svg, main style, main iframe, [onerror], [onload]")).toHaveLength(0)
    expect(await page.$$eval("a", (as) => as.filter((a) => a.href.startsWith("javascript:")).length)).toBe(0)
    expect(await page.isVisible("main")).toBe(true)
  }
  // The texts are there, as text, marked as attacker-supplied.
  await page.goto(`${consoleUrl}/incidents/${payloadIncidents[0]}`)
  expect(await page.$$eval("code.atk", (cs) => cs.map((c) => c.textContent).join("\n"))).toContain(
    `<script>window.__xss = "script"</script>`,
  )
  await page.goto(`${consoleUrl}/incidents/${payloadIncidents[7]}`)
  // A very long value is cut, the rest behind a <details>.
  expect(await page.$$("details.long")).not.toHaveLength(0)
  await page.goto(`${consoleUrl}/events`)
  expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined()
  await page.goto(`${consoleUrl}/incidents`)
  expect(await page.evaluate(() => (globalThis as unknown as { __xss?: string }).__xss)).toBeUndefined()
  expect(watch.violations).toEqual([])
  expect(watch.errors).toEqual([])
})

test("every page renders, with no serious or critical accessibility violation", async () => {
  const { page } = admin
  for (const path of [
    "/",
    "/incidents",
    "/incidents?status=open&severity=high",
    `/incidents/${payloadIncidents[8]}`,
    "/events",
    "/settings/api",
    "/settings/alerts",
    "/settings/users",
    "/settings/audit",
    `/incidents/${otherOrgIncident}`,
  ]) {
    await page.goto(`${consoleUrl}${path}`)
    await expectAccessible(page)
  }
  await page.goto(`${consoleUrl}/incidents`)
  await screenshot(page, "incidents", shots)
  // A phone's width: still usable, nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto(`${consoleUrl}/incidents`)
  const overflow = await page.evaluate(
    () =>
      (globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number }).document
        .documentElement.scrollWidth - (globalThis as unknown as { innerWidth: number }).innerWidth,
  )
  expect(overflow).toBeLessThanOrEqual(0)
  await screenshot(page, "incidents-phone", shots)
  await page.setViewportSize({ width: 1280, height: 900 })
})

test("an id of another organization, or an unknown one, gets the same 404 page", async () => {
  const { page } = admin
  const other = await page.goto(`${consoleUrl}/incidents/${otherOrgIncident}`)
  expect(other?.status()).toBe(404)
  const otherText = await page.textContent("main")
  const unknown = await page.goto(`${consoleUrl}/incidents/inc_01ARZ3NDEKTSV4RRFFQ69G5FAV`)
  expect(unknown?.status()).toBe(404)
  expect(await page.textContent("main")).toBe(otherText)
  expect((await page.goto(`${consoleUrl}/incidents/not-an-id`))?.status()).toBe(404)
})

test("a key created in the console is shown once, works against the API, and after revoke gets 401", async () => {
  const { page } = admin
  await page.goto(`${consoleUrl}/settings/api`)
  await page.fill("#key-name", "SOAR <b>integration</b>")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/api/keys'] button[type=submit]")])
  const key = (await page.textContent("#secret-value"))?.trim() ?? ""
  expect(key).toMatch(/^dsk_/)
  expect((await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200)
  // Shown once: a reload of the same address no longer has it.
  await page.reload()
  expect(await page.$("#secret-value")).toBeNull()
  expect(await page.content()).not.toContain(key)
  // Revoke after a confirmation.
  const keyId = /^dsk_(key_[0-9A-Z]{26})_/.exec(key)?.[1] ?? "no key id"
  await page.click(`a[href='/settings/api/keys/${keyId}/revoke']`)
  await expectAccessible(page)
  await Promise.all([page.waitForNavigation(), page.click("button.danger")])
  expect(await page.textContent(".notice")).toContain("revoked")
  expect((await fetch(`${server.url}/v1/incidents`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401)
})

test("a channel added in the console passes Send test against a local HTTPS receiver, and the delivery is logged", async () => {
  const { page } = admin
  await page.goto(`${consoleUrl}/settings/alerts`)
  // A refused URL says why (D18).
  await page.fill("#channel-url", "http://example.com/hook")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  expect(await page.textContent(".notice-error")).toContain("webhook URL refused")
  await page.fill("#channel-url", `${receiver.url}/hooks/console`)
  await page.selectOption("#channel-min", "high")
  await Promise.all([page.waitForNavigation(), page.click("form[action='/settings/alerts/channels'] button")])
  expect((await page.textContent("#secret-value"))?.trim()).toMatch(/^whsec_/)
  const before = receiver.requests.length
  await Promise.all([page.waitForNavigation(), page.click("text=Send test")])
  expect(await page.textContent(".notice-ok")).toContain("delivered, HTTP 202")
  expect(receiver.requests.length).toBe(before + 1)
  expect(JSON.parse(receiver.requests[before]?.body ?? "{}").type).toBe("webhook.test")
  const log = await page.textContent("table")
  expect(log).toContain("webhook.test")
  expect(log).toContain("succeeded")
  await expectAccessible(page)
  // Redeliver (D17), rotate with a grace period (D16), disable and enable.
  await page.goto(`${consoleUrl}/settings/alerts`)
  await Promise.all([page.waitForNavigation(), page.click("text=Delivery log")])
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Redeliver')")])
  expect(await page.textContent(".notice-ok")).toContain("queued again")
  await page.selectOption("select[name=grace]", "1h")
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Rotate secret')")])
  expect((await page.textContent("#secret-value"))?.trim()).toMatch(/^whsec_/)
  expect(await page.textContent(".notice-ok")).toContain("also signs until")
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Disable')")])
  expect(await page.textContent("dl.facts")).toContain("disabled")
  await Promise.all([page.waitForNavigation(), page.click("button:has-text('Enable')")])
  expect(await page.textContent("dl.facts")).toContain("enabled")
  // D31: the changes are in the audit log, with the actor.
  await page.goto(`${consoleUrl}/settings/audit`)
  const audit = await page.textContent("table")
  for (const action of [
    "webhook.create",
    "webhook.test",
    "webhook.redeliver",
    "webhook.rotate",
    "webhook.disable",
    "webhook.enable",
    "key.create",
    "key.revoke",
    "signin",
  ]) {
    expect(audit).toContain(action)
  }
  expect(audit).toContain(adminEmail)
  expect(audit).not.toContain("whsec_")
  expect(audit).not.toContain("dsk_")
})

test("the incident list's live check says when an incident saw new activity", async () => {
  const { page } = admin
  await page.goto(`${consoleUrl}/incidents`)
  const since = await page.getAttribute("[data-live-since]", "data-live-since")
  const changed = () =>
    page.evaluate(async (at) => {
      const response = await fetch(`/live/incidents?since=${encodeURIComponent(at ?? "")}`)
      return ((await response.json()) as { changed: boolean }).changed
    }, since)
  expect(await changed()).toBe(false)
  await Bun.sleep(5)
  const res = await ingest(server.ingestUrl, "events", sensorToken, [nativeEvent({ sourceIp: "203.0.113.99" })])
  expect(res.status).toBe(200)
  expect(await changed()).toBe(true)
})

test("a cross-site form POST is refused with 403 before anything runs", async () => {
  const { page } = admin
  const target = payloadIncidents[0] as string
  await page.goto(`${consoleUrl}/incidents/${target}`)
  const csrf = await page.getAttribute("form[action$='/close'] input[name=csrf]", "value")
  // Another origin (another port of the same host): a page that posts the form, with a valid token even.
  const evil = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () =>
      new Response(
        `<form id=f method=post action="${consoleUrl}/incidents/${target}/close"><input name=csrf value="${csrf}"></form><script>document.getElementById("f").submit()</script>`,
        { headers: { "content-type": "text/html" } },
      ),
  })
  try {
    const response = await page.goto(`http://127.0.0.1:${evil.port}/`)
    await page.waitForURL(`${consoleUrl}/**`)
    await page.waitForLoadState()
    expect(page.url()).toContain(`/incidents/${target}/close`)
    expect(response).not.toBeNull()
    expect(await page.textContent("main")).toContain("another site")
  } finally {
    evil.stop(true)
  }
  await page.goto(`${consoleUrl}/incidents/${target}`)
  expect(await page.textContent(".status")).toBe("open")
  // The same form from the console itself works (with its required reason), and answers with a 303 to the incident.
  await page.selectOption("#close-reason", "resolved")
  await Promise.all([page.waitForNavigation(), page.click("form[action$='/close'] button")])
  expect(new URL(page.url()).pathname).toBe(`/incidents/${target}`)
  expect(await page.textContent(".status")).toBe("closed")
})

test("an analyst reads Settings but cannot change them (403), and sees no other organization's ids (404)", async () => {
  const { context } = await watchedContext(browser)
  try {
    const page = await context.newPage()
    await page.goto(`${consoleUrl}/settings/api`)
    await signIn(page, analystEmail, ANALYST_PASSWORD)
    expect(new URL(page.url()).pathname).toBe("/settings/api")
    expect(await page.$("form[action='/settings/api/keys']")).toBeNull()
    const csrf = await page.getAttribute("form[action='/sign-out'] input[name=csrf]", "value")
    const status = await page.evaluate(async (token) => {
      const body = new URLSearchParams({ csrf: token ?? "", name: "sneaky", scope: "incidents:read" })
      const response = await fetch("/settings/api/keys", { method: "POST", body, redirect: "manual" })
      return response.status
    }, csrf)
    expect(status).toBe(403)
    expect((await page.goto(`${consoleUrl}/settings/audit`))?.status()).toBe(403)
    expect((await page.goto(`${consoleUrl}/incidents/${otherOrgIncident}`))?.status()).toBe(404)
  } finally {
    await context.close()
  }
})

/** Signs in with a plain HTTP client; the session cookie, or the status when refused. */
const httpSignIn = async (email: string, password: string) => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const response = await fetch(`${consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf, email, password, next: "/" }),
  })
  const session = response.headers.getSetCookie().find((c) => c.startsWith("__Host-session="))
  return { status: response.status, cookie: session?.split(";")[0] }
}

test("admin user list, disable (sessions end) and reset (a new one-time link; a used link is refused)", async () => {
  const users = (await adminJson(server.env, ["user", "list", "--org", orgA])) as Array<{
    id: string
    email: string
    role: string
    status: string
  }>
  const analyst = users.find((u) => u.email === analystEmail)
  expect(analyst).toMatchObject({ role: "analyst", status: "active" })
  expect(JSON.stringify(users)).not.toContain("argon2")
  const signedIn = await httpSignIn(analystEmail, ANALYST_PASSWORD)
  expect(signedIn.status).toBe(303)
  const page = () =>
    fetch(`${consoleUrl}/incidents`, { headers: { cookie: signedIn.cookie ?? "" }, redirect: "manual" })
  expect((await page()).status).toBe(200)
  await adminJson(server.env, ["user", "disable", analyst?.id ?? ""])
  expect((await page()).status).toBe(303)
  expect((await httpSignIn(analystEmail, ANALYST_PASSWORD)).status).toBe(401)
  const reset = await adminJson(server.env, ["user", "reset", analyst?.id ?? ""])
  expect(reset.link).toStartWith(`${consoleUrl}/set-password/`)
  await setPassword(consoleUrl, reset.link, ANALYST_PASSWORD)
  expect((await httpSignIn(analystEmail, ANALYST_PASSWORD)).status).toBe(303)
  // The link is spent: it now shows the expired-link page.
  const again = await fetch(`${consoleUrl}${new URL(reset.link).pathname}`)
  expect(again.status).toBe(410)
  expect(await again.text()).toContain("expired or was already used")
})

test("sign-out ends the session; the old cookie no longer opens a page", async () => {
  const { page, context } = admin
  const before = (await context.cookies()).find((c) => c.name === "__Host-session")?.value
  await page.goto(`${consoleUrl}/`)
  await Promise.all([page.waitForNavigation(), page.click("text=Sign out")])
  expect(new URL(page.url()).pathname).toBe("/sign-in")
  const replay = await fetch(`${consoleUrl}/`, { headers: { cookie: `__Host-session=${before}` }, redirect: "manual" })
  expect(replay.status).toBe(303)
  expect(replay.headers.get("location")).toStartWith("/sign-in")
})

test("a session ends after 12 h idle and after 7 days in all", async () => {
  const db = testDatabase(server.env)
  const age = (column: "last_seen_at" | "expires_at", interval: string) =>
    db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe(
          `update console_sessions set ${column} = now() - interval '${interval}'
           where user_id = (select id from console_users where email = $1)`,
          [adminEmail],
        ),
      ),
    )
  try {
    const open = (cookie: string | undefined) =>
      fetch(`${consoleUrl}/`, { headers: { cookie: cookie ?? "" }, redirect: "manual" })
    const idle = await httpSignIn(adminEmail, PASSWORD)
    expect((await open(idle.cookie)).status).toBe(200)
    await age("last_seen_at", "12 hours 1 minute")
    const afterIdle = await open(idle.cookie)
    expect(afterIdle.status).toBe(303)
    expect(afterIdle.headers.get("location")).toContain("expired=1")
    const old = await httpSignIn(adminEmail, PASSWORD)
    expect((await open(old.cookie)).status).toBe(200)
    // Seen a minute ago (not idle), but past its absolute end.
    await age("last_seen_at", "1 minute")
    await age("expires_at", "1 second")
    expect((await open(old.cookie)).status).toBe(303)
    const page = await fetch(`${consoleUrl}/sign-in?next=%2F&expired=1`)
    expect(await page.text()).toContain("Your session has ended")
  } finally {
    await db.close()
  }
})

test("more than 5 failed sign-ins for one email get 429 with Retry-After", async () => {
  const attempt = async () => {
    const form = await fetch(`${consoleUrl}/sign-in`)
    const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
    return fetch(`${consoleUrl}/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ csrf, email: analystEmail, password: "wrong password guess", next: "/" }),
    })
  }
  for (let i = 0; i < 5; i++) expect((await attempt()).status).toBe(401)
  const throttled = await attempt()
  expect(throttled.status).toBe(429)
  expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThan(0)
  // Unknown email and wrong password: the same answer.
  const unknown = await fetch(`${consoleUrl}/sign-in`)
  expect(unknown.status).toBe(200)
})
