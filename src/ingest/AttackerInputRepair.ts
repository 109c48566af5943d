import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { readableAttackerInput, repairAttackerInput } from "../domain/attackerInput.ts"
import type { OrgId } from "../domain/ids.ts"
import { canonicalJson } from "./formats/native.ts"
import { OrgKeys } from "./OrgKeys.ts"

/** The maintenance task sql/0008 queued. */
export const REPAIR_TASK = "attacker_input_d19_d20"
const BATCH = 500

/**
 * Rewrites the attackerInput of events stored by older versions to what ingestion
 * stores now (repairAttackerInput): `username` a string, null members left out, every password-like member masked
 * with the organization's real fingerprint, secrets inside URLs, paths, form bodies and header lines masked. Rows
 * already in that shape are left alone. An organization whose key cannot be opened (a SECRET_KEY lost) still has its
 * secrets masked, with an empty fingerprint.
 *
 * One batch per transaction, in event id order, resuming from the position kept in maintenance_tasks; the task row
 * is locked (skip locked), so several processes never repair the same rows, and the row is deleted when done.
 * Returns the number of rows rewritten.
 */
export const repairStoredAttackerInputs = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const orgKeys = yield* OrgKeys
  // A key that cannot be opened is a defect of fingerprintKey; a database failure fails the batch
  // (the repair resumes from its position at the next start).
  const keyOf = (orgId: OrgId) =>
    orgKeys.fingerprintKey(orgId).pipe(Effect.catchAllDefect(() => Effect.succeed(undefined as Uint8Array | undefined)))
  let rewritten = 0
  for (;;) {
    const step = yield* sql.withTransaction(
      Effect.gen(function* () {
        const [task] = yield* sql<{ position: string }>`
          select position from maintenance_tasks where name = ${REPAIR_TASK} for update skip locked`
        if (task === undefined) return "done" as const
        // The foreign key guarantees the kind of id.
        const rows = yield* sql<{ id: string; orgId: OrgId; attackerInput: unknown }>`
          select id, org_id, attacker_input from events where id > ${task.position} order by id limit ${BATCH}`
        if (rows.length === 0) {
          yield* sql`delete from maintenance_tasks where name = ${REPAIR_TASK}`
          return "done" as const
        }
        const changed: Array<{ id: string; attacker_input: Record<string, unknown> }> = []
        const keys = new Map<string, Uint8Array | undefined>()
        for (const row of rows) {
          if (!keys.has(row.orgId)) keys.set(row.orgId, yield* keyOf(row.orgId))
          const key = keys.get(row.orgId)
          const repaired =
            key === undefined ? readableAttackerInput(row.attackerInput) : repairAttackerInput(row.attackerInput, key)
          // jsonb keeps its own key order: compare the values, not the texts.
          if (canonicalJson(repaired) !== canonicalJson(row.attackerInput)) {
            changed.push({ id: row.id, attacker_input: repaired })
          }
        }
        if (changed.length > 0) {
          yield* sql`
            update events e set attacker_input = r.attacker_input
            from jsonb_to_recordset(${JSON.stringify(changed)}::text::jsonb) as r(id text, attacker_input jsonb)
            where e.id = r.id`
        }
        yield* sql`update maintenance_tasks set position = ${rows[rows.length - 1]?.id ?? task.position}
          where name = ${REPAIR_TASK}`
        return changed.length
      }),
    )
    if (step === "done") return rewritten
    rewritten += step
  }
})

/** Runs the repair once after start-up, in the background; a failure is logged and retried at the next start. */
export const AttackerInputRepairLive = Layer.scopedDiscard(
  Effect.forkScoped(
    repairStoredAttackerInputs.pipe(
      Effect.tap((n) =>
        n > 0 ? Effect.logInfo("stored attackerInput repaired").pipe(Effect.annotateLogs({ rows: n })) : Effect.void,
      ),
      Effect.catchAllCause((cause) =>
        Effect.logWarning("attackerInput repair failed; it resumes at the next start", cause),
      ),
    ),
  ),
)
