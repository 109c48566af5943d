import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId, type OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** Who did what to which target, from where. Never a secret: `detail` holds names and settings only. */
export interface AuditEntry {
  readonly orgId: OrgId | null
  /** A console user's id, or `cli`. */
  readonly actor: string
  readonly action: string
  readonly target: string | null
  readonly ip: string | null
  readonly detail: string | null
}

export interface AuditRow extends AuditEntry {
  readonly id: string
  readonly at: Date
}

/** The audit log. `record` runs on the caller's connection, so inside a transaction it commits with the change. */
export class AuditRepo extends Effect.Service<AuditRepo>()("AuditRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      record: (entry: AuditEntry) => {
        const at = new Date()
        return sql`insert into audit_log (id, org_id, actor, action, target, ip, detail, at)
          values (${newId("auditEntry", at.getTime())}, ${entry.orgId}, ${entry.actor}, ${entry.action},
                  ${entry.target}, ${entry.ip}, ${entry.detail}, ${at})`.pipe(Effect.asVoid, dbErrors)
      },
      /** Newest first; `before` is the id of the last row of the previous page (ids are time-sortable ULIDs). */
      list: (orgId: OrgId, limit: number, before: string | undefined) =>
        (before === undefined
          ? sql<AuditRow>`select id, org_id, actor, action, target, ip, detail, at from audit_log
              where org_id = ${orgId} order by id desc limit ${limit}`
          : sql<AuditRow>`select id, org_id, actor, action, target, ip, detail, at from audit_log
              where org_id = ${orgId} and id < ${before} order by id desc limit ${limit}`
        ).pipe(dbErrors),
    } as const
  }),
}) {}
