import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { INGEST_EVENT_ROUTES, INGEST_ROUTES } from "../../src/ingest/routes.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServerProcess, shutdown, startServerProcess } from "../support/server.ts"

/**
 * Every ingest request is logged once at INFO (route, status, sensor id, events per outcome) and counted per route;
 * the log never carries the token or anything the attacker sent. The ingest series exist at 0 from start-up, so the
 * server is a process of its own: metrics are counted per process, and servers in the test process share them.
 */

let server: RunningServerProcess
let db: TestDatabase

beforeAll(async () => {
  server = await startServerProcess()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const metrics = async () => {
  const text = await (await fetch(`${server.opsUrl}/metrics`)).text()
  return (sample: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${sample} `))
    return line === undefined ? undefined : Number(line.slice(sample.length + 1))
  }
}

// biome-ignore lint/suspicious/noExplicitAny: log entries
const requestLines = (): Array<any> =>
  server.logs
    .filter((l) => l.includes('"ingest request"'))
    .map((l) => JSON.parse(l))
    .filter((e) => e.message === "ingest request")

describe("ingest request log and metrics", () => {
  test("the route labels, which dashboards read, are the published ones", () => {
    expect(INGEST_ROUTES).toEqual(["events", "opencanary", "cowrie", "hec", "hec_health", "heartbeat", "unmatched"])
    expect(INGEST_EVENT_ROUTES).toEqual(["events", "opencanary", "cowrie", "hec"])
  })

  test("a fresh server shows every ingest series at 0, per route and outcome", async () => {
    const value = await metrics()
    for (const route of INGEST_EVENT_ROUTES) {
      for (const outcome of ["accepted", "duplicate", "rejected", "merged", "ignored"]) {
        expect({ route, outcome, v: value(`ingest_events_total{route="${route}",outcome="${outcome}"}`) }).toEqual({
          route,
          outcome,
          v: 0,
        })
      }
    }
    for (const route of INGEST_ROUTES.filter((r) => r !== "unmatched")) {
      for (const result of ["ok", "bad_request", "unauthorized", "too_large", "unavailable", "error"]) {
        expect({ route, result, v: value(`ingest_requests_total{route="${route}",result="${result}"}`) }).toEqual({
          route,
          result,
          v: 0,
        })
      }
    }
  })

  test("one INFO line per request with route, status, sensor id and counts; no token, no attacker text; metrics counted per route", async () => {
    const tenant = await createTenant(db, "Ingest log")
    const sensor = await createSensor(db, tenant.orgId, "log-01")
    const secret = "Tr0ub4dor&3-attacker-password"
    const before = requestLines().length
    const sent = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "203.0.113.91", attackerInput: { username: "attacker-name-zq", password: secret } }),
      nativeEvent({ sourceIp: "203.0.113.91", type: "no.such_type" }),
    ])
    expect(sent.body).toMatchObject({ accepted: 1, rejected: 1 })
    const refused = await ingest(server.ingestUrl, "cowrie", "dst_sen_not_a_token", [])
    expect(refused.status).toBe(401)
    const hec = await fetch(`${server.ingestUrl}/services/collector/event`, {
      method: "POST",
      headers: { authorization: `Splunk ${sensor.token}` },
      body: JSON.stringify({ event: nativeEvent({ sourceIp: "203.0.113.92" }) }),
    })
    expect(hec.status).toBe(200)
    await Bun.sleep(100)
    const lines = requestLines().slice(before)
    expect(lines.length).toBe(3)
    expect(lines[0]).toMatchObject({
      logLevel: "INFO",
      annotations: { route: "events", status: 200, sensor: sensor.id, events: { accepted: 1, rejected: 1 } },
    })
    expect(lines[1]).toMatchObject({ logLevel: "INFO", annotations: { route: "cowrie", status: 401 } })
    expect(lines[1].annotations.sensor).toBeUndefined()
    expect(lines[2]).toMatchObject({
      annotations: { route: "hec", status: 200, sensor: sensor.id, events: { accepted: 1 } },
    })
    const all = server.logs.join("\n")
    expect(all).not.toContain(sensor.token)
    expect(all).not.toContain(secret)
    expect(all).not.toContain("attacker-name-zq")
    expect(all).not.toContain("dst_sen_not_a_token")

    const value = await metrics()
    expect(value('ingest_events_total{route="events",outcome="accepted"}')).toBe(1)
    expect(value('ingest_events_total{route="events",outcome="rejected"}')).toBe(1)
    expect(value('ingest_events_total{route="hec",outcome="accepted"}')).toBe(1)
    expect(value('ingest_requests_total{route="events",result="ok"}')).toBe(1)
    expect(value('ingest_requests_total{route="cowrie",result="unauthorized"}')).toBe(1)
    expect(value('ingest_requests_total{route="hec",result="ok"}')).toBe(1)
  })
})
