import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { ChannelId, OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** A recipient of an email channel: confirmed (gets alerts) or waiting for their link (gets nothing). */
export const EmailRecipientRow = Schema.Struct({
  address: Schema.String,
  invitedAt: Schema.DateFromSelf,
  confirmedAt: Schema.NullOr(Schema.DateFromSelf),
  /** While waiting: until when the mailed link works. */
  confirmExpiresAt: Schema.NullOr(Schema.DateFromSelf),
})
export type EmailRecipientRow = typeof EmailRecipientRow.Type

/** What a confirmation link stands for, as its page shows it. */
export const PendingConfirmation = Schema.Struct({
  channelId: Schema.String,
  orgId: Schema.String,
  organization: Schema.String,
  address: Schema.String,
  expiresAt: Schema.DateFromSelf,
})
export type PendingConfirmation = typeof PendingConfirmation.Type

/**
 * Email channels' recipients (sql/0038). A link's token is never stored: only its SHA-256 (`tokenHash`), looked up by
 * its unique index; a confirmation clears it, so a link works once.
 */
export class EmailRecipientsRepo extends Effect.Service<EmailRecipientsRepo>()("EmailRecipientsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: EmailRecipientRow,
      execute: (channelId) => sql`
        select address, invited_at, confirmed_at, confirm_expires_at from email_recipients
        where channel_id = ${channelId} order by address`,
    })

    const pending = SqlSchema.findOne({
      Request: Schema.Struct({ tokenHash: Schema.Uint8ArrayFromSelf, now: Schema.DateFromSelf }),
      Result: PendingConfirmation,
      execute: ({ tokenHash, now }) => sql`
        select r.channel_id, r.org_id, o.name as organization, r.address, r.confirm_expires_at as expires_at
        from email_recipients r
        join organizations o on o.id = r.org_id
        join webhook_channels c on c.id = r.channel_id
        where r.confirm_token_hash = ${tokenHash} and r.confirm_expires_at > ${now}`,
    })

    return {
      list: (channelId: ChannelId) => list(channelId).pipe(dbErrors),
      /**
       * A new recipient waiting for confirmation, or a waiting one given a new link (the old link stops working). A
       * confirmed recipient is left as they are ("confirmed"), and so is one mailed a link less than `quietMs` ago
       * ("recent"): repeated invitations cannot flood a stranger's mailbox.
       */
      invite: (row: {
        readonly channelId: ChannelId
        readonly orgId: OrgId
        readonly address: string
        readonly tokenHash: Uint8Array
        readonly expiresAt: Date
        readonly now: Date
        readonly quietMs: number
      }) =>
        Effect.gen(function* () {
          const quietSince = new Date(row.now.getTime() - row.quietMs)
          const invited = yield* sql`
            insert into email_recipients (channel_id, org_id, address, confirm_token_hash, confirm_expires_at, invited_at)
            values (${row.channelId}, ${row.orgId}, ${row.address}, ${row.tokenHash}, ${row.expiresAt}, ${row.now})
            on conflict (channel_id, address) do update
              set confirm_token_hash = excluded.confirm_token_hash, confirm_expires_at = excluded.confirm_expires_at,
                invited_at = excluded.invited_at
              where email_recipients.confirmed_at is null and email_recipients.invited_at <= ${quietSince}
            returning address`
          if (invited.length > 0) return "invited" as const
          const [known] = yield* sql<{ confirmed: boolean }>`select confirmed_at is not null as confirmed
            from email_recipients where channel_id = ${row.channelId} and address = ${row.address}`
          return known?.confirmed === false ? ("recent" as const) : ("confirmed" as const)
        }).pipe(dbErrors),
      /** True when the recipient was there. */
      remove: (channelId: ChannelId, address: string) =>
        sql`delete from email_recipients where channel_id = ${channelId} and address = ${address} returning address`.pipe(
          Effect.map((rows) => rows.length > 0),
          dbErrors,
        ),
      count: (channelId: ChannelId) =>
        sql<{ n: number }>`select count(*)::int as n from email_recipients where channel_id = ${channelId}`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0),
          dbErrors,
        ),
      /** The confirmed addresses, which every alert of the channel goes to. */
      confirmed: (channelId: ChannelId) =>
        sql<{ address: string }>`select address from email_recipients
          where channel_id = ${channelId} and confirmed_at is not null order by address`.pipe(
          Effect.map((rows) => rows.map((r) => r.address)),
          dbErrors,
        ),
      /** The live link of this token hash, or none (unknown, used or expired: one answer). */
      pending: (tokenHash: Uint8Array, now: Date) =>
        pending({ tokenHash, now }).pipe(Effect.map(Option.getOrUndefined), dbErrors),
      /** Confirms the live link of this token hash; what it confirmed, or undefined. */
      confirm: (tokenHash: Uint8Array, now: Date) =>
        sql<{ channelId: string; orgId: string; address: string }>`
          update email_recipients set confirmed_at = ${now}, confirm_token_hash = null, confirm_expires_at = null
          where confirm_token_hash = ${tokenHash} and confirm_expires_at > ${now}
          returning channel_id, org_id, address`.pipe(
          Effect.map((rows) => rows[0]),
          dbErrors,
        ),
    } as const
  }),
}) {}
