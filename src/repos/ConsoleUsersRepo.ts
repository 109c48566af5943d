import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { OrgId, UserId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** An administrator changes settings; an analyst reads and triages incidents; a viewer reads only, and no settings. */
export type Role = "admin" | "analyst" | "viewer"
export const ROLES: ReadonlyArray<Role> = ["admin", "analyst", "viewer"]

export interface UserRow {
  // Branded as read: the table's keys guarantee the kinds.
  readonly id: UserId
  readonly orgId: OrgId
  readonly email: string
  readonly role: Role
  readonly passwordHash: string | null
  readonly disabledAt: Date | null
  readonly createdAt: Date
  /** Signed into every known-device cookie of the user; bumped to revoke them all. */
  readonly deviceGeneration: number
}

/** A live session with its user, as the console reads it on every request. */
export interface SessionRow {
  /** The session's public id (`ses_…`): what the console shows and posts to end it, never the token. */
  readonly sessionId: string
  readonly userId: UserId
  readonly orgId: OrgId
  readonly email: string
  readonly role: Role
  readonly csrfToken: string
  readonly createdAt: Date
  readonly lastSeenAt: Date
  readonly expiresAt: Date
  /** The organization requires two-factor codes and the user had none at sign-in: only enrolment opens. */
  readonly enrolOnly: boolean
}

/** A live session as its user's list shows it. */
export interface SessionListRow {
  readonly id: string
  readonly createdAt: Date
  readonly lastSeenAt: Date
  readonly expiresAt: Date
  readonly ip: string
  readonly userAgent: string | null
}

/** Failed sign-ins of the throttle window, by email, by address, by the two together, and by known device. */
export interface FailureCounts {
  readonly byEmail: number
  readonly byIp: number
  readonly byPair: number
  /** 0 when the attempt came from no known device. */
  readonly byDevice: number
  readonly oldestEmail: Date | null
  readonly oldestIp: Date | null
  readonly oldestPair: Date | null
  readonly oldestDevice: Date | null
}

/**
 * Console users, their one-time password links, sessions and sign-in failures. Tokens are stored as
 * SHA-256 hashes only. Every list takes the organization id.
 */
export class ConsoleUsersRepo extends Effect.Service<ConsoleUsersRepo>()("ConsoleUsersRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const userColumns = sql`id, org_id, email, role, password_hash, disabled_at, created_at, device_generation`

    return {
      insertUser: (row: { id: UserId; orgId: OrgId; email: string; role: Role; createdAt: Date }) =>
        sql`insert into console_users (id, org_id, email, role, created_at)
            values (${row.id}, ${row.orgId}, ${row.email}, ${row.role}, ${row.createdAt})`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /**
       * The user of a normalized email (normalizeEmail). A user that an older version stored with the trailing dot it
       * was typed with is the same user: found by either form, the exact one first.
       */
      findByEmail: (email: string) =>
        sql<UserRow>`select ${userColumns} from console_users where email in (${email}, ${`${email}.`})
            order by email = ${email} desc limit 1`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          dbErrors,
        ),
      findById: (id: UserId) =>
        sql<UserRow>`select ${userColumns} from console_users where id = ${id}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          dbErrors,
        ),
      listByOrg: (orgId: OrgId) =>
        sql<UserRow>`select ${userColumns} from console_users where org_id = ${orgId} order by created_at, id`.pipe(
          dbErrors,
        ),
      setRole: (id: UserId, role: Role) =>
        sql`update console_users set role = ${role} where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      setDisabled: (id: UserId, at: Date | null) =>
        sql`update console_users set disabled_at = ${at} where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      setPasswordHash: (id: UserId, hash: string | null) =>
        sql`update console_users set password_hash = ${hash} where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      /** Every known-device cookie of the user stops counting as known; the new generation. */
      bumpDeviceGeneration: (id: UserId) =>
        sql<{ deviceGeneration: number }>`update console_users set device_generation = device_generation + 1
          where id = ${id} returning device_generation`.pipe(
          Effect.map((rows) => rows[0]?.deviceGeneration ?? 0),
          dbErrors,
        ),

      insertLink: (row: { tokenHash: Uint8Array; userId: UserId; expiresAt: Date; createdAt: Date }) =>
        sql`insert into console_password_links (token_hash, user_id, expires_at, created_at)
            values (${row.tokenHash}, ${row.userId}, ${row.expiresAt}, ${row.createdAt})`.pipe(Effect.asVoid, dbErrors),
      /** Earlier links of the user stop working when a new one is made. */
      expireLinks: (userId: UserId, at: Date) =>
        sql`update console_password_links set used_at = ${at} where user_id = ${userId} and used_at is null`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      findLink: (tokenHash: Uint8Array) =>
        sql<{ userId: UserId; expiresAt: Date; usedAt: Date | null }>`
          select user_id, expires_at, used_at from console_password_links where token_hash = ${tokenHash}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          dbErrors,
        ),
      /** Marks the link used; false when it already was (two tabs, a replay). */
      useLink: (tokenHash: Uint8Array, at: Date) =>
        sql<{ userId: UserId }>`update console_password_links set used_at = ${at}
          where token_hash = ${tokenHash} and used_at is null and expires_at > ${at} returning user_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          dbErrors,
        ),

      insertSession: (row: {
        id: string
        tokenHash: Uint8Array
        userId: UserId
        csrfToken: string
        createdAt: Date
        expiresAt: Date
        ip: string
        userAgent: string | null
      }) =>
        sql`insert into console_sessions
              (id, token_hash, user_id, csrf_token, created_at, last_seen_at, expires_at, ip, user_agent)
            values (${row.id}, ${row.tokenHash}, ${row.userId}, ${row.csrfToken}, ${row.createdAt}, ${row.createdAt},
                    ${row.expiresAt}, ${row.ip}, ${row.userAgent})`.pipe(Effect.asVoid, dbErrors),
      /** The session if it is neither past its absolute end nor idle since `idleSince`, and its user is enabled. */
      findSession: (tokenHash: Uint8Array, now: Date, idleSince: Date) =>
        sql<SessionRow>`
          select s.id as session_id, s.user_id, u.org_id, u.email, u.role, s.csrf_token, s.created_at, s.last_seen_at,
            s.expires_at, s.enrol_only
          from console_sessions s join console_users u on u.id = s.user_id
          where s.token_hash = ${tokenHash} and s.expires_at > ${now} and s.last_seen_at > ${idleSince}
            and u.disabled_at is null`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          dbErrors,
        ),
      touchSession: (tokenHash: Uint8Array, at: Date) =>
        sql`update console_sessions set last_seen_at = ${at} where token_hash = ${tokenHash}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      deleteSession: (tokenHash: Uint8Array) =>
        sql`delete from console_sessions where token_hash = ${tokenHash}`.pipe(Effect.asVoid, dbErrors),
      /** Sessions past their absolute end or idle since `idleSince`: they can never open a page again. */
      pruneSessions: (now: Date, idleSince: Date) =>
        sql`delete from console_sessions where expires_at < ${now} or last_seen_at < ${idleSince}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** Every session of the user ends; how many there were. */
      deleteSessionsOf: (userId: UserId) =>
        sql<{ n: number }>`with gone as (delete from console_sessions where user_id = ${userId} returning 1)
          select count(*)::int as n from gone`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0),
          dbErrors,
        ),
      /** The user's live sessions (as findSession judges them), the most recently used first. */
      listSessionsOf: (userId: UserId, now: Date, idleSince: Date) =>
        sql<SessionListRow>`
          select id, created_at, last_seen_at, expires_at, ip, user_agent from console_sessions
          where user_id = ${userId} and expires_at > ${now} and last_seen_at > ${idleSince}
          order by last_seen_at desc, created_at desc, id`.pipe(dbErrors),
      /** This session of this user ends; false when the user has no session of that id (another user's is none). */
      deleteSessionOfUser: (userId: UserId, id: string) =>
        sql`delete from console_sessions where user_id = ${userId} and id = ${id} returning id`.pipe(
          Effect.map((rows) => rows.length === 1),
          dbErrors,
        ),
      /** Every session of the user but the one of `keep` (a token hash) ends; how many did. */
      deleteOtherSessionsOf: (userId: UserId, keep: Uint8Array) =>
        sql<{ n: number }>`with gone as (
            delete from console_sessions where user_id = ${userId} and token_hash <> ${keep} returning 1)
          select count(*)::int as n from gone`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0),
          dbErrors,
        ),

      insertFlash: (row: { id: string; sessionHash: Uint8Array; body: string; expiresAt: Date }) =>
        sql`insert into console_flashes (id, session_hash, body, expires_at)
            values (${row.id}, ${row.sessionHash}, ${row.body}, ${row.expiresAt})`.pipe(Effect.asVoid, dbErrors),
      /** Read once: the row is deleted as it is read; only the session that made it can read it. */
      takeFlash: (id: string, sessionHash: Uint8Array, now: Date) =>
        sql<{ body: string }>`delete from console_flashes
          where id = ${id} and session_hash = ${sessionHash} and expires_at > ${now} returning body`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.body)),
          dbErrors,
        ),
      pruneFlashes: (now: Date) =>
        sql`delete from console_flashes where expires_at < ${now}`.pipe(Effect.asVoid, dbErrors),

      /**
       * An attempt is written, in its own statement (committed at once), before its password is verified, so
       * parallel attempts see each other when they count. Also forgets rows older than `forgetBefore`.
       */
      recordAttempt: (
        attemptId: string,
        email: string,
        ip: string,
        device: string | null,
        at: Date,
        forgetBefore: Date,
      ) =>
        Effect.zipRight(
          sql`delete from console_signin_failures where at < ${forgetBefore}`,
          sql`insert into console_signin_failures (attempt_id, email, ip, device, at)
              values (${attemptId}, ${email}, ${ip}, ${device}, ${at})`,
        ).pipe(Effect.asVoid, dbErrors),
      /** An attempt that was throttled (never verified) is not a failure: its row goes. */
      forgetAttempt: (attemptId: string) =>
        sql`delete from console_signin_failures where attempt_id = ${attemptId}`.pipe(Effect.asVoid, dbErrors),
      /**
       * Failures since `since` for this email, for this IP, for this email from this IP, and for this known device
       * (none when `device` is null), with the oldest of each (for Retry-After).
       */
      failuresSince: (email: string, ip: string, device: string | null, since: Date) =>
        sql<FailureCounts>`
          select
            (select count(*)::int from console_signin_failures where device = ${device} and at > ${since}) as by_device,
            (select min(at) from console_signin_failures where device = ${device} and at > ${since}) as oldest_device,
            (select count(*)::int from console_signin_failures where email = ${email} and at > ${since}) as by_email,
            (select count(*)::int from console_signin_failures where ip = ${ip} and at > ${since}) as by_ip,
            (select count(*)::int from console_signin_failures
              where email = ${email} and ip = ${ip} and at > ${since}) as by_pair,
            (select min(at) from console_signin_failures where email = ${email} and at > ${since}) as oldest_email,
            (select min(at) from console_signin_failures where ip = ${ip} and at > ${since}) as oldest_ip,
            (select min(at) from console_signin_failures
              where email = ${email} and ip = ${ip} and at > ${since}) as oldest_pair`.pipe(
          Effect.map(
            (rows) =>
              rows[0] ?? {
                byEmail: 0,
                byIp: 0,
                byPair: 0,
                byDevice: 0,
                oldestEmail: null,
                oldestIp: null,
                oldestPair: null,
                oldestDevice: null,
              },
          ),
          dbErrors,
        ),
      /**
       * After a successful sign-in: this address's failures for the email go (and every row older than `before`).
       * Failures from other addresses stay: a sign-in by the owner does not give an attacker a fresh allowance.
       */
      clearFailures: (email: string, ip: string, device: string | null, before: Date) =>
        sql`delete from console_signin_failures
            where (email = ${email} and ip = ${ip}) or device = ${device} or at < ${before}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** `user unlock`: every failure of the window for this email goes; how many there were. */
      clearEmailFailures: (email: string) =>
        sql<{ n: number }>`with gone as (delete from console_signin_failures where email = ${email} returning 1)
          select count(*)::int as n from gone`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0),
          dbErrors,
        ),
      /**
       * The addresses a user signed in from, or set their password from, since `since` (the audit log's `signin` and
       * `user.password_set` rows, newest first, at most `limit`). Read through the organization's index; an unknown
       * user (orgId "") finds none in the same way.
       */
      signInAddresses: (orgId: OrgId | "", userId: UserId | "", since: Date, limit: number) =>
        sql<{ ip: string | null }>`
          select ip from audit_log
          where org_id = ${orgId} and at > ${since} and action in ('signin', 'user.password_set') and target = ${userId}
          order by at desc limit ${limit}`.pipe(
          Effect.map((rows) => rows.flatMap((r) => (r.ip === null ? [] : [r.ip]))),
          dbErrors,
        ),
    } as const
  }),
}) {}
