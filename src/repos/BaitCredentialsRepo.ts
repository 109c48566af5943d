import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId, type OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

export interface BaitCredentialRow {
  readonly id: string
  readonly username: string
  /** The keyed fingerprint captured passwords get: the password itself is never stored. */
  readonly passwordFingerprint: string
  readonly label: string
  readonly createdAt: Date
}

/** The bait credentials an organization planted (a username and its password's fingerprint). */
export class BaitCredentialsRepo extends Effect.Service<BaitCredentialsRepo>()("BaitCredentialsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      list: (orgId: OrgId) =>
        sql<BaitCredentialRow>`
          select id, username, password_fingerprint, label, created_at from bait_credentials
          where org_id = ${orgId} order by created_at, id`.pipe(dbErrors),
      /** The planted pairs among these fingerprints (ingestion: only the fingerprints a request captured). */
      matching: (orgId: OrgId, fingerprints: ReadonlyArray<string>) =>
        fingerprints.length === 0
          ? Effect.succeed([] as ReadonlyArray<{ username: string; passwordFingerprint: string }>)
          : sql<{ username: string; passwordFingerprint: string }>`
              select username, password_fingerprint from bait_credentials
              where org_id = ${orgId} and password_fingerprint in ${sql.in([...new Set(fingerprints)])}`.pipe(dbErrors),
      /** Adds a pair; false when the organization already has it. */
      add: (orgId: OrgId, input: { username: string; passwordFingerprint: string; label: string }, now: Date) =>
        Effect.map(
          sql<{ id: string }>`
            insert into bait_credentials (id, org_id, username, password_fingerprint, label, created_at)
            values (${newId("baitCredential")}, ${orgId}, ${input.username}, ${input.passwordFingerprint},
              ${input.label}, ${now})
            on conflict (org_id, username, password_fingerprint) do nothing returning id`,
          (rows) => rows[0]?.id,
        ).pipe(dbErrors),
      remove: (orgId: OrgId, id: string) =>
        Effect.map(
          sql<{ id: string }>`delete from bait_credentials where org_id = ${orgId} and id = ${id} returning id`,
          (rows) => rows.length > 0,
        ).pipe(dbErrors),
    } as const
  }),
}) {}
