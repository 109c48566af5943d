import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { createClient } from "../../src/client/index.ts"
import { AuditRepo } from "../../src/repos/AuditRepo.ts"
import { admin } from "../support/cli.ts"
import { cookieOf, setPassword } from "../support/console.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createTenant, createUser, get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * GET /v1/audit/changes: the audit trail as a change feed with the incident feed's rules. A follower that always
 * passes back nextToken gets every audit row once, never skipping one, while the console, the admin CLI (other
 * processes) and writers that hold their transaction open write rows at the same time; a token from before a purge
 * mark gets 410; tokens are bound to the endpoint and the organization.
 */

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

const PASSWORD = "correct horse battery staple 8"
const RUN = Date.now().toString(36)
const FORM_CSRF = /name="csrf" value="([^"]+)"/

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ TRUST_PROXY: "127.0.0.1/32,::1/128" }) })
  db = testDatabase(server.env)
}, 120_000)

afterAll(() => shutdown(server, db))

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

const signIn = async (email: string, password: string, ip: string) => {
  const form = await fetch(`${server.consoleUrl}/sign-in`)
  const csrf = FORM_CSRF.exec(await form.text())?.[1] ?? ""
  const response = await post("/sign-in", { csrf, email, password, next: "/" }, cookieOf(form, "__Host-form") ?? "", ip)
  return cookieOf(response, "__Host-session")
}

/** One feed call; throws on anything but 200. */
const page = async (key: string, query: string) => {
  const res = await get(server.url, `/v1/audit/changes?${query}`, key)
  if (res.status !== 200) throw new Error(`audit feed answered ${res.status}: ${JSON.stringify(res.body)}`)
  expect(typeof res.body.nextToken).toBe("string")
  return res.body as { data: Array<Json>; nextToken: string; hasMore: boolean }
}

/** Follows from `token` until the feed says nothing more is ready. */
const drain = async (key: string, token: string | undefined, limit = 100) => {
  await olderWritersEnded(db)
  const items: Array<Json> = []
  let after = token
  for (;;) {
    const body = await page(
      key,
      after === undefined ? `limit=${limit}` : `limit=${limit}&after=${encodeURIComponent(after)}`,
    )
    items.push(...body.data)
    after = body.nextToken
    if (!body.hasMore) return { items, token: after }
  }
}

const auditIds = (orgId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ id: string }>`select id from audit_log where org_id = ${orgId} order by change_xid, change_seq`,
    ),
  )

/**
 * An audit row written in a transaction that stays open for `holdMs` after the row is written (its transaction id is
 * taken then): rows of other writers commit meanwhile, with later positions.
 */
const heldOpenWriter = (orgId: string, i: number, holdMs: number) =>
  db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const audit = yield* AuditRepo
      yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* audit.record({
            orgId: orgId as never,
            actor: "cli",
            action: "test.held_open",
            target: `held-${i}`,
            ip: null,
            detail: `held open ${holdMs} ms`,
          })
          yield* Effect.sleep(holdMs)
        }),
      )
    }).pipe(asOperator),
  )

describe("GET /v1/audit/changes", () => {
  test("followed to the end while the console, the CLI and held-open writers add rows: every row exactly once, never skipped", async () => {
    const tenant = await createTenant(db, `Audit feed ${RUN}`)
    const orgId = tenant.orgId
    const reader = (await createKey(db, orgId, "audit:read")).key
    const email = `feed-admin-${RUN}@example.com`
    const user = await createUser(db, orgId, email, "admin")
    await setPassword(server.consoleUrl, user.link, PASSWORD)
    const session = (await signIn(email, PASSWORD, "198.18.20.1")) ?? ""
    expect(session).not.toBe("")
    const apiPage = await fetch(`${server.consoleUrl}/settings/api`, { headers: { cookie: session } })
    const csrf = FORM_CSRF.exec(await apiPage.text())?.[1] ?? ""

    // The follower starts from the beginning, before anything is written, and polls while the writers work.
    const seen: Array<Json> = []
    let token: string | undefined
    let writing = true
    let polls = 0
    const follower = (async () => {
      while (writing) {
        const body = await page(reader, token === undefined ? "limit=3" : `limit=3&after=${encodeURIComponent(token)}`)
        seen.push(...body.data)
        token = body.nextToken
        polls++
        if (!body.hasMore) await Bun.sleep(20)
      }
    })()

    const cliWriters = Array.from({ length: 4 }, (_, i) =>
      admin(server.env, ["key", "create", "--org", orgId, "--name", `cli ${i}`, "--scopes", "events:read", "--json"]),
    )
    const consoleWriters = (async () => {
      const statuses: Array<number> = []
      for (let i = 0; i < 6; i++) {
        const made = await post(
          "/settings/api/keys",
          { csrf, name: `console ${i}`, scope: "incidents:read", expires: "" },
          session,
          `198.18.20.${10 + i}`,
        )
        statuses.push(made.status)
        // A refused sign-in of the same user is audited too.
        if (i % 2 === 0) expect(await signIn(email, `wrong ${i} ${RUN}`, `198.18.21.${i + 1}`)).toBeUndefined()
      }
      return statuses
    })()
    const held = Array.from({ length: 5 }, (_, i) => heldOpenWriter(orgId, i, 300 + i * 250))

    const [cliResults, consoleStatuses] = await Promise.all([
      Promise.all(cliWriters),
      consoleWriters,
      Promise.all(held),
    ])
    for (const result of cliResults)
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
    expect(consoleStatuses).toEqual([303, 303, 303, 303, 303, 303])
    writing = false
    await follower
    expect(polls).toBeGreaterThan(1)

    // Then to the end, from the follower's own token.
    const rest = await drain(reader, token, 3)
    seen.push(...rest.items)
    const stored = (await auditIds(orgId)).map((r) => r.id)
    const seenIds = seen.map((i) => i.id)
    // Exactly once each, in the feed's order (the order of positions).
    expect(seenIds).toEqual(stored)
    expect(new Set(seenIds).size).toBe(seenIds.length)
    const actions = seen.map((i) => i.action)
    expect(actions.filter((a) => a === "test.held_open")).toHaveLength(5)
    expect(actions.filter((a) => a === "key.create")).toHaveLength(1 + 1 + 4 + 6)
    expect(actions.filter((a) => a === "signin.failed")).toHaveLength(3)
    expect(actions).toContain("signin")
    expect(actions).toContain("user.password_set")
    // Items have the list's shape: the same entry as GET /v1/audit shows.
    const listed = (await get(server.url, "/v1/audit?limit=100", reader)).body.data as Array<Json>
    for (const item of seen) expect(listed.find((l) => l.id === item.id)).toEqual(item)

    // Nothing new: the token stays good and brings nothing; the next row comes once.
    const idle = await page(reader, `after=${encodeURIComponent(rest.token)}`)
    expect(idle).toMatchObject({ data: [], hasMore: false })
    await createKey(db, orgId, "events:read")
    const next = await drain(reader, idle.nextToken)
    expect(next.items.map((i) => i.action)).toEqual(["key.create"])
  }, 120_000)

  test("from starts at a time; the token is bound to this endpoint and organization (400 otherwise)", async () => {
    const one = await createTenant(db, `Audit feed from ${RUN}`)
    const other = await createTenant(db, `Audit feed other ${RUN}`)
    const reader = (await createKey(db, one.orgId, "audit:read")).key
    const otherReader = (await createKey(db, other.orgId, "audit:read")).key
    const both = (await createKey(db, one.orgId, "audit:read,events:read")).key
    await olderWritersEnded(db)
    const all = (await drain(reader, undefined)).items
    expect(all.length).toBeGreaterThan(1)
    const later = all.at(-1)
    const since = await drain(reader, undefined)
    expect(since.items.map((i) => i.id)).toEqual(all.map((i) => i.id))
    const fromLast = await page(reader, `from=${encodeURIComponent(later.at)}`)
    expect(fromLast.data.every((i) => i.at >= later.at)).toBe(true)
    expect(fromLast.data.map((i) => i.id)).toContain(later.id)
    const fromFuture = await page(reader, "from=2999-01-01T00:00:00Z")
    expect(fromFuture.data).toEqual([])

    const token = (await page(reader, "limit=1")).nextToken
    const foreign = await get(server.url, `/v1/audit/changes?after=${encodeURIComponent(token)}`, otherReader)
    expect({ status: foreign.status, code: foreign.body.code }).toEqual({ status: 400, code: "invalid_request" })
    const elsewhere = await get(server.url, `/v1/events/changes?after=${encodeURIComponent(token)}`, both)
    expect(elsewhere.status).toBe(400)
    const eventToken = (await get(server.url, "/v1/events/changes", both)).body.nextToken as string
    const swapped = await get(server.url, `/v1/audit/changes?after=${encodeURIComponent(eventToken)}`, both)
    expect(swapped.status).toBe(400)
    // Another organization's rows never show in this one's feed.
    const otherIds = new Set((await drain(otherReader, undefined)).items.map((i) => i.id))
    expect(all.filter((i) => otherIds.has(i.id))).toEqual([])
  })

  test("a token from before a purge mark gets 410 token_expired; a first call still reads what is kept", async () => {
    const tenant = await createTenant(db, `Audit feed purge ${RUN}`)
    const reader = (await createKey(db, tenant.orgId, "audit:read")).key
    await createKey(db, tenant.orgId, "events:read")
    await olderWritersEnded(db)
    const first = await page(reader, "limit=1")
    expect(first.hasMore).toBe(true)
    // Nothing purges audit rows today; the mark is what a purge would write (as the retention job does for the
    // other feeds), here past every row of the organization.
    await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`insert into feed_purges (org_id, feed, purged_xid, purged_seq)
          select org_id, 'audit/changes', change_xid, change_seq from audit_log
          where org_id = ${tenant.orgId} order by change_xid desc, change_seq desc limit 1`,
      ),
    )
    const expired = await get(server.url, `/v1/audit/changes?after=${encodeURIComponent(first.nextToken)}`, reader)
    expect({ status: expired.status, code: expired.body.code }).toEqual({ status: 410, code: "token_expired" })
    expect(expired.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
    const again = await get(server.url, "/v1/audit/changes", reader)
    expect(again.status).toBe(200)
    // A token from after the mark goes on.
    const caughtUp = await drain(reader, undefined)
    await createKey(db, tenant.orgId, "events:read")
    const after = await drain(reader, caughtUp.token)
    expect(after.items.map((i) => i.action)).toEqual(["key.create"])
  })

  test("the client follows the audit feed and resumes from a saved token", async () => {
    const tenant = await createTenant(db, `Audit feed client ${RUN}`)
    const reader = (await createKey(db, tenant.orgId, "audit:read")).key
    await olderWritersEnded(db)
    const client = createClient({ baseUrl: server.url, apiKey: reader })
    const expected = (await drain(reader, undefined)).items.map((i) => i.id)
    const stop = new AbortController()
    const got: Array<string> = []
    let saved: string | undefined
    const follow = client.audit.follow({
      signal: stop.signal,
      pollIntervalMs: 50,
      limit: 2,
      onToken: (t) => {
        saved = t
      },
    })
    for await (const entry of follow) {
      expect(entry.at).toBeInstanceOf(Date)
      got.push(entry.id)
      if (got.length === expected.length) stop.abort()
    }
    expect(got).toEqual(expected)
    expect(saved).toBeDefined()
    // Resumed from the saved token: only what is new.
    await createKey(db, tenant.orgId, "events:read")
    await olderWritersEnded(db)
    const resumed = new AbortController()
    const more: Array<string> = []
    for await (const entry of client.audit.follow({ after: saved, signal: resumed.signal, pollIntervalMs: 50 })) {
      more.push(entry.action)
      resumed.abort()
    }
    expect(more).toEqual(["key.create"])
  })
})
