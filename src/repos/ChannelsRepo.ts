import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { CHANNEL_FORMATS, defaultSettleSeconds } from "../domain/channels/kinds.ts"
import { CHANNEL_KINDS, kindSpec } from "../domain/channels/registry.ts"
import { type ChannelId, type OrgId, StoredId } from "../domain/ids.ts"
import { Severity } from "../domain/severity.ts"
import { dbErrors } from "../platform/db/errors.ts"

/**
 * A channel as stored: its kind and format; its secrets are sealed, never plain. `url` is where it sends
 * (a syslog channel's `syslog+tls://host:port`), except for Slack and Teams, whose whole URL is a credential: it is
 * sealed in `secretEnc` and `url` keeps its origin, for display.
 */
export const ChannelRow = Schema.Struct({
  id: StoredId.ChannelId,
  orgId: StoredId.OrgId,
  kind: Schema.Literal(...CHANNEL_KINDS),
  format: Schema.Literal(...CHANNEL_FORMATS),
  url: Schema.String,
  minSeverity: Severity,
  /** Null for syslog, which has no secret. */
  secretEnc: Schema.NullOr(Schema.String),
  previousSecretEnc: Schema.NullOr(Schema.String),
  previousSecretExpiresAt: Schema.NullOr(Schema.DateFromSelf),
  enabled: Schema.Boolean,
  /** Opted in to `sensor.silent` / `sensor.recovered` (false for every channel made before it existed). */
  sensorHealth: Schema.Boolean,
  /**
   * The settle window, in seconds (0 to 3600; 0 for machine kinds): an incident's first message to the channel waits
   * this long and carries the incident's state at the end of it (see AlertOutbox.ts).
   */
  settleSeconds: Schema.Int,
  createdAt: Schema.DateFromSelf,
  updatedAt: Schema.DateFromSelf,
})
export type ChannelRow = typeof ChannelRow.Type

const channelColumns = (sql: SqlClient.SqlClient) => sql`
  id, org_id, kind, format, url, min_severity, secret_enc, previous_secret_enc, previous_secret_expires_at, enabled, sensor_health,
  settle_seconds, created_at, updated_at`

/**
 * The alert channels of every kind: where an organization's messages go, with sealed credentials. The table
 * keeps its first name, `webhook_channels`, though it holds every kind. Enabling, disabling and a new settle window
 * also move the channel's waiting deliveries, in the same statement.
 */
export class ChannelsRepo extends Effect.Service<ChannelsRepo>()("ChannelsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findChannel = SqlSchema.findOne({
      Request: Schema.String,
      Result: ChannelRow,
      execute: (id) => sql`select ${channelColumns(sql)} from webhook_channels where id = ${id}`,
    })

    const listChannels = SqlSchema.findAll({
      Request: Schema.String,
      Result: ChannelRow,
      execute: (orgId) => sql`select ${channelColumns(sql)} from webhook_channels where org_id = ${orgId} order by id`,
    })

    return {
      /** A new channel; without a kind and format it is a signed webhook in the native shape, with its kind's window. */
      insertChannel: (
        row: Omit<
          ChannelRow,
          "kind" | "format" | "settleSeconds" | "previousSecretEnc" | "previousSecretExpiresAt" | "updatedAt"
        > &
          Partial<Pick<ChannelRow, "kind" | "format" | "settleSeconds">>,
      ) =>
        sql`insert into webhook_channels ${sql.insert({
          ...row,
          kind: row.kind ?? "webhook",
          format: row.format ?? "native",
          settleSeconds: row.settleSeconds ?? defaultSettleSeconds(kindSpec(row.kind ?? "webhook").settle),
          updatedAt: row.createdAt,
        })}`.pipe(dbErrors),
      findChannel: (id: ChannelId) => findChannel(id).pipe(dbErrors),
      listChannels: (orgId: OrgId) => listChannels(orgId).pipe(dbErrors),
      /** The enabled channels of an organization that opted in to sensor-health alerts, by id. */
      sensorHealthChannels: (orgId: OrgId) =>
        sql<{ id: ChannelId }>`select id from webhook_channels
          where org_id = ${orgId} and sensor_health and enabled order by id`.pipe(
          Effect.map((rows) => rows.map((r) => r.id)),
          dbErrors,
        ),
      /** Opt a channel in to (or out of) sensor-health alerts. */
      setSensorHealth: (id: ChannelId, on: boolean, now: Date) =>
        sql`update webhook_channels set sensor_health = ${on}, updated_at = ${now} where id = ${id}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** Every channel of every organization (admin `secrets reseal`). */
      allChannels: () =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: ChannelRow,
          execute: () => sql`select ${channelColumns(sql)} from webhook_channels order by id`,
        })(undefined).pipe(dbErrors),
      /** The same secrets sealed under the current master key. */
      setSealedSecrets: (id: ChannelId, secretEnc: string, previousSecretEnc: string | null) =>
        sql`update webhook_channels set secret_enc = ${secretEnc}, previous_secret_enc = ${previousSecretEnc}
            where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      /**
       * Disabling parks the channel's waiting deliveries (out of the due index: claims never walk past them);
       * enabling unparks them, and what is due is sent at once. One statement, so both change together.
       */
      setEnabled: (id: ChannelId, enabled: boolean, now: Date) =>
        sql`
          with channel as (
            update webhook_channels set enabled = ${enabled}, updated_at = ${now} where id = ${id} returning id
          )
          update webhook_deliveries d set channel_enabled = ${enabled}
          from channel
          where d.channel_id = channel.id and d.status in ('pending', 'failed')
            and ${enabled ? sql`not d.channel_enabled` : sql`d.channel_enabled`}`.pipe(Effect.asVoid, dbErrors),
      /**
       * A channel's settle window. Its incidents' first messages still waiting get the new window too, counted from
       * when they were queued, if that is sooner than their due time (so 0 sends them at once); a longer window
       * applies to the next incidents only.
       */
      setSettle: (id: ChannelId, seconds: number, now: Date) =>
        sql`
          with channel as (
            update webhook_channels set settle_seconds = ${seconds}, updated_at = ${now} where id = ${id} returning id
          )
          update webhook_deliveries d set next_attempt_at = d.created_at + ${seconds}::int * interval '1 second'
          from channel
          where d.channel_id = channel.id and d.incident_id is not null
            and d.status = 'pending' and d.attempts = 0 and d.lease_owner is null
            and d.next_attempt_at > d.created_at + ${seconds}::int * interval '1 second'`.pipe(Effect.asVoid, dbErrors),
      /** A Slack/Teams URL or a HEC token replaced (no grace: the receiver made the new one). */
      replaceDestination: (id: ChannelId, url: string, secretEnc: string, now: Date) =>
        sql`update webhook_channels set url = ${url}, secret_enc = ${secretEnc}, previous_secret_enc = null,
              previous_secret_expires_at = null, updated_at = ${now}
            where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      rotateSecret: (
        id: ChannelId,
        secretEnc: string,
        previousSecretEnc: string | null,
        previousUntil: Date | null,
        now: Date,
      ) =>
        sql`update webhook_channels set secret_enc = ${secretEnc}, previous_secret_enc = ${previousSecretEnc},
              previous_secret_expires_at = ${previousUntil}, updated_at = ${now}
            where id = ${id}`.pipe(dbErrors),
    } as const
  }),
}) {}
