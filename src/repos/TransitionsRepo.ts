import { SqlClient } from "@effect/sql"
import { Effect, Metric } from "effect"
import { newId } from "../domain/ids.ts"
import type { Severity } from "../domain/severity.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { incidentTransitions } from "../platform/metrics.ts"

export interface NewTransition {
  readonly orgId: string
  readonly incidentId: string
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly fromSeverity: Severity | null
  readonly toSeverity: Severity
  readonly at: Date
}

/** Incident state changes, written in the transaction that made them: the webhook outbox's source. */
export class TransitionsRepo extends Effect.Service<TransitionsRepo>()("TransitionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      insert: Effect.fn("TransitionsRepo.insert")(function* (transitions: ReadonlyArray<NewTransition>) {
        if (transitions.length === 0) return [] as ReadonlyArray<string>
        const rows = transitions.map((t) => ({ id: newId("transition", t.at.getTime()), ...t }))
        yield* sql`insert into incident_transitions ${sql.insert(rows)}`
        for (const row of rows) yield* Metric.increment(Metric.tagged(incidentTransitions, "kind", row.kind))
        return rows.map((r) => r.id)
      }, dbErrors),
      forIncident: (incidentId: string) =>
        sql<{ id: string; kind: string; fromSeverity: string | null; toSeverity: string; at: Date }>`
          select id, kind, from_severity, to_severity, at from incident_transitions
          where incident_id = ${incidentId} order by at, id`.pipe(dbErrors),
    } as const
  }),
}) {}
