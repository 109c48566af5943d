import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isId, newId } from "../../src/domain/ids.ts"
import { EventsRepo } from "../../src/repos/EventsRepo.ts"
import { IncidentsRepo } from "../../src/repos/IncidentsRepo.ts"
import { testDatabase } from "./db.ts"

/**
 * A separate writer process for the D33 tests: `bun test/support/feedWriter.ts <orgId> <sensorId> <count> <holdMs>`
 * runs <count> transactions, three at a time, each of which writes an incident and an event, then holds the
 * transaction open for up to <holdMs> (so later transactions of other processes commit first), then writes a
 * second event and updates the incident, and commits. Prints "done" at the end.
 */
const [orgArg = "", sensorArg = "", countText = "5", holdText = "1000"] = process.argv.slice(2)
if (!isId("organization", orgArg) || !isId("sensor", sensorArg))
  throw new Error("usage: <orgId> <sensorId> <count> <holdMs>")
const orgId = orgArg
const sensorId = sensorArg
const db = testDatabase(process.env as Record<string, string>)

const one = (i: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const now = new Date()
    const incidentId = newId("incident", now.getTime())
    const sourceIp = `10.77.${process.pid % 250}.${i % 250}`
    const event = (n: number) => ({
      id: newId("event", now.getTime()),
      orgId,
      incidentId,
      sensorId,
      sensorEventId: `writer-${process.pid}-${i}-${n}`,
      time: now,
      sourceIp,
      sourcePort: 40000 + n,
      service: "ssh",
      port: 22,
      type: "ssh.login_attempt",
      action: "login",
      severity: "medium" as const,
      confidence: "normal" as const,
      tags: [],
      summary: `held-open writer ${i}.${n}`,
      attackerInput: {},
    })
    yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* incidents.insert({
          id: incidentId,
          orgId,
          sensorId,
          sourceIp,
          status: "open",
          severity: "medium",
          title: `held open ${i}`,
          narrative: "n",
          recommendedAction: "r",
          eventCount: 1,
          eventTypes: ["ssh.login_attempt"],
          tags: [],
          usernames: [],
          highConfidence: false,
          firstSeenAt: now,
          lastSeenAt: now,
          resolvedAt: null,
        })
        yield* events.insert(event(1))
        yield* Effect.sleep(Math.floor(Math.random() * Number(holdText)))
        yield* events.insert(event(2))
        yield* sql`update incidents set event_count = 2, severity = 'high' where id = ${incidentId}`
      }),
    )
  })

await db.run(
  Effect.forEach(
    Array.from({ length: Number(countText) }, (_, i) => i),
    one,
    { concurrency: 3 },
  ),
)
await db.close()
console.log("done")
