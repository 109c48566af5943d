import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { generateSecret, generateURI, verify } from "otplib"
import QRCode from "qrcode"
import { sha256 } from "../domain/crypto.ts"
import { isId, type OrgId, type UserId } from "../domain/ids.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { Keys } from "../platform/keys.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { ConsoleUsersRepo } from "../repos/ConsoleUsersRepo.ts"
import { AdminActor, requireAdmin, requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { Forbidden, invalid, notFound } from "./errors.ts"

/** RFC 6238 as every authenticator app reads an otpauth:// URI by default: SHA-1, 6 digits, 30-second steps. */
export const TOTP_PERIOD_SECONDS = 30
export const TOTP_DIGITS = 6
/** A code of the step before or after the server's is still taken (a clock a little off, a slow typist). */
export const TOTP_TOLERANCE_SECONDS = TOTP_PERIOD_SECONDS
export const RECOVERY_CODE_COUNT = 10
/** The name an authenticator app shows for the account. */
export const TOTP_ISSUER = "Decoy console"

const CODE = /^[0-9]{6}$/
const RECOVERY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"

/**
 * The time step at which `code` is the TOTP of `secret` (Base32 text or raw bytes) within one step of `epoch` (Unix seconds), and
 * after `afterStep` (the last step the user's codes were accepted at: a code is never taken twice); undefined
 * otherwise. The library compares codes in constant time.
 */
export const totpStep = async (
  secret: string | Uint8Array,
  code: string,
  epoch: number,
  afterStep: number | null,
): Promise<number | undefined> => {
  if (!CODE.test(code)) return undefined
  try {
    const result = await verify({
      secret,
      token: code,
      epoch,
      algorithm: "sha1",
      digits: TOTP_DIGITS,
      period: TOTP_PERIOD_SECONDS,
      epochTolerance: TOTP_TOLERANCE_SECONDS,
      ...(afterStep === null ? {} : { afterTimeStep: afterStep }),
    })
    return result.valid && "timeStep" in result ? result.timeStep : undefined
  } catch {
    return undefined
  }
}

/** A recovery code as typed: spaces and dashes dropped, lower case. */
const normalizeRecovery = (code: string) => code.replace(/[\s-]/g, "").toLowerCase().slice(0, 64)
const recoveryHash = (code: string) => sha256(`console-recovery-v1\n${normalizeRecovery(code)}`)
/** Ten characters in two groups of five (about 50 bits each), from letters and digits nobody confuses. */
const newRecoveryCode = () => {
  const bytes = randomBytes(10)
  const chars = [...bytes].map((b) => RECOVERY_ALPHABET[b % RECOVERY_ALPHABET.length]).join("")
  return `${chars.slice(0, 5)}-${chars.slice(5)}`
}

interface TwoFactorRow {
  readonly userId: UserId
  readonly secretSealed: string
  readonly confirmedAt: Date | null
  readonly lastStep: string | number | null
}

/** The enrolment a user sees: the secret as text, the otpauth URI and its QR code (SVG markup made here). */
export interface Enrolment {
  readonly secret: string
  readonly uri: string
  readonly qrSvg: string
}

/**
 * Two-factor codes for console sign-in: a user's TOTP secret (sealed under SECRET_KEY), confirmed with a current code
 * before it counts; ten one-time recovery codes (SHA-256 hashes only); the organization's requirement. Enrolment,
 * disabling, an admin's reset, a recovery code used and the requirement's change are audited, never with a secret
 * or a code.
 */
export class TwoFactor extends Effect.Service<TwoFactor>()("TwoFactor", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const users = yield* ConsoleUsersRepo
    const audit = yield* AuditRepo
    const { sealer } = yield* Keys
    const { audited } = yield* auditing
    const encoder = new TextEncoder()

    const rowOf = (userId: UserId) =>
      sql<TwoFactorRow>`select user_id, secret_sealed, confirmed_at, last_step from console_two_factor
        where user_id = ${userId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        dbErrors,
      )
    const secretOf = (row: TwoFactorRow) => {
      const opened = sealer.open(row.secretSealed)
      return opened === undefined ? undefined : new TextDecoder().decode(opened)
    }
    const lastStepOf = (row: TwoFactorRow) => (row.lastStep === null ? null : Number(row.lastStep))

    /** Whether the user has confirmed codes, and whether their organization requires them. */
    const stateOf = Effect.fn("TwoFactor.stateOf")(function* (userId: UserId, orgId: OrgId) {
      const rows = yield* sql<{ enrolled: boolean; required: boolean }>`
        select exists (select 1 from console_two_factor where user_id = ${userId} and confirmed_at is not null)
            as enrolled,
          coalesce((select require_two_factor from organizations where id = ${orgId}), false) as required`.pipe(
        dbErrors,
      )
      return rows[0] ?? { enrolled: false, required: false }
    })

    /** The enrolment in progress (its secret kept until confirmed), or a new one; undefined when already on. */
    const beginEnrolment = Effect.fn("TwoFactor.beginEnrolment")(function* (user: {
      readonly userId: UserId
      readonly email: string
    }) {
      const found = yield* rowOf(user.userId)
      if (Option.isSome(found) && found.value.confirmedAt !== null) return undefined
      let secret = Option.isSome(found) ? secretOf(found.value) : undefined
      if (secret === undefined) {
        secret = generateSecret()
        const sealed = sealer.seal(encoder.encode(secret))
        yield* sql`insert into console_two_factor (user_id, secret_sealed, created_at)
            values (${user.userId}, ${sealed}, ${new Date()})
            on conflict (user_id) do update set secret_sealed = excluded.secret_sealed,
              created_at = excluded.created_at, last_step = null
            where console_two_factor.confirmed_at is null`.pipe(dbErrors)
      }
      const uri = generateURI({
        issuer: TOTP_ISSUER,
        label: user.email,
        secret,
        algorithm: "sha1",
        digits: TOTP_DIGITS,
        period: TOTP_PERIOD_SECONDS,
      })
      const qrSvg = yield* Effect.promise(() => QRCode.toString(uri, { type: "svg", errorCorrectionLevel: "M" }))
      return { secret, uri, qrSvg } satisfies Enrolment
    })

    /**
     * Codes on, with a current code of the enrolment's secret: ten new recovery codes (returned once, kept as hashes),
     * and the user's sessions that could only reach enrolment open everything. Undefined for a wrong code.
     */
    const confirmEnrolment = Effect.fn("TwoFactor.confirmEnrolment")(function* (
      user: { readonly userId: UserId; readonly orgId: OrgId; readonly ip: string | null },
      code: string,
    ) {
      const found = yield* rowOf(user.userId)
      if (Option.isNone(found) || found.value.confirmedAt !== null) return undefined
      const secret = secretOf(found.value)
      if (secret === undefined) return undefined
      const step = yield* Effect.promise(() =>
        totpStep(secret, code.trim(), Date.now() / 1000, lastStepOf(found.value)),
      )
      if (step === undefined) return undefined
      const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)
      const done = yield* sql.withTransaction(
        Effect.gen(function* () {
          const updated = yield* sql`update console_two_factor set confirmed_at = ${new Date()}, last_step = ${step}
              where user_id = ${user.userId} and confirmed_at is null returning user_id`.pipe(dbErrors)
          if (updated.length === 0) return false
          yield* sql`delete from console_recovery_codes where user_id = ${user.userId}`.pipe(dbErrors)
          for (const c of codes) {
            yield* sql`insert into console_recovery_codes (user_id, code_hash)
                values (${user.userId}, ${recoveryHash(c)})`.pipe(dbErrors)
          }
          yield* sql`update console_sessions set enrol_only = false where user_id = ${user.userId}`.pipe(dbErrors)
          yield* audit.record({
            orgId: user.orgId,
            actor: user.userId,
            action: "two_factor.enrol",
            target: user.userId,
            ip: user.ip,
            detail: null,
          })
          return true
        }),
      )
      return done ? codes : undefined
    })

    /**
     * A code at sign-in: a TOTP code (never one of a step already accepted), or an unused recovery code, which is
     * spent. Whether it was taken.
     */
    const checkCode = Effect.fn("TwoFactor.checkCode")(function* (
      user: { readonly userId: UserId; readonly orgId: OrgId; readonly ip: string | null },
      codeInput: string,
    ) {
      const found = yield* rowOf(user.userId)
      if (Option.isNone(found) || found.value.confirmedAt === null) return false
      const code = codeInput.replace(/\s/g, "")
      if (CODE.test(code)) {
        const secret = secretOf(found.value)
        if (secret === undefined) return false
        const step = yield* Effect.promise(() => totpStep(secret, code, Date.now() / 1000, lastStepOf(found.value)))
        if (step === undefined) return false
        // Taken only if no other request took this step (or a later one) meanwhile.
        const taken = yield* sql`update console_two_factor set last_step = ${step}
            where user_id = ${user.userId} and (last_step is null or last_step < ${step}) returning user_id`.pipe(
          dbErrors,
        )
        return taken.length === 1
      }
      const spent = yield* sql`update console_recovery_codes set used_at = ${new Date()}
          where user_id = ${user.userId} and code_hash = ${recoveryHash(code)} and used_at is null
          returning user_id`.pipe(dbErrors)
      if (spent.length !== 1) return false
      yield* audit.record({
        orgId: user.orgId,
        actor: user.userId,
        action: "two_factor.recovery_used",
        target: user.userId,
        ip: user.ip,
        detail: null,
      })
      return true
    })

    const remove = (userId: UserId) =>
      Effect.zipRight(
        sql`delete from console_recovery_codes where user_id = ${userId}`,
        sql`delete from console_two_factor where user_id = ${userId}`,
      ).pipe(dbErrors)

    /** The user turns codes off, with a current code (or a recovery code). Whether they were turned off. */
    const disable = Effect.fn("TwoFactor.disable")(function* (
      user: { readonly userId: UserId; readonly orgId: OrgId; readonly ip: string | null },
      code: string,
    ) {
      if (!(yield* checkCode(user, code))) return false
      yield* sql.withTransaction(
        Effect.zipRight(
          remove(user.userId),
          audit.record({
            orgId: user.orgId,
            actor: user.userId,
            action: "two_factor.disable",
            target: user.userId,
            ip: user.ip,
            detail: null,
          }),
        ),
      )
      return true
    })

    /**
     * An administrator turns a user's codes off (a lost phone, no recovery code left): the user enrols again, at their
     * next sign-in if the organization requires codes. Every session of the user ends. Audited.
     */
    const reset = Effect.fn("TwoFactor.reset")(function* (userId: string) {
      yield* requireAdmin
      const found = isId("consoleUser", userId) ? yield* users.findById(userId) : Option.none()
      if (Option.isNone(found)) return yield* notFound("user", userId)
      const user = found.value
      yield* requireScope(user.orgId, "user", userId)
      yield* remove(user.id)
      yield* users.deleteSessionsOf(user.id)
      yield* audited(user.orgId, "two_factor.reset", user.id, user.email)
      return { id: user.id, email: user.email }
    }, sql.withTransaction)

    /** Whether the organization requires codes of every user. */
    const required = Effect.fn("TwoFactor.required")(function* (orgId: OrgId) {
      const rows = yield* sql<{ requireTwoFactor: boolean }>`
        select require_two_factor from organizations where id = ${orgId}`.pipe(dbErrors)
      return rows[0]?.requireTwoFactor ?? false
    })

    /**
     * Require codes of every user of the organization, or not: users without them are sent to enrol at their next
     * sign-in. Audited `org.two_factor` with the change.
     */
    const setRequired = Effect.fn("TwoFactor.setRequired")(function* (orgText: string, state: string | undefined) {
      yield* requireAdmin
      if (state !== "on" && state !== "off") {
        return yield* invalid({ field: "status", reason: "malformed", rule: "must be on or off" })
      }
      const found = isId("organization", orgText)
        ? yield* sql<{ id: OrgId; requireTwoFactor: boolean }>`
            select id, require_two_factor from organizations where id = ${orgText}`.pipe(dbErrors)
        : []
      const org = found[0]
      if (org === undefined) return yield* notFound("organization", orgText)
      yield* requireScope(org.id, "organization", orgText)
      yield* sql`update organizations set require_two_factor = ${state === "on"} where id = ${org.id}`.pipe(dbErrors)
      // Sessions opened only for enrolment open everything once nothing requires it any more.
      if (state === "off") {
        yield* sql`update console_sessions set enrol_only = false where enrol_only
          and user_id in (select id from console_users where org_id = ${org.id})`.pipe(dbErrors)
      }
      yield* audited(org.id, "org.two_factor", org.id, `${org.requireTwoFactor ? "on" : "off"} -> ${state}`)
      return { id: org.id, twoFactor: state }
    }, sql.withTransaction)

    /** Which users of the organization have codes on (for the admin's list of users). */
    const enrolledIn = Effect.fn("TwoFactor.enrolledIn")(function* (orgId: OrgId) {
      const rows = yield* sql<{ userId: UserId }>`
        select t.user_id from console_two_factor t join console_users u on u.id = t.user_id
        where u.org_id = ${orgId} and t.confirmed_at is not null`.pipe(dbErrors)
      return new Set(rows.map((r) => r.userId))
    })

    /**
     * After a SECRET_KEY rotation: the two-factor secrets sealed under an older key are sealed under the current one
     * (operator only, like the channel secrets); the users whose secret no key opens are named.
     */
    const resealSecrets = Effect.fn("TwoFactor.resealSecrets")(function* () {
      const actor = yield* AdminActor
      if (actor._tag !== "Operator") return yield* new Forbidden({ reason: "operatorOnly" })
      const rows = yield* sql<{ userId: string; secretSealed: string }>`
        select user_id, secret_sealed from console_two_factor order by user_id`.pipe(dbErrors)
      let resealed = 0
      const unreadable: Array<string> = []
      for (const row of rows) {
        if (sealedKeyId(row.secretSealed) === sealer.keyId) continue
        const opened = sealer.open(row.secretSealed)
        if (opened === undefined) {
          unreadable.push(row.userId)
          continue
        }
        yield* sql`update console_two_factor set secret_sealed = ${sealer.seal(opened)}
          where user_id = ${row.userId}`.pipe(dbErrors)
        resealed++
      }
      return { resealed, unreadable }
    })

    return {
      resealSecrets,
      stateOf,
      beginEnrolment,
      confirmEnrolment,
      checkCode,
      disable,
      reset,
      required,
      setRequired,
      enrolledIn,
    } as const
  }),
}) {}
