import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type Browser,
  launchBrowser,
  type Page,
  screenshot,
  seriousAccessibilityViolations,
} from "../support/browser.ts"
import { consoleUser, signedIn } from "../support/console.ts"
import type { TestDatabase } from "../support/db.ts"
import { createOrg, createSensor, seedIncident } from "../support/fixtures.ts"
import type { TestOidcProvider } from "../support/oidcProvider.ts"
import type { RunningServer } from "../support/server.ts"
import { type SsoConsole, startSsoConsole } from "../support/singleSignOn.ts"

/**
 * Single sign-on in a real Chromium, against one server of its own and a real OpenID Connect provider (oidc-provider
 * on loopback behind TLS from a throwaway CA, trusted by the server through WEBHOOK_CA_FILE, its loopback address
 * allowed through WEBHOOK_ALLOW_PRIVATE): the sign-in page's single sign-on section, an administrator setting the
 * provider up in Settings → Sign-in, a person signing in through the provider's own pages and landing as the viewer
 * its claim makes them, and a forged answer landing on a page that says why. The browser trusts the provider's
 * certificate as a person's browser trusts a real provider's (the context ignores the throwaway CA's errors); the
 * console itself is plain HTTP on 127.0.0.1, which Chromium counts as a secure context for its `__Host-` cookies.
 *
 * The tests run in order: the provider the administrator saves is the one the later sign-ins go through.
 */

const PASSWORD = "a long enough passphrase 11"
const RUN = Date.now().toString(36)
const DOMAIN = `sso-browser-${RUN}.example`
const ADMIN_EMAIL = `admin@${DOMAIN}`
const INCIDENT_IP = "203.0.113.77"

let server: RunningServer
let db: TestDatabase
let op: TestOidcProvider
let browser: Browser
let consoleUrl: string
let orgId: string
let incidentId: string
let sso: SsoConsole | undefined
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

/** What the console's pages (not the provider's) reported: CSP violations and script errors. */
interface ConsoleWatch {
  readonly violations: Array<string>
  readonly errors: Array<string>
}

/**
 * A fresh browser context that accepts the provider's throwaway certificate (as the real provider's would be
 * accepted) and records what the console's pages report: CSP violations (Chromium logs them to the console) and
 * script errors. A dialog (an alert an injected script would raise) is an error too.
 */
const ssoPage = async (): Promise<{ page: Page; watch: ConsoleWatch }> => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ignoreHTTPSErrors: true })
  const page = await context.newPage()
  const watch: ConsoleWatch = { violations: [], errors: [] }
  const onConsole = () => page.url().startsWith(consoleUrl)
  page.on("console", (message) => {
    if (onConsole() && /Content Security Policy/i.test(message.text())) {
      watch.violations.push(`${page.url()}: ${message.text()}`)
    }
  })
  page.on("pageerror", (error) => {
    if (onConsole()) watch.errors.push(error.message)
  })
  page.on("dialog", (dialog) => {
    watch.errors.push(`dialog: ${dialog.message()}`)
    void dialog.dismiss()
  })
  return { page, watch }
}

/** The sign-in page's single sign-on form, sent with `email`. */
const continueWithProvider = async (page: Page, email: string) => {
  await page.getByLabel("Work email").fill(email)
  await page.getByRole("button", { name: "Continue with your organization's sign-in" }).click()
}

/**
 * The provider's own pages, as a person goes through them: its login form as `login` (any password), then its consent
 * page if it asks; done when the browser is back on the console.
 */
const throughProviderPages = async (page: Page, watch: ConsoleWatch, login: string) => {
  await page
    .waitForURL((url) => url.href.startsWith(op.issuer), { timeout: 15_000 })
    .catch(() => {
      throw new Error(
        `not sent to the provider: still on ${page.url()}; CSP: ${watch.violations.join(" | ") || "none"}`,
      )
    })
  await page.locator("input[name=login]").fill(login)
  await page.locator("input[name=password]").fill("any password the provider accepts")
  await page.getByRole("button", { name: "Sign-in" }).click()
  const consent = page.getByRole("button", { name: "Continue" })
  const backOnConsole = (url: URL) => url.href.startsWith(consoleUrl)
  await Promise.race([page.waitForURL(backOnConsole), consent.waitFor()])
  if (!page.url().startsWith(consoleUrl)) await Promise.all([page.waitForURL(backOnConsole), consent.click()])
  await page.waitForLoadState()
}

/**
 * Back on the console's incidents, signed in as a viewer: the session's cookie kept and the state cookie spent; no
 * Settings in the navigation (403 when typed in); the seeded incident reads with none of the controls that change it.
 */
const expectReadOnlyViewer = async (page: Page) => {
  expect(page.url()).toBe(`${consoleUrl}/incidents`)
  expect(await page.getByRole("heading", { level: 1 }).textContent()).toContain("Incidents")
  const cookies = (await page.context().cookies(consoleUrl)).map((c) => c.name)
  expect(cookies).toContain("__Host-session")
  expect(cookies).not.toContain("__Host-sso-state")
  expect(await page.locator(".who").textContent()).toContain("(viewer)")
  const nav = page.locator("nav[aria-label=Main]")
  expect(await nav.locator("a", { hasText: "Incidents" }).count()).toBe(1)
  expect(await nav.locator("a", { hasText: "Settings" }).count()).toBe(0)
  expect((await page.goto(`${consoleUrl}/settings/sign-in`))?.status()).toBe(403)
  await page.goto(`${consoleUrl}/incidents/${incidentId}`)
  expect(await page.getByRole("heading", { level: 1 }).textContent()).toContain(INCIDENT_IP)
  for (const selector of [
    "form[action$='/close']",
    "form[action$='/notes']",
    "form[action$='/acknowledge']",
    "form[action$='/assign']",
    "#close",
  ]) {
    expect([selector, await page.locator(selector).count()]).toEqual([selector, 0])
  }
  for (const name of [/close/i, /note/i, /acknowledge/i]) {
    expect([String(name), await page.getByRole("button", { name }).count()]).toEqual([String(name), 0])
  }
  expect(await page.locator("form[action='/sign-out']").count()).toBe(1)
}

beforeAll(async () => {
  sso = await startSsoConsole()
  ;({ op, server, db, consoleUrl } = sso)
  orgId = (await createOrg(db, `Single sign-on in a browser ${RUN}`)).id
  const sensor = await createSensor(db, orgId, "sso-web-01")
  const seeded = await seedIncident(db, {
    orgId,
    sensorId: sensor.id,
    sourceIp: INCIDENT_IP,
    events: [{ time: new Date(Date.now() - 5 * 60_000), type: "ssh.login_attempt", severity: "high" }],
  })
  incidentId = seeded.incident.id
  await consoleUser(server.env, consoleUrl, { orgId, email: ADMIN_EMAIL, role: "admin", password: PASSWORD })
  browser = await launchBrowser()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await sso?.stop()
  rmSync(shots, { recursive: true, force: true })
})

describe("single sign-on in a browser", () => {
  test("the sign-in page offers single sign-on accessibly, and says when no organization has the email's domain", async () => {
    const { page, watch } = await ssoPage()
    try {
      await page.goto(`${consoleUrl}/sign-in`)
      const section = page.getByRole("region", { name: "Single sign-on" })
      expect(await section.count()).toBe(1)
      expect(await section.getByLabel("Work email").getAttribute("type")).toBe("email")
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign in")
      expect(await seriousAccessibilityViolations(page)).toEqual([])
      await screenshot(page, "sign-in", shots)
      await continueWithProvider(page, "someone@no-provider.example")
      await page.waitForURL(`${consoleUrl}/sign-in/sso`)
      const notice = section.getByRole("alert")
      expect(await notice.textContent()).toContain("No organization signs in with single sign-on for that email domain")
      // Still the sign-in page, both forms usable, and as accessible with the notice.
      expect(await page.locator("#password").count()).toBe(1)
      expect(await seriousAccessibilityViolations(page)).toEqual([])
      expect(watch.violations).toEqual([])
      expect(watch.errors).toEqual([])
    } finally {
      await page.context().close()
    }
  }, 60_000)

  test("an administrator saves the provider in Settings → Sign-in: checked against it, its secret never on the page", async () => {
    const { page, watch } = await signedIn(browser, consoleUrl, ADMIN_EMAIL, PASSWORD)
    try {
      await page.goto(`${consoleUrl}/settings/sign-in`)
      expect(await page.getByRole("heading", { name: "Set up single sign-on" }).count()).toBe(1)
      await page.getByLabel("Issuer URL").fill(op.issuer)
      await page.getByLabel("Client ID").fill(op.clientId)
      await page.getByLabel("Client secret").fill(op.clientSecret)
      await page.getByLabel("Email domains").fill(DOMAIN)
      await page.getByLabel("Role claim").fill("roles")
      await page.getByLabel("Default role").selectOption("none")
      await page.getByLabel("Password sign-in").selectOption("on")
      await Promise.all([
        page.waitForURL(`${consoleUrl}/settings/sign-in`),
        page.getByRole("button", { name: "Save and check the provider" }).click(),
      ])
      expect(await page.getByRole("status").first().textContent()).toContain(
        `Saved: people of ${DOMAIN} can sign in through ${op.issuer}.`,
      )
      // The redirect URL to register, and the provider as stored.
      expect(await page.locator("pre.snippet code").first().textContent()).toBe(`${consoleUrl}/sign-in/sso/callback`)
      const current = page.getByRole("region", { name: "Current provider" })
      expect(await current.locator("dd").first().textContent()).toBe(op.issuer)
      expect(await current.textContent()).toContain(op.clientId)
      expect(await current.textContent()).toContain("sealed; it is never shown again")
      expect(await page.getByRole("heading", { name: "Change the provider" }).count()).toBe(1)
      // The secret is nowhere in the page, nor in the (empty) secret field.
      expect(await page.content()).not.toContain(op.clientSecret)
      expect(await page.getByLabel("Client secret").inputValue()).toBe("")
      expect(await seriousAccessibilityViolations(page)).toEqual([])
      await screenshot(page, "settings-sign-in", shots)
      expect(watch.violations).toEqual([])
      expect(watch.errors).toEqual([])
    } finally {
      await page.context().close()
    }
  }, 90_000)

  // The sign-in page's CSP (form-action 'self') governs the redirects that follow a form too: the form's answer is a
  // page that moves on to the provider by itself, which this checks in a real browser.
  test("from the sign-in page's single sign-on form, a person reaches the provider and lands on the incidents as a viewer", async () => {
    op.setAccount("vera", { sub: `vera-${RUN}`, email: `vera@${DOMAIN}`, email_verified: true, roles: ["viewer"] })
    const { page, watch } = await ssoPage()
    try {
      // Opened from a link to the incidents: the sign-in page, then the provider, then back where the link pointed.
      await page.goto(`${consoleUrl}/incidents`)
      expect(new URL(page.url()).pathname).toBe("/sign-in")
      await continueWithProvider(page, `vera@${DOMAIN}`)
      await throughProviderPages(page, watch, "vera")
      await expectReadOnlyViewer(page)
      expect(watch.violations).toEqual([])
      expect(watch.errors).toEqual([])
    } finally {
      await page.context().close()
    }
  }, 90_000)

  test("from the organization's start link, a person signs in through the provider's own pages and lands as the viewer its claim says", async () => {
    op.setAccount("vic", { sub: `vic-${RUN}`, email: `vic@${DOMAIN}`, email_verified: true, roles: ["viewer"] })
    const { page, watch } = await ssoPage()
    try {
      // The tile in the provider's app list: the console's start link, with where to go after.
      await page.goto(`${consoleUrl}/sign-in/sso/${orgId}?next=%2Fincidents`)
      await throughProviderPages(page, watch, "vic")
      await expectReadOnlyViewer(page)
      expect(watch.violations).toEqual([])
      expect(watch.errors).toEqual([])
    } finally {
      await page.context().close()
    }
  }, 90_000)

  test("a forged answer (an ID token signed by another key) lands on a refusal that names the reason, accessibly", async () => {
    op.setAccount("fay", { sub: `fay-${RUN}`, email: `fay@${DOMAIN}`, email_verified: true, roles: ["admin"] })
    const { page, watch } = await ssoPage()
    op.tamper("other-key")
    try {
      await page.goto(`${consoleUrl}/sign-in/sso/${orgId}`)
      await throughProviderPages(page, watch, "fay")
      await page.waitForLoadState()
      expect(new URL(page.url()).pathname).toBe("/sign-in/sso/callback")
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign-in refused")
      const text = (await page.locator("main").textContent()) ?? ""
      expect(text).toContain("Your organization's sign-in provider did not sign you in here")
      expect(text).toContain("signature")
      expect(await page.getByRole("link", { name: "Back to sign-in" }).getAttribute("href")).toBe("/sign-in")
      const cookies = (await page.context().cookies(consoleUrl)).map((c) => c.name)
      expect(cookies).not.toContain("__Host-session")
      expect(cookies).not.toContain("__Host-sso-state")
      expect(await seriousAccessibilityViolations(page)).toEqual([])
      await screenshot(page, "sign-in-refused", shots)
      // Nothing signed in: the console sends this browser back to the sign-in page.
      await page.goto(`${consoleUrl}/incidents`)
      expect(new URL(page.url()).pathname).toBe("/sign-in")
      expect(watch.violations).toEqual([])
      expect(watch.errors).toEqual([])
    } finally {
      op.tamper("none")
      await page.context().close()
    }
  }, 90_000)
})
