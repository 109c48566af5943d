import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dbErrors } from "./errors.ts"

export const SCOPES = ["incidents:read", "events:read"] as const
export const Scope = Schema.Literal(...SCOPES)
export type Scope = typeof Scope.Type

export const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  name: Schema.String,
  scopes: Schema.Array(Schema.String),
  expiresAt: Schema.NullOr(Schema.DateFromSelf),
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.NullOr(Schema.DateFromSelf),
  lastUsedAt: Schema.NullOr(Schema.DateFromSelf),
})
export type ApiKeyRow = typeof ApiKeyRow.Type

/** What authentication needs in one round trip: the key, its hash, and its organization's feature flag. */
export const KeyCredentialRow = Schema.Struct({
  ...ApiKeyRow.fields,
  secretHash: Schema.Uint8ArrayFromSelf,
  deceptionEnabled: Schema.Boolean,
})
export type KeyCredentialRow = typeof KeyCredentialRow.Type

/** API keys (D9). The key value is never stored: only SHA-256 of its secret part. */
export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("ApiKeysRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findCredential = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyCredentialRow,
      execute: (id) => sql`
        select k.*, o.deception_enabled
        from api_keys k join organizations o on o.id = k.org_id
        where k.id = ${id}`,
    })

    const listByOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: ApiKeyRow,
      execute: (orgId) => sql`
        select id, org_id, name, scopes, expires_at, created_at, revoked_at, last_used_at
        from api_keys where org_id = ${orgId} order by created_at desc, id desc`,
    })

    return {
      create: (row: {
        readonly id: string
        readonly orgId: string
        readonly name: string
        readonly scopes: ReadonlyArray<Scope>
        readonly secretHash: Uint8Array
        readonly expiresAt: Date | null
      }) =>
        sql`insert into api_keys ${sql.insert({ ...row, scopes: [...row.scopes], createdAt: new Date() })}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      findCredential: (id: string) => findCredential(id).pipe(dbErrors),
      listByOrg: (orgId: string) => listByOrg(orgId).pipe(dbErrors),
      /** Revocation is a row update: authentication reads it on the next request. False when no such key. */
      revoke: (id: string) =>
        sql`update api_keys set revoked_at = coalesce(revoked_at, ${new Date()}) where id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          dbErrors,
        ),
      touchLastUsed: (id: string, at: Date) =>
        sql`update api_keys set last_used_at = ${at} where id = ${id} and (last_used_at is null or last_used_at < ${at})`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
    } as const
  }),
}) {}
