import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isId } from "../domain/ids.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { NotFound } from "./errors.ts"

/** Incidents as an administrator changes them: closing one (D13). Any user of its organization may close it. */
export class IncidentAdmin extends Effect.Service<IncidentAdmin>()("IncidentAdmin", {
  effect: Effect.gen(function* () {
    const incidents = yield* IncidentsRepo
    const transitions = yield* TransitionsRepo
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing

    /** resolvedAt is set, a `closed` transition recorded and the close audited, in one transaction. */
    const close = Effect.fn("IncidentAdmin.close")(function* (incidentId: string) {
      const unknown = new NotFound({ message: `no open incident ${incidentId}` })
      const rows = isId("incident", incidentId)
        ? yield* sql<{ orgId: string }>`select org_id from incidents where id = ${incidentId}`
        : []
      const owner = rows[0]?.orgId
      if (owner === undefined) return yield* unknown
      yield* requireScope(owner, unknown.message)
      const now = new Date()
      const closed = yield* incidents.close(incidentId, now)
      if (Option.isNone(closed)) return yield* unknown
      const c = closed.value
      yield* transitions.insert([
        { orgId: c.orgId, incidentId: c.id, kind: "closed", fromSeverity: c.severity, toSeverity: c.severity, at: now },
      ])
      yield* audited(c.orgId, "incident.close", c.id, null)
      return { id: c.id, status: "closed" as const, resolvedAt: c.resolvedAt.toISOString() }
    }, sql.withTransaction)

    return { close } as const
  }),
}) {}
