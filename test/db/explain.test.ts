import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let orgId: string
let sensorId: string
let incidentId: string

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  ;({ orgId } = await createTenant(db))
  sensorId = (await createSensor(db, orgId)).id
  const seeded = await seedIncident(db, { orgId, sensorId, sourceIp: "192.0.2.1", events: [{ time: new Date() }] })
  incidentId = seeded.incident.id
})

afterAll(() => shutdown(server, db))

/**
 * The list queries' shapes (as src/repos writes them), each planned with sequential scans priced out: if no
 * index can serve the filter and the keyset order, PostgreSQL still has to choose a Seq Scan and the test fails.
 */
test("every list query and filter is served by an index (no sequential scan)", async () => {
  const t = new Date()
  const plans = await db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const explain = (query: string, params: ReadonlyArray<unknown>) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`set local enable_seqscan = off`
            const rows = yield* sql.unsafe<{ queryPlan: string }>(`explain ${query}`, params)
            return rows.map((r) => Object.values(r)[0]).join("\n")
          }),
        )
      const incidents = (where: string) =>
        `select i.id from incidents i join sensors s on s.id = i.sensor_id where ${where} order by i.last_seen_at desc, i.id desc limit 51`
      const events = (where: string) =>
        `select e.id from events e join sensors s on s.id = e.sensor_id where ${where} order by e.time desc, e.id desc limit 51`
      const keyset = "and (i.last_seen_at, i.id) < ($2, $3)"
      return {
        incidents: yield* explain(incidents(`i.org_id = $1 ${keyset}`), [orgId, t, "inc_Z"]),
        incidentsStatus: yield* explain(incidents(`i.org_id = $1 and i.status = $4 ${keyset}`), [
          orgId,
          t,
          "inc_Z",
          "open",
        ]),
        events: yield* explain(events("e.org_id = $1 and (e.time, e.id) < ($2, $3)"), [orgId, t, "evt_Z"]),
        sensor: yield* explain(events("e.org_id = $1 and e.sensor_id = $2"), [orgId, sensorId]),
        severity: yield* explain(events("e.org_id = $1 and e.severity = $2"), [orgId, "high"]),
        type: yield* explain(events("e.org_id = $1 and e.type = $2"), [orgId, "ssh.command"]),
        sourceIp: yield* explain(events("e.org_id = $1 and e.source_ip = $2"), [orgId, "192.0.2.1"]),
        incident: yield* explain(events("e.org_id = $1 and e.incident_id = $2"), [orgId, incidentId]),
        range: yield* explain(events("e.org_id = $1 and e.time >= $2 and e.time < $3"), [orgId, t, t]),
        members: yield* explain(
          "select e.id from events e where e.incident_id = $1 and e.org_id = $2 order by e.time asc, e.id asc limit 200",
          [incidentId, orgId],
        ),
      }
    }),
  )
  for (const [name, plan] of Object.entries(plans)) {
    expect({ name, seqScan: /Seq Scan on (events|incidents)/.test(plan) }).toEqual({ name, seqScan: false })
    expect({ name, sorts: /\bSort\b/.test(plan) }).toEqual({ name, sorts: false })
  }
})
