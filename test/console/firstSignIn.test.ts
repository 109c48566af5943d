import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  type Browser,
  launchBrowser,
  screenshot,
  seriousAccessibilityViolations,
  watchedContext,
} from "../support/browser.ts"
import { admin, adminJson } from "../support/cli.ts"
import { freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createOrg, createUser } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The first sign-in without the demo, in a real Chromium on the real server: the sign-in page says how an account is
 * made (the admin CLI's real command), the one-time link's page names the account it is for, and after the password
 * is set the sign-in form comes filled with that email.
 */

const RUN = Date.now().toString(36)
const PASSWORD = "first light over the harbour"

let server: RunningServer
let browser: Browser
let consoleUrl: string
let orgId: string
let db: TestDatabase

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  // Fixtures through the admin services as the operator; the first user is made with the CLI's command itself.
  db = testDatabase(server.env)
  orgId = (await createOrg(db, `First ${RUN}`)).id
  browser = await launchBrowser()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

/** Screenshots of the pages: docs/screenshots/ with UPDATE_SCREENSHOTS=1, else a temporary directory. */
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

test("the sign-in page names the admin command that makes the first user, and that command is the CLI's own", async () => {
  const text = await (await fetch(`${consoleUrl}/sign-in`)).text()
  const shown = "bun run admin user create --org &lt;org-id&gt; --email &lt;email&gt; --role admin"
  expect(text).toContain(shown)
  expect(text).toContain("one-time link")
  expect(text).toContain("bun run admin org list")
  // The CLI's own help lists the command with these flags.
  const usage = await admin(server.env, ["help"])
  expect(`${usage.stdout}${usage.stderr}`).toContain("user create --org <org-id> --email <email> --role admin|analyst")
})

test("first sign-in in a browser: the link's page names the account, the sign-in form comes filled with it", async () => {
  const email = `first-admin-${RUN}@acme.example`
  // The command as the sign-in page gives it.
  const created = await adminJson(server.env, ["user", "create", "--org", orgId, "--email", email, "--role", "admin"])
  const link = new URL(created.link as string)
  const { context, watch } = await watchedContext(browser)
  const tab = await context.newPage()

  await tab.goto(`${consoleUrl}/sign-in`)
  expect(await tab.locator("#email").inputValue()).toBe("")
  expect(await seriousAccessibilityViolations(tab)).toEqual([])

  await tab.goto(`${consoleUrl}${link.pathname}`)
  expect(await tab.locator("h1").textContent()).toBe("Set your password")
  expect(await tab.locator(".account-email").textContent()).toBe(email)
  await screenshot(tab, "set-password", shots)
  expect(await seriousAccessibilityViolations(tab)).toEqual([])

  // Too short: refused, and the page still says whose password it is.
  await tab.fill("#password", "short")
  // Past the browser's own check (minlength), so the server's answer is what is seen.
  await tab.locator("form").evaluate((form) => {
    ;(form as unknown as { noValidate: boolean }).noValidate = true
  })
  await Promise.all([tab.waitForNavigation(), tab.click("button[type=submit]")])
  expect(await tab.locator('[role="alert"]').textContent()).toContain("12 to 256 characters")
  expect(await tab.locator(".account-email").textContent()).toBe(email)

  await tab.fill("#password", PASSWORD)
  await Promise.all([tab.waitForNavigation(), tab.click("button[type=submit]")])
  const after = new URL(tab.url())
  expect(after.pathname).toBe("/sign-in")
  // The email travels in a short-lived cookie, never in the address.
  expect(tab.url()).not.toContain(encodeURIComponent(email))
  expect(tab.url()).not.toContain(email)
  expect(await tab.locator('[role="status"]').textContent()).toContain("Your password is set")
  expect(await tab.locator("#email").inputValue()).toBe(email)
  expect(await seriousAccessibilityViolations(tab)).toEqual([])

  // Only the password is left to type.
  await tab.fill("#password", PASSWORD)
  await Promise.all([tab.waitForNavigation(), tab.click("form[action='/sign-in'] button[type=submit]")])
  expect(new URL(tab.url()).pathname).toBe("/")
  expect(await tab.content()).toContain(email)

  // Signed in, the cookie is spent: a later sign-in page is empty again.
  const cookies = await context.cookies()
  expect(cookies.some((c) => c.name === "__Host-signin-email")).toBe(false)
  expect(watch.violations).toEqual([])
  expect(watch.errors).toEqual([])
  await context.close()
}, 120_000)

test("the sign-in page fills no email without a password just set, and a spent link names no account", async () => {
  const email = `analyst-${RUN}@acme.example`
  const created = await createUser(db, orgId, email, "analyst")
  const path = new URL(created.link as string).pathname
  // A cookie sent to the plain sign-in page (not after a password set) fills nothing.
  const plain = await (
    await fetch(`${consoleUrl}/sign-in`, { headers: { cookie: `__Host-signin-email=${encodeURIComponent(email)}` } })
  ).text()
  expect(plain).not.toContain(email)

  const form = await fetch(`${consoleUrl}${path}`)
  const page = await form.text()
  expect(page).toContain(email)
  const cookie = form.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ")
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? ""
  const done = await fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, password: PASSWORD }),
  })
  expect(done.status).toBe(303)
  expect(done.headers.get("location")).toBe("/sign-in?done=password")
  const emailCookie = done.headers.getSetCookie().find((c) => c.startsWith("__Host-signin-email="))
  expect(emailCookie).toBeDefined()
  expect(emailCookie).toContain("HttpOnly")
  expect(emailCookie).toContain("Secure")
  expect(emailCookie).toContain("SameSite=Strict")
  expect(emailCookie).toContain("Max-Age=600")

  // The link is spent: its page is the expired-link page, with no account named.
  const spent = await (await fetch(`${consoleUrl}${path}`)).text()
  expect(spent).not.toContain(email)
  expect(spent).not.toContain("Set your password")
})
