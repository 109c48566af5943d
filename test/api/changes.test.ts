import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { closeIncident, createKey, createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})
afterAll(() => shutdown(server, db))

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString()

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

/** A follower: calls the feed with the last nextToken until hasMore is false; returns everything and the token. */
const drain = async (path: string, key: string, token?: string, limit = 100) => {
  await olderWritersEnded(db)
  const items: Array<Json> = []
  let after = token
  let pages = 0
  for (;;) {
    const query = after === undefined ? `?limit=${limit}` : `?limit=${limit}&after=${encodeURIComponent(after)}`
    const res = await get(server.url, `${path}${query}`, key)
    if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${JSON.stringify(res.body)}`)
    expect(typeof res.body.nextToken).toBe("string")
    items.push(...res.body.data)
    after = res.body.nextToken as string
    pages++
    if (!res.body.hasMore) return { items, token: after, pages }
  }
}

/** Incidents as a poller following the spec's rule would see them: the first page, down to the first one seen. */
const firstPageRule = async (key: string, seen: Set<string>) => {
  const res = await get(server.url, "/v1/incidents?limit=100", key)
  const fresh: Array<string> = []
  for (const incident of res.body.data as Array<{ id: string }>) {
    if (seen.has(incident.id)) break
    fresh.push(incident.id)
  }
  return fresh
}

describe("why the change feed exists", () => {
  test("the spec's first-page polling rule misses a new incident below a seen one with new activity; the feed does not", async () => {
    const { orgId, key } = await createTenant(db, "D32 Rule")
    const sensor = await createSensor(db, orgId, "web-rule")
    const seen = new Set<string>()
    const feed = await drain("/v1/incidents/changes", key)

    // Two incidents; the poller sees both.
    await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "198.51.100.1", time: minutesAgo(10) }),
      nativeEvent({ sourceIp: "198.51.100.2", time: minutesAgo(9) }),
    ])
    for (const id of await firstPageRule(key, seen)) seen.add(id)
    expect(seen.size).toBe(2)

    // A seen incident gets a new event now, and a new incident appears whose activity (a sensor reporting a little
    // late) is older: it sorts below the seen one, and the rule stops above it.
    await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "198.51.100.1", time: minutesAgo(0) }),
      nativeEvent({ sourceIp: "198.51.100.3", time: minutesAgo(5) }),
    ])
    const missed = (await get(server.url, "/v1/incidents?limit=100", key)).body.data.find(
      (i: Json) => i.sourceIp === "198.51.100.3",
    )
    expect(missed).toBeDefined()
    const foundByRule = await firstPageRule(key, seen)
    expect(foundByRule).not.toContain(missed.id)

    // The feed, followed from its token, has it.
    const changes = await drain("/v1/incidents/changes", key, feed.token)
    expect(changes.items.map((i: Json) => i.id)).toContain(missed.id)
  })
})

describe("GET /v1/incidents/changes and /v1/events/changes", () => {
  test("incidents appear in the order they changed, each as of its change; events in the order stored", async () => {
    const { orgId, key } = await createTenant(db, "D32 Order")
    const sensor = await createSensor(db, orgId, "web-order")
    await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "192.0.2.1", type: "portscan.syn", time: minutesAgo(3) }),
    ])
    await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.2" })])
    await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "192.0.2.1", type: "ssh.login_success", confidence: "high" }),
    ])
    const { items } = await drain("/v1/incidents/changes", key)
    expect(items.map((i: Json) => [i.sourceIp, i.eventCount])).toEqual([
      ["192.0.2.1", 1],
      ["192.0.2.2", 1],
      ["192.0.2.1", 2],
    ])
    // Each item is the listed shape, as of its change.
    expect(items[0].eventTypes).toEqual(["portscan.syn"])
    expect(items[2].eventTypes).toEqual(["portscan.syn", "ssh.login_success"])
    expect(items[2].highConfidence).toBe(true)
    const listed = (await get(server.url, "/v1/incidents?limit=100", key)).body.data
    expect(listed.find((i: Json) => i.id === items[2].id)).toEqual(items[2])

    const events = await drain("/v1/events/changes", key, undefined, 1)
    expect(events.items.map((e: Json) => e.sourceIp)).toEqual(["192.0.2.1", "192.0.2.2", "192.0.2.1"])
    expect(events.pages).toBe(3)
    const one = await get(server.url, `/v1/events/${events.items[0].id}`, key)
    expect(events.items[0]).toEqual(one.body)
  })

  test("nextToken is never null; a follower gets only what is new, and a close is a change", async () => {
    const { orgId, key } = await createTenant(db, "D32 Follow")
    const sensor = await createSensor(db, orgId, "web-follow")
    const empty = await get(server.url, "/v1/incidents/changes", key)
    expect(empty.status).toBe(200)
    expect(empty.body.data).toEqual([])
    expect(empty.body.hasMore).toBe(false)
    expect(typeof empty.body.nextToken).toBe("string")
    await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.9" })])
    const first = await drain("/v1/incidents/changes", key, empty.body.nextToken)
    expect(first.items).toHaveLength(1)
    const again = await drain("/v1/incidents/changes", key, first.token)
    expect(again.items).toEqual([])
    await closeIncident(db, first.items[0].id)
    const closed = await drain("/v1/incidents/changes", key, again.token)
    expect(closed.items.map((i: Json) => [i.id, i.status])).toEqual([[first.items[0].id, "closed"]])
    expect(closed.items[0].resolvedAt).not.toBeNull()
  })

  test("from starts at a time; limit pages; hasMore says whether to ask again at once", async () => {
    const { orgId, key } = await createTenant(db, "D32 From")
    const sensor = await createSensor(db, orgId, "web-from")
    await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.20" })])
    await Bun.sleep(20)
    const cut = new Date().toISOString()
    await Bun.sleep(20)
    await ingest(
      server.ingestUrl,
      "events",
      sensor.token,
      [1, 2, 3].map((n) => nativeEvent({ sourceIp: `192.0.2.${20 + n}` })),
    )
    // Another file's open transaction holds the feed's horizon back: read once older writers have ended.
    await olderWritersEnded(db)
    const page = await get(server.url, `/v1/events/changes?from=${cut}&limit=2`, key)
    expect(page.status).toBe(200)
    expect(page.body.data.map((e: Json) => e.sourceIp)).toEqual(["192.0.2.21", "192.0.2.22"])
    expect(page.body.hasMore).toBe(true)
    const rest = await drain("/v1/events/changes", key, page.body.nextToken, 2)
    expect(rest.items.map((e: Json) => e.sourceIp)).toEqual(["192.0.2.23"])
    const incidents = await drain(`/v1/incidents/changes`, key, undefined)
    expect(incidents.items).toHaveLength(4)
    await olderWritersEnded(db)
    const since = await get(server.url, `/v1/incidents/changes?from=${cut}`, key)
    expect(since.body.data.map((i: Json) => i.sourceIp).sort()).toEqual(["192.0.2.21", "192.0.2.22", "192.0.2.23"])
  })

  test("from: a change written after from by a transaction that began before it is in the feed", async () => {
    const { orgId, key } = await createTenant(db, "D32 From Tx")
    const sensor = await createSensor(db, orgId, "web-from-tx")
    await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: "198.51.100.77" }))
    const incidentId = (await get(server.url, "/v1/incidents", key)).body.data[0].id as string
    let from = ""
    await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`select 1` // the transaction has begun: now() is fixed from here
            yield* Effect.sleep("300 millis")
            from = new Date().toISOString()
            yield* Effect.sleep("300 millis")
            yield* sql`update incidents set status = 'closed', resolved_at = last_seen_at where id = ${incidentId}`
          }),
        ),
      ),
    )
    await olderWritersEnded(db)
    const page = await get(server.url, `/v1/incidents/changes?from=${from}`, key)
    expect(page.status).toBe(200)
    expect(page.body.data.map((c: Json) => [c.id, c.status])).toEqual([[incidentId, "closed"]])
  })

  test("a malformed, tampered or foreign token, after with from, and a bad limit get 400 invalid_request", async () => {
    const a = await createTenant(db, "D33 A")
    const b = await createTenant(db, "D33 B")
    const tokenA = (await get(server.url, "/v1/incidents/changes", a.key)).body.nextToken as string
    const [body, mac] = tokenA.split(".") as [string, string]
    const tampered = `${body.slice(0, -2)}${body.endsWith("A") ? "B" : "A"}${body.slice(-1)}.${mac}`
    const cases = [
      ["/v1/incidents/changes?after=nonsense", a.key],
      [`/v1/incidents/changes?after=${encodeURIComponent(tampered)}`, a.key],
      [`/v1/incidents/changes?after=${encodeURIComponent(tokenA)}`, b.key],
      [`/v1/events/changes?after=${encodeURIComponent(tokenA)}`, a.key],
      [`/v1/incidents/changes?after=${encodeURIComponent(tokenA)}&from=2026-01-01T00:00:00Z`, a.key],
      ["/v1/incidents/changes?from=yesterday", a.key],
      ["/v1/events/changes?limit=0", a.key],
      ["/v1/events/changes?limit=101", a.key],
      ["/v1/events/changes?after=", a.key],
    ] as const
    for (const [path, key] of cases) {
      const res = await get(server.url, path, key)
      expect(`${path} ${res.status}`).toBe(`${path} 400`)
      expect(res.headers.get("content-type")).toStartWith("application/problem+json")
      expect(res.body.code).toBe("invalid_request")
    }
    // A repeated parameter gets the same answer as on the lists (D5).
    for (const query of ["after=x&after=y", "from=2026-01-01T00:00:00Z&from=2026-01-02T00:00:00Z"]) {
      const res = await get(server.url, `/v1/events/changes?${query}`, a.key)
      expect(res.status).toBe(400)
      expect(res.body.detail).toBe(`The query parameter ${query.split("=")[0]} was given more than once.`)
    }
  })

  test("scopes: incidents/changes needs incidents:read, events/changes events:read; no key is 401", async () => {
    const { orgId } = await createTenant(db, "D32 Scopes")
    const eventsOnly = await createKey(db, orgId, "events:read")
    const incidentsOnly = await createKey(db, orgId, "incidents:read")
    expect((await get(server.url, "/v1/incidents/changes", eventsOnly.key)).status).toBe(403)
    expect((await get(server.url, "/v1/events/changes", incidentsOnly.key)).status).toBe(403)
    expect((await get(server.url, "/v1/events/changes", eventsOnly.key)).status).toBe(200)
    expect((await get(server.url, "/v1/incidents/changes", incidentsOnly.key)).status).toBe(200)
    const none = await get(server.url, "/v1/events/changes")
    expect(none.status).toBe(401)
    expect(none.body.code).toBe("unauthorized")
  })

  test("OpenAPI describes both feeds with their parameters and page shapes", async () => {
    const doc = (await get(server.url, "/openapi.json")).body
    for (const path of ["/v1/incidents/changes", "/v1/events/changes"]) {
      const op = doc.paths[path].get
      expect(op.description).toContain("nextToken")
      expect(op.parameters.map((p: Json) => p.name).sort()).toEqual(["after", "from", "limit"])
      expect(op.responses["400"]).toBeDefined()
    }
    expect(doc.components.schemas.IncidentChangePage.required).toEqual(["data", "nextToken", "hasMore"])
  })
})
