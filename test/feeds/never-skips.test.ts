import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type IncidentId, newId, type OrgId, type SensorId } from "../../src/domain/ids.ts"
import { EventsRepo } from "../../src/repos/EventsRepo.ts"
import { IncidentsRepo } from "../../src/repos/IncidentsRepo.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, walk } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D33: a follower that always passes back nextToken receives every committed change and never skips one, even when
 * transactions commit in another order than the one they took their sequence numbers in. Writers: the server's
 * ingestion (concurrent requests), a separate process holding its transactions open on purpose, and this process.
 */

let server: RunningServer
let db: TestDatabase
const ROOT = join(import.meta.dir, "..", "..")

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})
afterAll(() => shutdown(server, db))

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

const page = async (path: string, key: string, after: string | undefined, limit: number) => {
  const query = after === undefined ? `?limit=${limit}` : `?limit=${limit}&after=${encodeURIComponent(after)}`
  const res = await get(server.url, `${path}${query}`, key)
  if (res.status !== 200) throw new Error(`feed answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body as { data: Array<Json>; nextToken: string; hasMore: boolean }
}

/** Reads a feed to its end; first waits for older writers to end, unless the test holds one open itself. */
const drain = async (path: string, key: string, after: string | undefined, limit = 100, settle = true) => {
  if (settle) await olderWritersEnded(db)
  const items: Array<Json> = []
  let token = after
  for (;;) {
    const body = await page(path, key, token, limit)
    items.push(...body.data)
    token = body.nextToken
    if (!body.hasMore) return { items, token }
  }
}

/** A stored event written inside a transaction of this process. */
const heldEvent = (orgId: OrgId, sensorId: SensorId, incidentId: IncidentId, n: string) => ({
  id: newId("event"),
  orgId,
  incidentId,
  sensorId,
  sensorEventId: `held-${n}`,
  time: new Date(),
  sourceIp: "10.9.9.9",
  sourcePort: 4000,
  service: "ssh",
  port: 22,
  type: "ssh.login_attempt",
  action: "login",
  severity: "low" as const,
  confidence: "normal" as const,
  tags: [],
  summary: "held",
  attackerInput: {},
})

describe("the feed never skips a change that commits late", () => {
  test("a transaction that took its position first and commits last: the naive `seq > last` poll skips it, the feed waits for it", async () => {
    const { orgId, key } = await createTenant(db, "D33 Late")
    const sensor = await createSensor(db, orgId, "web-late")
    await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.60" })])
    const before = await drain("/v1/events/changes", key, undefined)

    let started!: () => void
    const isStarted = new Promise<void>((resolve) => {
      started = resolve
    })
    let release!: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const incidentId = newId("incident")
    const late = heldEvent(orgId, sensor.id, incidentId, "late")
    // Writes an incident and its event (taking their sequence numbers) and stays open until released.
    const held = db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* (yield* IncidentsRepo).insert({
              id: incidentId,
              orgId,
              sensorId: sensor.id,
              sourceIp: late.sourceIp,
              status: "open",
              severity: "low",
              title: "held",
              narrative: "n",
              recommendedAction: "r",
              eventCount: 1,
              eventTypes: [late.type],
              tags: [],
              usernames: [],
              highConfidence: false,
              firstSeenAt: late.time,
              lastSeenAt: late.time,
              resolvedAt: null,
            })
            yield* (yield* EventsRepo).insert(late)
            started()
            yield* Effect.promise(() => released)
          }),
        ),
      ),
    )
    await isStarted
    let quickId = ""
    let naiveLast = "0"
    let duringToken = ""
    try {
      // A later transaction commits first.
      const quick = await ingest(server.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "192.0.2.60" })])
      expect(quick.status).toBe(200)
      quickId = quick.body.results[0].id as string

      // The naive poller sees the later change and moves its position past the held one's.
      const naive = await db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ seq: string }>`select max(change_seq)::text as seq from events where org_id = ${orgId}`,
        ),
      )
      naiveLast = naive[0]?.seq ?? "0"
      // The feed does not: the later change is held back behind the open transaction.
      const during = await drain("/v1/events/changes", key, before.token, 100, false)
      expect(during.items.map((e) => e.id)).not.toContain(quickId)
      duringToken = during.token
      const incidentsDuring = await drain("/v1/incidents/changes", key, undefined, 100, false)
      expect(incidentsDuring.items.map((i) => i.id)).not.toContain(incidentId)
    } finally {
      release()
      await held
    }
    const naiveAfter = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ id: string }>`select id from events where org_id = ${orgId} and change_seq > ${naiveLast}::bigint`,
      ),
    )
    expect(naiveAfter.map((r) => r.id)).not.toContain(late.id)
    const after = await drain("/v1/events/changes", key, duringToken)
    expect(after.items.map((e) => e.id)).toEqual([late.id, quickId])
  })

  test("a later change of one incident sorts after its earlier one even when its transaction got its id first", async () => {
    const { orgId, key } = await createTenant(db, "D33 Order")
    const sensor = await createSensor(db, orgId, "web-order")
    await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "192.0.2.41" }),
      nativeEvent({ sourceIp: "192.0.2.42" }),
    ])
    const listed = (await get(server.url, "/v1/incidents", key)).body.data as Array<Json>
    const x = listed.find((i) => i.sourceIp === "192.0.2.41").id as string
    const y = listed.find((i) => i.sourceIp === "192.0.2.42").id as string
    const start = await drain("/v1/incidents/changes", key, undefined)

    let gotId!: () => void
    const hasId = new Promise<void>((resolve) => {
      gotId = resolve
    })
    let go!: () => void
    const goOn = new Promise<void>((resolve) => {
      go = resolve
    })
    // A: takes its transaction id first (by writing incident y), then, after B has committed, writes incident x.
    const a = db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`update incidents set title = 'A was here' where id = ${y}`
            gotId()
            yield* Effect.promise(() => goOn)
            yield* sql`update incidents set status = 'closed', resolved_at = now(), title = 'closed by A' where id = ${x}`
          }),
        ),
      ),
    )
    await hasId
    // B: a later transaction id, writes x and commits first.
    await db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update incidents set title = 'B was here' where id = ${x}`),
    )
    go()
    await a
    const changes = await drain("/v1/incidents/changes", key, start.token)
    const ofX = changes.items.filter((i) => i.id === x).map((i) => i.title)
    expect(ofX).toEqual(["B was here", "closed by A"])
    const now = (await get(server.url, `/v1/incidents/${x}`, key)).body
    expect(now.status).toBe("closed")
  })

  test("concurrent ingestion, a separate process holding transactions open, and a follower polling small pages: the follower ends with exactly the database", async () => {
    const { orgId, key } = await createTenant(db, "D33 Follow")
    const sensor = await createSensor(db, orgId, "web-follow")
    const writerSensor = await createSensor(db, orgId, "web-writer")

    let writing = true
    const seen = { incidents: [] as Array<Json>, events: [] as Array<Json> }
    const follow = async (path: string, sink: Array<Json>) => {
      let token: string | undefined
      // Follows while the writers write, then once more to the end after they have finished.
      for (let last = false; ; ) {
        const body = await page(path, key, token, 7)
        sink.push(...body.data)
        token = body.nextToken
        if (body.hasMore) continue
        if (last) return
        if (!writing) {
          await olderWritersEnded(db)
          last = true
        }
        await Bun.sleep(20)
      }
    }
    const followers = Promise.all([
      follow("/v1/incidents/changes", seen.incidents),
      follow("/v1/events/changes", seen.events),
    ])

    const writer = Bun.spawn(["bun", "test/support/feedWriter.ts", orgId, writerSensor.id, "9", "1200"], {
      cwd: ROOT,
      env: server.env,
      stdout: "pipe",
      stderr: "pipe",
    })
    let sent = 0
    const ingestLoop = async (loop: number) => {
      for (let i = 0; i < 12; i++) {
        const events = Array.from({ length: 1 + ((i + loop) % 3) }, () =>
          nativeEvent({ sourceIp: `198.51.100.${(i * 7 + loop) % 9}` }),
        )
        const res = await ingest(server.ingestUrl, "events", sensor.token, events)
        expect(res.status).toBe(200)
        sent += events.length
      }
    }
    await Promise.all([0, 1, 2, 3].map(ingestLoop))
    expect(await writer.exited).toBe(0)
    expect(await new Response(writer.stdout).text()).toContain("done")
    writing = false
    await followers

    // Events: every stored event, once.
    const stored = await walk(server.url, "/v1/events?limit=100", key)
    expect(stored.ids.length).toBe(sent + 18)
    expect(seen.events.map((e) => e.id).sort()).toEqual([...stored.ids].sort())
    // Incidents: every change, in an order in which each incident's last one is its state in the database.
    const changes = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ n: number }>`select count(*)::int as n from incident_changes where org_id = ${orgId}`,
      ),
    )
    expect(seen.incidents.length).toBe(changes[0]?.n ?? -1)
    const latest = new Map<string, Json>()
    for (const incident of seen.incidents) latest.set(incident.id, incident)
    const listed = await get(server.url, "/v1/incidents?limit=100", key)
    expect(listed.body.nextCursor).toBeNull()
    expect(latest.size).toBe(listed.body.data.length)
    for (const incident of listed.body.data) expect(latest.get(incident.id)).toEqual(incident)
  })
})
