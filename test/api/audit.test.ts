import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { createClient } from "../../src/client/index.ts"
import { AUDIT_BOUNDS } from "../../src/domain/audit.ts"
import { AuditRepo } from "../../src/repos/AuditRepo.ts"
import { admin, adminJson } from "../support/cli.ts"
import { cookieOf } from "../support/console.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createTenant, get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * GET /v1/audit (scope audit:read): every change made in the console or with the admin CLI and every sign-in, success
 * or failure, as the real CLI and the real console write them, filtered by actor, action and time, organization by
 * organization, and never a secret, a token or a password in any row. The feed (/v1/audit/changes) is
 * test/api/auditFeed.test.ts's.
 */

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

const PASSWORD = "correct horse battery staple 7"
const RUN = Date.now().toString(36)
const FORM_CSRF = /name="csrf" value="([^"]+)"/

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  // The console's client address comes from X-Forwarded-For (the test runner is the proxy); channel addresses on
  // 127.0.0.1 pass the address rule without a resolver.
  server = await startServer({
    env: await testEnv({ TRUST_PROXY: "127.0.0.1/32,::1/128", WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }),
  })
  db = testDatabase(server.env)
}, 120_000)

afterAll(() => shutdown(server, db))

/** A console form POST from `ip`, as a browser sends it (same origin). */
const post = (path: string, fields: Record<string, string>, cookie: string, ip: string) =>
  fetch(`${server.consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      cookie,
      "content-type": "application/x-www-form-urlencoded",
      origin: server.consoleUrl,
      "x-forwarded-for": ip,
    },
    body: new URLSearchParams(fields),
  })

const openForm = async (path: string, cookie = "") => {
  const form = await fetch(`${server.consoleUrl}${path}`, { headers: { cookie } })
  const text = await form.text()
  return { csrf: FORM_CSRF.exec(text)?.[1] ?? "", cookie: cookieOf(form, "__Host-form") ?? "", text }
}

const signIn = async (email: string, password: string, ip: string) => {
  const form = await openForm("/sign-in")
  const response = await post("/sign-in", { csrf: form.csrf, email, password, next: "/" }, form.cookie, ip)
  return { status: response.status, session: cookieOf(response, "__Host-session") }
}

/** Every entry of the list for a query, page by page with the cursor. */
const walkAudit = async (key: string, query: Record<string, string> = {}, limit = 100) => {
  const items: Array<Json> = []
  let cursor: string | undefined
  for (let pages = 0; pages < 1000; pages++) {
    const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) })
    const res = await get(server.url, `/v1/audit?${params}`, key)
    if (res.status !== 200) throw new Error(`audit list answered ${res.status}: ${JSON.stringify(res.body)}`)
    items.push(...res.body.data)
    cursor = res.body.nextCursor ?? undefined
    if (cursor === undefined) return items
  }
  throw new Error("the audit list did not end")
}

const rowsInDatabase = (orgId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ id: string; row: string }>`select id, t::text as row from audit_log t where org_id = ${orgId}`,
    ),
  )

/**
 * One organization as the operator and a console admin use it: keys, a webhook channel and its rotation, a user and
 * the user's password, sign-ins that fail and succeed, a key made in the console, a sign-out. Everything secret that
 * passed is kept, to look for it in the audit rows.
 */
const busyOrganization = async (name: string) => {
  const org = await adminJson(server.env, ["org", "create", "--name", `${name} ${RUN}`])
  const orgId = org.id as string
  const secrets: Array<string> = [PASSWORD]
  const cliKey = await adminJson(server.env, [
    "key",
    "create",
    "--org",
    orgId,
    "--name",
    "siem",
    "--scopes",
    "audit:read",
  ])
  // A key is dsk_<key id>_<secret>, and the secret part may hold "_" itself.
  secrets.push(cliKey.key, (cliKey.key as string).slice(`dsk_${cliKey.id}_`.length))
  const channel = await adminJson(server.env, ["channel", "create", "--org", orgId, "--url", "https://127.0.0.1:9/h"])
  secrets.push(channel.secret)
  const rotated = await adminJson(server.env, ["channel", "rotate", channel.id, "--grace", "1h"])
  secrets.push(rotated.secret)
  // A sensor and its rotated ingest token (dst_<sensor id>_<secret>).
  const sensor = await adminJson(server.env, ["sensor", "create", "--org", orgId, "--name", "web-01"])
  const sensorRotated = await adminJson(server.env, ["sensor", "rotate", sensor.id, "--grace", "1h"])
  for (const token of [sensor.token, sensorRotated.token] as Array<string>) {
    secrets.push(token, token.slice(`dst_${sensor.id}_`.length))
  }
  const email = `audit-admin-${name.toLowerCase()}-${RUN}@example.com`
  const user = await adminJson(server.env, ["user", "create", "--org", orgId, "--email", email, "--role", "admin"])
  const linkToken = (new URL(user.link).pathname.split("/").at(-1) ?? "") as string
  secrets.push(user.link, linkToken)
  // The password set through the one-time link, as the user would.
  const linkPath = new URL(user.link).pathname
  const linkForm = await openForm(linkPath)
  expect(
    (await post(linkPath, { csrf: linkForm.csrf, password: PASSWORD }, linkForm.cookie, "198.18.7.1")).status,
  ).toBe(303)
  // A wrong password, then the right one.
  const wrong = `not the password ${RUN}`
  secrets.push(wrong)
  expect((await signIn(email, wrong, "198.18.7.2")).session).toBeUndefined()
  const signedIn = await signIn(email, PASSWORD, "198.18.7.3")
  const session = signedIn.session ?? ""
  expect(session).not.toBe("")
  secrets.push(session.split("=").slice(1).join("="))
  // A key made in the console: shown once on the page the form leads to.
  const apiPage = await openForm("/settings/api", session)
  const created = await post(
    "/settings/api/keys",
    { csrf: apiPage.csrf, name: "console key", scope: "events:read", expires: "" },
    session,
    "198.18.7.4",
  )
  expect(created.status).toBe(303)
  const shown = await fetch(`${server.consoleUrl}${created.headers.get("location") ?? "/settings/api"}`, {
    headers: { cookie: session },
  })
  const consoleKey = /dsk_key_[0-9A-Z]{26}_([A-Za-z0-9_-]{20,})/.exec(await shown.text())
  expect(consoleKey).not.toBeNull()
  secrets.push(consoleKey?.[0] ?? "", consoleKey?.[1] ?? "")
  const signOutPage = await openForm("/settings/api", session)
  expect((await post("/sign-out", { csrf: signOutPage.csrf }, session, "198.18.7.5")).status).toBe(303)
  const reader = (await createKey(db, orgId, "audit:read")).key
  secrets.push(reader)
  return { orgId, userId: user.id as string, email, reader, secrets, channelId: channel.id as string }
}

let acme: Awaited<ReturnType<typeof busyOrganization>>
let globex: Awaited<ReturnType<typeof busyOrganization>>

beforeAll(async () => {
  ;[acme, globex] = await Promise.all([busyOrganization("Acme"), busyOrganization("Globex")])
}, 120_000)

describe("GET /v1/audit", () => {
  test("every console, CLI and sign-in action of the organization is listed, newest first, with who, from where and to what", async () => {
    const items = await walkAudit(acme.reader)
    const byAction = (action: string) => items.filter((i) => i.action === action)
    const cli = { id: "cli", email: null }
    const person = { id: acme.userId, email: acme.email }
    // Every row the database holds for the organization, and only those, each once.
    const stored = await rowsInDatabase(acme.orgId)
    expect(items.map((i) => i.id).sort()).toEqual(stored.map((r) => r.id).sort())
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length)
    // Newest first.
    const times = items.map((i) => `${i.at} ${i.id}`)
    expect([...times].sort().reverse()).toEqual(times)

    expect(byAction("key.create").map((i) => i.actor)).toEqual([cli, person, cli])
    expect(byAction("webhook.create")).toMatchObject([{ actor: cli, target: acme.channelId, ip: null }])
    expect(byAction("webhook.rotate")).toMatchObject([{ actor: cli, target: acme.channelId, detail: "grace 1h" }])
    expect(byAction("user.create")).toMatchObject([{ actor: cli, target: acme.userId }])
    expect(byAction("sensor.create")).toMatchObject([{ actor: cli }])
    expect(byAction("sensor.rotate")).toMatchObject([{ actor: cli }])
    expect(byAction("user.password_set")).toMatchObject([{ actor: person, ip: "198.18.7.1" }])
    expect(byAction("signin.failed")).toMatchObject([{ actor: person, target: acme.userId, ip: "198.18.7.2" }])
    expect(byAction("signin")).toMatchObject([{ actor: person, ip: "198.18.7.3" }])
    expect(byAction("key.create")[1]).toMatchObject({ ip: "198.18.7.4" })
    expect(byAction("signout")).toMatchObject([{ actor: person, ip: "198.18.7.5" }])
    for (const item of items) {
      expect(Object.keys(item)).toEqual(["id", "actor", "action", "target", "detail", "ip", "at"])
      expect(item.id).toMatch(/^aud_/)
      expect(new Date(item.at).toISOString()).toBe(item.at)
    }
  })

  test("no secret, token or password in any row: not in the API's answer and not in the stored row", async () => {
    for (const org of [acme, globex]) {
      const answer = JSON.stringify(await walkAudit(org.reader))
      const stored = JSON.stringify(await rowsInDatabase(org.orgId))
      for (const secret of org.secrets) {
        expect(secret.length).toBeGreaterThan(8)
        expect({ secret, inAnswer: answer.includes(secret) }).toEqual({ secret, inAnswer: false })
        expect({ secret, inStored: stored.includes(secret) }).toEqual({ secret, inStored: false })
      }
      // Nor the webhook signing secrets' common prefix, nor any key at all.
      expect(answer).not.toContain("whsec_")
      expect(answer).not.toContain("dsk_")
      expect(answer).not.toContain("dst_")
    }
  })

  test("a key sees its own organization's rows only; rows of no organization are in nobody's list", async () => {
    const acmeIds = new Set((await walkAudit(acme.reader)).map((i) => i.id))
    const globexIds = new Set((await walkAudit(globex.reader)).map((i) => i.id))
    expect([...acmeIds].filter((id) => globexIds.has(id))).toEqual([])
    // A sign-in with an address nobody has is refused and audited without an organization.
    const ip = "198.18.9.9"
    expect((await signIn(`nobody-${RUN}@example.com`, PASSWORD, ip)).session).toBeUndefined()
    const orphan = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ id: string; orgId: string | null }>`
          select id, org_id as "orgId" from audit_log where ip = ${ip} and action = 'signin.failed'`,
      ),
    )
    expect(orphan).toMatchObject([{ orgId: null }])
    for (const org of [acme, globex]) {
      const items = await walkAudit(org.reader)
      expect(items.some((i) => i.id === orphan[0]?.id || i.ip === ip)).toBe(false)
    }
  })

  test("filters: actor (cli, a user's id, a user's email in any case), action, from and to, each alone and together", async () => {
    const all = await walkAudit(acme.reader)
    const expectFilter = async (query: Record<string, string>, keep: (i: Json) => boolean) => {
      const got = await walkAudit(acme.reader, query)
      const expected = all.filter(keep)
      expect({ query, ids: got.map((i) => i.id) }).toEqual({ query, ids: expected.map((i) => i.id) })
      return got
    }
    expect((await expectFilter({ actor: "cli" }, (i) => i.actor.id === "cli")).length).toBeGreaterThan(3)
    expect((await expectFilter({ actor: acme.userId }, (i) => i.actor.id === acme.userId)).length).toBe(5)
    await expectFilter({ actor: acme.email.toUpperCase() }, (i) => i.actor.id === acme.userId)
    await expectFilter({ actor: `someone-else-${RUN}@example.com` }, () => false)
    await expectFilter({ actor: globex.userId }, () => false)
    await expectFilter({ action: "key.create" }, (i) => i.action === "key.create")
    await expectFilter({ action: "signin.failed" }, (i) => i.action === "signin.failed")
    await expectFilter({ action: "key.create", actor: "cli" }, (i) => i.action === "key.create" && i.actor.id === "cli")
    // A time window: from is inclusive, to exclusive, on the entry's own time.
    const middle = all[Math.floor(all.length / 2)]
    const newest = all[0]
    await expectFilter({ from: middle.at }, (i) => i.at >= middle.at)
    await expectFilter({ to: middle.at }, (i) => i.at < middle.at)
    await expectFilter({ from: middle.at, to: newest.at }, (i) => i.at >= middle.at && i.at < newest.at)
    // An offset is the same instant.
    const offset = new Date(new Date(middle.at).getTime()).toISOString().replace("Z", "+00:00")
    await expectFilter({ from: offset, actor: "cli" }, (i) => i.at >= middle.at && i.actor.id === "cli")
  })

  test("paging: limit 1 walks the same rows as one page; a cursor is bound to its filters", async () => {
    const whole = await walkAudit(acme.reader, { actor: "cli" })
    const oneByOne = await walkAudit(acme.reader, { actor: "cli" }, 1)
    expect(oneByOne.map((i) => i.id)).toEqual(whole.map((i) => i.id))
    const first = await get(server.url, "/v1/audit?actor=cli&limit=1", acme.reader)
    const cursor = first.body.nextCursor as string
    expect(typeof cursor).toBe("string")
    for (const path of [
      `/v1/audit?actor=${acme.userId}&limit=1&cursor=${encodeURIComponent(cursor)}`,
      `/v1/audit?limit=1&cursor=${encodeURIComponent(cursor)}`,
      `/v1/events?limit=1&cursor=${encodeURIComponent(cursor)}`,
    ]) {
      const key = path.startsWith("/v1/events") ? (await createKey(db, acme.orgId, "events:read")).key : acme.reader
      const res = await get(server.url, path, key)
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 400, code: "invalid_request" })
    }
    // Another organization's key cannot use it either.
    const foreign = await get(
      server.url,
      `/v1/audit?actor=cli&limit=1&cursor=${encodeURIComponent(cursor)}`,
      globex.reader,
    )
    expect(foreign.status).toBe(400)
  })

  test("bad filters are 400 problems naming the parameter", async () => {
    const cases: Array<[string, string]> = [
      ["actor=nobody", "actor"],
      ["actor=usr_notanid", "actor"],
      ["actor=", "actor"],
      [`actor=${"a".repeat(300)}@example.com`, "actor"],
      ["action=Key.Create", "action"],
      ["action=key..create", "action"],
      [`action=${"a".repeat(65)}`, "action"],
      ["action=", "action"],
      ["from=yesterday", "from"],
      ["to=2026-01-01", "to"],
      ["from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"],
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=ten", "limit"],
      ["actor=cli&actor=cli", "actor"],
      ["cursor=", "cursor"],
      ["cursor=abc", "cursor"],
    ]
    for (const [query, parameter] of cases) {
      const res = await get(server.url, `/v1/audit?${query}`, acme.reader)
      expect({ query, status: res.status, type: res.headers.get("content-type") }).toEqual({
        query,
        status: 400,
        type: "application/problem+json; charset=utf-8",
      })
      expect({ query, code: res.body.code, names: String(res.body.detail).includes(parameter) }).toEqual({
        query,
        code: "invalid_request",
        names: true,
      })
    }
  })

  test("scope: 401 without a key or with a wrong one, 403 without audit:read; a key with only audit:read reads the audit trail only", async () => {
    const tenant = await createTenant(db, `Audit scope ${RUN}`)
    const auditOnly = (await createKey(db, tenant.orgId, "audit:read")).key
    for (const path of ["/v1/audit", "/v1/audit/changes"]) {
      const missing = await get(server.url, path)
      expect({ path, status: missing.status, code: missing.body.code }).toEqual({
        path,
        status: 401,
        code: "unauthorized",
      })
      expect((await get(server.url, path, "dsk_nope")).status).toBe(401)
      // The default scopes (incidents:read, events:read) do not read the audit trail.
      const forbidden = await get(server.url, path, tenant.key)
      expect({ path, status: forbidden.status, code: forbidden.body.code }).toEqual({
        path,
        status: 403,
        code: "insufficient_scope",
      })
      expect(forbidden.body.detail).toContain("audit:read")
      expect((await get(server.url, path, auditOnly)).status).toBe(200)
    }
    for (const path of [
      "/v1/incidents",
      "/v1/incidents/changes",
      "/v1/events",
      "/v1/events/changes",
      "/v1/sources/192.0.2.1",
      "/v1/blocklist.txt",
    ]) {
      const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${auditOnly}` } })
      expect({ path, status: res.status }).toEqual({ path, status: 403 })
    }
    const mcp = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${auditOnly}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    })
    expect(mcp.status).toBe(403)
  })

  test("the admin CLI's audit list: the same rows and shape as the API with the same filters; bad filters refused in one line", async () => {
    for (const filters of [
      {},
      { actor: "cli" },
      { actor: acme.email },
      { action: "key.create" },
      { from: "2000-01-01T00:00:00Z", to: "2100-01-01T00:00:00Z" },
    ] as Array<Record<string, string>>) {
      const flags = Object.entries(filters).flatMap(([k, v]) => [`--${k}`, v])
      const printed = await adminJson(server.env, ["audit", "list", "--org", acme.orgId, ...flags, "--limit", "1000"])
      const listed = await walkAudit(acme.reader, filters)
      // The CLI's own `key create` runs add rows: compare what both saw (the list was read after the CLI).
      expect({ filters, rows: printed.filter((p: Json) => listed.some((l) => l.id === p.id)) }).toEqual({
        filters,
        rows: listed.filter((l) => printed.some((p: Json) => p.id === l.id)),
      })
      expect(printed.length).toBeGreaterThan(0)
    }
    const limited = await adminJson(server.env, ["audit", "list", "--org", acme.orgId, "--limit", "2"])
    expect(limited.length).toBe(2)
    const human = await admin(server.env, ["audit", "list", "--org", acme.orgId, "--action", "signin"])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain(`actor=${acme.email}`)
    expect(human.stdout).toContain("action=signin")
    const refusalCases = [
      [["--actor", "nobody"], "--actor must be"],
      [["--action", "Key.Create"], "--action must be"],
      [["--from", "yesterday"], "--from must be"],
      [["--from", "2026-02-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z"], "--from must not be later than --to"],
      [["--limit", "0"], "--limit must be"],
      [["--limit", "1001"], "--limit must be"],
    ] as Array<[Array<string>, string]>
    // The refusals are independent runs of the tool: all at once.
    const [unknown, ...refusals] = await Promise.all([
      admin(server.env, ["audit", "list", "--org", "org_nope"]),
      ...refusalCases.map(([flags]) => admin(server.env, ["audit", "list", "--org", acme.orgId, ...flags])),
    ])
    for (const [i, [flags, message]] of refusalCases.entries()) {
      const refused = refusals[i] as Awaited<ReturnType<typeof admin>>
      expect({ flags, code: refused.code, stdout: refused.stdout }).toEqual({ flags, code: 1, stdout: "" })
      expect(refused.stderr).toMatch(/^error: [^\n]+$/)
      expect(refused.stderr).toContain(message)
    }
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("unknown organization")
  })

  test("every text is bounded: a longer one is cut and ends in …, never in half a character", async () => {
    const tenant = await createTenant(db, `Audit bounds ${RUN}`)
    const reader = (await createKey(db, tenant.orgId, "audit:read")).key
    // As a writer could store them: a detail of 5000 characters with a character outside the BMP at the cut.
    const detail = `${"d".repeat(AUDIT_BOUNDS.detail - 2)}😀${"e".repeat(3000)}`
    const target = "t".repeat(700)
    await db.run(
      Effect.flatMap(AuditRepo, (audit) =>
        audit.record({
          orgId: tenant.orgId as never,
          actor: "cli",
          action: "test.long_texts",
          target,
          ip: null,
          detail,
        }),
      ),
    )
    const [entry] = (await get(server.url, "/v1/audit?action=test.long_texts", reader)).body.data
    expect(entry.detail.length).toBeLessThanOrEqual(AUDIT_BOUNDS.detail)
    expect(entry.detail).toBe(`${"d".repeat(AUDIT_BOUNDS.detail - 2)}…`)
    expect(entry.target).toBe(`${"t".repeat(AUDIT_BOUNDS.target - 1)}…`)
    // The feed shows the same bounded entry.
    await olderWritersEnded(db)
    const feed = (await get(server.url, "/v1/audit/changes", reader)).body.data as Array<Json>
    expect(feed.filter((i) => i.action === "test.long_texts")).toEqual([entry])
  })

  test("the reference documents both endpoints: /openapi.json with the audit:read scope, and the /docs page", async () => {
    const doc = (await get(server.url, "/openapi.json")).body
    for (const path of ["/v1/audit", "/v1/audit/changes"]) {
      expect({ path, security: doc.paths[path].get.security }).toEqual({ path, security: [{ bearer: ["audit:read"] }] })
      expect(doc.paths[path].get.description).toContain("audit:read")
    }
    const names = doc.paths["/v1/audit"].get.parameters.map((p: Json) => p.name).sort()
    expect(names).toEqual(["action", "actor", "cursor", "from", "limit", "to"])
    const entry = doc.components.schemas.AuditEntry
    expect(Object.keys(entry.properties)).toEqual(["id", "actor", "action", "target", "detail", "ip", "at"])
    const html = await (await fetch(`${server.url}/docs`)).text()
    for (const text of [
      "/v1/audit/changes",
      "The audit trail, newest first",
      "Audit entries in the order they were written: the feed for pollers",
    ]) {
      expect(html).toContain(text)
    }
  })

  test("the client lists the audit trail with the same filters (Promise and auto-paging)", async () => {
    const client = createClient({ baseUrl: server.url, apiKey: acme.reader })
    const listed: Array<Json> = []
    for await (const entry of client.audit.list({ actor: "cli", limit: 2 })) listed.push(entry)
    const expected = await walkAudit(acme.reader, { actor: "cli" })
    expect(listed.map((e) => e.id)).toEqual(expected.map((e) => e.id))
    expect(listed[0].at).toBeInstanceOf(Date)
    expect(listed[0].actor).toEqual({ id: "cli", email: null })
    const refused = createClient({ baseUrl: server.url, apiKey: acme.reader, maxRetries: 0 })
    const failure = await (async () => {
      for await (const _ of refused.audit.list({ action: "Bad Action" })) return undefined
    })().catch((error) => error)
    expect({ status: failure.status, code: failure.code }).toEqual({ status: 400, code: "invalid_request" })
  })
})
