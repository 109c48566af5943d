import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Performance issue #6: a request's events are written in one transaction (all its grouping keys locked at once, one
 * statement per step). These pin what that must keep: per-key grouping and counts inside one batch, duplicates
 * across keys of one batch, no deadlock between requests whose keys overlap in any order, and per-key transitions.
 */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer({ env: await testEnv() })
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  sensor = await createSensor(db, tenant.orgId, "batch-01")
})

afterAll(() => shutdown(server, db))

const ipOf = (i: number) => `198.51.100.${100 + i}`

const transitionKinds = (incidentId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ kind: string; toSeverity: string }>`
          select kind, to_severity from incident_transitions where incident_id = ${incidentId} order by at, id`,
    ),
  )

describe("one request, many grouping keys", () => {
  test("each key gets its own incident with its own count, severity, times and transitions; replies in input order", async () => {
    // Within D36's MAX_CLOCK_SKEW (5 minutes) ahead.
    const base = Date.now() + 120_000
    const events = [
      nativeEvent({ sourceIp: ipOf(1), type: "portscan.syn", time: new Date(base).toISOString() }),
      nativeEvent({ sourceIp: ipOf(2), type: "portscan.syn", time: new Date(base).toISOString() }),
      nativeEvent({ sourceIp: ipOf(1), type: "portscan.syn", time: new Date(base + 5_000).toISOString() }),
      nativeEvent({ sourceIp: ipOf(3), type: "ssh.login_success", time: new Date(base).toISOString() }),
      // Out of order within the batch: lastSeenAt stays the latest time.
      nativeEvent({ sourceIp: ipOf(1), type: "portscan.syn", time: new Date(base - 5_000).toISOString() }),
    ]
    const res = await ingest(server.ingestUrl, "events", sensor.token, events)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ accepted: 5, duplicates: 0, rejected: 0 })
    const results = res.body.results as Array<{ index: number; status: string; id: string; incidentId: string }>
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4])
    expect(new Set(results.map((r) => r.id)).size).toBe(5)
    const [a, b, a2, c, a3] = results
    expect(a?.incidentId).toBe(a2?.incidentId as string)
    expect(a?.incidentId).toBe(a3?.incidentId as string)
    expect(new Set([a?.incidentId, b?.incidentId, c?.incidentId]).size).toBe(3)

    const first = await get(server.url, `/v1/incidents/${a?.incidentId}`, tenant.key)
    expect(first.body).toMatchObject({
      eventCount: 3,
      sourceIp: ipOf(1),
      firstSeenAt: new Date(base - 5_000).toISOString(),
      lastSeenAt: new Date(base + 5_000).toISOString(),
    })
    expect((await get(server.url, `/v1/incidents/${b?.incidentId}`, tenant.key)).body.eventCount).toBe(1)
    expect((await get(server.url, `/v1/incidents/${c?.incidentId}`, tenant.key)).body.severity).toBe("high")
    for (const id of [a?.incidentId, b?.incidentId, c?.incidentId]) {
      expect((await transitionKinds(id as string)).map((t) => t.kind)).toEqual(["created"])
    }

    // A second batch joins all three and escalates only the one whose severity rises.
    const more = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: ipOf(2), type: "ssh.login_success", time: new Date(base).toISOString() }),
      nativeEvent({ sourceIp: ipOf(1), type: "portscan.syn", time: new Date(base).toISOString() }),
      nativeEvent({ sourceIp: ipOf(3), type: "portscan.syn", time: new Date(base).toISOString() }),
    ])
    expect(more.body.results.map((r: { incidentId: string }) => r.incidentId)).toEqual([
      b?.incidentId,
      a?.incidentId,
      c?.incidentId,
    ])
    expect((await transitionKinds(b?.incidentId as string)).map((t) => `${t.kind}:${t.toSeverity}`)).toEqual([
      "created:low",
      "escalated:high",
    ])
    expect((await transitionKinds(a?.incidentId as string)).map((t) => t.kind)).toEqual(["created"])
    expect((await get(server.url, `/v1/incidents/${a?.incidentId}`, tenant.key)).body.eventCount).toBe(4)
  })

  test("a sensor event id repeated under another sourceIp in one batch is a duplicate of the first", async () => {
    const event = nativeEvent({ sourceIp: ipOf(10) })
    const res = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: ipOf(11) }),
      event,
      { ...event, sourceIp: ipOf(12) },
      event,
    ])
    expect(res.body).toMatchObject({ accepted: 2, duplicates: 2 })
    const [, first, second, third] = res.body.results
    expect(first.status).toBe("accepted")
    expect(second).toMatchObject({ index: 2, status: "duplicate", id: first.id })
    expect(third).toMatchObject({ index: 3, status: "duplicate", id: first.id })
    // No incident was started for the key that only had a duplicate.
    const listed = await get(server.url, `/v1/events?sourceIp=${ipOf(12)}`, tenant.key)
    expect(listed.body.data).toEqual([])
  })

  test("concurrent requests over the same keys in different orders: no deadlock, one incident per key, exact counts", async () => {
    const keys = [20, 21, 22, 23, 24, 25].map(ipOf)
    const orders = Array.from({ length: 12 }, (_, r) => {
      // Each request lists the keys in another order (rotated, every other one reversed).
      const order = keys.map((_, i) => keys[(i + r) % keys.length] as string)
      return r % 2 === 1 ? order.reverse() : order
    })
    const responses = await Promise.all(
      orders.map((order) =>
        ingest(
          server.ingestUrl,
          "events",
          sensor.token,
          order.flatMap((ip) => [nativeEvent({ sourceIp: ip }), nativeEvent({ sourceIp: ip })]),
        ),
      ),
    )
    const byKey = new Map<string, Set<string>>()
    for (const [r, response] of responses.entries()) {
      expect(response.status).toBe(200)
      expect(response.body.accepted).toBe(12)
      for (const [i, x] of (response.body.results as Array<{ incidentId: string }>).entries()) {
        const ip = orders[r]?.[Math.floor(i / 2)] as string
        byKey.set(ip, (byKey.get(ip) ?? new Set<string>()).add(x.incidentId))
      }
    }
    expect([...byKey.keys()].sort()).toEqual([...keys].sort())
    for (const ids of byKey.values()) {
      expect(ids.size).toBe(1)
      const incident = await get(server.url, `/v1/incidents/${[...ids][0]}`, tenant.key)
      expect(incident.body.eventCount).toBe(24)
    }
  })
})
