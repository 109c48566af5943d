import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { INCIDENT_MESSAGE_TYPES } from "../domain/alertMessage.ts"
import { CHANNEL_FORMATS } from "../domain/channels/kinds.ts"
import { CHANNEL_KINDS } from "../domain/channels/registry.ts"
import { DeliveryStatus } from "../domain/deliveryRetry.ts"
import { type ChannelId, type IncidentId, type OrgId, StoredId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

export const DeliveryRow = Schema.Struct({
  id: Schema.String,
  orgId: StoredId.OrgId,
  channelId: StoredId.ChannelId,
  transitionId: Schema.NullOr(Schema.String),
  type: Schema.String,
  incidentId: Schema.NullOr(StoredId.IncidentId),
  body: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  retryIndex: Schema.Int,
  nextAttemptAt: Schema.DateFromSelf,
  lastStatus: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  createdAt: Schema.DateFromSelf,
  deliveredAt: Schema.NullOr(Schema.DateFromSelf),
})
export type DeliveryRow = typeof DeliveryRow.Type

/**
 * The earliest delivery of an incident on a channel: the incident's first message to it. `waiting` while it has
 * never been attempted nor claimed: a settle window may still give it the incident's newer state.
 */
export const FirstDelivery = Schema.Struct({
  id: Schema.String,
  channelId: StoredId.ChannelId,
  incidentId: StoredId.IncidentId,
  type: Schema.Literal(...INCIDENT_MESSAGE_TYPES),
  waiting: Schema.Boolean,
})
export type FirstDelivery = typeof FirstDelivery.Type

/**
 * A channel's state as the alerts list shows it: its latest delivery (none: never used) with the time of that
 * delivery's latest attempt, and how many attempts failed in the window asked for.
 */
export const ChannelDeliveryState = Schema.Struct({
  channelId: StoredId.ChannelId,
  lastId: Schema.NullOr(Schema.String),
  lastType: Schema.NullOr(Schema.String),
  lastDeliveryStatus: Schema.NullOr(DeliveryStatus),
  lastAttempts: Schema.NullOr(Schema.Int),
  lastResponse: Schema.NullOr(Schema.Int),
  lastError: Schema.NullOr(Schema.String),
  lastCreatedAt: Schema.NullOr(Schema.DateFromSelf),
  lastAttemptAt: Schema.NullOr(Schema.DateFromSelf),
  lastDeliveredAt: Schema.NullOr(Schema.DateFromSelf),
  lastNextAttemptAt: Schema.NullOr(Schema.DateFromSelf),
  failures: Schema.Int,
})
export type ChannelDeliveryState = typeof ChannelDeliveryState.Type

/** A claimed delivery with what sending it needs from its channel. */
export const ClaimedDelivery = Schema.Struct({
  id: Schema.String,
  channelId: StoredId.ChannelId,
  type: Schema.String,
  body: Schema.String,
  attempts: Schema.Int,
  retryIndex: Schema.Int,
  kind: Schema.Literal(...CHANNEL_KINDS),
  format: Schema.Literal(...CHANNEL_FORMATS),
  url: Schema.String,
  secretEnc: Schema.NullOr(Schema.String),
  previousSecretEnc: Schema.NullOr(Schema.String),
  previousSecretExpiresAt: Schema.NullOr(Schema.DateFromSelf),
  /** An email channel's confirmed recipients when claimed (JSON text: the same on both database drivers); else []. */
  recipients: Schema.parseJson(Schema.Array(Schema.String)),
  /** An email channel's id and organization name, for its footer; null for the other kinds. */
  mailedFor: Schema.NullOr(Schema.parseJson(Schema.Struct({ id: Schema.String, organization: Schema.String }))),
})
export type ClaimedDelivery = typeof ClaimedDelivery.Type

export const AttemptRow = Schema.Struct({
  id: Schema.String,
  deliveryId: Schema.String,
  attempt: Schema.Int,
  startedAt: Schema.DateFromSelf,
  durationMs: Schema.Int,
  statusCode: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  responseBody: Schema.NullOr(Schema.String),
})
export type AttemptRow = typeof AttemptRow.Type

export interface NewDelivery {
  readonly id: string
  readonly orgId: OrgId
  readonly channelId: ChannelId
  readonly transitionId: string | null
  readonly type: string
  readonly incidentId: IncidentId | null
  readonly body: string
  readonly status: DeliveryStatus
  readonly nextAttemptAt: Date
  readonly createdAt: Date
  /** Set when the writer sends it itself (admin `webhook test`), so no dispatcher claims it meanwhile. */
  readonly leaseOwner?: string
  readonly leaseUntil?: Date
}

/** What one attempt ended in: the next state of the delivery and the attempt's log row. */
export interface AttemptOutcome {
  readonly attempt: AttemptRow
  readonly status: DeliveryStatus
  readonly retryIndex: number
  readonly nextAttemptAt: Date
  readonly deliveredAt: Date | null
}

/** The NOTIFY channel that wakes dispatchers when deliveries are queued (the poll covers a missed one). */
export const DELIVERIES_NOTIFY_CHANNEL = "webhook_deliveries"

const deliveryColumns = (sql: SqlClient.SqlClient) => sql`
  id, org_id, channel_id, transition_id, type, incident_id, body, status, attempts, retry_index, next_attempt_at,
  last_status, last_error, created_at, delivered_at`

/**
 * The delivery outbox and its attempt log: one row per message to one channel, claimed under a lease by the
 * dispatchers, and one log row per attempt. The tables keep their first names (`webhook_deliveries`,
 * `webhook_delivery_attempts`), though they hold the deliveries of every channel kind.
 */
export class DeliveriesRepo extends Effect.Service<DeliveriesRepo>()("DeliveriesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findDelivery = SqlSchema.findOne({
      Request: Schema.String,
      Result: DeliveryRow,
      execute: (id) => sql`select ${deliveryColumns(sql)} from webhook_deliveries where id = ${id}`,
    })

    const listDeliveries = SqlSchema.findAll({
      Request: Schema.Struct({
        channelId: Schema.String,
        status: Schema.UndefinedOr(DeliveryStatus),
        limit: Schema.Int,
      }),
      Result: DeliveryRow,
      execute: ({ channelId, status, limit }) => sql`
        select ${deliveryColumns(sql)} from webhook_deliveries
        where channel_id = ${channelId} ${status === undefined ? sql`` : sql`and status = ${status}`}
        order by created_at desc, id desc
        limit ${limit}`,
    })

    const attemptsOf = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: AttemptRow,
      execute: (ids) => sql`
        select id, delivery_id, attempt, started_at, duration_ms, status_code, error, response_body
        from webhook_delivery_attempts where delivery_id in ${sql.in(ids)}
        order by delivery_id, attempt`,
    })

    /**
     * Every channel of an organization with its latest delivery and its failed attempts since `since`, in one
     * statement: the channels through their organization's index, each one's latest delivery through the channel's
     * (channel_id, created_at desc, id desc) index, that delivery's latest attempt and the failures through the
     * attempts' (delivery_id, attempt) index. The failures are counted among the deliveries created since
     * `createdSince` (the window plus the retry schedule: no older delivery is still tried, unless an admin
     * redelivers it), so the count reads a bounded range of the channel's index, never its whole history.
     */
    const channelStates = SqlSchema.findAll({
      Request: Schema.Struct({
        orgId: Schema.String,
        since: Schema.DateFromSelf,
        createdSince: Schema.DateFromSelf,
      }),
      Result: ChannelDeliveryState,
      execute: ({ orgId, since, createdSince }) => sql`
        select c.id as channel_id, last.id as last_id, last.type as last_type, last.status as last_delivery_status,
          last.attempts as last_attempts, last.last_status as last_response, last.last_error,
          last.created_at as last_created_at, tried.started_at as last_attempt_at,
          last.delivered_at as last_delivered_at, last.next_attempt_at as last_next_attempt_at,
          coalesce(failed.count, 0)::int as failures
        from webhook_channels c
        left join lateral (
          select d.id, d.type, d.status, d.attempts, d.last_status, d.last_error, d.created_at, d.delivered_at,
            d.next_attempt_at
          from webhook_deliveries d where d.channel_id = c.id
          order by d.created_at desc, d.id desc limit 1
        ) last on true
        left join lateral (
          select a.started_at from webhook_delivery_attempts a where a.delivery_id = last.id
          order by a.attempt desc limit 1
        ) tried on true
        left join lateral (
          select count(*) as count
          from webhook_deliveries d join webhook_delivery_attempts a on a.delivery_id = d.id
          where d.channel_id = c.id and d.created_at >= ${createdSince}
            and a.started_at >= ${since} and a.error is not null
        ) failed on true
        where c.org_id = ${orgId}
        order by c.id`,
    })

    /**
     * The first delivery of each of these incidents on each of these channels that has one (through the incident
     * index: an incident has a few deliveries per channel, one per announced transition at most).
     */
    const firstDeliveries = SqlSchema.findAll({
      Request: Schema.Struct({ channelIds: Schema.Array(Schema.String), incidentIds: Schema.Array(Schema.String) }),
      Result: FirstDelivery,
      execute: ({ channelIds, incidentIds }) => sql`
        select distinct on (channel_id, incident_id) id, channel_id, incident_id, type,
          (status = 'pending' and attempts = 0 and lease_owner is null) as waiting
        from webhook_deliveries
        where incident_id in ${sql.in(incidentIds)} and channel_id in ${sql.in(channelIds)}
        order by channel_id, incident_id, created_at, id`,
    })

    /**
     * Claims up to `limit` due deliveries for `owner` until `leaseUntil` (FOR UPDATE SKIP LOCKED: several
     * dispatchers, also in other processes, never claim the same row; an expired lease is claimable again, so a
     * crashed process's deliveries are resent, never lost). Channels in `skipChannels` (at their concurrency
     * bound here) and disabled channels are passed over: their deliveries are parked (channel_enabled false, outside the
     * due index), and `ch.enabled` also covers a delivery queued while its channel was being disabled.
     */
    const claim = SqlSchema.findAll({
      Request: Schema.Struct({
        owner: Schema.String,
        now: Schema.DateFromSelf,
        leaseUntil: Schema.DateFromSelf,
        limit: Schema.Int,
        skipChannels: Schema.Array(Schema.String),
      }),
      Result: ClaimedDelivery,
      execute: ({ owner, now, leaseUntil, limit, skipChannels }) => sql`
        update webhook_deliveries d
        set lease_owner = ${owner}, lease_until = ${leaseUntil}
        from webhook_channels c
        where c.id = d.channel_id and d.id in (
          select due.id from webhook_deliveries due join webhook_channels ch on ch.id = due.channel_id
          where due.status in ('pending', 'failed') and due.next_attempt_at <= ${now}
            and (due.lease_until is null or due.lease_until < ${now})
            and due.channel_enabled and ch.enabled
            ${skipChannels.length > 0 ? sql`and due.channel_id not in ${sql.in(skipChannels)}` : sql``}
          order by due.next_attempt_at, due.id
          limit ${limit}
          for update of due skip locked
        )
        returning d.id, d.channel_id, d.type, d.body, d.attempts, d.retry_index, c.kind, c.format, c.url, c.secret_enc,
          c.previous_secret_enc, c.previous_secret_expires_at,
          case when c.kind = 'email' then coalesce((
            select json_agg(r.address order by r.address) from email_recipients r
            where r.channel_id = c.id and r.confirmed_at is not null), '[]'::json)::text
          else '[]' end as recipients,
          case when c.kind = 'email' then (
            select json_build_object('id', c.id, 'organization', o.name)::text from organizations o where o.id = c.org_id)
          end as mailed_for`,
    })

    return {
      /** Outbox rows; a transition is queued at most once per channel (unique (channel_id, transition_id)). */
      insertDeliveries: (rows: ReadonlyArray<NewDelivery>) =>
        rows.length === 0
          ? Effect.void
          : sql`insert into webhook_deliveries ${sql.insert(rows.map((row) => ({ ...row })))}
                on conflict (channel_id, transition_id) do nothing`.pipe(Effect.asVoid, dbErrors),
      /** The first delivery of each of these incidents on each of these channels that has one (settle windows). */
      firstDeliveries: (channelIds: ReadonlyArray<string>, incidentIds: ReadonlyArray<string>) =>
        channelIds.length === 0 || incidentIds.length === 0
          ? Effect.succeed([] as ReadonlyArray<FirstDelivery>)
          : firstDeliveries({ channelIds, incidentIds }).pipe(dbErrors),
      /**
       * A waiting first delivery (never attempted nor claimed) takes the incident's newer state; false when it is no
       * longer waiting (a dispatcher claimed it meanwhile: the claim's row lock makes this wait, then see the lease).
       */
      replaceWaitingBody: (id: string, body: string) =>
        sql`update webhook_deliveries set body = ${body}
            where id = ${id} and status = 'pending' and attempts = 0 and lease_owner is null
            returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          dbErrors,
        ),
      /** Wakes the dispatchers once the current transaction commits. */
      // A payload is needed: @effect/sql-pg's listener drops notifications with an empty one.
      notify: sql`select pg_notify(${DELIVERIES_NOTIFY_CHANNEL}, 'due')`.pipe(Effect.asVoid, dbErrors),

      claim: (request: {
        readonly owner: string
        readonly now: Date
        readonly leaseUntil: Date
        readonly limit: number
        readonly skipChannels: ReadonlyArray<ChannelId>
      }) => claim(request).pipe(dbErrors),

      /**
       * Records one attempt and moves the delivery on, if this owner still holds its lease. One statement (the
       * attempt's insert is a data-modifying CTE, always run to completion, in the same implicit transaction): one
       * round trip instead of four (BEGIN, INSERT, UPDATE, COMMIT) per delivery.
       */
      recordAttempt: (owner: string, outcome: AttemptOutcome) => {
        const a = outcome.attempt
        return sql`
          with attempt as (insert into webhook_delivery_attempts ${sql.insert({ ...a })})
          update webhook_deliveries
          set status = ${outcome.status}, attempts = greatest(attempts, ${a.attempt}),
              retry_index = ${outcome.retryIndex}, next_attempt_at = ${outcome.nextAttemptAt},
              last_status = ${a.statusCode}, last_error = ${a.error},
              delivered_at = coalesce(${outcome.deliveredAt}, delivered_at),
              lease_owner = null, lease_until = null
          where id = ${a.deliveryId} and lease_owner = ${owner}`.pipe(Effect.asVoid, dbErrors)
      },

      /** Gives back the leases of this owner (a stopping dispatcher): the rows are due again at once. */
      releaseLeases: (owner: string) =>
        sql`update webhook_deliveries set lease_owner = null, lease_until = null where lease_owner = ${owner}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** Gives back the leases of these deliveries (claimed beyond a channel's bound), in one statement. */
      releaseLeasesOf: (owner: string, ids: ReadonlyArray<string>) =>
        ids.length === 0
          ? Effect.void
          : sql`update webhook_deliveries set lease_owner = null, lease_until = null
                where id in ${sql.in(ids)} and lease_owner = ${owner}`.pipe(Effect.asVoid, dbErrors),

      findDelivery: (id: string) => findDelivery(id).pipe(dbErrors),
      /** Every channel of the organization with its latest delivery and its failed attempts since `since`. */
      channelStates: (orgId: OrgId, since: Date, createdSince: Date) =>
        channelStates({ orgId, since, createdSince }).pipe(dbErrors),
      listDeliveries: (channelId: ChannelId, status: DeliveryStatus | undefined, limit: number) =>
        listDeliveries({ channelId, status, limit }).pipe(dbErrors),
      attemptsOf: (ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed([] as ReadonlyArray<AttemptRow>) : attemptsOf(ids).pipe(dbErrors),

      /** An admin's re-drive: due now, back-off restarted, whatever state it was in (the attempt log is kept). */
      redeliver: (id: string, now: Date) =>
        sql`update webhook_deliveries
            set status = 'pending', retry_index = 0, next_attempt_at = ${now}, lease_owner = null, lease_until = null,
              channel_enabled = (select c.enabled from webhook_channels c where c.id = channel_id)
            where id = ${id}
            returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          dbErrors,
        ),

      /**
       * Deliveries waiting (pending or awaiting a retry, parked ones included), and the age of the oldest due one
       * (metrics; a disabled channel's parked backlog is not "due", so it does not look like a stuck queue). Each
       * part reads one partial index.
       */
      queueStats: (now: Date) =>
        sql<{ depth: number; oldestDue: Date | null }>`
          select
            (select count(*) from webhook_deliveries where status in ('pending', 'failed') and channel_enabled)::int
              + (select count(*) from webhook_deliveries where status in ('pending', 'failed') and not channel_enabled)::int
              as depth,
            (select min(next_attempt_at) from webhook_deliveries
              where status in ('pending', 'failed') and channel_enabled and next_attempt_at <= ${now}) as oldest_due`.pipe(
          Effect.map((rows) => ({
            depth: rows[0]?.depth ?? 0,
            oldestDueSeconds: rows[0]?.oldestDue
              ? Math.max(0, (now.getTime() - rows[0].oldestDue.getTime()) / 1000)
              : 0,
          })),
          dbErrors,
        ),
      /** Counts by state (metrics, the demo). */
      countByStatus: (orgId?: OrgId) =>
        sql<{ status: string; count: number }>`
          select status, count(*)::int as count from webhook_deliveries
          ${orgId === undefined ? sql`` : sql`where org_id = ${orgId}`}
          group by status`.pipe(
          Effect.map((rows) => Object.fromEntries(rows.map((r) => [r.status, r.count])) as Record<string, number>),
          dbErrors,
        ),
    } as const
  }),
}) {}
