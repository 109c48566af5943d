import { randomBytes } from "node:crypto"
import { SqlClient, SqlSchema } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Option, Schema } from "effect"
import { type ApiKeyId, type OrgId, StoredId } from "../domain/ids.ts"
import type { Scope } from "../domain/scopes.ts"
import { readRows } from "../platform/db/directReads.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { listen } from "../platform/db/listen.ts"

export const ApiKeyRow = Schema.Struct({
  id: StoredId.ApiKeyId,
  orgId: StoredId.OrgId,
  name: Schema.String,
  scopes: Schema.Array(Schema.String),
  expiresAt: Schema.NullOr(Schema.DateFromSelf),
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.NullOr(Schema.DateFromSelf),
  lastUsedAt: Schema.NullOr(Schema.DateFromSelf),
})
export type ApiKeyRow = typeof ApiKeyRow.Type

/** What authentication needs, in one round trip: the key, its hash, and its organization's feature flag. */
export interface KeyCredentialRow {
  // Branded as read: the table's keys guarantee the kinds.
  readonly id: ApiKeyId
  readonly orgId: OrgId
  readonly scopes: ReadonlyArray<string>
  readonly expiresAt: Date | null
  readonly revokedAt: Date | null
  readonly secretHash: Uint8Array
  readonly deceptionEnabled: boolean
}

/**
 * NOTIFY channel of changes that affect authentication: `key:<key id>` (revoked) and `org:<org id>`
 * (Deception switched). KeyAuth's key cache listens on it in every server process and drops what it names; every
 * command that changes a key's revocation, expiry or scopes, or an organization's Deception flag, must send it in
 * the same transaction as the change (here: in the same statement).
 */
export const KEY_CHANGES_CHANNEL = "api_key_changes"
/** Each key cache answers a change whose payload ends in `|<nonce>` with NOTIFY <nonce> here, once it dropped it. */
export const KEY_CHANGES_ACK_CHANNEL = "api_key_changes_ack"
/** The application_name of the key caches' LISTEN connections: the announcing command counts them. */
export const KEY_CACHE_APPLICATION_NAME = "dsvc-key-cache"
/** How long a command waits for the key caches' acknowledgements before it returns anyway. */
const ACK_WAIT_MS = 3_000
/** lastUsedAt is written at most once per key in this interval, however many server processes use the key. */
export const LAST_USED_EVERY_MS = 60_000

/** API keys. The key value is never stored, only SHA-256 of its secret part: a dump reveals no usable key. */
export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("ApiKeysRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // Fixed text, camelCase aliases, no name transforms and no Schema decode: this runs on every request that the
    // key cache cannot answer, so it must cost little; the columns' SQL types are the row's types.
    const findCredential = (id: ApiKeyId) =>
      readRows<KeyCredentialRow>(
        sql,
        `select k.id, k.org_id as "orgId", k.scopes, k.expires_at as "expiresAt", k.revoked_at as "revokedAt",
             k.secret_hash as "secretHash", o.deception_enabled as "deceptionEnabled"
           from api_keys k join organizations o on o.id = k.org_id
           where k.id = $1`,
        [id],
      ).pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        dbErrors,
      )

    const listByOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: ApiKeyRow,
      execute: (orgId) => sql`
        select id, org_id, name, scopes, expires_at, created_at, revoked_at, last_used_at
        from api_keys where org_id = ${orgId} order by created_at desc, id desc`,
    })

    const pg = yield* PgClient.PgClient

    /**
     * Runs a change that NOTIFYs KEY_CHANGES_CHANNEL (its payload suffixed with the `ack` it is given) and returns
     * once every key cache listening at the time has dropped what it names (each acknowledges on
     * KEY_CHANGES_ACK_CHANNEL), or after ACK_WAIT_MS. NOTIFY alone is asynchronous: without this a request sent right
     * after the command could reach a server before its notification does. `change` answers whether it changed
     * anything (nothing to wait for otherwise).
     */
    const announced = Effect.fn("ApiKeysRepo.announced")(function* <E>(
      change: (ack: string) => Effect.Effect<boolean, E>,
    ) {
      const counted = yield* sql<{ readonly n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name = ${KEY_CACHE_APPLICATION_NAME}`.pipe(
        Effect.map((rows) => rows[0]?.n ?? 0),
        Effect.orElseSucceed(() => 0),
      )
      if (counted === 0) return yield* change("")
      const nonce = `ack-${randomBytes(12).toString("base64url")}`
      const heard = yield* Deferred.make<void>()
      let acks = 0
      const listening = yield* listen(pg.config, {
        channels: [KEY_CHANGES_ACK_CHANNEL],
        onNotification: (message) => {
          if (message.payload === nonce && ++acks >= counted) Deferred.unsafeDone(heard, Effect.void)
        },
      }).pipe(Effect.option)
      if (Option.isNone(listening)) {
        yield* Effect.logWarning("could not wait for the API key caches to confirm the change")
        return yield* change("")
      }
      const changed = yield* change(`|${nonce}`)
      if (!changed) return changed
      const confirmed = yield* Deferred.await(heard).pipe(Effect.timeout(ACK_WAIT_MS), Effect.option)
      if (Option.isNone(confirmed)) {
        yield* Effect.logWarning(
          `only ${acks} of ${counted} API key caches confirmed the change within ${ACK_WAIT_MS} ms; the others are disconnected or slow and catch up when they reconnect`,
        )
      }
      return changed
    }, Effect.scoped)

    /**
     * The revocation statement, for a caller that runs it inside its own transaction (with its audit row) under
     * `announced`: revoked_at set (kept when already set) and the NOTIFY sent in the same statement, always, even
     * for a key that was already revoked: a revocation whose NOTIFY was lost (a process that died between its commit
     * and its NOTIFY, a row changed by hand) is announced again by running it again. The row is locked first, so
     * of two concurrent calls exactly one sees `alreadyRevoked: false`. None when no such key.
     */
    const revokeNotifying = (id: ApiKeyId, ack: string, at: Date) =>
      sql<{ readonly alreadyRevoked: boolean }>`
        with old as (select id, revoked_at from api_keys where id = ${id} for update),
        revoked as (
          update api_keys k set revoked_at = coalesce(k.revoked_at, ${at}) from old where k.id = old.id
          returning k.id, old.revoked_at is not null as already_revoked
        )
        select already_revoked, pg_notify(${KEY_CHANGES_CHANNEL}, 'key:' || id || ${ack}) from revoked`.pipe(
        Effect.map((rows) =>
          Option.fromNullable(rows[0]).pipe(Option.map((r) => ({ alreadyRevoked: r.alreadyRevoked }))),
        ),
        dbErrors,
      )

    return {
      announced,
      create: (row: {
        readonly id: ApiKeyId
        readonly orgId: OrgId
        readonly name: string
        readonly scopes: ReadonlyArray<Scope>
        readonly secretHash: Uint8Array
        readonly expiresAt: Date | null
      }) =>
        sql`insert into api_keys ${sql.insert({ ...row, scopes: [...row.scopes], createdAt: new Date() })}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      findCredential,
      listByOrg: (orgId: OrgId) => listByOrg(orgId).pipe(dbErrors),
      /**
       * Revocation is a row update plus a NOTIFY in the same statement (so in the same transaction): every server's
       * key cache drops the key when it commits, and the next request reads the row. False when no such key.
       */
      revoke: (id: ApiKeyId) => announced((ack) => Effect.map(revokeNotifying(id, ack, new Date()), Option.isSome)),
      revokeNotifying,
      /**
       * Records a use at `at`, unless the key's lastUsedAt is less than LAST_USED_EVERY_MS before it: the row is the
       * shared state, so N server processes write a key's lastUsedAt at most once a minute together, not N times.
       * (Each process also skips the statement for a key it wrote less than a minute ago: see KeyAuth.recordUse.)
       * Never moves lastUsedAt back. Processes whose clocks differ by s seconds may write twice within 60 - s s.
       */
      touchLastUsed: (id: ApiKeyId, at: Date) =>
        sql`update api_keys set last_used_at = ${at}
            where id = ${id}
              and (last_used_at is null or last_used_at <= ${new Date(at.getTime() - LAST_USED_EVERY_MS)})`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
    } as const
  }),
}) {}
