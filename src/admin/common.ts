import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { AdminActor } from "./actor.ts"
import { type Field, malformed, missing } from "./errors.ts"

/** A name as the admin services accept it: 1 to 200 printable characters, trimmed. */
export const checkName = (field: Field, name: string | undefined) => {
  if (name === undefined) return Effect.fail(missing(field))
  const trimmed = name.trim()
  if (trimmed === "" || trimmed.length > 200 || /[\p{Cc}\p{Cf}]/u.test(trimmed)) {
    return Effect.fail(malformed(field, "must be 1 to 200 printable characters"))
  }
  return Effect.succeed(trimmed)
}

/** Names are compared as a person reads them: without case or surrounding spaces. */
export const sameName = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase()

/**
 * Built in each service's constructor, so its methods need only the AdminActor:
 * - `audited`: one audit row by the acting user, on the caller's connection (inside a transaction it commits
 *   with the change). Never a secret in `detail`.
 * - `lockNames`: within a transaction, one name check at a time for this key (an organization's sensors, the
 *   organization names), so two concurrent creations of the same name cannot both pass the check. Released at the
 *   transaction's end.
 */
export const auditing = Effect.gen(function* () {
  const audit = yield* AuditRepo
  const sql = yield* SqlClient.SqlClient
  return {
    audited: (orgId: OrgId | null, action: string, target: string | null, detail: string | null) =>
      Effect.flatMap(AdminActor, (actor) =>
        audit.record({ orgId, actor: actor.id, action, target, ip: actor.ip, detail }),
      ),
    lockNames: (key: string) =>
      sql`select pg_advisory_xact_lock(hashtext(${`names:${key}`}))`.pipe(Effect.asVoid, dbErrors),
  }
})
