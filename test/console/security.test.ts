import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { SignIn } from "../../src/admin/SignIn.ts"
import { redactPath } from "../../src/console/http.ts"
import { adminJson } from "../support/cli.ts"
import { cookieOf } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import {
  createChannel,
  createKey,
  createOrg,
  createUser,
  disableUser,
  listKeys,
  listUsers,
} from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The console's security model over plain HTTP (D26–D31): one server for the file, a browser is not needed. The
 * server trusts 127.0.0.1 as a proxy, so each test signs in from its own X-Forwarded-For address and the per-IP
 * throttle of one test never meets another's.
 */

const PASSWORD = "a long enough passphrase 1"
const FORM_CSRF = /name="csrf" value="([^"]+)"/

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgA: string
let orgB: string
let adminA: { id: string; email: string }
let ipCounter = 0
/** A fresh client address (documentation range 198.18.0.0/15) for one test. */
const newIp = () => `198.18.${Math.floor(++ipCounter / 250)}.${(ipCounter % 250) + 1}`

const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(text, params as Array<unknown>)))

/** GET a no-session form (sign-in, set-password): its CSRF token and double-submit cookie. */
const openForm = async (path: string) => {
  const form = await fetch(`${consoleUrl}${path}`)
  const text = await form.text()
  return { status: form.status, csrf: FORM_CSRF.exec(text)?.[1] ?? "", cookie: cookieOf(form, "__Host-form") ?? "" }
}

const postForm = (path: string, fields: Record<string, string>, cookie: string, ip?: string) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie,
      "content-type": "application/x-www-form-urlencoded",
      origin: consoleUrl,
      ...(ip ? { "x-forwarded-for": ip } : {}),
    },
    body: new URLSearchParams(fields),
  })

/** Sets a password through a one-time link as the user would; the POST's response. */
const setPassword = async (link: string, password: string) => {
  const path = new URL(link).pathname
  const form = await openForm(path)
  return postForm(path, { csrf: form.csrf, password }, form.cookie)
}

/** Signs in over HTTP; `previous` is a session cookie the browser already holds. */
const signIn = async (email: string, password: string, ip: string, previous?: string) => {
  const form = await openForm("/sign-in")
  const cookie = previous ? `${form.cookie}; ${previous}` : form.cookie
  const response = await postForm("/sign-in", { csrf: form.csrf, email, password, next: "/" }, cookie, ip)
  return { status: response.status, response, cookie: cookieOf(response, "__Host-session") }
}

/** A user made by the admin service as the operator (`user create`), its password set through its link. */
const newUser = async (orgId: string, role: "admin" | "analyst", password = PASSWORD) => {
  const email = `user-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@sec.example`
  const created = await createUser(db, orgId, email, role)
  expect((await setPassword(created.link, password)).status).toBe(303)
  return { id: created.id, email }
}

/** A signed-in session: its cookie and the CSRF token of its forms (read from a page). */
const session = async (email: string, password = PASSWORD) => {
  const signed = await signIn(email, password, newIp())
  expect(signed.status).toBe(303)
  const cookie = signed.cookie ?? ""
  const page = await fetch(`${consoleUrl}/settings/users`, { headers: { cookie }, redirect: "manual" })
  const csrf = FORM_CSRF.exec(await page.text())?.[1] ?? ""
  return { cookie, csrf }
}

const act = (s: { cookie: string; csrf: string }, path: string, fields: Record<string, string> = {}) =>
  postForm(path, { csrf: s.csrf, ...fields }, s.cookie)

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ TRUST_PROXY: "127.0.0.1", WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }) })
  consoleUrl = server.consoleUrl
  db = testDatabase(server.env)
  orgA = (await createOrg(db, `Security A ${crypto.randomUUID().slice(0, 8)}`)).id
  orgB = (await createOrg(db, `Security B ${crypto.randomUUID().slice(0, 8)}`)).id
  adminA = await newUser(orgA, "admin")
}, 120_000)

afterAll(async () => {
  await shutdown(server, db)
})

test("parallel wrong-password sign-ins for one email: at most 5 are verified, the rest 429, then the right password is throttled too from that address", async () => {
  const user = await newUser(orgA, "analyst")
  const ip = newIp()
  const forms = await Promise.all(Array.from({ length: 30 }, () => openForm("/sign-in")))
  const answers = await Promise.all(
    forms.map((form) =>
      postForm(
        "/sign-in",
        { csrf: form.csrf, email: user.email, password: "wrong password guess", next: "/" },
        form.cookie,
        ip,
      ),
    ),
  )
  const statuses = answers.map((a) => a.status)
  expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5)
  expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([])
  for (const a of answers.filter((a) => a.status === 429)) {
    expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0)
  }
  // Fill the window up to exactly 5 failures (sequentially), then even the right password is refused.
  for (let i = statuses.filter((s) => s === 401).length; i < 5; i++) {
    expect((await signIn(user.email, "wrong password guess", ip)).status).toBe(401)
  }
  const right = await signIn(user.email, PASSWORD, ip)
  expect(right.status).toBe(429)
  expect(right.cookie).toBeUndefined()
  // An address that has not failed for the email is still let through with the right password (the lock cannot be
  // used to keep the owner out).
  expect((await signIn(user.email, PASSWORD, newIp())).status).toBe(303)
}, 60_000)

test("parallel wrong-password sign-ins from one IP for many emails: at most 20 are verified", async () => {
  const ip = newIp()
  const forms = await Promise.all(Array.from({ length: 40 }, () => openForm("/sign-in")))
  const answers = await Promise.all(
    forms.map((form, i) =>
      postForm(
        "/sign-in",
        { csrf: form.csrf, email: `nobody-${i}@sec.example`, password: "wrong password guess", next: "/" },
        form.cookie,
        ip,
      ),
    ),
  )
  const statuses = answers.map((a) => a.status)
  expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(20)
  expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([])
}, 60_000)

/** A user's status as `user list` shows it, read through the admin service. */
const statusOf = async (userId: string, orgId = orgA) =>
  (await listUsers(db, orgId)).find((u) => u.id === userId)?.status

test("`user reset` of a disabled user keeps it disabled and ends its old password; the new link enables it", async () => {
  const user = await newUser(orgA, "analyst")
  await disableUser(db, user.id)
  const reset = (await adminJson(server.env, ["user", "reset", user.id])) as { link: string }
  expect(await statusOf(user.id)).toBe("disabled")
  expect((await signIn(user.email, PASSWORD, newIp())).status).toBe(401)
  const newPassword = "the new passphrase after reset"
  expect((await setPassword(reset.link, newPassword)).status).toBe(303)
  expect(await statusOf(user.id)).toBe("active")
  expect((await signIn(user.email, PASSWORD, newIp())).status).toBe(401)
  expect((await signIn(user.email, newPassword, newIp())).status).toBe(303)
}, 60_000)

test("Settings → Users reset ends the old password at once; only the new link lets the user in", async () => {
  const user = await newUser(orgA, "analyst")
  const before = await signIn(user.email, PASSWORD, newIp())
  expect(before.status).toBe(303)
  const s = await session(adminA.email)
  const reset = await act(s, `/settings/users/${user.id}/reset`)
  expect(reset.status).toBe(303)
  // The session ended and the old password no longer opens one.
  const page = await fetch(`${consoleUrl}/`, { headers: { cookie: before.cookie ?? "" }, redirect: "manual" })
  expect(page.status).toBe(303)
  expect((await signIn(user.email, PASSWORD, newIp())).status).toBe(401)
  expect(await statusOf(user.id)).toBe("invited")
  // The link from the flash notice sets a new password.
  const notice = await fetch(`${consoleUrl}${reset.headers.get("location")}`, { headers: { cookie: s.cookie } })
  const link = /(https?:\/\/[^\s"<]+\/set-password\/[A-Za-z0-9_-]+)/.exec(await notice.text())?.[1]
  expect(link).toBeDefined()
  expect((await setPassword(link ?? "", PASSWORD)).status).toBe(303)
  expect((await signIn(user.email, PASSWORD, newIp())).status).toBe(303)
}, 60_000)

test("the live refresh does not move a session's last_seen_at (an unattended tab idles out); a page load does", async () => {
  const user = await newUser(orgA, "analyst")
  const signed = await signIn(user.email, PASSWORD, newIp())
  const cookie = signed.cookie ?? ""
  const lastSeen = async () =>
    (
      await query<{ seen: Date }>("select last_seen_at as seen from console_sessions where user_id = $1", [user.id])
    )[0]?.seen.getTime() ?? 0
  await query("update console_sessions set last_seen_at = now() - interval '2 hours' where user_id = $1", [user.id])
  const aged = await lastSeen()
  for (let i = 0; i < 3; i++) {
    const live = await fetch(`${consoleUrl}/live/incidents?since=${encodeURIComponent(new Date().toISOString())}`, {
      headers: { cookie },
    })
    expect(live.status).toBe(200)
    expect(await live.json()).toEqual({ changed: false })
  }
  expect(await lastSeen()).toBe(aged)
  expect((await fetch(`${consoleUrl}/`, { headers: { cookie }, redirect: "manual" })).status).toBe(200)
  expect(await lastSeen()).toBeGreaterThan(Date.now() - 10 * 60_000)
}, 60_000)

test("a set-password POST to an unknown or spent link answers the expired-link page before any password is hashed", async () => {
  const form = await openForm("/sign-in")
  for (const password of ["a valid length password", "short"]) {
    const unknown = await postForm(`/set-password/${"A".repeat(43)}`, { csrf: form.csrf, password }, form.cookie)
    expect(unknown.status).toBe(410)
    expect(await unknown.text()).toContain("expired or was already used")
  }
  // A spent link: the same page.
  const email = `spent-${Date.now()}@sec.example`
  const created = await createUser(db, orgA, email, "analyst")
  expect((await setPassword(created.link, PASSWORD)).status).toBe(303)
  const spent = await postForm(new URL(created.link).pathname, { csrf: form.csrf, password: PASSWORD }, form.cookie)
  expect(spent.status).toBe(410)
  // In process: the service never calls the hash for a dead link.
  const original = Bun.password.hash
  let hashes = 0
  Bun.password.hash = ((...args: Parameters<typeof original>) => {
    hashes++
    return original(...args)
  }) as typeof original
  try {
    const outcome = await db.run(
      Effect.flip(Effect.flatMap(SignIn, (a) => a.setPassword("B".repeat(43), "a valid length password", "127.0.0.1"))),
    )
    expect(outcome).toMatchObject({ _tag: "LinkExpired" })
    expect(hashes).toBe(0)
  } finally {
    Bun.password.hash = original
  }
}, 60_000)

test("POST actions on another organization's id, or an unknown id, get the same 404 page as a GET", async () => {
  const s = await session(adminA.email)
  const foreignKey = (await createKey(db, orgB, "incidents:read")).id as string
  const foreignChannel = (await createChannel(db, orgB, "https://127.0.0.1:9/hook")).id as string
  const foreignUser = await newUser(orgB, "analyst")
  const posts = [
    `/settings/api/keys/${foreignKey}/revoke`,
    "/settings/api/keys/key_unknown/revoke",
    `/settings/alerts/channels/${foreignChannel}/test`,
    `/settings/alerts/channels/${foreignChannel}/disable`,
    `/settings/alerts/channels/${foreignChannel}/enable`,
    `/settings/alerts/channels/${foreignChannel}/rotate`,
    "/settings/alerts/channels/whc_unknown/rotate",
    "/settings/alerts/deliveries/whd_unknown/redeliver",
    `/settings/users/${foreignUser.id}/disable`,
    `/settings/users/${foreignUser.id}/reset`,
    "/settings/users/usr_unknown/reset",
  ]
  const unknownGet = await fetch(`${consoleUrl}/settings/alerts/channels/${foreignChannel}`, {
    headers: { cookie: s.cookie },
  })
  expect(unknownGet.status).toBe(404)
  const notFoundTitle = /<h1[^>]*>([^<]*)<\/h1>/.exec(await unknownGet.text())?.[1]
  for (const path of posts) {
    const answer = await act(s, path)
    expect({ path, status: answer.status }).toEqual({ path, status: 404 })
    expect(/<h1[^>]*>([^<]*)<\/h1>/.exec(await answer.text())?.[1]).toBe(notFoundTitle)
  }
  // Nothing of organization B changed.
  expect(await statusOf(foreignUser.id, orgB)).toBe("active")
  const keys = await listKeys(db, orgB)
  expect(keys.find((k) => k.id === foreignKey)?.revokedAt).toBeNull()
}, 60_000)

test("creating a user whose email another organization uses gets a refusal that does not say so", async () => {
  const s = await session(adminA.email)
  const elsewhere = await newUser(orgB, "analyst")
  const here = await newUser(orgA, "analyst")
  const notices: Array<string> = []
  for (const email of [elsewhere.email, here.email]) {
    const answer = await act(s, "/settings/users", { email, role: "analyst" })
    expect(answer.status).toBe(303)
    const page = await fetch(`${consoleUrl}${answer.headers.get("location")}`, { headers: { cookie: s.cookie } })
    const text = await page.text()
    expect(text).toContain("cannot be used")
    expect(text).not.toMatch(/exists|another organi[sz]ation/i)
    notices.push(/cannot be used[^<]*/.exec(text)?.[0] ?? "")
  }
  expect(notices[0]).toBe(notices[1] as string)
  expect(await statusOf(elsewhere.id, orgB)).toBe("active")
}, 60_000)

test("the audit row of a channel created in the console holds the URL's origin, never its path or query", async () => {
  const s = await session(adminA.email)
  const url = "https://127.0.0.1:9/services/T000/B000/XXXXsecretpath?token=querysecret"
  const answer = await act(s, "/settings/alerts/channels", { url, minSeverity: "high" })
  expect(answer.status).toBe(303)
  const rows = await query<{ target: string; detail: string }>(
    "select target, detail from audit_log where org_id = $1 and action = 'webhook.create' order by at desc limit 1",
    [orgA],
  )
  expect(rows[0]?.target).toStartWith("whc_")
  expect(rows[0]?.detail).toBe("webhook https://127.0.0.1:9 (min high)")
  const all = await query<{ detail: string | null }>("select detail from audit_log")
  expect(all.filter((r) => r.detail?.includes("secretpath") || r.detail?.includes("querysecret"))).toEqual([])
}, 60_000)

test("signing in ends the session the browser sent with the sign-in form", async () => {
  const user = await newUser(orgA, "analyst")
  const first = await signIn(user.email, PASSWORD, newIp())
  const open = (cookie: string | undefined) =>
    fetch(`${consoleUrl}/`, { headers: { cookie: cookie ?? "" }, redirect: "manual" })
  expect((await open(first.cookie)).status).toBe(200)
  const second = await signIn(user.email, PASSWORD, newIp(), first.cookie)
  expect(second.status).toBe(303)
  expect(second.cookie).not.toBe(first.cookie)
  expect((await open(first.cookie)).status).toBe(303)
  expect((await open(second.cookie)).status).toBe(200)
  // A failed sign-in ends nothing.
  expect((await signIn(user.email, "wrong password guess", newIp(), second.cookie)).status).toBe(401)
  expect((await open(second.cookie)).status).toBe(200)
}, 60_000)

test("a console log line never holds a set-password token (the path is redacted)", () => {
  const token = "Zq3xV9-abcDEF_0123456789abcdefghijklmnopqrs"
  for (const url of [
    `/set-password/${token}`,
    `/set-password/${token}?x=1`,
    `http://console.test/set-password/${token}#frag`,
    `/SET-PASSWORD/${token}/extra`,
  ]) {
    const logged = redactPath(url)
    expect(logged).not.toContain(token)
    expect(logged.toLowerCase()).toContain("/set-password/…")
  }
  expect(redactPath("/incidents/inc_1?flash=abc")).toBe("/incidents/inc_1?flash=abc")
})

test("the per-IP sign-in throttle counts an IPv6 client per /64, as the API's rate limiter does", async () => {
  const prefix = "2001:db8:77:1"
  for (let i = 0; i < 20; i++) {
    const answer = await signIn(`v6-${i}@sec.example`, "wrong password guess", `${prefix}::${(i + 1).toString(16)}`)
    expect(answer.status).toBe(401)
  }
  // Another address of the same /64, another email: throttled; another /64: not.
  const same = await signIn("v6-next@sec.example", "wrong password guess", `${prefix}:ffff:1:2:3`)
  expect(same.status).toBe(429)
  expect(Number(same.response.headers.get("retry-after"))).toBeGreaterThan(0)
  expect((await signIn("v6-next@sec.example", "wrong password guess", "2001:db8:77:2::1")).status).toBe(401)
}, 120_000)
