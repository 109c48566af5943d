import { expect } from "bun:test"
import type { Role } from "../../src/repos/ConsoleUsersRepo.ts"
import { type Browser, launchBrowser, type Page, type PageWatch, watchedContext } from "./browser.ts"
import { testDatabase } from "./db.ts"
import { createUser } from "./fixtures.ts"

/**
 * What the console's browser tests share: a free port for a console of their own, a password set through the one-time
 * link as a user would, a signed-in page, and a POST made from inside a signed-in page.
 */

/**
 * A TCP port free now, for CONSOLE_PORT, so APP_URL can name it before the server starts. Chosen below Linux's
 * ephemeral range (32768–60999 by default): a listener the server opens on port 0 (its ops port, say) is given a
 * port from that range, so it can never be handed this one, as it could a port a port-0 probe had just released.
 */
export const freePort = (): number => {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    try {
      const probe = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } })
      probe.stop(true)
      return port
    } catch {
      // Taken: try another.
    }
  }
  throw new Error("no free port between 20000 and 32000")
}

/** Sets a user's password through the one-time link, as the user would (a plain HTTP client is enough here). */
export const setPassword = async (consoleUrl: string, link: string, password: string): Promise<void> => {
  const path = new URL(link).pathname
  const form = await fetch(`${consoleUrl}${path}`)
  const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const done = await fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, password }),
  })
  expect(done.status).toBe(303)
}

/** A page of a fresh browser context, signed in; a dialog (an alert an injected script would raise) is an error. */
export const signedIn = async (
  browser: Browser,
  consoleUrl: string,
  email: string,
  password: string,
): Promise<{ page: Page; watch: PageWatch }> => {
  const { context, watch } = await watchedContext(browser)
  const page = await context.newPage()
  page.on("dialog", (dialog) => {
    watch.errors.push(`dialog: ${dialog.message()}`)
    void dialog.dismiss()
  })
  await page.goto(`${consoleUrl}/sign-in`)
  await page.fill("#email", email)
  await page.fill("#password", password)
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")])
  return { page, watch }
}

/** A POST from inside the signed-in page (same origin, the session's cookie): its status. */
export const postFromPage = (page: Page, path: string, fields: Record<string, string>): Promise<number> =>
  page.evaluate(
    async ([p, f]) => {
      const res = await fetch(p as string, {
        method: "POST",
        body: new URLSearchParams(f as Record<string, string>),
        redirect: "manual",
      })
      return res.status
    },
    [path, fields] as const,
  )

/** The CSRF token of the page's forms. */
export const csrfOf = async (page: Page): Promise<string> =>
  (await page.getAttribute("input[name=csrf]", "value")) ?? ""

/** A console user of the organization, made by the operator, with `password` set through the one-time link. */
export const consoleUser = async (
  env: Record<string, string>,
  consoleUrl: string,
  user: {
    readonly orgId: string
    readonly email: string
    readonly role: Role
    readonly password: string
  },
): Promise<{ readonly id: string }> => {
  const db = testDatabase(env)
  try {
    const made = await createUser(db, user.orgId, user.email, user.role)
    await setPassword(consoleUrl, made.link, user.password)
    return made
  } finally {
    await db.close()
  }
}

/**
 * The two roles most console tests need: an admin and an analyst of one organization, each with a password set
 * through the link, signed in in a context of its own in one new browser.
 */
export const adminAndAnalyst = async (
  env: Record<string, string>,
  consoleUrl: string,
  users: { readonly orgId: string; readonly admin: string; readonly analyst: string; readonly password: string },
): Promise<{
  browser: Browser
  admin: { page: Page; watch: PageWatch }
  analyst: { page: Page; watch: PageWatch }
}> => {
  const { orgId, password } = users
  await consoleUser(env, consoleUrl, { orgId, email: users.admin, role: "admin", password })
  await consoleUser(env, consoleUrl, { orgId, email: users.analyst, role: "analyst", password })
  const browser = await launchBrowser()
  const admin = await signedIn(browser, consoleUrl, users.admin, password)
  const analyst = await signedIn(browser, consoleUrl, users.analyst, password)
  return { browser, admin, analyst }
}

/** A cookie a response sets, as `name=value` for the next request's Cookie header; undefined when it sets none. */
export const cookieOf = (response: Response, name: string) =>
  response.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(";")[0]
