import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Role } from "../../src/repos/ConsoleUsersRepo.ts"
import { launchBrowser, screenshot, seriousAccessibilityViolations } from "../support/browser.ts"
import { admin } from "../support/cli.ts"
import { cookieOf, freePort, setPassword, signedIn } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createOrg, createUser } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * A user's own console sessions (Account → Your sessions) and the ways they end, over real HTTP against one server:
 * the list (address, browser, this session marked), ending one or every other one, another user's session id (the
 * 404 page, nothing ends), an administrator's End sessions and `user end-sessions`, disable and a password reset, a
 * hostile user agent shown as text and cut, the audit rows; one browser look at the page with an accessibility check.
 * The server trusts 127.0.0.1 as a proxy, so each sign-in comes from the X-Forwarded-For address it gives.
 */

const PASSWORD = "a long enough passphrase 7"
const FORM_CSRF = /name="csrf" value="([^"]+)"/
const RUN = Date.now().toString(36)

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let adminUser: { id: string; email: string }
let ipCounter = 0
/** A fresh client address (documentation range 198.18.0.0/15) for one sign-in. */
const newIp = () => `198.18.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text, params as Array<unknown>)))

const postForm = (path: string, fields: Record<string, string>, cookie: string, headers: Record<string, string> = {}) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl, ...headers },
    body: new URLSearchParams(fields),
  })

interface Session {
  readonly cookie: string
  readonly csrf: string
  readonly ip: string
}

/** Signs in over HTTP from a fresh address with this User-Agent: the session cookie and its forms' CSRF token. */
const signIn = async (email: string, userAgent: string): Promise<Session> => {
  const ip = newIp()
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = FORM_CSRF.exec(await form.text())?.[1] ?? ""
  const response = await postForm(
    "/sign-in",
    { csrf, email, password: PASSWORD, next: "/account/sessions" },
    cookieOf(form, "__Host-form") ?? "",
    { "x-forwarded-for": ip, "user-agent": userAgent },
  )
  expect(response.status).toBe(303)
  const cookie = cookieOf(response, "__Host-session") ?? ""
  const page = await get("/account/sessions", cookie)
  expect(page.status).toBe(200)
  return { cookie, csrf: FORM_CSRF.exec(await page.text())?.[1] ?? "", ip }
}

const get = (path: string, cookie: string) => fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })

/** Whether a session cookie still opens a page (a dead one is sent to sign-in at once). */
const works = async (s: Session) => {
  const response = await get("/account/sessions", s.cookie)
  if (response.status === 200) return true
  expect(response.status).toBe(303)
  expect(response.headers.get("location")).toStartWith("/sign-in?")
  return false
}

/** The rows of the user's sessions page: id, the browser cell's text, the address, whether marked as this session. */
const sessionRows = async (s: Session) => {
  const response = await get("/account/sessions", s.cookie)
  expect(response.status).toBe(200)
  const body = await response.text()
  const rows = [...body.matchAll(/<tr id="session-(ses_[0-9A-Z]{26})"[^>]*>([\s\S]*?)<\/tr>/g)].map((m) => ({
    id: m[1] ?? "",
    agent: /<span class="small user-agent">([\s\S]*?)<\/span>/.exec(m[2] ?? "")?.[1] ?? "",
    address: /<td class="mono small">([^<]*)<\/td>/.exec(m[2] ?? "")?.[1] ?? "",
    current: (m[2] ?? "").includes("(this session)"),
  }))
  return { body, rows }
}

/** A form of the session's pages posted from the address it signed in from. */
const act = (s: Session, path: string) => postForm(path, { csrf: s.csrf }, s.cookie, { "x-forwarded-for": s.ip })

const newUser = async (role: Role) => {
  const email = `sessions-${RUN}-${Math.random().toString(36).slice(2, 8)}@sessions.example`
  const created = await createUser(db, orgId, email, role)
  await setPassword(consoleUrl, created.link, PASSWORD)
  return { id: created.id, email }
}

const auditRows = (action: string, target: string) =>
  query<{ actor: string; ip: string | null; detail: string | null }>(
    "select actor, ip, detail from audit_log where action = $1 and target = $2 order by at",
    [action, target],
  )

const sessionCount = async (userId: string) =>
  (await query<{ n: number }>("select count(*)::int as n from console_sessions where user_id = $1", [userId]))[0]?.n

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl, TRUST_PROXY: "127.0.0.1" }),
  })
  db = testDatabase(server.env)
  orgId = (await createOrg(db, `Sessions ${RUN}`)).id
  adminUser = await newUser("admin")
}, 120_000)

afterAll(async () => {
  await shutdown(server, db)
})

test("the page lists a user's sessions with address and browser, this one marked; ending the other stops its cookie at once", async () => {
  const user = await newUser("analyst")
  const firefox = await signIn(user.email, "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
  const chrome = await signIn(user.email, "Mozilla/5.0 (Macintosh) AppleWebKit/537.36 Chrome/126.0 Safari/537.36")

  const { rows } = await sessionRows(firefox)
  expect(rows).toHaveLength(2)
  const mine = rows.find((r) => r.current)
  const other = rows.find((r) => !r.current)
  expect(mine).toMatchObject({ address: firefox.ip })
  expect(mine?.agent).toContain("Firefox/128.0")
  expect(other).toMatchObject({ address: chrome.ip })
  expect(other?.agent).toContain("Chrome/126.0")
  // The other browser sees the same two, its own marked.
  expect((await sessionRows(chrome)).rows.find((r) => r.current)?.id).toBe(other?.id ?? "")

  const ended = await act(firefox, `/account/sessions/${other?.id}/end`)
  expect(ended.status).toBe(303)
  expect(ended.headers.get("location")).toStartWith("/account/sessions?flash=")
  expect(await (await get(ended.headers.get("location") ?? "", firefox.cookie)).text()).toContain("Session ended.")
  expect(await works(chrome)).toBe(false)
  expect(await works(firefox)).toBe(true)
  expect((await sessionRows(firefox)).rows.map((r) => r.id)).toEqual([mine?.id ?? ""])
  expect(await auditRows("session.end", other?.id ?? "")).toEqual([{ actor: user.id, ip: firefox.ip, detail: null }])

  // Ending the session of the request itself is signing out.
  const own = await act(firefox, `/account/sessions/${mine?.id}/end`)
  expect(own.status).toBe(303)
  expect(own.headers.get("location")).toBe("/sign-in")
  expect(await works(firefox)).toBe(false)
  expect(await sessionCount(user.id)).toBe(0)
})

test("End all other sessions ends every session of the user but this one; audited with the number", async () => {
  const user = await newUser("analyst")
  const kept = await signIn(user.email, "Kept browser")
  const others = [await signIn(user.email, "Other one"), await signIn(user.email, "Other two")]
  const done = await act(kept, "/account/sessions/end-others")
  expect(done.status).toBe(303)
  expect(await (await get(done.headers.get("location") ?? "", kept.cookie)).text()).toContain("2 other sessions ended.")
  for (const s of others) expect(await works(s)).toBe(false)
  expect(await works(kept)).toBe(true)
  expect(await sessionCount(user.id)).toBe(1)
  expect(await auditRows("session.end_others", user.id)).toEqual([
    { actor: user.id, ip: kept.ip, detail: "2 session(s) ended" },
  ])
  // Without the form's token nothing ends.
  const again = await signIn(user.email, "Another")
  expect((await postForm("/account/sessions/end-others", { csrf: "wrong" }, kept.cookie)).status).toBe(403)
  expect(await works(again)).toBe(true)
})

test("a viewer, who reads no settings, lists and ends their own sessions too", async () => {
  const viewer = await newUser("viewer")
  const first = await signIn(viewer.email, "Viewer laptop")
  const second = await signIn(viewer.email, "Viewer phone")
  expect((await sessionRows(first)).rows).toHaveLength(2)
  expect((await act(first, "/account/sessions/end-others")).status).toBe(303)
  expect(await works(second)).toBe(false)
  expect(await works(first)).toBe(true)
  const own = (await sessionRows(first)).rows[0]?.id ?? ""
  expect((await act(first, `/account/sessions/${own}/end`)).headers.get("location")).toBe("/sign-in")
  expect(await works(first)).toBe(false)
})

test("another user's session id is the 404 page and nothing ends; so is an unknown or malformed id", async () => {
  const user = await newUser("analyst")
  const stranger = await newUser("admin")
  const mine = await signIn(user.email, "Mine")
  const theirs = await signIn(stranger.email, "Theirs")
  const theirId = (await sessionRows(theirs)).rows[0]?.id ?? ""
  expect(theirId).toMatch(/^ses_/)
  for (const id of [theirId, "ses_01JZZZZZZZZZZZZZZZZZZZZZZZ", "not-an-id"]) {
    const answer = await act(mine, `/account/sessions/${id}/end`)
    expect(answer.status).toBe(404)
  }
  expect(await works(theirs)).toBe(true)
  expect(await works(mine)).toBe(true)
  expect(await auditRows("session.end", theirId)).toEqual([])
})

test("an administrator's End sessions ends all of a user's sessions; an analyst may not; `user end-sessions` too; audited", async () => {
  const user = await newUser("analyst")
  const sessions = [await signIn(user.email, "One"), await signIn(user.email, "Two")]
  const adminSession = await signIn(adminUser.email, "Admin browser")
  expect(await (await get("/settings/users", adminSession.cookie)).text()).toContain(
    `action="/settings/users/${user.id}/end-sessions"`,
  )

  // An analyst is refused, and nothing ends.
  const analyst = await newUser("analyst")
  const analystSession = await signIn(analyst.email, "Analyst browser")
  expect((await act(analystSession, `/settings/users/${user.id}/end-sessions`)).status).toBe(403)
  for (const s of sessions) expect(await works(s)).toBe(true)

  const done = await act(adminSession, `/settings/users/${user.id}/end-sessions`)
  expect(done.status).toBe(303)
  expect(await (await get(done.headers.get("location") ?? "", adminSession.cookie)).text()).toContain(
    `2 sessions of ${user.email} ended.`,
  )
  for (const s of sessions) expect(await works(s)).toBe(false)
  expect(await works(adminSession)).toBe(true)
  expect(await auditRows("user.end_sessions", user.id)).toEqual([
    { actor: adminUser.id, ip: adminSession.ip, detail: `${user.email} (2 session(s) ended)` },
  ])

  // The operator's command does the same.
  const later = await signIn(user.email, "Three")
  const cli = await admin(server.env, ["user", "end-sessions", user.id])
  expect(cli).toEqual({ code: 0, stdout: `1 session(s) of ${user.email} ended`, stderr: "" })
  expect(await works(later)).toBe(false)
  expect((await auditRows("user.end_sessions", user.id)).at(-1)).toEqual({
    actor: "cli",
    ip: null,
    detail: `${user.email} (1 session(s) ended)`,
  })
  expect((await admin(server.env, ["user", "end-sessions", "usr_01JZZZZZZZZZZZZZZZZZZZZZZZ"])).code).toBe(1)
}, 60_000)

test("disabling a user and a password reset end all of that user's sessions", async () => {
  const adminSession = await signIn(adminUser.email, "Admin browser")
  const toDisable = await newUser("analyst")
  const disabledSessions = [await signIn(toDisable.email, "A"), await signIn(toDisable.email, "B")]
  expect((await act(adminSession, `/settings/users/${toDisable.id}/disable`)).status).toBe(303)
  for (const s of disabledSessions) expect(await works(s)).toBe(false)
  expect(await sessionCount(toDisable.id)).toBe(0)

  const toReset = await newUser("analyst")
  const resetSessions = [await signIn(toReset.email, "C"), await signIn(toReset.email, "D")]
  expect((await act(adminSession, `/settings/users/${toReset.id}/reset`)).status).toBe(303)
  for (const s of resetSessions) expect(await works(s)).toBe(false)
  expect(await sessionCount(toReset.id)).toBe(0)
  expect(await works(adminSession)).toBe(true)
})

test("a hostile user agent is shown as text, cut to 512 characters", async () => {
  const user = await newUser("analyst")
  const hostile = `<script>alert("ua")</script><img src=x onerror=alert(1)>${"A".repeat(10_000)}`
  const s = await signIn(user.email, hostile)
  const stored = await query<{ n: number }>(
    "select char_length(user_agent)::int as n from console_sessions where user_id = $1",
    [user.id],
  )
  expect(stored).toEqual([{ n: 512 }])
  const { body, rows } = await sessionRows(s)
  expect(body).not.toContain("<script>alert")
  expect(body).not.toContain("<img src=x")
  expect(body).not.toContain("A".repeat(513))
  expect(rows[0]?.agent).toStartWith(
    "&lt;script&gt;alert(&quot;ua&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;",
  )
  expect(body.length).toBeLessThan(20_000)
})

test("in a browser: the page marks this session, passes the accessibility check (screenshot account-sessions)", async () => {
  const user = await newUser("analyst")
  await signIn(user.email, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148 Safari/604.1")
  const browser = await launchBrowser()
  try {
    const { page, watch } = await signedIn(browser, consoleUrl, user.email, PASSWORD)
    await page.goto(`${consoleUrl}/account/sessions`)
    expect(await page.textContent("h1")).toBe("Your sessions")
    expect(await page.$$eval("tbody tr", (trs) => trs.length)).toBe(2)
    expect(await page.textContent("tr.current-session .this-session")).toBe("(this session)")
    expect(await seriousAccessibilityViolations(page)).toEqual([])
    await screenshot(page, "account-sessions", shots)
    await Promise.all([page.waitForNavigation(), page.click("form[action='/account/sessions/end-others'] button")])
    expect(await page.textContent(".notice-ok")).toBe("1 other session ended.")
    expect(watch.errors).toEqual([])
    expect(watch.violations).toEqual([])
  } finally {
    await browser.close()
  }
}, 90_000)
