import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { type AdminActor, asOperator } from "../../src/admin/actor.ts"
import { cliWords } from "../../src/admin/cli/words.ts"
import type { AdminError } from "../../src/admin/errors.ts"
import { JudgementAdmin } from "../../src/admin/JudgementAdmin.ts"
import { capturedNow, captureLines } from "../support/captureTime.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * How incidents are judged, through the real server: what a stock OpenCanary and a stock Cowrie really sent
 * (test/fixtures/real) and native events from chosen addresses, read back through the API.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

interface ApiIncident {
  id: string
  title: string
  severity: string
  narrative: string
  recommendedAction: string
  sensor: { id: string; name: string }
  sourceIp: string
  source: { scope: string; network: { cidr: string; label: string } | null }
  baitCredentialUsed: boolean
  otherSensors: number
  techniques: Array<{ id: string }>
}

const judgement = <A, E>(f: (admin: JudgementAdmin) => Effect.Effect<A, E, AdminActor>) =>
  db.run(asOperator(Effect.flatMap(JudgementAdmin, f)))

/** One run of the OpenCanary capture (15 lines), moved to now. */
const openCanaryRun = () => capturedNow(captureLines("opencanary/opencanary.log").slice(0, 15))
const cowrieCapture = () => capturedNow(captureLines("cowrie/cowrie.json"))

const incidentsOf = async (key: string): Promise<Array<ApiIncident>> => {
  const list = await get(server.url, "/v1/incidents?limit=100", key)
  expect(list.status).toBe(200)
  return (list.body as { data: Array<ApiIncident> }).data
}

const single = async (key: string, id: string): Promise<ApiIncident> => {
  const answer = await get(server.url, `/v1/incidents/${id}`, key)
  expect(answer.status).toBe(200)
  return answer.body as ApiIncident
}

describe("bait credentials", () => {
  test("OpenCanary's honeycred login makes the incident critical, high confidence, T1078, the bait said first", async () => {
    const tenant = await createTenant(db, "Honeycred judged")
    const sensor = await createSensor(db, tenant.orgId, "canary-1")
    const response = await ingest(server.ingestUrl, "opencanary", sensor.token as string, openCanaryRun(), true)
    expect(response.status).toBe(200)
    const [incident] = await incidentsOf(tenant.key)
    expect(incident?.severity).toBe("critical")
    expect(incident?.baitCredentialUsed).toBe(true)
    expect(incident?.title).toStartWith("Bait credential used: Telnet login attempt and ")
    const full = await single(tenant.key, incident?.id as string)
    expect(full.narrative).toStartWith("A bait credential was used")
    expect(full.techniques.map((t) => t.id)).toContain("T1078")
    // The bait login itself is the critical, high-confidence event; the wrong telnet password stays what it was.
    const events = await get(server.url, `/v1/events?incidentId=${incident?.id}&type=telnet.login_attempt`, tenant.key)
    const telnet = (events.body as { data: Array<{ severity: string; confidence: string; tags: string[] }> }).data
    expect(telnet.map((e) => [e.severity, e.confidence, e.tags.includes("bait-credential")]).sort()).toEqual([
      ["critical", "high", true],
      ["medium", "normal", false],
    ])
  })

  test("a Cowrie login with a registered bait pair is critical; the password is kept only as its fingerprint", async () => {
    const tenant = await createTenant(db, "Cowrie bait")
    const sensor = await createSensor(db, tenant.orgId, "cowrie-1")
    const added = await judgement((admin) =>
      admin.baitAdd(tenant.orgId, { username: "root", password: "hunter2", label: "/etc/backup.conf on fs-01" }),
    )
    expect(added.username).toBe("root")
    expect(JSON.stringify(await judgement((admin) => admin.baitList(tenant.orgId)))).not.toContain("hunter2")
    const response = await ingest(server.ingestUrl, "cowrie", sensor.token as string, cowrieCapture(), true)
    expect(response.status).toBe(200)
    const incidents = await incidentsOf(tenant.key)
    expect(incidents.length).toBeGreaterThan(0)
    for (const incident of incidents) {
      expect(incident.severity).toBe("critical")
      expect(incident.baitCredentialUsed).toBe(true)
    }
    // The same capture without the registration: the logins are valid credentials, not bait.
    const plain = await createTenant(db, "Cowrie plain")
    const plainSensor = await createSensor(db, plain.orgId, "cowrie-2")
    await ingest(server.ingestUrl, "cowrie", plainSensor.token as string, cowrieCapture(), true)
    for (const incident of await incidentsOf(plain.key)) expect(incident.baitCredentialUsed).toBe(false)
  })

  test("a bait pair is refused twice, bounded, and removed only within its organization", async () => {
    const tenant = await createTenant(db, "Bait admin")
    const other = await createTenant(db, "Bait other")
    const added = await judgement((admin) => admin.baitAdd(tenant.orgId, { username: "svc", password: "Planted-1" }))
    const again = await db
      .run(
        asOperator(
          Effect.flatMap(JudgementAdmin, (a) => a.baitAdd(tenant.orgId, { username: "svc", password: "Planted-1" })),
        ).pipe(Effect.flip),
      )
      .then((e) => cliWords(e as AdminError))
    expect(again).toContain("already registered")
    const long = await db
      .run(
        asOperator(
          Effect.flatMap(JudgementAdmin, (a) => a.baitAdd(tenant.orgId, { username: "x", password: "p".repeat(300) })),
        ).pipe(Effect.flip),
      )
      .then((e) => cliWords(e as AdminError))
    expect(long).toContain("at most 256")
    expect(await judgement((admin) => admin.baitList(other.orgId))).toEqual([])
    expect(await judgement((admin) => admin.baitRemove(added.id))).toEqual({ id: added.id, removed: true })
    expect(await judgement((admin) => admin.baitList(tenant.orgId))).toEqual([])
  })
})

describe("inside or outside", () => {
  test("an attack from a configured network is high and says it comes from inside, in every text", async () => {
    const tenant = await createTenant(db, "Inside")
    const sensor = await createSensor(db, tenant.orgId, "fs-decoy")
    await judgement((admin) => admin.setNetworks(tenant.orgId, "10.20.0.0/16 Office LAN\n10.0.0.0/8 Corporate"))
    const scan = [1, 2, 3].map((n) =>
      nativeEvent({ sourceIp: "10.20.1.5", type: "portscan.syn", port: 20 + n, attackerInput: {} }),
    )
    expect((await ingest(server.ingestUrl, "events", sensor.token as string, scan)).status).toBe(200)
    const [incident] = await incidentsOf(tenant.key)
    expect(incident?.severity).toBe("high")
    expect(incident?.source.scope).toBe("internal")
    expect(incident?.source.network).toEqual({ cidr: "10.20.0.0/16", label: "Office LAN" })
    expect(incident?.title).toContain("from inside your network (Office LAN)")
    expect(incident?.narrative).toContain("inside your network (Office LAN)")
    expect(incident?.recommendedAction).toStartWith("The source is one of your own machines (Office LAN)")
    const profile = await get(server.url, "/v1/sources/10.20.1.5", tenant.key)
    expect(profile.status).toBe(200)
    expect(profile.body.source.scope).toBe("internal")
  })

  test("by default the private ranges are inside; changing the list re-judges and escalates open incidents", async () => {
    const tenant = await createTenant(db, "Rejudge")
    const sensor = await createSensor(db, tenant.orgId, "web-decoy")
    const events = [
      nativeEvent({ sourceIp: "192.168.7.7", type: "portscan.syn", attackerInput: {} }),
      nativeEvent({ sourceIp: "198.51.100.23", type: "portscan.syn", attackerInput: {} }),
    ]
    expect((await ingest(server.ingestUrl, "events", sensor.token as string, events)).status).toBe(200)
    const before = new Map((await incidentsOf(tenant.key)).map((i) => [i.sourceIp, i]))
    expect(before.get("192.168.7.7")?.source.scope).toBe("internal")
    expect(before.get("192.168.7.7")?.severity).toBe("high")
    expect(before.get("198.51.100.23")?.source.scope).toBe("external")
    expect(before.get("198.51.100.23")?.severity).toBe("low")

    const set = await judgement((admin) => admin.setNetworks(tenant.orgId, "198.51.100.0/24 Partner VPN"))
    expect(set.rejudged).toBe(2)
    const after = new Map((await incidentsOf(tenant.key)).map((i) => [i.sourceIp, i]))
    expect(after.get("198.51.100.23")?.source).toMatchObject({
      scope: "internal",
      network: { cidr: "198.51.100.0/24", label: "Partner VPN" },
    })
    expect(after.get("198.51.100.23")?.severity).toBe("high")
    expect(after.get("192.168.7.7")?.source.scope).toBe("external")
    // The rise is an escalation like any other: in the incident's transitions (what every channel is sent).
    await olderWritersEnded(db)
    const changes = await get(server.url, "/v1/incidents/changes?limit=100", tenant.key)
    const partner = (changes.body as { data: ApiIncident[] }).data.filter((i) => i.sourceIp === "198.51.100.23")
    expect(partner.map((i) => i.severity)).toEqual(["low", "high"])

    await judgement((admin) => admin.setNetworks(tenant.orgId, null))
    const reset = new Map((await incidentsOf(tenant.key)).map((i) => [i.sourceIp, i]))
    expect(reset.get("192.168.7.7")?.source.network?.cidr).toBe("192.168.0.0/16")
  })

  test("a list with a bad line is refused with its line, and nothing changes", async () => {
    const tenant = await createTenant(db, "Bad list")
    const refused = await db
      .run(
        asOperator(
          Effect.flatMap(JudgementAdmin, (a) => a.setNetworks(tenant.orgId, "10.0.0.0/8 ok\n300.1.2.3/8 bad")),
        ).pipe(Effect.flip),
      )
      .then((e) => cliWords(e as AdminError))
    expect(refused).toContain("line 2")
    expect((await judgement((admin) => admin.networks(tenant.orgId))).custom).toBe(false)
  })
})

describe("one attacker across decoys", () => {
  test("one source on two sensors makes two linked incidents, the second escalated, both at /v1/sources/{ip}", async () => {
    const tenant = await createTenant(db, "Linked")
    const first = await createSensor(db, tenant.orgId, "decoy-a")
    const second = await createSensor(db, tenant.orgId, "decoy-b")
    const scan = () => [nativeEvent({ sourceIp: "203.0.113.77", type: "portscan.syn", attackerInput: {} })]
    expect((await ingest(server.ingestUrl, "events", first.token as string, scan())).status).toBe(200)
    expect((await ingest(server.ingestUrl, "events", second.token as string, scan())).status).toBe(200)
    const incidents = await incidentsOf(tenant.key)
    const bySensor = new Map(incidents.map((i) => [i.sensor.name, i]))
    expect(bySensor.get("decoy-a")?.severity).toBe("low")
    expect(bySensor.get("decoy-b")?.severity).toBe("medium")
    expect(bySensor.get("decoy-b")?.narrative).toContain("1 other decoy sensor of yours")
    expect(bySensor.get("decoy-a")?.otherSensors).toBe(1)
    expect(bySensor.get("decoy-b")?.otherSensors).toBe(1)

    const profile = await get(server.url, "/v1/sources/203.0.113.77", tenant.key)
    expect(profile.status).toBe(200)
    expect(profile.body).toMatchObject({
      ip: "203.0.113.77",
      incidentCount: 2,
      sensorCount: 2,
      ignoredBy: null,
      source: { scope: "external", network: null },
    })
    expect(profile.body.incidents.map((i: ApiIncident) => i.sensor.name).sort()).toEqual(["decoy-a", "decoy-b"])
    // The address in another spelling is the same source; an address never seen is 404; a bad one 400.
    expect((await get(server.url, "/v1/sources/::ffff:203.0.113.77", tenant.key)).body.ip).toBe("203.0.113.77")
    const unseen = await get(server.url, "/v1/sources/203.0.113.78", tenant.key)
    expect(unseen.status).toBe(404)
    expect(unseen.headers.get("content-type")).toContain("application/problem+json")
    const bad = await get(server.url, "/v1/sources/not-an-address", tenant.key)
    expect(bad.status).toBe(400)
    expect(bad.body.detail).toContain("ip must be")
    // An agent asks the same through MCP: the API's answer, the address outside any fence only in its one form.
    const mcp = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${tenant.key}`,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "get_source", arguments: { ip: "203.0.113.77" } },
      }),
    })
    const result = ((await mcp.json()) as { result: { structuredContent: unknown; content: Array<{ text: string }> } })
      .result
    expect(result.structuredContent).toEqual(profile.body)
    expect(result.content[0]?.text).toStartWith("get_source: 203.0.113.77.")
    // Another organization's key sees nothing of it.
    const stranger = await createTenant(db, "Stranger")
    expect((await get(server.url, "/v1/sources/203.0.113.77", stranger.key)).status).toBe(404)
  })
})
