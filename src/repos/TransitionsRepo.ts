import { SqlClient } from "@effect/sql"
import { Effect, Metric } from "effect"
import { type IncidentId, newId, type OrgId } from "../domain/ids.ts"
import type { Severity } from "../domain/severity.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { incidentTransitions } from "../platform/metrics.ts"

/** Why an incident was closed, as a person chose it (the idle-close sweep gives none). */
export const CLOSE_REASONS = ["resolved", "false_positive", "authorized_test", "other"] as const
export type CloseReason = (typeof CLOSE_REASONS)[number]

export interface NewTransition {
  readonly orgId: OrgId
  readonly incidentId: IncidentId
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly fromSeverity: Severity | null
  readonly toSeverity: Severity
  readonly at: Date
  /** A close by a person: its reason, their note and who they are (a console user's id, or `cli`). */
  readonly close?: { readonly reason: CloseReason; readonly note: string | null; readonly actor: string } | undefined
}

/**
 * The `closed` transition of each incident just closed, at `at`: with the person's reason, note and id, or without
 * (the idle-close sweep).
 */
export const closedTransitions = (
  closed: ReadonlyArray<{ readonly orgId: OrgId; readonly id: IncidentId; readonly severity: Severity }>,
  at: Date,
  close?: NewTransition["close"],
): ReadonlyArray<NewTransition> =>
  closed.map((c) => ({
    orgId: c.orgId,
    incidentId: c.id,
    kind: "closed",
    fromSeverity: c.severity,
    toSeverity: c.severity,
    at,
    close,
  }))

/** One transition as an incident's history shows it, with the closer's email when a console user closed it. */
export interface TransitionRow {
  readonly id: string
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly fromSeverity: Severity | null
  readonly toSeverity: Severity
  readonly at: Date
  readonly closeReason: CloseReason | null
  readonly closeNote: string | null
  /** A console user's id, `cli`, or null: the service itself (for `closed`, the idle-close sweep). */
  readonly actor: string | null
  readonly actorEmail: string | null
}

/** Rows a single insert carries (10 columns each: 10,000 parameters, well under PostgreSQL's 65,535). */
const INSERT_CHUNK = 1000

/** Incident state changes, written in the transaction that made them: the alert outbox's source. */
export class TransitionsRepo extends Effect.Service<TransitionsRepo>()("TransitionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      insert: Effect.fn("TransitionsRepo.insert")(function* (transitions: ReadonlyArray<NewTransition>) {
        if (transitions.length === 0) return [] as ReadonlyArray<string>
        // Every row has the same columns, whichever of them carry a close.
        const rows = transitions.map((t) => ({
          id: newId("transition", t.at.getTime()),
          orgId: t.orgId,
          incidentId: t.incidentId,
          kind: t.kind,
          fromSeverity: t.fromSeverity,
          toSeverity: t.toSeverity,
          at: t.at,
          closeReason: t.close?.reason ?? null,
          closeNote: t.close?.note ?? null,
          actor: t.close?.actor ?? null,
        }))
        // PostgreSQL takes at most 65,535 parameters a statement: a bulk or idle close of thousands goes in chunks.
        for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
          yield* sql`insert into incident_transitions ${sql.insert(rows.slice(i, i + INSERT_CHUNK))}`
        }
        for (const row of rows) yield* Metric.increment(Metric.tagged(incidentTransitions, "kind", row.kind))
        return rows.map((r) => r.id)
      }, dbErrors),
      forIncident: (incidentId: IncidentId) =>
        sql<{ id: string; kind: string; fromSeverity: string | null; toSeverity: string; at: Date }>`
          select id, kind, from_severity, to_severity, at from incident_transitions
          where incident_id = ${incidentId} order by at, id`.pipe(dbErrors),
      /** An incident's history as its page shows it, oldest first, in its organization only. */
      history: (orgId: OrgId, incidentId: IncidentId) =>
        sql<TransitionRow>`
          select t.id, t.kind, t.from_severity, t.to_severity, t.at, t.close_reason, t.close_note, t.actor,
            u.email as actor_email
          from incident_transitions t left join console_users u on u.id = t.actor
          where t.org_id = ${orgId} and t.incident_id = ${incidentId} order by t.at, t.id`.pipe(dbErrors),
    } as const
  }),
}) {}
