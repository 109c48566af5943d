import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AdminActor, orgUser } from "../../src/admin/actor.ts"
import { IncidentAdmin } from "../../src/admin/IncidentAdmin.ts"
import { JudgementAdmin } from "../../src/admin/JudgementAdmin.ts"
import { registeredRoutes } from "../../src/console/app.ts"
import { NO_SETTINGS_TEXT, READ_ONLY_TEXT } from "../../src/console/refusals.ts"
import { mayUse, ROUTE_ROLES, type RouteRole, tableMismatches } from "../../src/console/routeRoles.ts"
import type { Role } from "../../src/repos/ConsoleUsersRepo.ts"
import { launchBrowser, seriousAccessibilityViolations } from "../support/browser.ts"
import { consoleUser, cookieOf, freePort, signedIn } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import {
  addIgnoreRule,
  createChannel,
  createKey,
  createSensor,
  createTenant,
  createUser,
  idOf,
  listUsers,
} from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The console's role table (src/console/routeRoles.ts) walked on the real server: every route the console registers
 * is in the table exactly once, and every route answers a viewer, an analyst, an administrator and a request without a
 * session as the table says. Pages: 200 to whom the table allows, the 403 page saying why to the others, sign-in to
 * no session. Actions, each with a valid CSRF token: refused with 403 and nothing written (the audit log and the
 * incident unchanged) for the roles the table refuses, let through for the others. A viewer's pages have none of the
 * forms a viewer cannot use, and no Settings.
 */

const RUN = Date.now().toString(36)
const PASSWORD = "a viewer reads and changes nothing"
const SOURCE_IP = "192.0.2.61"
const ROLES: ReadonlyArray<Role> = ["viewer", "analyst", "admin"]
const EMAIL: Record<Role, string> = {
  viewer: `viewer-${RUN}@roles.example`,
  analyst: `analyst-${RUN}@roles.example`,
  admin: `admin-${RUN}@roles.example`,
}

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let incidentId: string
const sessions: Partial<Record<Role, { cookie: string; csrf: string }>> = {}
/** The id each `:id` of a path stands for, by the path's start; `:verb` by the same. */
let ids: Record<string, string>

const post = (path: string, fields: Record<string, string>, cookie: string) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams(fields),
  })

const getPage = (path: string, cookie?: string) =>
  fetch(`${consoleUrl}${path}`, { redirect: "manual", headers: cookie === undefined ? {} : { cookie } })

/** A new session of the user, signed in through the sign-in form: its cookie and its forms' CSRF token. */
const signIn = async (email: string) => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const formCsrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const done = await post(
    "/sign-in",
    { csrf: formCsrf, email, password: PASSWORD, next: "/" },
    cookieOf(form, "__Host-form") ?? "",
  )
  expect(done.status).toBe(303)
  const cookie = cookieOf(done, "__Host-session") ?? ""
  const home = await getPage("/", cookie)
  expect(home.status).toBe(200)
  const csrf = /name="csrf" value="([^"]+)"/.exec(await home.text())?.[1] ?? ""
  expect(csrf).not.toBe("")
  return { cookie, csrf }
}

const session = (role: Role) => {
  const s = sessions[role]
  if (s === undefined) throw new Error(`no ${role} session`)
  return s
}

const VERBS: ReadonlyArray<readonly [string, string]> = [
  ["/settings/users/", "reset"],
  ["/settings/alerts/channels/", "disable"],
  ["/settings/sensors/", "disable"],
]

/** The path of a route with its parameters filled in with this organization's rows (or an unknown token). */
const pathOf = (route: RouteRole): string => {
  const prefix = Object.keys(ids)
    .filter((p) => route.path.startsWith(p))
    .sort((a, b) => b.length - a.length)[0]
  return route.path
    .replace(":token", "no-such-token-0123456789")
    .replace(":ip", SOURCE_IP)
    .replace(":verb", VERBS.find(([p]) => route.path.startsWith(p))?.[1] ?? "none")
    .replace(":id", prefix === undefined ? "none" : (ids[prefix] as string))
}

/** A form each action would accept from a role allowed to use it (besides the CSRF token). */
const fieldsOf = (path: string): Record<string, string> => {
  if (path.endsWith("/close")) return { reason: "resolved", note: "closed by the role table's test" }
  if (path.endsWith("/notes")) return { note: "a note from the role table's test" }
  if (path.endsWith("/assign")) return { assignee: "" }
  if (path === "/incidents/triage") return { ids: incidentId, action: "acknowledge", back: "/incidents" }
  if (path === "/settings/api/keys") return { name: "from the role test", scope: "incidents:read" }
  if (path === "/settings/api/tlp") return { tlp: "red" }
  if (path === "/settings/users") return { email: `new-${RUN}@roles.example`, role: "viewer" }
  if (path === "/settings/bait") return { username: `bait-${RUN}`, password: "planted-secret", label: "role test" }
  if (path === "/settings/sensors") return { name: `sensor-${RUN}`, profile: "linux-server" }
  if (path === "/settings/retention") return { events: "30 days" }
  return {}
}

const auditCount = () =>
  db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ n: number }>`select count(*)::int as n from audit_log where org_id = ${orgId}`
      return row?.n ?? 0
    }),
  )

/** The 403 page's words for a role the table refuses (an administrator's routes, or the analyst's to a viewer). */
const refusalOf = (route: RouteRole): string =>
  route.who === "admin"
    ? "Only an administrator"
    : route.method === "GET" && route.path.startsWith("/settings")
      ? NO_SETTINGS_TEXT
      : READ_ONLY_TEXT

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  // A channel on a loopback address can be made (nothing is sent to it).
  server = await startServer({
    env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl, WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }),
  })
  db = testDatabase(server.env)
  const tenant = await createTenant(db, `Role table ${RUN}`)
  orgId = tenant.orgId
  const sensor = await createSensor(db, orgId, "roles-web-01")
  const spareSensor = await createSensor(db, orgId, "roles-spare")
  const answer = await ingest(server.ingestUrl, "events", sensor.token as string, [
    nativeEvent({ sourceIp: SOURCE_IP }),
  ])
  expect(answer.status).toBe(200)
  incidentId = answer.body.results[0].incidentId
  for (const role of ROLES)
    await consoleUser(server.env, consoleUrl, { orgId, email: EMAIL[role], role, password: PASSWORD })
  const spareUser = await createUser(db, orgId, `spare-${RUN}@roles.example`, "analyst")
  const key = await createKey(db, orgId, "incidents:read")
  const channel = await createChannel(db, orgId, "https://127.0.0.1:9/roles")
  const rule = await addIgnoreRule(db, orgId, { source: "198.51.100.0/24", note: "role test" })
  const bait = await db.run(
    Effect.provideService(
      Effect.flatMap(JudgementAdmin, (j) => j.baitAdd(orgId, { username: `kept-${RUN}`, password: "pw-1" })),
      AdminActor,
      { _tag: "Operator", id: "cli", ip: null },
    ),
  )
  ids = {
    "/incidents/": incidentId,
    "/settings/api/keys/": key.id,
    "/settings/users/": spareUser.id,
    "/settings/bait/": bait.id,
    "/settings/ignore/": rule.id,
    "/settings/alerts/channels/": channel.id,
    "/settings/alerts/deliveries/": "dlv_none",
    "/settings/sensors/": spareSensor.id,
    "/account/sessions/": "ses_none",
  }
  for (const role of ROLES) sessions[role] = await signIn(EMAIL[role])
}, 180_000)

afterAll(async () => {
  await shutdown(server, db)
})

test("every route the console registers is in the role table exactly once, and nothing else is", () => {
  expect(registeredRoutes.length).toBeGreaterThan(0)
  expect(tableMismatches(registeredRoutes)).toEqual([])
  expect(registeredRoutes.length).toBe(ROUTE_ROLES.length)
  expect(server.logs.some((line) => line.includes("the role table disagree"))).toBe(false)
  // The comparison itself: a route left out, one the console does not have, one listed twice are each named.
  const some = ROUTE_ROLES.slice(1).map((r) => ({ method: r.method, path: r.path }))
  expect(tableMismatches([...some, { method: "GET", path: "/not-a-route" }]).length).toBe(2)
})

test("the role table orders the roles: a viewer reads, an analyst also triages, an administrator does everything", () => {
  expect(ROLES.filter((r) => mayUse(r, "public"))).toEqual(["viewer", "analyst", "admin"])
  expect(ROLES.filter((r) => mayUse(r, "viewer"))).toEqual(["viewer", "analyst", "admin"])
  expect(ROLES.filter((r) => mayUse(r, "analyst"))).toEqual(["analyst", "admin"])
  expect(ROLES.filter((r) => mayUse(r, "admin"))).toEqual(["admin"])
  // Every settings page is closed to a viewer, and every change but signing out and their own account's (their
  // sessions, their two-factor codes).
  for (const r of ROUTE_ROLES.filter((x) => x.method === "GET" && x.path.startsWith("/settings"))) {
    expect([r.path, mayUse("viewer", r.who)]).toEqual([r.path, false])
  }
  const ownAccount = (path: string) => path === "/sign-out" || path.startsWith("/account/")
  for (const r of ROUTE_ROLES.filter((x) => x.method === "POST" && x.who !== "public" && !ownAccount(x.path))) {
    expect([r.path, mayUse("viewer", r.who)]).toEqual([r.path, false])
  }
})

test("every page answers each role as the table says, and sends a request without a session to sign in", async () => {
  const answers: Array<string> = []
  for (const route of ROUTE_ROLES.filter((r) => r.method === "GET")) {
    const path = pathOf(route)
    const anonymous = await getPage(path)
    if (route.who === "public") {
      expect([path, anonymous.status < 500, anonymous.status !== 401 && anonymous.status !== 403]).toEqual([
        path,
        true,
        true,
      ])
      expect(anonymous.headers.get("location") ?? "").not.toStartWith("/sign-in?next=")
      await anonymous.body?.cancel()
      continue
    }
    // The live check of the incident list answers a script, with 401; every other page sends to sign-in.
    if (path === "/live/incidents") expect(anonymous.status).toBe(401)
    else {
      expect([path, anonymous.status]).toEqual([path, 303])
      expect(anonymous.headers.get("location") ?? "").toStartWith("/sign-in?next=")
    }
    await anonymous.body?.cancel()
    for (const role of ROLES) {
      const res = await getPage(path, session(role).cookie)
      const body = await res.text()
      if (mayUse(role, route.who)) {
        const expected = path === "/settings" ? 303 : 200
        if (res.status !== expected) answers.push(`${role} GET ${path}: ${res.status}, expected ${expected}`)
      } else if (res.status !== 403 || !body.includes(refusalOf(route))) {
        answers.push(`${role} GET ${path}: ${res.status}, expected 403 saying "${refusalOf(route)}"`)
      }
    }
  }
  expect(answers).toEqual([])
}, 120_000)

test("every action refuses the roles the table refuses with 403 and writes nothing, and lets the others through", async () => {
  const answers: Array<string> = []
  for (const route of ROUTE_ROLES.filter((r) => r.method === "POST")) {
    const path = pathOf(route)
    if (route.who === "public") {
      // No session needed: never the expired-session answer nor a sign-in redirect (the form's own checks apply).
      const res = await post(path, {}, "")
      expect([path, res.status !== 401, (res.headers.get("location") ?? "").startsWith("/sign-in?next=")]).toEqual([
        path,
        true,
        false,
      ])
      await res.body?.cancel()
      continue
    }
    const anonymous = await post(path, fieldsOf(path), "")
    expect([path, anonymous.status]).toEqual([path, 401])
    await anonymous.body?.cancel()
    const before = await auditCount()
    for (const role of ROLES.filter((r) => !mayUse(r, route.who))) {
      const s = session(role)
      const res = await post(path, { ...fieldsOf(path), csrf: s.csrf }, s.cookie)
      const body = await res.text()
      if (res.status !== 403 || !body.includes(refusalOf(route))) {
        answers.push(`${role} POST ${path}: ${res.status}, expected 403 saying "${refusalOf(route)}"`)
      }
    }
    const after = await auditCount()
    if (after !== before) answers.push(`POST ${path}: ${after - before} audit rows written by refused requests`)
    // The least role the table allows: let through (a 303 to the page with its notice, or the form's own answer).
    const allowed = ROLES.find((r) => mayUse(r, route.who)) as Role
    // Signing out ends the session it is sent with: a session of its own.
    const s = path === "/sign-out" ? await signIn(EMAIL[allowed]) : session(allowed)
    const res = await post(path, { ...fieldsOf(path), csrf: s.csrf }, s.cookie)
    if (res.status === 401 || res.status === 403)
      answers.push(`${allowed} POST ${path}: ${res.status}, expected through`)
    await res.body?.cancel()
  }
  expect(answers).toEqual([])
}, 120_000)

test("an analyst's triage is done; a viewer's is refused with the incident unchanged", async () => {
  const other = await ingest(server.ingestUrl, "events", (await createSensor(db, orgId, "roles-two")).token as string, [
    nativeEvent({ sourceIp: "192.0.2.62" }),
  ])
  const id = other.body.results[0].incidentId as string
  const viewer = session("viewer")
  for (const [path, fields] of [
    [`/incidents/${id}/acknowledge`, {}],
    [`/incidents/${id}/notes`, { note: "viewer note" }],
    [`/incidents/${id}/close`, { reason: "resolved" }],
  ] as const) {
    expect((await post(path, { ...fields, csrf: viewer.csrf }, viewer.cookie)).status).toBe(403)
  }
  const unchanged = await (await getPage(`/incidents/${id}`, viewer.cookie)).text()
  expect(unchanged).toContain("Not yet")
  expect(unchanged).not.toContain("viewer note")
  const analyst = session("analyst")
  const closed = await post(`/incidents/${id}/close`, { reason: "resolved", csrf: analyst.csrf }, analyst.cookie)
  expect(closed.status).toBe(303)
  const page = await (await getPage(`/incidents/${id}`, viewer.cookie)).text()
  expect(page).toContain('<span class="status status-closed">closed</span>')
}, 60_000)

test("the incident service refuses a viewer in depth, whatever the console's guards", async () => {
  const users = await listUsers(db, orgId)
  const viewerId = users.find((u) => u.email === EMAIL.viewer)?.id as string
  const asViewer = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.provideService(
      effect,
      AdminActor,
      orgUser({ id: idOf("consoleUser", viewerId), ip: null, orgId: idOf("organization", orgId), role: "viewer" }),
    )
  const tries = [
    Effect.flatMap(IncidentAdmin, (a) => a.close(incidentId, { reason: "resolved" })),
    Effect.flatMap(IncidentAdmin, (a) => a.addNote(incidentId, "from a viewer")),
    Effect.flatMap(IncidentAdmin, (a) => a.acknowledge(orgId, [incidentId])),
    Effect.flatMap(IncidentAdmin, (a) => a.assign(orgId, [incidentId], null)),
    Effect.flatMap(IncidentAdmin, (a) => a.closeBulk(orgId, {}, { reason: "resolved" })),
  ]
  for (const effect of tries) {
    const failure = await db.run(
      Effect.flip(asViewer(effect as Effect.Effect<unknown, { _tag: string }, IncidentAdmin>)),
    )
    expect(failure).toMatchObject({ _tag: "Forbidden", reason: "readOnly" })
  }
}, 60_000)

test("a viewer's pages have no triage forms and no Settings; an analyst's have them", async () => {
  const viewer = await (await getPage(`/incidents/${incidentId}`, session("viewer").cookie)).text()
  for (const form of ["/close", "/notes", "/acknowledge", "/assign"]) {
    expect(viewer).not.toContain(`action="/incidents/${incidentId}${form}"`)
  }
  expect(viewer).not.toContain('href="/settings/api"')
  expect(viewer).toContain('action="/sign-out"')
  const list = await (await getPage("/incidents", session("viewer").cookie)).text()
  expect(list).not.toContain('action="/incidents/triage"')
  expect(list).not.toContain('name="ids"')
  expect(list).not.toContain('action="/incidents/bulk-close"')
  const analyst = await (await getPage(`/incidents/${incidentId}`, session("analyst").cookie)).text()
  expect(analyst).toContain(`action="/incidents/${incidentId}/notes"`)
  expect(analyst).toContain('href="/settings/api"')
}, 60_000)

test("in a browser, a viewer's incident page shows no close, note, acknowledge or assign form and no Settings, accessibly", async () => {
  const browser = await launchBrowser()
  try {
    const { page, watch } = await signedIn(browser, consoleUrl, EMAIL.viewer, PASSWORD)
    await page.goto(`${consoleUrl}/incidents/${incidentId}`)
    expect(await page.locator("h1").count()).toBe(1)
    for (const selector of [
      "form[action$='/close']",
      "form[action$='/notes']",
      "form[action$='/acknowledge']",
      "form[action$='/assign']",
      "#close",
    ]) {
      expect([selector, await page.locator(selector).count()]).toEqual([selector, 0])
    }
    expect(await page.locator("nav[aria-label=Main] a", { hasText: "Settings" }).count()).toBe(0)
    expect(await page.locator("nav[aria-label=Main] a", { hasText: "Incidents" }).count()).toBe(1)
    expect(await seriousAccessibilityViolations(page)).toEqual([])
    expect(watch.errors).toEqual([])
  } finally {
    await browser.close()
  }
}, 120_000)
