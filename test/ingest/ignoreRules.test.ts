import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { IgnoreAdmin, type IgnoreRuleInput } from "../../src/admin/IgnoreAdmin.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createSensor, createTenant, get, walk } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D44 end to end: the real server (ingest, API, feeds, MCP, the webhook dispatcher) on the real database, webhooks
 * delivered to a real local HTTPS receiver. Rules are added through IgnoreAdmin as the operator, as the CLI does.
 */

let server: RunningServer
let db: TestDatabase
let receiver: Receiver
let caFile: string

interface Tenant {
  readonly orgId: string
  readonly key: string
  readonly sensorId: string
  readonly token: string
}

const tenant = async (name: string): Promise<Tenant> => {
  const { orgId, key } = await createTenant(db, name)
  const sensor = await createSensor(db, orgId, "decoy-01")
  return { orgId, key, sensorId: sensor.id, token: sensor.token }
}

const addRule = (orgId: string, input: IgnoreRuleInput) =>
  db.run(asOperator(Effect.flatMap(IgnoreAdmin, (rules) => rules.add(orgId, input))))
const listRules = (orgId: string) => db.run(asOperator(Effect.flatMap(IgnoreAdmin, (rules) => rules.list(orgId))))
const removeRule = (id: string) => db.run(asOperator(Effect.flatMap(IgnoreAdmin, (rules) => rules.remove(id))))

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
const send = async (token: string, events: ReadonlyArray<Record<string, unknown>>): Promise<any> => {
  const res = await ingest(
    server.ingestUrl,
    "events",
    token,
    events.map((e) => nativeEvent(e)),
  )
  if (res.status !== 200) console.error(server.logs.filter((l) => l.includes("ERROR")).join("\n"))
  expect(res.status).toBe(200)
  return res.body
}

const query = <A extends object>(run: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, run))

const incidentsOf = (orgId: string) =>
  query<{ id: string; sourceIp: string; eventCount: number; severity: string; status: string }>(
    (sql) =>
      sql`select id, source_ip, event_count, severity, status from incidents where org_id = ${orgId} order by id`,
  )
const deliveriesOf = (orgId: string) =>
  query<{ type: string }>((sql) => sql`select type from webhook_deliveries where org_id = ${orgId} order by id`)

const eventually = async (what: string, check: () => boolean | Promise<boolean>, ms = 20_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}
const bodiesAt = (path: string) => receiver.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body))

/** Every row of a change feed, walked in small pages from the start. */
const walkFeed = async (path: string, key: string) => {
  await olderWritersEnded(db)
  const ids: Array<string> = []
  let token: string | null = null
  for (let pages = 0; pages < 1000; pages++) {
    const res = await get(server.url, `${path}?limit=2${token ? `&after=${encodeURIComponent(token)}` : ""}`, key)
    expect(res.status).toBe(200)
    for (const row of res.body.data) ids.push(row.id)
    token = res.body.nextToken
    if (!res.body.hasMore) return ids
  }
  throw new Error("feed walk did not end")
}

let rpc = 0
// biome-ignore lint/suspicious/noExplicitAny: the tool's whole answer, searched as text
const callTool = async (key: string, name: string, args: Record<string, unknown>): Promise<any> => {
  const res = await fetch(`${server.url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpc, method: "tools/call", params: { name, arguments: args } }),
  })
  expect(res.status).toBe(200)
  return await res.json()
}

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"] })
  caFile = join(tmpdir(), `dsvc-ignore-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  server = await startServer({
    env: await testEnv({
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8,::1/128",
      WEBHOOK_CA_FILE: caFile,
      WEBHOOK_RETRY_SCHEDULE: "300ms,600ms",
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
  db = testDatabase(server.env)
})

afterAll(async () => {
  await shutdown(server, db)
  receiver?.stop()
})

describe("ignore rules at ingestion", () => {
  test("a scanner's events stop producing incidents and webhooks the moment a rule exists, and start again when it expires", async () => {
    const t = await tenant("Scanner Co")
    await createChannel(db, t.orgId, `${receiver.url}/scanner`)
    const scanner = "198.51.100.7"

    // Before any rule: an incident and its webhook.
    const first = await send(t.token, [{ sourceIp: scanner, severity: "medium" }])
    const incidentId = first.results[0].incidentId as string
    expect(incidentId).toMatch(/^inc_/)
    await eventually("incident.created", () => bodiesAt("/scanner").length === 1)

    const rule = await addRule(t.orgId, { source: "198.51.100.0/24", note: "our weekly scan", expires: "4s" })
    expect(rule.source).toBe("198.51.100.0/24")
    const deliveriesBefore = (await deliveriesOf(t.orgId)).length

    // From now on: stored and marked, no incident (not even a new one for another address of the network), no
    // escalation of the open incident, no transition, no delivery.
    const ignored = await send(t.token, [
      { sourceIp: scanner, severity: "critical", type: "ssh.login_success" },
      { sourceIp: "198.51.100.99", severity: "high" },
      { sourceIp: scanner, severity: "low" },
    ])
    expect(ignored.accepted).toBe(3)
    for (const r of ignored.results) {
      expect(r.status).toBe("accepted")
      expect(r.incidentId).toBeNull()
      expect(r.id).toMatch(/^evt_/)
    }
    const incidents = await incidentsOf(t.orgId)
    expect(incidents.map((i) => [i.id, i.eventCount, i.severity])).toEqual([[incidentId, 1, "medium"]])
    const stored = await query<{ id: string; incidentId: string | null; ignoreRuleId: string | null }>(
      (sql) =>
        sql`select id, incident_id, ignore_rule_id from events where org_id = ${t.orgId} and ignore_rule_id is not null`,
    )
    expect(stored.map((e) => e.id).sort()).toEqual(ignored.results.map((r: { id: string }) => r.id).sort())
    expect(stored.every((e) => e.incidentId === null && e.ignoreRuleId === rule.id)).toBe(true)
    expect(
      (
        await query<{ n: number }>(
          (sql) => sql`select count(*)::int as n from incident_transitions where incident_id = ${incidentId}`,
        )
      )[0]?.n,
    ).toBe(1)
    expect((await deliveriesOf(t.orgId)).length).toBe(deliveriesBefore)
    await Bun.sleep(800) // the dispatcher polls every 200 ms: nothing more arrives
    expect(bodiesAt("/scanner")).toHaveLength(1)

    const hit = (await listRules(t.orgId)).find((r) => r.id === rule.id)
    expect(hit?.hitCount).toBe(3)
    expect(hit?.lastHitAt).not.toBeNull()
    // A duplicate of an ignored event is a duplicate, not a second hit.
    const again = await ingest(server.ingestUrl, "events", t.token, [
      nativeEvent({ sourceIp: scanner, sensorEventId: "dup-1" }),
    ])
    const dup = await ingest(server.ingestUrl, "events", t.token, [
      nativeEvent({ sourceIp: scanner, sensorEventId: "dup-1" }),
    ])
    expect(again.body.results[0].status).toBe("accepted")
    expect(dup.body.results[0].status).toBe("duplicate")
    expect((await listRules(t.orgId)).find((r) => r.id === rule.id)?.hitCount).toBe(4)

    // Expired: the same activity makes incidents and webhooks again (the open one takes the scanner's events).
    await eventually("the rule to expire", async () => (await listRules(t.orgId))[0]?.expired === true, 10_000)
    const after = await send(t.token, [
      { sourceIp: scanner, severity: "high" },
      { sourceIp: "198.51.100.99", severity: "medium" },
    ])
    expect(after.results[0].incidentId).toBe(incidentId)
    expect(after.results[1].incidentId).toMatch(/^inc_/)
    await eventually(
      "incident.escalated and incident.created after expiry",
      () =>
        bodiesAt("/scanner")
          .map((b) => b.type)
          .sort()
          .join() === "incident.created,incident.created,incident.escalated",
    )
    // A rule never rewrites what is stored: the ignored events stay ignored, the incident kept its own count.
    expect((await incidentsOf(t.orgId)).find((i) => i.id === incidentId)?.eventCount).toBe(2)
  })

  test("an IPv6 network narrowed to a decoy port ignores only that port; a sensor narrowing only that sensor; removal changes only later events", async () => {
    const t = await tenant("Six Co")
    const other = await createSensor(db, t.orgId, "decoy-02")
    const v6 = await addRule(t.orgId, { source: "2001:db8:abcd::/48", port: "22", note: "v6 monitor" })
    expect(v6.source).toBe("2001:db8:abcd::/48")
    const bySensor = await addRule(t.orgId, { source: "192.0.2.0/28", sensor: other.id, type: "http.request" })

    const res = await send(t.token, [
      { sourceIp: "2001:db8:abcd::5", port: 22, service: "ssh" },
      { sourceIp: "2001:DB8:ABCD:0:0:0:0:6", port: 22, service: "ssh" }, // another spelling of the same network
      { sourceIp: "2001:db8:abcd::5", port: 23, type: "telnet.login_attempt", service: "telnet" },
      { sourceIp: "2001:db8:abce::1", port: 22, service: "ssh" },
      { sourceIp: "192.0.2.3", type: "http.request", port: 80, service: "http" }, // not this rule's sensor
    ])
    expect(res.results.map((r: { incidentId: string | null }) => r.incidentId === null)).toEqual([
      true,
      true,
      false,
      false,
      false,
    ])
    const res2 = await send(other.token, [
      { sourceIp: "192.0.2.3", type: "http.request", port: 80, service: "http" },
      { sourceIp: "192.0.2.3", type: "http.login_attempt", port: 80, service: "http" }, // another type
      { sourceIp: "192.0.2.16", type: "http.request", port: 80, service: "http" }, // outside the /28
    ])
    expect(res2.results.map((r: { incidentId: string | null }) => r.incidentId === null)).toEqual([true, false, false])
    const rules = await listRules(t.orgId)
    expect(rules.find((r) => r.id === v6.id)?.hitCount).toBe(2)
    expect(rules.find((r) => r.id === bySensor.id)?.hitCount).toBe(1)

    // Removed: later events are not ignored; the events it ignored stay ignored.
    await removeRule(v6.id)
    const later = await send(t.token, [{ sourceIp: "2001:db8:abcd::5", port: 22, service: "ssh" }])
    expect(later.results[0].incidentId).toMatch(/^inc_/)
    const stillIgnored = await query<{ n: number }>(
      (sql) => sql`select count(*)::int as n from events where ignore_rule_id = ${v6.id}`,
    )
    expect(stillIgnored[0]?.n).toBe(2)
    expect((await listRules(t.orgId)).map((r) => r.id)).toEqual([bySensor.id])
  })

  test("the API, both change feeds and MCP never return an ignored event; a rule of one organization never touches another's events", async () => {
    const a = await tenant("Reads A")
    const b = await tenant("Reads B")
    // Organization B ignores the broadest networks a rule may (a /8, a /16) around the addresses A also sends from:
    // organization A's events are not its business.
    await addRule(b.orgId, { source: "192.0.0.0/8" })
    await addRule(b.orgId, { source: "2001::/16" })
    await addRule(a.orgId, { source: "203.0.113.0/24" })

    const batch = await send(a.token, [
      { sourceIp: "203.0.113.5" },
      { sourceIp: "192.0.2.77" },
      { sourceIp: "203.0.113.6" },
      { sourceIp: "192.0.2.77", severity: "high" },
      { sourceIp: "2001:db8::77" },
    ])
    const ignoredIds = batch.results
      .filter((r: { incidentId: string | null }) => r.incidentId === null)
      .map((r: { id: string }) => r.id)
    const keptIds = batch.results
      .filter((r: { incidentId: string | null }) => r.incidentId !== null)
      .map((r: { id: string }) => r.id)
    expect(ignoredIds).toHaveLength(2)
    expect(keptIds).toHaveLength(3)
    const bBatch = await send(b.token, [{ sourceIp: "192.0.2.77" }, { sourceIp: "2001:db8::77" }])
    expect(bBatch.results.every((r: { incidentId: string | null }) => r.incidentId === null)).toBe(true)
    expect(await incidentsOf(b.orgId)).toEqual([])

    // The API: lists (every filter that could reach them), the event by id, incident members.
    const listed = (await walk(server.url, "/v1/events?limit=2", a.key)).ids
    expect(listed.sort()).toEqual([...keptIds].sort())
    for (const filter of ["sourceIp=203.0.113.5", `sensorId=${a.sensorId}`, "type=ssh.login_attempt"]) {
      const ids = (await walk(server.url, `/v1/events?${filter}`, a.key)).ids
      for (const id of ignoredIds) expect(ids).not.toContain(id)
    }
    for (const id of ignoredIds) expect((await get(server.url, `/v1/events/${id}`, a.key)).status).toBe(404)
    for (const id of keptIds) expect((await get(server.url, `/v1/events/${id}`, a.key)).status).toBe(200)
    const incidents = (await get(server.url, "/v1/incidents", a.key)).body.data as Array<{ id: string }>
    expect(incidents).toHaveLength(2)
    for (const incident of incidents) {
      const one = await get(server.url, `/v1/incidents/${incident.id}`, a.key)
      for (const e of one.body.events as Array<{ id: string }>) expect(ignoredIds).not.toContain(e.id)
    }

    // Both feeds, walked in pages of two: every kept event once, no ignored one; no incident change for them.
    const feed = await walkFeed("/v1/events/changes", a.key)
    expect([...feed].sort()).toEqual([...keptIds].sort())
    const incidentFeed = await walkFeed("/v1/incidents/changes", a.key)
    expect(new Set(incidentFeed)).toEqual(new Set(incidents.map((i) => i.id)))
    expect(await walkFeed("/v1/events/changes", b.key)).toEqual([])

    // MCP answers through the API's queries: the ignored ids appear nowhere in its answers.
    const answers = JSON.stringify([
      await callTool(a.key, "list_events", { limit: 50 }),
      await callTool(a.key, "event_changes", { limit: 50 }),
      ...(await Promise.all(ignoredIds.map((id: string) => callTool(a.key, "get_event", { id })))),
    ])
    for (const id of ignoredIds) expect(answers).not.toContain(id)
    for (const id of keptIds) expect(answers).toContain(id)
  })

  test("a feed follower polling while ignored and kept events arrive together ends with exactly the kept events", async () => {
    const t = await tenant("Feed Co")
    await addRule(t.orgId, { source: "198.18.0.0/15" })
    const kept: Array<string> = []
    const seen: Array<string> = []
    let token: string | null = null
    const poll = async () => {
      const res = await get(
        server.url,
        `/v1/events/changes?limit=3${token ? `&after=${encodeURIComponent(token)}` : ""}`,
        t.key,
      )
      expect(res.status).toBe(200)
      for (const row of res.body.data) seen.push(row.id)
      token = res.body.nextToken
      return res.body.hasMore as boolean
    }
    for (let round = 0; round < 8; round++) {
      const writes = Array.from({ length: 3 }, (_, i) =>
        send(t.token, [
          { sourceIp: `198.18.${round}.${i}` },
          { sourceIp: `192.0.2.${round * 3 + i}` },
          { sourceIp: `198.19.${round}.${i}` },
        ]),
      )
      const [results] = await Promise.all([Promise.all(writes), poll()])
      for (const body of results) {
        for (const r of body.results) if (r.incidentId !== null) kept.push(r.id)
      }
    }
    // The last changes show once every older writing transaction of the PostgreSQL server has ended.
    await olderWritersEnded(db)
    while (await poll()) {}
    await poll()
    expect([...seen].sort()).toEqual([...kept].sort())
    expect(new Set(seen).size).toBe(seen.length)
  })
})

describe("an address's spelling", () => {
  test("events from ::192.0.2.5 and ::c000:205 (the same address) land in one incident, and a rule for 192.0.2.5 ignores both", async () => {
    const t = await tenant("Spelling Co")
    const first = await send(t.token, [{ sourceIp: "::192.0.2.5" }, { sourceIp: "::c000:205" }])
    const cowrie = await ingest(server.ingestUrl, "cowrie", t.token, {
      eventid: "cowrie.login.failed",
      session: "spell0001",
      protocol: "ssh",
      src_ip: "::FFFF:C000:0205",
      src_port: 40000,
      dst_port: 22,
      username: "root",
      password: "x",
      timestamp: new Date().toISOString(),
    })
    expect(cowrie.status).toBe(200)
    const ids: Array<string> = [...first.results, ...cowrie.body.results].map(
      (r: { incidentId: string }) => r.incidentId,
    )
    expect(ids).toHaveLength(3)
    expect(ids[0]).toMatch(/^inc_/)
    expect(new Set(ids).size).toBe(1)
    expect((await incidentsOf(t.orgId)).map((i) => [i.sourceIp, i.eventCount])).toEqual([["192.0.2.5", 3]])

    await addRule(t.orgId, { source: "192.0.2.5" })
    const later = await send(t.token, [
      { sourceIp: "::192.0.2.5" },
      { sourceIp: "::c000:205" },
      { sourceIp: "0:0:0:0:0:ffff:192.0.2.5" },
    ])
    expect(later.results.map((r: { incidentId: string | null }) => r.incidentId)).toEqual([null, null, null])
    const sources = await query<{ sourceIp: string }>(
      (sql) => sql`select distinct source_ip from events where org_id = ${t.orgId}`,
    )
    expect(sources.map((r) => r.sourceIp)).toEqual(["192.0.2.5"])
  })
})

describe("ignore rules meet Cowrie's late session details", () => {
  /** A Cowrie 2.x line: only its connect names the protocol and the ports. */
  const cowrieLine = (session: string, ip: string, at: number, fields: Record<string, unknown>) => ({
    session,
    src_ip: ip,
    timestamp: new Date(at).toISOString(),
    ...fields,
  })
  const telnetConnect = (session: string, ip: string, at: number) =>
    cowrieLine(session, ip, at, {
      eventid: "cowrie.session.connect",
      protocol: "telnet",
      src_port: 41234,
      dst_ip: "10.0.0.5",
      dst_port: 2323,
    })
  const login = (session: string, ip: string, at: number, username: string) =>
    cowrieLine(session, ip, at, { eventid: "cowrie.login.failed", username, password: "x" })
  const typed = (session: string, ip: string, at: number, input: string) =>
    cowrieLine(session, ip, at, { eventid: "cowrie.command.input", input })
  // biome-ignore lint/suspicious/noExplicitAny: the route's answer
  const postCowrie = async (token: string, lines: unknown): Promise<any> => {
    const res = await ingest(server.ingestUrl, "cowrie", token, lines)
    expect(res.status).toBe(200)
    expect(res.body.rejected).toBe(0)
    return res.body
  }
  const eventsOf = (orgId: string, ip: string) =>
    query<{ id: string; type: string; port: number; incidentId: string | null; ignoreRuleId: string | null }>(
      (sql) => sql`select id, type, port, incident_id, ignore_rule_id from events
        where org_id = ${orgId} and source_ip = ${ip} order by time, id`,
    )
  const transitionsOf = (orgId: string) =>
    query<{ kind: string }>((sql) => sql`select kind from incident_transitions where org_id = ${orgId} order by at, id`)

  test("a port-2323 rule ignores a telnet session whose connect came after its lines, and their incident gives them back", async () => {
    const t = await tenant("Late telnet Co")
    const ip = "203.0.113.231"
    const rule = await addRule(t.orgId, { source: ip, port: "2323", note: "our telnet probe" })
    const at = Date.now() - 60_000
    // Before the connect: the lines take the defaults (ssh, port 22), so no rule matches; an incident starts, with a
    // native event of the same source that the rule never matches.
    const early = [
      await postCowrie(t.token, login("tel0001", ip, at + 1000, "root")),
      await postCowrie(t.token, login("tel0001", ip, at + 2000, "admin")),
      await postCowrie(t.token, typed("tel0001", ip, at + 3000, "uname -a")),
    ]
    const incidentId = early[0].results[0].incidentId as string
    expect(incidentId).toMatch(/^inc_/)
    for (const body of early) expect(body.results[0].incidentId).toBe(incidentId)
    const other = await send(t.token, [{ sourceIp: ip, port: 22, time: new Date(at + 4000).toISOString() }])
    expect(other.results[0].incidentId).toBe(incidentId)
    expect((await incidentsOf(t.orgId)).map((i) => i.eventCount)).toEqual([4])
    const transitionsBefore = await transitionsOf(t.orgId)

    // The connect says telnet on 2323: the session's events are judged again, in the same transaction.
    const connect = await postCowrie(t.token, telnetConnect("tel0001", ip, at))
    expect(connect.results[0].incidentId).toBeNull()
    const stored = await eventsOf(t.orgId, ip)
    expect(stored.map((e) => [e.type, e.port, e.incidentId, e.ignoreRuleId])).toEqual([
      ["telnet.session", 2323, null, rule.id],
      ["telnet.login_attempt", 2323, null, rule.id],
      ["telnet.login_attempt", 2323, null, rule.id],
      ["telnet.command", 2323, null, rule.id],
      ["ssh.login_attempt", 22, incidentId, null],
    ])

    // The incident keeps only what is not ignored; nothing is announced for it (no transition, as for any
    // ignored event).
    const incident = await get(server.url, `/v1/incidents/${incidentId}`, t.key)
    expect(incident.status).toBe(200)
    expect(incident.body.eventCount).toBe(1)
    expect(incident.body.eventTypes).toEqual(["ssh.login_attempt"])
    expect(incident.body.events.map((e: { id: string }) => e.id)).toEqual([stored[4]?.id])
    expect(await transitionsOf(t.orgId)).toEqual(transitionsBefore)
    expect((await listRules(t.orgId)).find((r) => r.id === rule.id)?.hitCount).toBe(4)
    // The feeds: the incident's latest change shows the count it now has; the events feed leaves the ignored out.
    await olderWritersEnded(db)
    const changes = (await get(server.url, "/v1/incidents/changes?limit=100", t.key)).body.data
    expect(changes.at(-1)).toMatchObject({ id: incidentId, eventCount: 1 })
    expect(await walkFeed("/v1/events/changes", t.key)).toEqual([stored[4]?.id ?? ""])
    // A later event of the source joins the incident as it is now.
    const later = await send(t.token, [{ sourceIp: ip, port: 22 }])
    expect(later.results[0].incidentId).toBe(incidentId)
    expect((await incidentsOf(t.orgId)).map((i) => i.eventCount)).toEqual([2])
  })

  test("an SSH-only rule no longer hides a telnet session once its connect says telnet: its events join an incident as fresh ones would", async () => {
    const t = await tenant("Late ssh Co")
    await createChannel(db, t.orgId, `${receiver.url}/late-ssh`)
    const ip = "203.0.113.232"
    const rule = await addRule(t.orgId, { source: ip, port: "22", note: "our ssh scanner" })
    const at = Date.now() - 60_000
    // Before the connect: ssh on 22 by default, so the rule ignores them.
    for (const line of [login("tel0002", ip, at + 1000, "root"), typed("tel0002", ip, at + 2000, "id")]) {
      expect((await postCowrie(t.token, line)).results[0].incidentId).toBeNull()
    }
    expect(await incidentsOf(t.orgId)).toEqual([])
    expect((await listRules(t.orgId)).find((r) => r.id === rule.id)?.hitCount).toBe(2)
    // A feed follower has read everything so far (nothing).
    const first = await get(server.url, "/v1/events/changes?limit=100", t.key)
    expect(first.body.data).toEqual([])
    const token = first.body.nextToken as string

    const connect = await postCowrie(t.token, telnetConnect("tel0002", ip, at))
    const incidentId = connect.results[0].incidentId as string
    expect(incidentId).toMatch(/^inc_/)
    const stored = await eventsOf(t.orgId, ip)
    expect(stored.map((e) => [e.type, e.port, e.incidentId, e.ignoreRuleId])).toEqual([
      ["telnet.session", 2323, incidentId, null],
      ["telnet.login_attempt", 2323, incidentId, null],
      ["telnet.command", 2323, incidentId, null],
    ])
    const incident = await get(server.url, `/v1/incidents/${incidentId}`, t.key)
    expect(incident.body.eventCount).toBe(3)
    expect(incident.body.eventTypes).toEqual(["telnet.command", "telnet.login_attempt", "telnet.session"])
    expect(await transitionsOf(t.orgId)).toEqual([{ kind: "created" }])
    expect((await listRules(t.orgId)).find((r) => r.id === rule.id)?.hitCount).toBe(0)
    // The follower goes on from where it was and gets all three, as it gets fresh events.
    const next = await get(server.url, `/v1/events/changes?limit=100&after=${encodeURIComponent(token)}`, t.key)
    expect(next.body.data.map((e: { id: string }) => e.id).sort()).toEqual(stored.map((e) => e.id).sort())
    // One incident.created, with all three events.
    await eventually("incident.created", () => bodiesAt("/late-ssh").length === 1)
    await Bun.sleep(500)
    const bodies = bodiesAt("/late-ssh")
    expect(bodies.map((b) => b.type)).toEqual(["incident.created"])
    expect(bodies[0].incident.eventCount).toBe(3)
  })
})
