import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { type OrgId, type SensorId, StoredId } from "../domain/ids.ts"
import { MISSED_HEARTBEATS } from "../domain/sensorStatus.ts"
import { readRows } from "../platform/db/directReads.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** What `health` records (the status last announced to the alert channels). */
export const SENSOR_HEALTH = ["unknown", "alive", "silent"] as const
export type SensorHealth = (typeof SENSOR_HEALTH)[number]

export const SensorRow = Schema.Struct({
  id: StoredId.SensorId,
  orgId: StoredId.OrgId,
  name: Schema.String,
  profile: Schema.String,
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.NullOr(Schema.DateFromSelf),
  lastSeenAt: Schema.NullOr(Schema.DateFromSelf),
  heartbeatIntervalSeconds: Schema.NullOr(Schema.Number),
  health: Schema.Literal(...SENSOR_HEALTH),
  healthChangedAt: Schema.NullOr(Schema.DateFromSelf),
  previousTokenExpiresAt: Schema.NullOr(Schema.DateFromSelf),
  updatedAt: Schema.DateFromSelf,
})
export type SensorRow = typeof SensorRow.Type

/** What authentication needs, in one primary-key read: the sensor, its token hash and the one in its grace. */
export interface SensorCredentialRow {
  // Branded as read: the table's keys guarantee the kinds.
  readonly id: SensorId
  readonly orgId: OrgId
  readonly name: string
  readonly profile: string
  readonly revokedAt: Date | null
  readonly tokenHash: Uint8Array
  readonly previousTokenHash: Uint8Array | null
  readonly previousTokenExpiresAt: Date | null
}

/** last_seen_at is written at most once per sensor in this interval, however many requests and processes. */
export const LAST_SEEN_EVERY_MS = 10_000
const COLUMNS = `id, org_id, name, profile, created_at, revoked_at, last_seen_at, heartbeat_interval_seconds, health,
  health_changed_at, previous_token_expires_at, updated_at`

/**
 * Decoy sensors. Their ingest token is stored as a SHA-256 hash only; during a rotation's grace the
 * previous token's hash too, until it expires. Every statement names the sensor by id; the organization check is
 * the caller's (admin/SensorAdmin.ts), as for the other admin tables.
 */
export class SensorsRepo extends Effect.Service<SensorsRepo>()("SensorsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // Runs on every ingest request (no cache, so a revocation or rotation is seen by the very next request in
    // every process): fixed text, explicit aliases, no Schema decode.
    const findCredential = (id: SensorId) =>
      readRows<SensorCredentialRow>(
        sql,
        `select id, org_id as "orgId", name, profile, revoked_at as "revokedAt", token_hash as "tokenHash",
             previous_token_hash as "previousTokenHash", previous_token_expires_at as "previousTokenExpiresAt"
           from sensors where id = $1`,
        [id],
      ).pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        dbErrors,
      )

    const findById = SqlSchema.findOne({
      Request: Schema.String,
      Result: SensorRow,
      execute: (id) => sql`select ${sql.literal(COLUMNS)} from sensors where id = ${id}`,
    })
    const listByOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: SensorRow,
      execute: (orgId) => sql`select ${sql.literal(COLUMNS)} from sensors where org_id = ${orgId} order by id`,
    })
    const listWatched = SqlSchema.findAll({
      Request: Schema.Void,
      Result: SensorRow,
      execute: () =>
        sql`select ${sql.literal(COLUMNS)} from sensors
            where heartbeat_interval_seconds is not null and revoked_at is null order by org_id, id`,
    })
    const changed = Effect.map((rows: ReadonlyArray<unknown>) => rows.length > 0)

    return {
      create: (row: {
        readonly id: SensorId
        readonly orgId: OrgId
        readonly name: string
        readonly profile: string
        readonly tokenHash: Uint8Array
        readonly heartbeatIntervalSeconds?: number | null
      }) => {
        const at = new Date()
        return sql`insert into sensors ${sql.insert({
          ...row,
          heartbeatIntervalSeconds: row.heartbeatIntervalSeconds ?? null,
          createdAt: at,
          updatedAt: at,
        })}`.pipe(Effect.asVoid, dbErrors)
      },
      findCredential,
      findById: (id: SensorId) => findById(id).pipe(dbErrors),
      listByOrg: (orgId: OrgId) => listByOrg(orgId).pipe(dbErrors),
      /** True when the sensor exists and is not revoked (a revoked sensor keeps its name). */
      rename: (id: SensorId, name: string, at: Date) =>
        sql`update sensors set name = ${name}, updated_at = ${at} where id = ${id} and revoked_at is null
            returning id`.pipe(changed, dbErrors),
      /** Null: no heartbeat expected (never `silent`). */
      setHeartbeatInterval: (id: SensorId, seconds: number | null, at: Date) =>
        sql`update sensors set heartbeat_interval_seconds = ${seconds}, updated_at = ${at}
            where id = ${id} and revoked_at is null returning id`.pipe(changed, dbErrors),
      /**
       * A new token hash. With `previousExpiresAt` the token current until now keeps authenticating until then
       * (copied inside the update itself, so two concurrent rotations never both keep the same old token); with null
       * every older token ends at once. A grace still running from an earlier rotation is never ended silently:
       * false (nothing changed) unless `force`; false also when the sensor is revoked or unknown.
       */
      rotate: (id: SensorId, tokenHash: Uint8Array, previousExpiresAt: Date | null, at: Date, force: boolean) =>
        sql`update sensors set token_hash = ${tokenHash},
              previous_token_hash = case when ${previousExpiresAt === null} then null else token_hash end,
              previous_token_expires_at = ${previousExpiresAt}, updated_at = ${at}
            where id = ${id} and revoked_at is null
              and (${force} or previous_token_expires_at is null or previous_token_expires_at <= ${at})
            returning id`.pipe(changed, dbErrors),
      /** True only for the call that revoked it (a second revoke changes nothing and says so). */
      revoke: (id: SensorId, at: Date) =>
        sql`update sensors set revoked_at = ${at}, previous_token_hash = null, previous_token_expires_at = null,
              updated_at = ${at}
            where id = ${id} and revoked_at is null returning id`.pipe(changed, dbErrors),
      /**
       * Records contact at `at`, unless last_seen_at is less than LAST_SEEN_EVERY_MS before it: the row is the shared
       * state, so N processes write a busy sensor's last contact at most once per interval together. Never moves
       * it back.
       */
      touchLastSeen: (id: SensorId, at: Date) =>
        sql`update sensors set last_seen_at = ${at}
            where id = ${id}
              and (last_seen_at is null or last_seen_at <= ${new Date(at.getTime() - LAST_SEEN_EVERY_MS)})`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** Every organization's sensors that expect a heartbeat and are not revoked (the silent-detection sweep). */
      listWatched: () => listWatched(undefined).pipe(dbErrors),
      /**
       * Compare-and-set of the announced health: true only for the one caller that moved it from `from` to `to`
       * (that caller sends `sensor.silent` / `sensor.recovered`, in the same transaction as this).
       */
      setHealth: (id: SensorId, from: SensorHealth, to: SensorHealth, at: Date) =>
        sql`update sensors set health = ${to}, health_changed_at = ${at}
            where id = ${id} and health = ${from} returning id`.pipe(changed, dbErrors),
      /**
       * setHealth for the silent-detection sweep: the same compare-and-set, and only if the row, as it is when the
       * update runs, still has that status now (domain/sensorStatus.ts's statusOf, in SQL): a heartbeat, a revoke or
       * a new interval that landed after the sweep read the sensor wins, and nothing is announced for a state already
       * gone. "Now" is the database's clock (`now()`), never the calling process's: processes whose clocks differ
       * would otherwise disagree on the status and move the sensor back and forth, announcing each move.
       */
      setHealthIfStill: (id: SensorId, from: SensorHealth, to: "alive" | "silent") =>
        sql`update sensors set health = ${to}, health_changed_at = now()
            where id = ${id} and health = ${from} and revoked_at is null and heartbeat_interval_seconds is not null
              and ${
                to === "silent"
                  ? sql`coalesce(last_seen_at, created_at) < now()
                          - make_interval(secs => heartbeat_interval_seconds * ${MISSED_HEARTBEATS})`
                  : sql`last_seen_at >= now() - make_interval(secs => heartbeat_interval_seconds * ${MISSED_HEARTBEATS})`
              }
            returning id`.pipe(changed, dbErrors),
      /** Sensors outside the sweep by status (metrics): revoked ones, and the others that expect no heartbeat. */
      countUnwatched: () =>
        sql<{ revoked: number; unknown: number }>`
          select count(*) filter (where revoked_at is not null)::int as revoked,
                 count(*) filter (where revoked_at is null and heartbeat_interval_seconds is null)::int as unknown
          from sensors`.pipe(
          Effect.map((rows) => ({ revoked: rows[0]?.revoked ?? 0, unknown: rows[0]?.unknown ?? 0 })),
          dbErrors,
        ),
    } as const
  }),
}) {}
