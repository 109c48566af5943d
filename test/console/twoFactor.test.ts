import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { generate } from "otplib"
import { totpStep } from "../../src/admin/TwoFactor.ts"
import type { Role } from "../../src/repos/ConsoleUsersRepo.ts"
import { launchBrowser, screenshot, seriousAccessibilityViolations } from "../support/browser.ts"
import { admin } from "../support/cli.ts"
import { cookieOf, freePort, setPassword, signedIn } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createOrg, createUser } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Two-factor codes (TOTP, RFC 6238) for console sign-in, over real HTTP against one server: the library as configured
 * against RFC 6238's SHA-1 vectors, enrolment (QR code and key, confirmed with a current code, ten recovery codes
 * shown once), the code step of a sign-in (a code never taken twice, one step of tolerance, a recovery code once),
 * wrong codes locking like wrong passwords, an organization's requirement (a user without codes reaches only
 * enrolment), an administrator's reset, the audit rows; one browser look at the enrolment page.
 * The server trusts 127.0.0.1 as a proxy, so each sign-in comes from the X-Forwarded-For address it gives.
 */

const PASSWORD = "a long enough passphrase 7"
const FORM_CSRF = /name="csrf" value="([^"]+)"/
const SECRET_TEXT = /<code class="mono two-factor-secret">([A-Z2-7]+)<\/code>/
const RECOVERY = /<li>([a-z2-9]{5}-[a-z2-9]{5})<\/li>/g
const RUN = Date.now().toString(36)
/** RFC 6238 appendix B's SHA-1 secret: the ASCII text "12345678901234567890". */
const RFC_SECRET = new TextEncoder().encode("12345678901234567890")

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let adminUser: { id: string; email: string }
let ipCounter = 0
/** A fresh client address (documentation range 198.18.0.0/15) for one sign-in. */
const newIp = () => `198.19.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`
const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))
const now = () => Math.floor(Date.now() / 1000)
/**
 * The code of `secret` (Base32, as the enrolment page shows it) `offset` seconds from now, as an authenticator app
 * makes it. Made at least 4 s before the server's step ends (it waits for the next step otherwise), so the step the
 * server is in when the code arrives is still the one the offset was meant from.
 */
const codeAt = async (secret: string, offset: number) => {
  const into = (Date.now() / 1000) % 30
  if (into > 26) await Bun.sleep((30 - into) * 1000 + 100)
  return generate({ secret, epoch: now() + offset })
}

const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text, params as Array<unknown>)))

const postForm = (path: string, fields: Record<string, string>, cookie: string, headers: Record<string, string> = {}) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl, ...headers },
    body: new URLSearchParams(fields),
  })
const get = (path: string, cookie: string) => fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })

/** The password step from `ip`: its answer, and the cookies a browser would keep for the next step. */
const passwordStep = async (email: string, ip: string, password = PASSWORD) => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = FORM_CSRF.exec(await form.text())?.[1] ?? ""
  const response = await postForm(
    "/sign-in",
    { csrf, email, password, next: "/incidents" },
    cookieOf(form, "__Host-form") ?? "",
    { "x-forwarded-for": ip },
  )
  return { response, pending: cookieOf(response, "__Host-signin-pending") }
}

/** The code step with the browser's pending sign-in: a fresh form each time, as the page gives it. */
const codeStep = async (pending: string, code: string, ip: string) => {
  const form = await get("/sign-in/code?next=/incidents", pending)
  expect(form.status).toBe(200)
  const csrf = FORM_CSRF.exec(await form.text())?.[1] ?? ""
  const formCookie = cookieOf(form, "__Host-form") ?? ""
  return postForm("/sign-in/code", { csrf, code, next: "/incidents" }, `${pending}; ${formCookie}`, {
    "x-forwarded-for": ip,
  })
}

interface Session {
  readonly cookie: string
  readonly csrf: string
  readonly ip: string
}

/** A session from a sign-in answer (303 with the session cookie), with its forms' CSRF token. */
const sessionFrom = async (response: Response, ip: string, page = "/account/sessions"): Promise<Session> => {
  expect(response.status).toBe(303)
  const cookie = cookieOf(response, "__Host-session") ?? ""
  expect(cookie).not.toBe("")
  const body = await (await get(page, cookie)).text()
  return { cookie, csrf: FORM_CSRF.exec(body)?.[1] ?? "", ip }
}

const newUser = async (role: Role, org = orgId) => {
  const email = `two-factor-${RUN}-${Math.random().toString(36).slice(2, 8)}@two-factor.example`
  const created = await createUser(db, org, email, role)
  await setPassword(consoleUrl, created.link, PASSWORD)
  return { id: created.id, email }
}

/** Enrolment over HTTP by a signed-in session: the key shown, and the recovery codes the confirmation shows. */
const enrol = async (s: Session, offset = 0) => {
  const page = await get("/account/two-factor", s.cookie)
  expect(page.status).toBe(200)
  const body = await page.text()
  const secret = SECRET_TEXT.exec(body)?.[1] ?? ""
  expect(secret).toMatch(/^[A-Z2-7]{32}$/)
  const done = await postForm(
    "/account/two-factor/confirm",
    { csrf: s.csrf, code: await codeAt(secret, offset) },
    s.cookie,
  )
  expect(done.status).toBe(200)
  expect(done.headers.get("cache-control")).toBe("no-store")
  const codes = [...(await done.text()).matchAll(RECOVERY)].map((m) => m[1] ?? "")
  return { secret, codes }
}

/** A user with codes on: the key and recovery codes. Enrolled with the code of the step before now. */
const enrolledUser = async (role: Role = "analyst") => {
  const user = await newUser(role)
  const ip = newIp()
  const first = await passwordStep(user.email, ip)
  const session = await sessionFrom(first.response, ip)
  return { ...user, ...(await enrol(session, -30)) }
}

const auditRows = (action: string, target: string) =>
  query<{ actor: string; detail: string | null }>(
    "select actor, detail from audit_log where action = $1 and target = $2 order by at",
    [action, target],
  )

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl, TRUST_PROXY: "127.0.0.1" }),
  })
  db = testDatabase(server.env)
  orgId = (await createOrg(db, `Two-factor ${RUN}`)).id
  adminUser = await newUser("admin")
}, 120_000)

afterAll(async () => {
  await shutdown(server, db)
})

test("the library as configured gives RFC 6238's SHA-1 codes, and takes one step either side and no more", async () => {
  // Appendix B: the 8-digit codes 94287082, 07081804, 89005924; their last six digits are the 6-digit codes.
  expect(await generate({ secret: RFC_SECRET, epoch: 59, digits: 8 })).toBe("94287082")
  for (const [epoch, code] of [
    [59, "287082"],
    [1111111109, "081804"],
    [1234567890, "005924"],
  ] as const) {
    expect(await generate({ secret: RFC_SECRET, epoch })).toBe(code)
    expect(await totpStep(RFC_SECRET, code, epoch, null)).toBe(Math.floor(epoch / 30))
  }
  // 081804 is the code of step 37037036 (T = 1111111080 … 1111111109).
  expect(await totpStep(RFC_SECRET, "081804", 1111111109 + 30, null)).toBe(37037036)
  expect(await totpStep(RFC_SECRET, "081804", 1111111109 - 30, null)).toBe(37037036)
  expect(await totpStep(RFC_SECRET, "081804", 1111111109 + 60, null)).toBeUndefined()
  expect(await totpStep(RFC_SECRET, "081804", 1111111109 - 60, null)).toBeUndefined()
  // Never a step already taken, nor an earlier one.
  expect(await totpStep(RFC_SECRET, "081804", 1111111109, 37037036)).toBeUndefined()
  expect(await totpStep(RFC_SECRET, "081804", 1111111109, 37037035)).toBe(37037036)
  for (const wrong of ["081805", "81804", "0818040", "", "abcdef"]) {
    expect(await totpStep(RFC_SECRET, wrong, 1111111109, null)).toBeUndefined()
  }
})

test("enrolment shows a QR code and the key, confirms with a current code, then ten recovery codes once", async () => {
  const user = await newUser("viewer")
  const ip = newIp()
  const session = await sessionFrom((await passwordStep(user.email, ip)).response, ip)
  const page = await get("/account/two-factor", session.cookie)
  const body = await page.text()
  expect(page.headers.get("content-security-policy")).toContain("script-src 'self'")
  expect(body).toContain('src="data:image/svg+xml;base64,')
  // No inline script: the page's only script is the console's own file.
  expect(body).not.toMatch(/<script(?![^>]*\ssrc=)/)
  const secret = SECRET_TEXT.exec(body)?.[1] ?? ""
  // A reload shows the same key until it is confirmed.
  expect(SECRET_TEXT.exec(await (await get("/account/two-factor", session.cookie)).text())?.[1]).toBe(secret)
  const qr = Buffer.from(/data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/.exec(body)?.[1] ?? "", "base64").toString()
  expect(qr).toStartWith("<svg")
  // A wrong code confirms nothing.
  const wrong = await postForm("/account/two-factor/confirm", { csrf: session.csrf, code: "000000" }, session.cookie)
  expect(wrong.status).toBe(303)
  expect(await (await get(wrong.headers.get("location") ?? "", session.cookie)).text()).toContain(
    "That code is not the current one.",
  )
  const done = await enrol(session)
  expect(done.secret).toBe(secret)
  expect(done.codes).toHaveLength(10)
  expect(new Set(done.codes).size).toBe(10)
  // Now on: the page says so and shows no key.
  const after = await (await get("/account/two-factor", session.cookie)).text()
  expect(after).toContain("Two-factor codes are on")
  expect(after).not.toContain(secret)
  // Stored sealed, recovery codes as hashes; audited without a secret or code.
  const stored = await query<{ secretSealed: string }>(
    "select secret_sealed from console_two_factor where user_id = $1",
    [user.id],
  )
  expect(stored[0]?.secretSealed).not.toContain(secret)
  const hashes = await query<{ n: number }>(
    "select count(*)::int as n from console_recovery_codes where user_id = $1 and octet_length(code_hash) = 32",
    [user.id],
  )
  expect(hashes).toEqual([{ n: 10 }])
  expect(await auditRows("two_factor.enrol", user.id)).toEqual([{ actor: user.id, detail: null }])
})

test("a sign-in asks for the code; the same code is refused the second time, as is one of two steps ago", async () => {
  const user = await enrolledUser()
  const ip = newIp()
  const first = await passwordStep(user.email, ip)
  // The password alone gives no session: on to the code step.
  expect(first.response.status).toBe(303)
  expect(first.response.headers.get("location")).toBe("/sign-in/code?next=%2Fincidents")
  expect(cookieOf(first.response, "__Host-session")).toBeUndefined()
  const pending = first.pending ?? ""
  expect(pending).not.toBe("")
  const code = await codeAt(user.secret, 0)
  const signed = await codeStep(pending, code, ip)
  expect(signed.headers.get("location")).toBe("/incidents")
  expect((await get("/incidents", (await sessionFrom(signed, ip)).cookie)).status).toBe(200)
  // The pending sign-in is spent.
  expect((await codeStep(pending, await codeAt(user.secret, 30), ip)).headers.get("location")).toStartWith("/sign-in?")
  // The same code again, with a new password step: refused.
  const second = await passwordStep(user.email, ip)
  const replay = await codeStep(second.pending ?? "", code, ip)
  expect(replay.status).toBe(401)
  expect(await replay.text()).toContain("Wrong code.")
  expect(cookieOf(replay, "__Host-session")).toBeUndefined()
  // A code of two steps ago: refused.
  expect((await codeStep(second.pending ?? "", await codeAt(user.secret, -60), ip)).status).toBe(401)
  // Another browser's cookie is not this pending sign-in.
  expect((await codeStep("__Host-signin-pending=forged", await codeAt(user.secret, 30), ip)).status).toBe(303)
  // The failed attempts were audited as failed sign-ins, with no code in them.
  const failed = await auditRows("signin.failed", user.id)
  expect(failed.length).toBe(2)
  for (const row of failed) expect(row.detail).toBe("wrong two-factor code")
})

test("a code of the step before now is still taken, once", async () => {
  const user = await enrolledUser()
  // As if the last code had been taken two steps ago (the enrolment's step is now's or the one before).
  await query("update console_two_factor set last_step = $1 where user_id = $2", [Math.floor(now() / 30) - 2, user.id])
  const ip = newIp()
  const previous = await codeAt(user.secret, -30)
  const signed = await codeStep((await passwordStep(user.email, ip)).pending ?? "", previous, ip)
  expect(signed.headers.get("location")).toBe("/incidents")
  expect((await codeStep((await passwordStep(user.email, ip)).pending ?? "", previous, ip)).status).toBe(401)
})

test("a recovery code signs in once; audited as used, without the code", async () => {
  const user = await enrolledUser()
  const ip = newIp()
  const recovery = user.codes[3] ?? ""
  // Typed in upper case with a space instead of the dash: the same code.
  const typed = recovery.toUpperCase().replace("-", " ")
  const signed = await codeStep((await passwordStep(user.email, ip)).pending ?? "", typed, ip)
  expect(signed.headers.get("location")).toBe("/incidents")
  const again = await codeStep((await passwordStep(user.email, ip)).pending ?? "", recovery, ip)
  expect(again.status).toBe(401)
  // Another of the ten still works.
  expect(
    (await codeStep((await passwordStep(user.email, ip)).pending ?? "", user.codes[4] ?? "", ip)).headers.get(
      "location",
    ),
  ).toBe("/incidents")
  expect(await auditRows("two_factor.recovery_used", user.id)).toEqual([
    { actor: user.id, detail: null },
    { actor: user.id, detail: null },
  ])
  const used = await query<{ n: number }>(
    "select count(*)::int as n from console_recovery_codes where user_id = $1 and used_at is not null",
    [user.id],
  )
  expect(used).toEqual([{ n: 2 }])
})

test("wrong codes count as failed sign-ins: after five, the right code and the right password are refused (429)", async () => {
  const user = await enrolledUser()
  const ip = newIp()
  const { pending } = await passwordStep(user.email, ip)
  for (let i = 0; i < 5; i++) {
    expect((await codeStep(pending ?? "", "000000", ip)).status).toBe(401)
  }
  const locked = await codeStep(pending ?? "", await codeAt(user.secret, 0), ip)
  expect(locked.status).toBe(429)
  expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0)
  expect(cookieOf(locked, "__Host-session")).toBeUndefined()
  // The password form counts the same failures: this address is locked out for the email.
  expect((await passwordStep(user.email, ip)).response.status).toBe(429)
  // `user unlock` clears them, as for wrong passwords; then the code signs in.
  expect((await admin(server.env, ["user", "unlock", user.email])).code).toBe(0)
  const after = await passwordStep(user.email, ip)
  expect((await codeStep(after.pending ?? "", await codeAt(user.secret, 30), ip)).status).toBe(303)
}, 60_000)

test("an organization's requirement sends a user without codes to enrolment, and nothing else opens until enrolled", async () => {
  const org = (await createOrg(db, `Two-factor required ${RUN}`)).id
  const user = await newUser("admin", org)
  const on = await admin(server.env, ["org", "two-factor", "--org", org, "on"])
  expect(on).toEqual({
    code: 0,
    stdout: `${org} requires two-factor codes (users without them set them up at their next sign-in)`,
    stderr: "",
  })
  expect(await auditRows("org.two_factor", org)).toEqual([{ actor: "cli", detail: "off -> on" }])
  const ip = newIp()
  const { response } = await passwordStep(user.email, ip)
  expect(response.status).toBe(303)
  expect(response.headers.get("location")).toBe("/account/two-factor")
  const session = await sessionFrom(response, ip, "/account/two-factor")
  for (const path of ["/", "/incidents", "/events", "/settings/users", "/account/sessions", "/incidents.csv"]) {
    const answer = await get(path, session.cookie)
    expect([path, answer.status, answer.headers.get("location")]).toEqual([path, 303, "/account/two-factor"])
  }
  expect((await get("/live/incidents", session.cookie)).status).toBe(401)
  for (const path of ["/account/sessions/end-others", "/settings/users/two-factor", "/account/two-factor/disable"]) {
    const answer = await postForm(path, { csrf: session.csrf, state: "off", code: "000000" }, session.cookie)
    expect([path, answer.status, answer.headers.get("location")]).toEqual([path, 303, "/account/two-factor"])
  }
  const page = await (await get("/account/two-factor", session.cookie)).text()
  expect(page).toContain("Your organization requires two-factor codes.")
  const { secret } = await enrol(session)
  // Enrolled: the same session opens everything.
  expect((await get("/settings/users", session.cookie)).status).toBe(200)
  // Required: the user cannot turn them off.
  const off = await postForm(
    "/account/two-factor/disable",
    { csrf: session.csrf, code: await codeAt(secret, 30) },
    session.cookie,
  )
  expect(await (await get(off.headers.get("location") ?? "", session.cookie)).text()).toContain(
    "Your organization requires two-factor codes.",
  )
  // The administrator ends the requirement in Settings → Users (audited).
  const ended = await postForm("/settings/users/two-factor", { csrf: session.csrf, state: "off" }, session.cookie)
  expect(ended.status).toBe(303)
  expect((await auditRows("org.two_factor", org)).at(-1)).toEqual({ actor: user.id, detail: "on -> off" })
  expect((await admin(server.env, ["org", "two-factor", "--org", org, "maybe"])).code).not.toBe(0)
}, 60_000)

test("a session opened only for enrolment opens everything once the requirement is switched off", async () => {
  const org = (await createOrg(db, `Two-factor dropped ${RUN}`)).id
  const user = await newUser("analyst", org)
  expect((await admin(server.env, ["org", "two-factor", "--org", org, "on"])).code).toBe(0)
  const ip = newIp()
  const { response } = await passwordStep(user.email, ip)
  const session = await sessionFrom(response, ip, "/account/two-factor")
  expect((await get("/incidents", session.cookie)).headers.get("location")).toBe("/account/two-factor")
  expect((await admin(server.env, ["org", "two-factor", "--org", org, "off"])).code).toBe(0)
  // The same session, without signing in again.
  expect((await get("/incidents", session.cookie)).status).toBe(200)
}, 60_000)

test("the user turns codes off with a current code; an administrator resets a user's codes (audited); an analyst may not", async () => {
  const user = await enrolledUser()
  const ip = newIp()
  const signed = await codeStep((await passwordStep(user.email, ip)).pending ?? "", await codeAt(user.secret, 30), ip)
  const session = await sessionFrom(signed, ip, "/account/two-factor")
  const wrong = await postForm("/account/two-factor/disable", { csrf: session.csrf, code: "000000" }, session.cookie)
  expect(await (await get(wrong.headers.get("location") ?? "", session.cookie)).text()).toContain(
    "two-factor codes are still on",
  )
  // A recovery code counts as a current code.
  const off = await postForm(
    "/account/two-factor/disable",
    { csrf: session.csrf, code: user.codes[0] ?? "" },
    session.cookie,
  )
  expect(await (await get(off.headers.get("location") ?? "", session.cookie)).text()).toContain(
    "Two-factor codes are off.",
  )
  expect(await auditRows("two_factor.disable", user.id)).toEqual([{ actor: user.id, detail: null }])
  // Off: the password alone signs in again.
  expect(cookieOf((await passwordStep(user.email, newIp())).response, "__Host-session")).toBeDefined()

  const other = await enrolledUser()
  const adminIp = newIp()
  const adminSession = await sessionFrom((await passwordStep(adminUser.email, adminIp)).response, adminIp)
  const users = await (await get("/settings/users", adminSession.cookie)).text()
  expect(users).toContain(`action="/settings/users/${other.id}/reset-two-factor"`)
  expect(users).toContain('action="/settings/users/two-factor"')
  const analyst = await newUser("analyst")
  const analystIp = newIp()
  const analystSession = await sessionFrom((await passwordStep(analyst.email, analystIp)).response, analystIp)
  expect(
    (
      await postForm(
        `/settings/users/${other.id}/reset-two-factor`,
        { csrf: analystSession.csrf },
        analystSession.cookie,
      )
    ).status,
  ).toBe(403)
  const reset = await postForm(
    `/settings/users/${other.id}/reset-two-factor`,
    { csrf: adminSession.csrf },
    adminSession.cookie,
  )
  expect(reset.status).toBe(303)
  expect(await (await get(reset.headers.get("location") ?? "", adminSession.cookie)).text()).toContain(
    `Two-factor codes of ${other.email} reset; their sessions ended.`,
  )
  expect(await auditRows("two_factor.reset", other.id)).toEqual([{ actor: adminUser.id, detail: other.email }])
  const left = await query<{ n: number }>(
    "select (select count(*) from console_two_factor where user_id = $1)::int + (select count(*) from console_recovery_codes where user_id = $1)::int as n",
    [other.id],
  )
  expect(left).toEqual([{ n: 0 }])
  expect(cookieOf((await passwordStep(other.email, newIp())).response, "__Host-session")).toBeDefined()
  // No audit row of the feature holds a key or a code.
  const rows = await query<{ detail: string | null }>(
    "select detail from audit_log where action like 'two_factor.%' or action = 'org.two_factor'",
  )
  for (const row of rows) {
    for (const secretText of [user.secret, other.secret, ...user.codes, ...other.codes]) {
      expect(row.detail ?? "").not.toContain(secretText)
    }
  }
}, 60_000)

test("in a browser: the enrolment page shows the QR code, passes the accessibility check (screenshot two-factor-enrol)", async () => {
  const user = await newUser("analyst")
  const browser = await launchBrowser()
  try {
    const { page, watch } = await signedIn(browser, consoleUrl, user.email, PASSWORD)
    await page.goto(`${consoleUrl}/account/two-factor`)
    expect(await page.textContent("h1")).toBe("Two-factor codes")
    expect(
      await page.$eval("img.qr-code", (img) => (img as unknown as { naturalWidth: number }).naturalWidth),
    ).toBeGreaterThan(0)
    expect(await seriousAccessibilityViolations(page)).toEqual([])
    await screenshot(page, "two-factor-enrol", shots)
    const secret = (await page.textContent(".two-factor-secret")) ?? ""
    await page.fill("#confirm-code", await codeAt(secret, 0))
    await Promise.all([page.waitForNavigation(), page.click("form[action='/account/two-factor/confirm'] button")])
    expect(await page.$$eval("ul.recovery-codes li", (lis) => lis.length)).toBe(10)
    expect(await seriousAccessibilityViolations(page)).toEqual([])
    expect(watch.errors).toEqual([])
    expect(watch.violations).toEqual([])
  } finally {
    await browser.close()
  }
}, 90_000)
