import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { AuditFilters, AuditRowWithActor } from "../domain/audit.ts"
import type { CursorPosition } from "../domain/cursor.ts"
import { newId, type OrgId } from "../domain/ids.ts"
import { readRows } from "../platform/db/directReads.ts"
import { dbErrors } from "../platform/db/errors.ts"
import type { SqlText } from "./statement.ts"

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

/** What an audit row is read as by the API and the CLI: its actor's email looked up (null for `cli`). */
export const AUDIT_SELECT = `select a.id, a.actor, (select u.email from console_users u where u.id = a.actor) as "actorEmail",
  a.action, a.target, a.ip, a.detail, a.at from audit_log a`

export interface AuditListQuery {
  readonly orgId: OrgId
  readonly filters: AuditFilters
  /** The last row of the previous page (newest first: the next page is older). */
  readonly after: CursorPosition | undefined
  /** Rows to fetch: the page size plus one. */
  readonly fetch: number
}

/**
 * One organization's audit rows, newest first (time, then id), with the filters: one range scan of
 * audit_log_org_idx (org_id, at desc, id desc). Rows without an organization are never in it.
 */
export const auditListStatement = ({ orgId, filters: f, after, fetch }: AuditListQuery): SqlText => {
  const params: Array<unknown> = [orgId]
  let where = "a.org_id = $1"
  const and = (condition: (n: number) => string, value: unknown) => {
    params.push(value)
    where += ` and ${condition(params.length)}`
  }
  if (f.actor !== undefined) {
    if ("id" in f.actor) and((n) => `a.actor = $${n}`, f.actor.id)
    else and((n) => `a.actor in (select u.id from console_users u where u.email = $${n})`, f.actor.email)
  }
  if (f.action !== undefined) and((n) => `a.action = $${n}`, f.action)
  if (f.from !== undefined) and((n) => `a.at >= $${n}::timestamptz`, f.from)
  if (f.to !== undefined) and((n) => `a.at < $${n}::timestamptz`, f.to)
  if (after !== undefined) {
    params.push(after.time, after.id)
    where += ` and (a.at, a.id) < ($${params.length - 1}::timestamptz, $${params.length})`
  }
  params.push(fetch)
  return { text: `${AUDIT_SELECT} where ${where} order by a.at desc, a.id desc limit $${params.length}`, params }
}

/** Rows as read: `at` may come back as text from a direct read. */
export const auditRowOf = (r: AuditRowWithActor): AuditRowWithActor =>
  r.at instanceof Date ? r : { ...r, at: new Date(r.at as unknown as string) }

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
      /** The API's and the CLI's list: filtered, newest first, from a keyset position. */
      search: (q: AuditListQuery) => {
        const { text, params } = auditListStatement(q)
        return readRows<AuditRowWithActor>(sql, text, params).pipe(
          Effect.map((rows) => rows.map(auditRowOf)),
          dbErrors,
        )
      },
    } as const
  }),
}) {}
