import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { incidentCsvRecord, withCloseNotes } from "../../src/console/incidents/csv.ts"
import { triageBack } from "../../src/console/incidents/routes.tsx"
import { IncidentsRepo } from "../../src/repos/IncidentsRepo.ts"
import { presentIncidentSummary } from "../../src/repos/present.ts"
import type { Browser, Page, PageWatch } from "../support/browser.ts"
import { adminAndAnalyst, csrfOf, freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import {
  createSensor,
  createTenant,
  createUser,
  disableUser,
  get,
  idOf,
  listUsers,
  seedIncident,
} from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Acknowledge and assign in the console, on the real server and database, from a real Chromium session: one
 * incident or many from the list, by analysts and admins; another organization's ids, a disabled assignee, a missing
 * CSRF token and a foreign "back" address are refused with nothing written; the history and the audit say who did
 * what; the bulk close's preview lists exactly what the close then closes; the CSV carries the triage columns.
 */

const RUN = Date.now().toString(36)
const ADMIN_EMAIL = `lead-${RUN}@assign.example`
const ANALYST_EMAIL = `analyst-${RUN}@assign.example`
const PASSWORD = "correct horse battery staple"

let server: RunningServer
let db: TestDatabase
let browser: Browser
let consoleUrl: string
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }
let foreignIncident: string
let admin: { page: Page; watch: PageWatch }
let analyst: { page: Page; watch: PageWatch }
let analystId: string
let adminId: string

const newIncident = async (sourceIp: string) => {
  const res = await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp }))
  expect(res.status).toBe(200)
  return res.body.results[0].incidentId as string
}

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Assignment ${RUN}`)
  sensor = await createSensor(db, tenant.orgId, "dmz-web-01")
  const other = await createTenant(db, `Other ${RUN}`)
  const otherSensor = await createSensor(db, other.orgId, "other-01")
  const res = await ingest(server.ingestUrl, "events", otherSensor.token, nativeEvent({ sourceIp: "192.0.2.201" }))
  foreignIncident = res.body.results[0].incidentId
  ;({ browser, admin, analyst } = await adminAndAnalyst(server.env, consoleUrl, {
    orgId: tenant.orgId,
    admin: ADMIN_EMAIL,
    analyst: ANALYST_EMAIL,
    password: PASSWORD,
  }))
  const users = await listUsers(db, tenant.orgId)
  analystId = users.find((u) => u.email === ANALYST_EMAIL)?.id as string
  adminId = users.find((u) => u.email === ADMIN_EMAIL)?.id as string
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

/**
 * A form POSTed from the signed-in page (its cookies, its origin), fields in order so a key may repeat, following the
 * 303: the status, the path and query it ended on, and the notice shown there.
 */
const post = (page: Page, path: string, fields: ReadonlyArray<readonly [string, string]>) =>
  page.evaluate(
    async ([p, f]) => {
      const res = await fetch(p as string, {
        method: "POST",
        body: new URLSearchParams(f as Array<[string, string]>),
        redirect: "follow",
      })
      const text = await res.text()
      const url = new URL(res.url)
      url.searchParams.delete("flash")
      const notice = /<div[^>]*class="[^"]*notice-(?:ok|error)[^"]*"[^>]*>([\s\S]*?)<\/div>/.exec(text)?.[1] ?? ""
      return {
        status: res.status,
        redirected: res.redirected,
        at: `${url.pathname}${url.search}`,
        notice: notice.replace(/<[^>]+>/g, "").trim(),
      }
    },
    [path, fields] as const,
  )

const signedCsrf = async (page: Page) => {
  await page.goto(`${consoleUrl}/incidents`)
  return csrfOf(page)
}

const incident = async (id: string) => (await get(server.url, `/v1/incidents/${id}`, tenant.key)).body

const sqlRows = <A extends object>(query: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, query))

const triageRows = (ids: ReadonlyArray<string>) =>
  sqlRows(
    (sql) => sql<{ incidentId: string; kind: string; actor: string; assigneeUserId: string | null }>`
      select incident_id, kind, actor, assignee_user_id from incident_triage
      where incident_id in ${sql.in([...ids])} order by at, id`,
  )

const auditRows = (action: string) =>
  sqlRows(
    (sql) => sql<{ actor: string; target: string; detail: string | null }>`
      select actor, target, detail from audit_log where org_id = ${tenant.orgId} and action = ${action} order by id`,
  )

test("an analyst acknowledges one incident: the first acknowledgement stands, in the history and the audit", async () => {
  const id = await newIncident("198.51.100.60")
  const { page, watch } = analyst
  const csrf = await signedCsrf(page)
  const first = await post(page, `/incidents/${id}/acknowledge`, [["csrf", csrf]])
  expect(first).toMatchObject({ status: 200, redirected: true, at: `/incidents/${id}` })
  expect(first.notice).toBe("Incident acknowledged.")
  const acknowledgedAt = (await incident(id)).acknowledgedAt
  expect(typeof acknowledgedAt).toBe("string")
  // The admin's later acknowledgement changes nothing and is not recorded.
  const again = await post(admin.page, `/incidents/${id}/acknowledge`, [["csrf", await signedCsrf(admin.page)]])
  expect(again.notice).toBe("Already acknowledged: the first acknowledgement stands.")
  expect((await incident(id)).acknowledgedAt).toBe(acknowledgedAt)
  expect(await triageRows([id])).toEqual([
    { incidentId: id, kind: "acknowledged", actor: analystId, assigneeUserId: null },
  ])
  expect((await auditRows("incident.acknowledge")).filter((a) => a.target === id)).toEqual([
    { actor: analystId, target: id, detail: null },
  ])
  await page.goto(`${consoleUrl}/incidents/${id}`)
  const steps = await page.$$eval(".history li", (lis) => lis.map((li) => li.textContent ?? ""))
  expect(steps).toHaveLength(2)
  expect(steps[0]).toContain("Created")
  expect(steps[1]?.replace(/^.*— /s, "")).toBe(`Acknowledged by ${ANALYST_EMAIL}`)
  expect(watch.errors).toEqual([])
})

test("an admin assigns, re-assigns and unassigns one incident; the same owner again writes nothing", async () => {
  const id = await newIncident("198.51.100.61")
  const csrf = await signedCsrf(admin.page)
  const assigned = await post(admin.page, `/incidents/${id}/assign`, [
    ["csrf", csrf],
    ["assignee", analystId],
  ])
  expect(assigned).toMatchObject({ at: `/incidents/${id}`, notice: `Incident assigned to ${ANALYST_EMAIL}.` })
  expect((await incident(id)).assignee).toBe(ANALYST_EMAIL)
  const same = await post(admin.page, `/incidents/${id}/assign`, [
    ["csrf", csrf],
    ["assignee", analystId],
  ])
  expect(same.notice).toBe("Nothing changed: the incident already had that owner.")
  // The analyst takes it over for the admin, then gives it up.
  const analystCsrf = await signedCsrf(analyst.page)
  await post(analyst.page, `/incidents/${id}/assign`, [
    ["csrf", analystCsrf],
    ["assignee", adminId],
  ])
  expect((await incident(id)).assignee).toBe(ADMIN_EMAIL)
  const unassigned = await post(analyst.page, `/incidents/${id}/assign`, [
    ["csrf", analystCsrf],
    ["assignee", ""],
  ])
  expect(unassigned.notice).toBe("Incident unassigned.")
  expect((await incident(id)).assignee).toBeNull()
  expect((await triageRows([id])).map((r) => [r.kind, r.actor, r.assigneeUserId])).toEqual([
    ["assigned", adminId, analystId],
    ["assigned", analystId, adminId],
    ["unassigned", analystId, null],
  ])
  expect((await auditRows("incident.assign")).filter((a) => a.target === id).map((a) => a.detail)).toEqual([
    `assigned to ${ANALYST_EMAIL} (${analystId})`,
    `assigned to ${ADMIN_EMAIL} (${adminId})`,
    "unassigned",
  ])
  await admin.page.goto(`${consoleUrl}/incidents/${id}`)
  const steps = await admin.page.$$eval(".history li", (lis) => lis.map((li) => li.textContent ?? ""))
  expect(steps.slice(1).map((s) => s.replace(/^.*— /s, ""))).toEqual([
    `Assigned to ${ANALYST_EMAIL} by ${ADMIN_EMAIL}`,
    `Assigned to ${ADMIN_EMAIL} by ${ANALYST_EMAIL}`,
    `Unassigned by ${ANALYST_EMAIL}`,
  ])
})

test("a disabled user, another organization's user or a made-up id is refused as assignee; nothing written", async () => {
  const id = await newIncident("198.51.100.62")
  const gone = await createUser(db, tenant.orgId, `gone-${RUN}@assign.example`, "analyst")
  await disableUser(db, gone.id)
  const other = await createTenant(db, `Stranger ${RUN}`)
  const stranger = await createUser(db, other.orgId, `stranger-${RUN}@assign.example`, "analyst")
  const csrf = await signedCsrf(analyst.page)
  for (const assignee of [gone.id, stranger.id, "usr_01JZZZZZZZZZZZZZZZZZZZZZZZ", "<script>"]) {
    const refused = await post(analyst.page, `/incidents/${id}/assign`, [
      ["csrf", csrf],
      ["assignee", assignee],
    ])
    expect(refused).toMatchObject({
      at: `/incidents/${id}`,
      notice: "the assignee must be an enabled user of this organization",
    })
  }
  const bulk = await post(analyst.page, "/incidents/triage", [
    ["csrf", csrf],
    ["ids", id],
    ["action", "assign"],
    ["assignee", gone.id],
    ["back", "/incidents?status=open"],
  ])
  expect(bulk).toMatchObject({
    at: "/incidents?status=open",
    notice: "the assignee must be an enabled user of this organization",
  })
  expect(await triageRows([id])).toEqual([])
  expect((await incident(id)).assignee).toBeNull()
})

test("several incidents from the list: acknowledged and assigned at once, back to the list with its filters", async () => {
  const ids = [
    await newIncident("198.51.100.70"),
    await newIncident("198.51.100.71"),
    await newIncident("198.51.100.72"),
  ]
  const csrf = await signedCsrf(analyst.page)
  const back = "/incidents?status=open&severity=medium"
  // One of them acknowledged already: counted apart, its first acknowledgement kept.
  await post(analyst.page, `/incidents/${ids[0]}/acknowledge`, [["csrf", csrf]])
  const acknowledged = await post(analyst.page, "/incidents/triage", [
    ["csrf", csrf],
    ...ids.map((id) => ["ids", id] as const),
    ["action", "acknowledge"],
    ["back", back],
  ])
  expect(acknowledged).toMatchObject({
    at: back,
    notice: "2 incidents acknowledged. 1 incident had been acknowledged already.",
  })
  for (const id of ids) expect((await incident(id)).acknowledgedAt).not.toBeNull()
  const assigned = await post(admin.page, "/incidents/triage", [
    ["csrf", await signedCsrf(admin.page)],
    ...ids.map((id) => ["ids", id] as const),
    ["ids", ids[0] as string],
    ["action", "assign"],
    ["assignee", analystId],
    ["back", back],
  ])
  expect(assigned).toMatchObject({ at: back, notice: `3 incidents assigned to ${ANALYST_EMAIL}.` })
  for (const id of ids) expect((await incident(id)).assignee).toBe(ANALYST_EMAIL)
  expect((await triageRows(ids)).filter((r) => r.kind === "assigned")).toHaveLength(3)
  expect((await auditRows("incident.acknowledge")).filter((a) => ids.includes(a.target))).toHaveLength(3)
})

test("the bulk form is bounded and local: 101 ids, no ids, a bad action, another organization's id; back stays on /incidents", async () => {
  const id = await newIncident("198.51.100.80")
  const csrf = await signedCsrf(analyst.page)
  const tooMany = await post(analyst.page, "/incidents/triage", [
    ["csrf", csrf],
    ...Array.from({ length: 101 }, () => ["ids", id] as const),
    ["action", "acknowledge"],
    ["back", "/incidents"],
  ])
  expect(tooMany).toMatchObject({
    at: "/incidents",
    notice: "Choose at most 100 incidents at once; nothing was changed.",
  })
  const none = await post(analyst.page, "/incidents/triage", [
    ["csrf", csrf],
    ["action", "acknowledge"],
    ["back", "/incidents"],
  ])
  expect(none.notice).toBe("Choose at least one incident first.")
  const badAction = await post(analyst.page, "/incidents/triage", [
    ["csrf", csrf],
    ["ids", id],
    ["action", "close"],
    ["back", "/incidents"],
  ])
  expect(badAction.notice).toBe("Choose what to do with the incidents: acknowledge or assign.")
  // Another organization's incident beside one of ours: the 404 page, and neither is changed.
  const foreign = await post(analyst.page, "/incidents/triage", [
    ["csrf", csrf],
    ["ids", id],
    ["ids", foreignIncident],
    ["action", "acknowledge"],
    ["back", "/incidents"],
  ])
  expect(foreign.status).toBe(404)
  expect(await triageRows([id, foreignIncident])).toEqual([])
  expect((await incident(id)).acknowledgedAt).toBeNull()
  // Another site, another page or a path that only starts like the list: back to the plain list.
  for (const back of [
    "https://evil.example/incidents",
    "//evil.example/incidents",
    "/\\evil.example/incidents",
    "/incidents/../settings/keys",
    "/incidents.csv",
    "/settings",
    "javascript:alert(1)",
  ]) {
    const sent = await post(analyst.page, "/incidents/triage", [
      ["csrf", csrf],
      ["ids", id],
      ["action", "acknowledge"],
      ["back", back],
    ])
    expect({ back, at: sent.at }).toEqual({ back, at: "/incidents" })
  }
  expect(triageBack("/incidents?status=open&flash=old")).toBe("/incidents?status=open")
  expect(triageBack("/incidents?q=%3Cscript%3E")).toBe("/incidents?q=%3Cscript%3E")
})

test("without the session's CSRF token, or for another organization's incident, each triage form is refused", async () => {
  const id = await newIncident("198.51.100.81")
  const { page } = analyst
  const csrf = await signedCsrf(page)
  for (const [path, fields] of [
    [`/incidents/${id}/acknowledge`, []],
    [`/incidents/${id}/assign`, [["assignee", analystId]]],
    [
      "/incidents/triage",
      [
        ["ids", id],
        ["action", "acknowledge"],
      ],
    ],
  ] as const) {
    expect((await post(page, path, fields)).status).toBe(403)
    expect((await post(page, path, [["csrf", "forged"], ...fields])).status).toBe(403)
  }
  expect((await post(page, `/incidents/${foreignIncident}/acknowledge`, [["csrf", csrf]])).status).toBe(404)
  expect(
    (
      await post(page, `/incidents/${foreignIncident}/assign`, [
        ["csrf", csrf],
        ["assignee", analystId],
      ])
    ).status,
  ).toBe(404)
  expect(await triageRows([id, foreignIncident])).toEqual([])
  expect(await incident(id)).toMatchObject({ acknowledgedAt: null, assignee: null })
})

test("the bulk close preview lists the first 50 it would close, counts the rest, and the close closes exactly those", async () => {
  const trap = await createSensor(db, tenant.orgId, "preview-trap")
  const old = Date.now() - 20 * 86_400_000
  const seeded: Array<string> = []
  for (let i = 0; i < 53; i++) {
    const made = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: trap.id,
      sourceIp: `203.0.113.${i + 1}`,
      events: [{ time: new Date(old + i * 60_000), type: "ssh.login_attempt", severity: "low" }],
    })
    seeded.push(made.incident.id)
  }
  // Not matching: recent.
  await seedIncident(db, {
    orgId: tenant.orgId,
    sensorId: trap.id,
    sourceIp: "203.0.113.200",
    events: [{ time: new Date(Date.now() - 60_000), type: "ssh.login_attempt", severity: "low" }],
  })
  const { page, watch } = analyst
  await page.goto(`${consoleUrl}/incidents/bulk-close?sensor=${trap.id}&olderThan=7d`)
  expect(await page.textContent("h1")).toBe("Close 53 incidents?")
  const listed = await page.$$eval(".triage-preview tbody tr a", (as) => as.map((a) => a.getAttribute("href")))
  // Least recently seen first, as the close closes them.
  expect(listed).toEqual(seeded.slice(0, 50).map((id) => `/incidents/${id}`))
  expect((await page.textContent("#bulk-more"))?.trim()).toBe("and 3 more")
  await page.selectOption("#bulk-reason", "false_positive")
  await Promise.all([
    page.waitForNavigation(),
    page.click("form[method=post][action='/incidents/bulk-close'] button[type=submit]"),
  ])
  expect(await page.textContent(".notice-ok")).toContain("53 incidents closed.")
  const closed = await sqlRows(
    (sql) => sql<{ id: string; closeReason: string | null }>`
      select id, close_reason from incidents where sensor_id = ${trap.id} and status = 'closed' order by id`,
  )
  expect(closed.map((r) => r.id)).toEqual([...seeded].sort())
  expect(new Set(closed.map((r) => r.closeReason))).toEqual(new Set(["false_positive"]))
  // A small match lists every incident and counts none beyond.
  const few = await createSensor(db, tenant.orgId, "preview-few")
  const one = await seedIncident(db, {
    orgId: tenant.orgId,
    sensorId: few.id,
    sourceIp: "203.0.113.250",
    events: [{ time: new Date(old), type: "ssh.login_attempt", severity: "low" }],
  })
  await page.goto(`${consoleUrl}/incidents/bulk-close?sensor=${few.id}`)
  expect(await page.$$eval(".triage-preview tbody tr a", (as) => as.map((a) => a.getAttribute("href")))).toEqual([
    `/incidents/${one.incident.id}`,
  ])
  expect(await page.$("#bulk-more")).toBeNull()
  expect(watch.errors).toEqual([])
})

test("the incidents CSV carries the close reason, the assignee, the acknowledgement and the latest close note", async () => {
  const id = await newIncident("198.51.100.90")
  const csrf = await signedCsrf(admin.page)
  await post(admin.page, `/incidents/${id}/acknowledge`, [["csrf", csrf]])
  await post(admin.page, `/incidents/${id}/assign`, [
    ["csrf", csrf],
    ["assignee", analystId],
  ])
  const note = '=HYPERLINK("http://evil.example") closed, "quoted"'
  await post(admin.page, `/incidents/${id}/close`, [
    ["csrf", csrf],
    ["reason", "authorized_test"],
    ["note", note],
  ])
  const api = await incident(id)
  const csv = await admin.page.evaluate(async (path) => (await fetch(path)).text(), "/incidents.csv?status=closed")
  const [header, ...lines] = csv.split("\r\n")
  const columns = (header ?? "").split(",")
  expect(columns.slice(-4)).toEqual(["closeReason", "assignee", "acknowledgedAt", "closeNote"])
  const line = lines.find((l) => l.startsWith(`${id},`)) ?? ""
  expect(line).toContain(`,authorized_test,${ANALYST_EMAIL},${api.acknowledgedAt},`)
  // The exported line ends with the close's note, written safe for a spreadsheet.
  expect(line.endsWith(`,"'=HYPERLINK(""http://evil.example"") closed, ""quoted"""`)).toBe(true)
  // The note of the latest close, read for a page of rows, and written safe for a spreadsheet.
  const record = await db.run(
    Effect.gen(function* () {
      const incidents = yield* IncidentsRepo
      const orgId = idOf("organization", tenant.orgId)
      const row = yield* withCloseNotes(
        incidents.latestCloseNotes,
        orgId,
        Effect.map(incidents.findById(orgId, idOf("incident", id)), (r) => (r._tag === "Some" ? [r.value] : [])),
      )
      const first = row[0]
      if (first === undefined) throw new Error("no row")
      return incidentCsvRecord(presentIncidentSummary(first, consoleUrl), first.closeNote)
    }),
  )
  expect(record.trimEnd().endsWith(`,"'=HYPERLINK(""http://evil.example"") closed, ""quoted"""`)).toBe(true)
  expect(record).toContain(`,authorized_test,${ANALYST_EMAIL},${api.acknowledgedAt},`)
})
