import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AdminActor, OPERATOR, orgUser } from "../../src/admin/actor.ts"
import { IncidentAdmin } from "../../src/admin/IncidentAdmin.ts"
import { IncidentHistory } from "../../src/console/incidents/history.tsx"
import { newId, type OrgId, StoredId } from "../../src/domain/ids.ts"
import { TransitionsRepo } from "../../src/repos/TransitionsRepo.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get, idOf, seedIncident } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * Triage at the admin CLI and in IncidentAdmin, against a real server and database: a close needs a reason, is
 * recorded with its note and closer in the incident's history and audited; notes are checked plain text; a bulk
 * close closes exactly what its dry run counted; none of it changes what the API returns.
 */

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: OrgId; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ REOPEN_WINDOW: "1 seconds" }) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, `Triage ${crypto.randomUUID().slice(0, 8)}`)
  sensor = await createSensor(db, tenant.orgId, "triage-01")
}, 120_000)

afterAll(() => shutdown(server, db))

const newIncident = async (sourceIp: string) => {
  const res = await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp }))
  expect(res.status).toBe(200)
  return res.body.results[0].incidentId as string
}

const history = (incidentId: string) =>
  db.run(Effect.flatMap(TransitionsRepo, (t) => t.history(tenant.orgId, idOf("incident", incidentId))))

const auditRows = (orgId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ actor: string; action: string; target: string | null; detail: string | null }>`
          select actor, action, target, detail from audit_log where org_id = ${orgId} order by id`,
    ),
  )

describe("incident close at the CLI", () => {
  test("without --reason: the one line 'error: --reason is required', exit 1, and the incident stays open", async () => {
    const id = await newIncident("198.51.100.1")
    const result = await admin(server.env, ["incident", "close", id])
    expect(result).toEqual({ code: 1, stdout: "", stderr: "error: --reason is required" })
    const bad = await admin(server.env, ["incident", "close", id, "--reason", "bored"])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toBe("error: --reason must be one of resolved, false_positive, authorized_test, other")
    expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.status).toBe("open")
  })

  test("with a reason and a note: in the history (reason, note, the operator) and the audit, the API's fields unchanged", async () => {
    const id = await newIncident("198.51.100.2")
    const before = await get(server.url, `/v1/incidents/${id}`, tenant.key)
    const note = 'pentest by <script>alert(1)</script> "red team", ticket SEC-12'
    const closed = await adminJson(server.env, ["incident", "close", id, "--reason", "authorized_test", "--note", note])
    expect(closed).toMatchObject({ id, status: "closed", reason: "authorized_test" })
    const after = await get(server.url, `/v1/incidents/${id}`, tenant.key)
    // The API stays as it was: the same fields, only status and resolvedAt changed.
    expect(Object.keys(after.body).sort()).toEqual(Object.keys(before.body).sort())
    expect(after.body).toMatchObject({ status: "closed" })
    const rows = await history(id)
    expect(rows.map((r) => r.kind)).toEqual(["created", "closed"])
    expect(rows[1]).toMatchObject({ closeReason: "authorized_test", closeNote: note, actor: "cli" })
    const audit = (await auditRows(tenant.orgId)).filter((a) => a.target === id)
    expect(audit).toEqual([
      { actor: "cli", action: "incident.close", target: id, detail: "reason authorized_test, with a note" },
    ])
  })

  test("a note with a control character (a line break aside) or over 2000 characters is refused; a note is added and audited", async () => {
    const id = await newIncident("198.51.100.3")
    for (const bad of ["ring\u0007", "tab\there", "\u202Egnp.exe"]) {
      const refused = await admin(server.env, ["incident", "close", id, "--reason", "other", "--note", bad])
      expect(refused.stderr).toBe("error: --note may not hold control characters")
    }
    const long = await admin(server.env, ["incident", "note", id, "--note", "x".repeat(2001)])
    expect(long.stderr).toBe("error: --note may be at most 2000 characters")
    const added = await adminJson(server.env, ["incident", "note", id, "--note", "seen before, see SEC-12"])
    expect(added.id).toStartWith("inn_")
    // Line breaks are kept, CRLF stored as LF.
    const lines = await adminJson(server.env, ["incident", "note", id, "--note", "first line\r\nsecond line"])
    const stored = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ body: string }>`select body from incident_notes where id = ${lines.id as string}`,
      ),
    )
    expect(stored[0]?.body).toBe("first line\nsecond line")
    const audit = (await auditRows(tenant.orgId)).filter((a) => a.target === id)
    expect(audit.map((a) => a.action)).toEqual(["incident.note", "incident.note"])
    expect(
      (await admin(server.env, ["incident", "note", "inc_01JZZZZZZZZZZZZZZZZZZZZZZZ", "--note", "x"])).stderr,
    ).toBe("error: no incident inc_01JZZZZZZZZZZZZZZZZZZZZZZZ")
  })

  test("a close, a re-open and the history render as the incident page shows them", async () => {
    const ip = "198.51.100.4"
    const id = await newIncident(ip)
    // A higher-severity event from the same source escalates the open incident (medium to high).
    const login = await ingest(
      server.ingestUrl,
      "events",
      sensor.token,
      nativeEvent({ sourceIp: ip, type: "ssh.login_success" }),
    )
    expect(login.status).toBe(200)
    expect(login.body.results[0].incidentId).toBe(id)
    await adminJson(server.env, ["incident", "close", id, "--reason", "false_positive"])
    // Within REOPEN_WINDOW the same incident re-opens.
    expect(await newIncident(ip)).toBe(id)
    const rows = await history(id)
    expect(rows.map((r) => r.kind)).toEqual(["created", "escalated", "closed", "reopened"])
    expect(rows[1]).toMatchObject({ fromSeverity: "medium", toSeverity: "high" })
    const html = String(IncidentHistory({ history: rows, now: new Date() }))
    expect(html).toContain(
      '<strong>Escalated</strong> from <span class="sev sev-medium">medium</span> to <span class="sev sev-high">high</span>',
    )
    expect(html).toContain("Closed</strong> (False positive)")
    expect(html).toContain("by the operator (CLI)")
    expect(html).toContain("Re-opened")
  })
})

describe("IncidentAdmin as a console user", () => {
  test("an analyst closes and adds notes in their organization; another organization's incident is unknown", async () => {
    const other = await createTenant(db, `Other ${crypto.randomUUID().slice(0, 8)}`)
    const otherSensor = await createSensor(db, other.orgId, "other-01")
    const res = await ingest(server.ingestUrl, "events", otherSensor.token, nativeEvent({ sourceIp: "192.0.2.9" }))
    const foreign = res.body.results[0].incidentId as string
    const own = await newIncident("198.51.100.5")
    const analyst = orgUser({
      id: StoredId.UserId.make("usr_01JANALYST0000000000000000"),
      ip: "127.0.0.1",
      orgId: tenant.orgId,
      role: "analyst",
    })
    const asAnalyst = <A, E>(effect: Effect.Effect<A, E, IncidentAdmin | AdminActor>) =>
      db.run(Effect.either(Effect.provideService(effect, AdminActor, analyst)))
    const noted = await asAnalyst(Effect.flatMap(IncidentAdmin, (a) => a.addNote(own, "looked at it")))
    expect(noted._tag).toBe("Right")
    const closed = await asAnalyst(Effect.flatMap(IncidentAdmin, (a) => a.close(own, { reason: "resolved" })))
    expect(closed._tag).toBe("Right")
    for (const attempt of [
      Effect.flatMap(IncidentAdmin, (a) => a.addNote(foreign, "mine now")),
      Effect.flatMap(IncidentAdmin, (a) => a.close(foreign, { reason: "resolved" })),
      Effect.flatMap(IncidentAdmin, (a) => a.previewBulk(other.orgId, { source: "192.0.2.9" })),
    ]) {
      const refused = await asAnalyst(attempt as Effect.Effect<unknown, { _tag: string }, IncidentAdmin | AdminActor>)
      expect(refused._tag).toBe("Left")
      if (refused._tag === "Left") expect(refused.left._tag).toBe("NotFound")
    }
    expect((await get(server.url, `/v1/incidents/${foreign}`, other.key)).body.status).toBe("open")
    const rows = await history(own)
    expect(rows[1]).toMatchObject({ kind: "closed", closeReason: "resolved", actor: analyst.id })
  })
})

describe("bulk close", () => {
  test("--dry-run counts what a close then closes, exactly; one audit row with the count; other incidents stay open", async () => {
    const org = await createTenant(db, `Bulk ${crypto.randomUUID().slice(0, 8)}`)
    const s1 = await createSensor(db, org.orgId, "bulk-01")
    const s2 = await createSensor(db, org.orgId, "bulk-02")
    const old = new Date(Date.now() - 10 * 86_400_000)
    const recent = new Date(Date.now() - 3_600_000)
    const seed = (sensorId: string, sourceIp: string, at: Date) =>
      seedIncident(db, {
        orgId: org.orgId,
        sensorId,
        sourceIp,
        events: [{ time: at, type: "ssh.login_attempt", severity: "medium" }],
      })
    for (let i = 0; i < 5; i++) await seed(s1.id, `203.0.113.${i + 1}`, old)
    await seed(s1.id, "203.0.113.50", recent)
    await seed(s2.id, "203.0.113.1", old)
    const dry = await adminJson(server.env, [
      "incident",
      "close",
      "--org",
      org.orgId,
      "--sensor",
      s1.id,
      "--older-than",
      "7d",
      "--dry-run",
    ])
    expect(dry).toEqual({ matching: 5, wouldClose: 5 })
    const noReason = await admin(server.env, ["incident", "close", "--org", org.orgId, "--sensor", s1.id])
    expect(noReason.stderr).toBe("error: --reason is required")
    const noFilter = await admin(server.env, ["incident", "close", "--org", org.orgId, "--reason", "resolved"])
    expect(noFilter.stderr).toBe("error: give at least one of --sensor, --source and --older-than")
    const done = await adminJson(server.env, [
      "incident",
      "close",
      "--org",
      org.orgId,
      "--sensor",
      s1.id,
      "--older-than",
      "7d",
      "--reason",
      "false_positive",
      "--note",
      "scanner noise",
    ])
    expect(done).toMatchObject({ closed: 5, remaining: 0, reason: "false_positive" })
    const open = await get(server.url, "/v1/incidents?status=open", org.key)
    expect(open.body.data.map((i: { sourceIp: string }) => i.sourceIp).sort()).toEqual(["203.0.113.1", "203.0.113.50"])
    const closedRows = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ n: number }>`select count(*)::int as n from incident_transitions
          where org_id = ${org.orgId} and kind = 'closed' and close_reason = 'false_positive'
            and close_note = 'scanner noise' and actor = 'cli'`,
      ),
    )
    expect(closedRows[0]?.n).toBe(5)
    const audit = await auditRows(org.orgId)
    const bulk = audit.filter((a) => a.action === "incident.bulk_close")
    expect(bulk).toHaveLength(1)
    expect(bulk[0]?.detail).toStartWith("5 closed, reason false_positive, with a note; sensor ")
  })
})

describe("bulk close against its preview", () => {
  const asOperator = <A, E>(effect: Effect.Effect<A, E, IncidentAdmin | AdminActor>) =>
    db.run(Effect.provideService(effect, AdminActor, OPERATOR))

  test("with the previewed count: more matching by then closes nothing and says the new count; at most that many are closed", async () => {
    const org = await createTenant(db, `Preview ${crypto.randomUUID().slice(0, 8)}`)
    const s1 = await createSensor(db, org.orgId, "preview-01")
    const old = new Date(Date.now() - 10 * 86_400_000)
    const seed = (sourceIp: string, at = old) =>
      seedIncident(db, {
        orgId: org.orgId,
        sensorId: s1.id,
        sourceIp,
        events: [{ time: at, type: "ssh.login_attempt", severity: "low" }],
      })
    for (let i = 1; i <= 3; i++) await seed(`203.0.113.${i}`)
    const preview = await asOperator(
      Effect.flatMap(IncidentAdmin, (a) => a.previewBulk(org.orgId, { sensor: s1.id, olderThan: "7d" })),
    )
    expect(preview.matching).toBe(3)
    const seenBefore = preview.filter.seenBefore?.toISOString() as string
    expect(Math.abs(Date.parse(seenBefore) - (Date.now() - 7 * 86_400_000))).toBeLessThan(60_000)
    const confirm = (expected: number) =>
      asOperator(
        Effect.flatMap(IncidentAdmin, (a) =>
          a.closeBulk(org.orgId, { sensor: s1.id, olderThan: seenBefore }, { reason: "resolved" }, expected),
        ),
      )
    // One more matches by the confirm: nothing is closed, the new count comes back.
    await seed("203.0.113.4")
    const changed = await confirm(3)
    expect(changed).toMatchObject({ _tag: "Changed", matching: 4, previewed: 3 })
    const open = await get(server.url, "/v1/incidents?status=open&limit=100", org.key)
    expect(open.body.data).toHaveLength(4)
    // An incident last seen just after the preview's absolute time is not the previewed filter's, though
    // "7d" counted back from the confirm would take it.
    await seed("203.0.113.5", new Date(Date.parse(seenBefore) + 1))
    await Bun.sleep(5)
    const done = await confirm(4)
    expect(done).toMatchObject({ _tag: "Closed", closed: 4, remaining: 0 })
    const left = await get(server.url, "/v1/incidents?status=open&limit=100", org.key)
    expect(left.body.data.map((i: { sourceIp: string }) => i.sourceIp)).toEqual(["203.0.113.5"])
    // Fewer matching than previewed (one closed meanwhile): those that still match are closed.
    const later = []
    for (let i = 6; i <= 8; i++) later.push((await seed(`203.0.113.${i}`)).incident.id)
    await adminJson(server.env, ["incident", "close", later[0] as string, "--reason", "other"])
    const fewer = await confirm(3)
    expect(fewer).toMatchObject({ _tag: "Closed", closed: 2, remaining: 0 })
  })

  test("an incident id with filter flags is refused in one line, and nothing is closed", async () => {
    const id = await newIncident("198.51.100.90")
    for (const flags of [
      ["--sensor", sensor.id],
      ["--org", tenant.orgId],
      ["--older-than", "7d"],
      ["--source", "198.51.100.90", "--dry-run"],
    ]) {
      const refused = await admin(server.env, ["incident", "close", id, ...flags, "--reason", "resolved"])
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe("")
      expect(refused.stderr.split("\n")).toHaveLength(1)
      expect(refused.stderr).toStartWith(`error: an <incident-id> closes that one incident: ${flags[0]}`)
    }
    expect((await get(server.url, `/v1/incidents/${id}`, tenant.key)).body.status).toBe("open")
  })

  test("more than 6,600 incidents of one organization are bulk-closed at once, each with its closed transition", async () => {
    const org = await createTenant(db, `Thousands ${crypto.randomUUID().slice(0, 8)}`)
    const trap = await createSensor(db, org.orgId, "thousands-01")
    const count = 6_700
    const ids = Array.from({ length: count }, () => newId("incident"))
    const old = new Date(Date.now() - 10 * 86_400_000)
    // One statement: each incident its own source (10.0.x.y), as ingestion would group them.
    await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`
          insert into incidents (id, org_id, sensor_id, source_ip, status, severity, title, narrative,
            recommended_action, event_count, first_seen_at, last_seen_at, created_at, updated_at, last_activity_at)
          select x.id, ${org.orgId}, ${trap.id}, '10.' || (x.n / 65536) || '.' || (x.n / 256 % 256) || '.' || (x.n % 256),
            'open', 'low', 'seeded', 'seeded', 'none', 1, ${old}, ${old}, ${old}, ${old}, ${old}
          from jsonb_array_elements_text(${JSON.stringify(ids)}::text::jsonb) with ordinality as x(id, n)`,
      ),
    )
    const dry = await adminJson(server.env, [
      "incident",
      "close",
      "--org",
      org.orgId,
      "--older-than",
      "7d",
      "--dry-run",
    ])
    expect(dry).toEqual({ matching: count, wouldClose: count })
    const done = await adminJson(server.env, [
      "incident",
      "close",
      "--org",
      org.orgId,
      "--older-than",
      "7d",
      "--reason",
      "false_positive",
    ])
    expect(done).toEqual({ orgId: org.orgId, closed: count, remaining: 0, reason: "false_positive" })
    const [state] = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ open: number; closed: number; withTransition: number; transitions: number }>`
          select
            (select count(*)::int from incidents where org_id = ${org.orgId} and status = 'open') as open,
            (select count(*)::int from incidents where org_id = ${org.orgId} and status = 'closed'
              and resolved_at is not null) as closed,
            (select count(*)::int from incidents i where i.org_id = ${org.orgId} and exists (
              select 1 from incident_transitions t where t.incident_id = i.id and t.kind = 'closed'
                and t.close_reason = 'false_positive' and t.actor = 'cli')) as with_transition,
            (select count(*)::int from incident_transitions where org_id = ${org.orgId}) as transitions`,
      ),
    )
    expect(state).toEqual({ open: 0, closed: count, withTransition: count, transitions: count })
  }, 120_000)
})

describe("the idle-close sweep", () => {
  test("its close has no reason and no actor, and the history says the sweep closed it", async () => {
    // A second server on the same database whose sweep closes after a second of quiet (last: it closes every
    // open incident of this database that is quiet by then).
    const sweeper = await startServer({
      // server.env, not a new testEnv(): on the embedded database that would be a DATA_DIR (a database) of its own.
      env: { ...server.env, INCIDENT_IDLE_CLOSE: "1 seconds", INCIDENT_IDLE_CLOSE_EVERY: "250 millis" },
    })
    try {
      const id = await newIncident("198.51.100.77")
      let rows = await history(id)
      for (let i = 0; i < 40 && rows.length < 2; i++) {
        await Bun.sleep(250)
        rows = await history(id)
      }
      expect(rows[1]).toMatchObject({ kind: "closed", closeReason: null, closeNote: null, actor: null })
      const html = String(IncidentHistory({ history: rows, now: new Date() }))
      expect(html).toContain("by the idle-close sweep, after a quiet period")
      expect(html).not.toContain("no reason recorded")
    } finally {
      await shutdown(sweeper)
    }
  })
})
