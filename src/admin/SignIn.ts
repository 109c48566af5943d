import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { constantTimeEqual, hmacSha256, sha256 } from "../domain/crypto.ts"
import { isId, newId, type OrgId, type UserId } from "../domain/ids.ts"
import { firstCodePoints } from "../domain/sanitize.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { Keys } from "../platform/keys.ts"
import { addressBucketKey } from "../platform/ratelimit/core.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { ConsoleUsersRepo, type FailureCounts, type SessionRow, type UserRow } from "../repos/ConsoleUsersRepo.ts"
import { SignInProvidersRepo } from "../repos/SignInProvidersRepo.ts"
import { invalid, LinkExpired } from "./errors.ts"
import { TwoFactor } from "./TwoFactor.ts"

/** Password, link, session and sign-in throttle limits, in one place. */
export const PASSWORD_MIN = 12
export const PASSWORD_MAX = 256
export const LINK_VALID_MS = 24 * 3_600_000
export const SESSION_IDLE_MS = 12 * 3_600_000
export const SESSION_ABSOLUTE_MS = 7 * 86_400_000
export const THROTTLE_WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_EMAIL = 5
export const MAX_FAILURES_PER_IP = 20
/**
 * Tries of one address for an email that is over MAX_FAILURES_PER_EMAIL (below the ceiling): a few, so a person
 * on a new address who mistypes once is not refused at the second try, while each address that guesses is soon out.
 */
export const NEW_ADDRESS_TRIES = 3
/**
 * Past this many failures for one email in the window, only a known device of the user, or an address the user has
 * signed in or set the password from (within KNOWN_ADDRESS_DAYS), is still verified: the ceiling on what many
 * addresses together can guess.
 */
export const MAX_FAILURES_PER_EMAIL_CEILING = 50
export const KNOWN_ADDRESS_DAYS = 90
/** Failures in the window of one known device (its cookie): past them it is treated like any other browser. */
export const MAX_FAILURES_PER_DEVICE = 5
/** Life of the known-device cookie, renewed at each sign-in: the browser's Max-Age, and checked by the server. */
export const DEVICE_COOKIE_DAYS = 365
/** A known-device cookie issued this far in the future (another replica's clock) still counts. */
const DEVICE_CLOCK_SKEW_SECONDS = 300
const KNOWN_ADDRESSES_READ = 200
/** A session's user agent is kept to this many characters (client text, shown on the user's list of sessions). */
export const USER_AGENT_MAX = 512
/** last_seen_at is written at most this often per session (a page load is not a write each time). */
const TOUCH_EVERY_MS = 60_000
/** How long the step between a right password and the two-factor code lasts. */
export const PENDING_SIGNIN_MS = 5 * 60_000

/** A browser's User-Agent as a session keeps it: control characters replaced, at most USER_AGENT_MAX, none if empty. */
export const sessionUserAgent = (header: string | undefined): string | null => {
  if (header === undefined) return null
  const kept = firstCodePoints(header.slice(0, USER_AGENT_MAX * 2), USER_AGENT_MAX)
    .replace(/\p{Cc}/gu, "\uFFFD")
    .trim()
  return kept === "" ? null : kept
}

export const newToken = () => randomBytes(32).toString("base64url")
export const hashToken = (token: string) => sha256(token)
/**
 * The one form of an email that creation, sign-in and unlock all use: trimmed, lower case, and without a trailing dot
 * (`Ann@Example.com.` is `ann@example.com`: a trailing dot only spells out the DNS root of the same domain).
 */
export const normalizeEmail = (email: string) => email.trim().toLowerCase().replace(/\.+$/, "")

/**
 * Verified when the email is unknown, so an unknown email and a wrong password take the same time (no account
 * enumeration). Made on first use, not at import: the admin CLI imports this module for every command.
 */
let dummyHash: Promise<string> | undefined
const DUMMY_HASH = () => {
  dummyHash ??= Bun.password.hash("not a real password, only for timing", { algorithm: "argon2id" })
  return dummyHash
}

/** The console computes the dummy hash as it starts, so even its first unknown-email sign-in takes the usual time. */
export const prepareSignIn = () => void DUMMY_HASH()

export type SignInResult =
  | {
      readonly _tag: "SignedIn"
      readonly token: string
      readonly userId: UserId
      readonly orgId: OrgId
      /** The known-device cookie's value to set (DEVICE_COOKIE). */
      readonly device: string
      /** The organization requires two-factor codes and the user has none: the session opens only enrolment. */
      readonly enrolOnly: boolean
    }
  | { readonly _tag: "Refused" }
  | { readonly _tag: "Throttled"; readonly retryAfterSeconds: number }
  /** The password was right and the user has two-factor codes: the pending sign-in's token (PENDING_COOKIE). */
  | { readonly _tag: "CodeNeeded"; readonly pending: string }
  /** The pending sign-in is unknown, spent or older than PENDING_SIGNIN_MS: the password again. */
  | { readonly _tag: "PendingExpired" }
  /** The password was right, but the user's organization signs in through its provider only. */
  | { readonly _tag: "PasswordOff" }

export type LinkState = "valid" | "expired" | "unknown"

/**
 * The known-device cookie: set at each sign-in and when a password is set, so this browser is known to be the
 * user's. `__Host-`, Secure, HttpOnly, SameSite=Strict, Path=/. Its value is `<device id>.<issued>.<MAC>`: 128
 * random bits, the issue time (Unix seconds), and HMAC-SHA256 over the user id, the user's device generation, the
 * device id and the issue time under a key derived from SECRET_KEY (so it cannot be made for another user or
 * another device, nor made younger, and survives restarts on every replica). The server refuses it past
 * DEVICE_COOKIE_DAYS after its issue time, whatever the browser keeps; `user reset`, `user disable` and a password
 * set bump the generation, so every earlier cookie of the user stops counting. Not a credential: the password is
 * always needed; it only decides how a sign-in is throttled, letting the owner's own browser past an email's lock.
 */
export const DEVICE_COOKIE = "__Host-device"
const DEVICE_ID = /^[A-Za-z0-9_-]{22}$/
const DEVICE_ISSUED = /^[0-9]{1,12}$/
const DEVICE_MAC = /^[A-Za-z0-9_-]{43}$/
const DEVICE_COOKIE_MAX = 22 + 1 + 12 + 1 + 43
const deviceMessage = (userId: string, generation: number, deviceId: string, issued: string) =>
  `console-device-v2\n${userId}\n${generation}\n${deviceId}\n${issued}`

/**
 * The console's sign-in: passwords set through one-time links (the links are made by UserAdmin), the
 * sign-in throttle, known devices and sessions. Sign-in, a password set and sign-out are audited.
 */
export class SignIn extends Effect.Service<SignIn>()("SignIn", {
  effect: Effect.gen(function* () {
    const users = yield* ConsoleUsersRepo
    const providers = yield* SignInProvidersRepo
    const audit = yield* AuditRepo
    const sql = yield* SqlClient.SqlClient
    const twoFactor = yield* TwoFactor
    // The current key signs; a key from before a SECRET_KEY rotation is still accepted.
    const deviceKeys = (yield* Keys).deriveWithPrevious("console-device-v1")

    /**
     * The cookie value for this user at their current device generation, issued now (a new device when none is
     * given).
     */
    const deviceCookie = (
      user: { readonly id: string; readonly deviceGeneration: number },
      now: Date,
      deviceId: string = randomBytes(16).toString("base64url"),
    ) => {
      const issued = String(Math.floor(now.getTime() / 1000))
      const mac = hmacSha256(deviceKeys[0] as Buffer, deviceMessage(user.id, user.deviceGeneration, deviceId, issued))
      return `${deviceId}.${issued}.${mac.toString("base64url")}`
    }

    /**
     * The device id of a cookie value that is this user's at their current generation and was issued within
     * DEVICE_COOKIE_DAYS, or undefined (none, malformed, another user's, forged, expired, revoked).
     */
    const deviceOf = (cookie: string | undefined, user: UserRow | undefined, now: Date): string | undefined => {
      if (cookie === undefined || user === undefined || cookie.length > DEVICE_COOKIE_MAX) return undefined
      const [deviceId = "", issued = "", mac = "", ...rest] = cookie.split(".")
      if (rest.length > 0 || !DEVICE_ID.test(deviceId) || !DEVICE_ISSUED.test(issued) || !DEVICE_MAC.test(mac)) {
        return undefined
      }
      const ageSeconds = Math.floor(now.getTime() / 1000) - Number(issued)
      if (ageSeconds > DEVICE_COOKIE_DAYS * 86_400 || ageSeconds < -DEVICE_CLOCK_SKEW_SECONDS) return undefined
      const given = Buffer.from(mac, "base64url")
      const message = deviceMessage(user.id, user.deviceGeneration, deviceId, issued)
      return deviceKeys.some((key) => constantTimeEqual(hmacSha256(key, message), given)) ? deviceId : undefined
    }

    const deadLink = Effect.fail(new LinkExpired({ reason: "expired" }))

    const linkState = Effect.fn("SignIn.linkState")(function* (token: string) {
      if (token.length > 100) return "unknown" as LinkState
      const found = yield* users.findLink(hashToken(token))
      if (Option.isNone(found)) return "unknown" as LinkState
      if (found.value.usedAt !== null || found.value.expiresAt.getTime() <= Date.now()) return "expired" as LinkState
      return "valid" as LinkState
    })

    /**
     * 12–256 characters, argon2id; the link is spent, every session of the user ends, the user is enabled. Every
     * earlier known-device cookie of the user stops counting; this browser becomes a known device under a new id
     * (the returned `device` cookie value), and the address a known one.
     */
    const setPassword = Effect.fn("SignIn.setPassword")(function* (token: string, password: string, ip: string) {
      // The link first: hashing (argon2id, 64 MiB) is done only for a live link, never for anyone who POSTs to
      // an unknown or spent one. The link is checked again, and spent, in the transaction below.
      if ((yield* linkState(token)) !== "valid") return yield* deadLink
      const length = [...password].length
      if (length < PASSWORD_MIN || length > PASSWORD_MAX) {
        return yield* invalid({
          field: "password",
          reason: "malformed",
          detail: `The password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters long.`,
        })
      }
      const hash = yield* Effect.promise(() => Bun.password.hash(password, { algorithm: "argon2id" }))
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const tokenHash = hashToken(token)
          const link = yield* users.findLink(tokenHash)
          const at = new Date()
          if (Option.isNone(link) || !(yield* users.useLink(tokenHash, at))) return yield* deadLink
          const found = yield* users.findById(link.value.userId)
          if (Option.isNone(found)) return yield* deadLink
          const user = found.value
          // A link is made by `user create` or `user reset` (disabling spends the user's links): using it is what
          // brings a reset, disabled user back.
          yield* users.setPasswordHash(user.id, hash)
          if (user.disabledAt !== null) yield* users.setDisabled(user.id, null)
          yield* users.deleteSessionsOf(user.id)
          const deviceGeneration = yield* users.bumpDeviceGeneration(user.id)
          yield* audit.record({
            orgId: user.orgId,
            actor: user.id,
            action: "user.password_set",
            target: user.id,
            ip,
            detail: null,
          })
          return {
            userId: user.id,
            email: user.email,
            device: deviceCookie({ id: user.id, deviceGeneration }, at),
          }
        }),
      )
    })

    const startSession = Effect.fn("SignIn.startSession")(function* (
      userId: UserId,
      ip: string,
      userAgent: string | null,
      enrolOnly = false,
    ) {
      const token = newToken()
      const at = new Date()
      const tokenHash = hashToken(token)
      yield* users.insertSession({
        id: newId("consoleSession", at.getTime()),
        userAgent,
        tokenHash,
        userId,
        csrfToken: newToken(),
        createdAt: at,
        expiresAt: new Date(at.getTime() + SESSION_ABSOLUTE_MS),
        ip,
      })
      if (enrolOnly) {
        yield* sql`update console_sessions set enrol_only = true where token_hash = ${tokenHash}`.pipe(dbErrors)
      }
      return token
    })

    /**
     * Whether an attempt for an email that is over its limit is still verified. Below the ceiling, an address (an
     * IPv6 client: its /64) that has failed fewer than NEW_ADDRESS_TRIES times for this email in the window is: a
     * lock made from other addresses never keeps the owner out. Past the ceiling, only an address the user signed in
     * or set the password from is, and only while it has not itself failed 5 times.
     */
    const admittedWhileLocked = Effect.fn("SignIn.admittedWhileLocked")(function* (
      user: UserRow | undefined,
      ipBucket: string,
      failures: FailureCounts,
      now: Date,
    ) {
      if (failures.byEmail <= MAX_FAILURES_PER_EMAIL_CEILING && failures.byPair <= NEW_ADDRESS_TRIES) return true
      if (failures.byPair > MAX_FAILURES_PER_EMAIL) return false
      // Read for an unknown email too (it finds none), so the answer takes the same time either way.
      const known = yield* users.signInAddresses(
        user?.orgId ?? "",
        user?.id ?? "",
        new Date(now.getTime() - KNOWN_ADDRESS_DAYS * 86_400_000),
        KNOWN_ADDRESSES_READ,
      )
      return known.some((address) => addressBucketKey(address) === ipBucket)
    })

    /**
     * The throttle of one attempt, a password or a two-factor code (both count alike, as failed sign-ins of the
     * user's email): Throttled, or the attempt admitted to be verified.
     *
     * Throttling (429 with Retry-After), per 15-minute window:
     * - A known device of the user (its DEVICE_COOKIE, made for this email's user at the user's current device
     *   generation, issued within DEVICE_COOKIE_DAYS) is verified while it has failed at most
     *   MAX_FAILURES_PER_DEVICE times, whatever the count of the email (not of the address): a lock that others make
     *   can never keep out a browser the user signed in from (or set the password from). Past its own limit it is
     *   throttled like any other browser, by the rules below.
     * - More than 20 failures from one address (an IPv6 client per /64), with or without a known device.
     * - More than 5 failures for one email, except from an address that has failed fewer than NEW_ADDRESS_TRIES
     *   times for it (admittedWhileLocked): anyone can make an email's count pass 5, so that alone must not lock its
     *   owner out, while each address that guesses wrong is refused for the rest of the window after a few tries.
     *   Past 50 failures for the email, only addresses the user has signed in or set the password from are still
     *   verified (besides known devices); `admin user unlock <email>` clears the count.
     *
     * Parallel attempts must not all read the count before any of them records a failure: each attempt is written
     * first (committed on its own), then the window is counted with it and every attempt still in flight. Over the
     * limit, the attempt removes its row and gets 429; otherwise its row stands as the failure unless the password
     * is right. So at most 5 (or 20) attempts are ever verified per window and address or device, however many arrive
     * at once, and at most NEW_ADDRESS_TRIES more from each address new to the email.
     */
    const admit = Effect.fn("SignIn.admit")(function* (
      email: string,
      ip: string,
      candidate: UserRow | undefined,
      device: string | undefined,
      now: Date,
    ) {
      const since = new Date(now.getTime() - THROTTLE_WINDOW_MS)
      const attemptId = newToken()
      // Per IP as the API's rate limiter counts: an IPv6 client per /64, which it can rotate through at will.
      const ipBucket = addressBucketKey(ip)
      const deviceId = deviceOf(device, candidate, now)
      yield* users.recordAttempt(attemptId, email, ipBucket, deviceId ?? null, now, since)
      const failures = yield* users.failuresSince(email, ipBucket, deviceId ?? null, since)
      const waits: Array<number> = []
      const knownDevice = deviceId !== undefined && failures.byDevice <= MAX_FAILURES_PER_DEVICE
      if (
        !knownDevice &&
        failures.byEmail > MAX_FAILURES_PER_EMAIL &&
        failures.oldestEmail !== null &&
        !(yield* admittedWhileLocked(candidate, ipBucket, failures, now))
      ) {
        waits.push(failures.oldestEmail.getTime() + THROTTLE_WINDOW_MS - now.getTime())
      }
      // The address flood limit holds for known devices too: the cookie lifts only the email's lock and ceiling.
      if (failures.byIp > MAX_FAILURES_PER_IP && failures.oldestIp !== null) {
        waits.push(failures.oldestIp.getTime() + THROTTLE_WINDOW_MS - now.getTime())
      }
      if (waits.length > 0) {
        yield* users.forgetAttempt(attemptId)
        yield* Effect.logWarning("console sign-in throttled").pipe(Effect.annotateLogs({ ip }))
        return {
          _tag: "Throttled",
          retryAfterSeconds: Math.max(1, Math.ceil(Math.max(...waits) / 1000)),
        } as const
      }
      return { _tag: "Admitted", attemptId, ipBucket, deviceId, since } as const
    })

    /** A wrong password or code: audited for the user (when there is one) and logged. */
    const refused = (candidate: UserRow | undefined, ip: string, detail: string | null) =>
      Effect.gen(function* () {
        yield* audit.record({
          orgId: candidate?.orgId ?? null,
          actor: candidate?.id ?? "unknown",
          action: "signin.failed",
          target: candidate?.id ?? null,
          ip,
          detail,
        })
        yield* Effect.logWarning("console sign-in failed").pipe(
          Effect.annotateLogs({ userId: candidate?.id ?? null, ip }),
        )
        return { _tag: "Refused" } as SignInResult
      })

    /**
     * A session for a user who passed every check, in one transaction with what the sign-in also writes (`also`):
     * expired sessions pruned, the browser's previous session ended (whoever's it was: one browser, one session), the
     * `signin` audit row. The known-device cookie to set comes with it.
     */
    const openSession = <E>(
      user: UserRow,
      request: {
        readonly ip: string
        readonly previousToken: string | undefined
        readonly userAgent: string | undefined
      },
      how: {
        readonly enrolOnly: boolean
        readonly deviceId: string | undefined
        /** The audit row's detail (how the user signed in, when not with a password). */
        readonly detail: string | null
        readonly also: Effect.Effect<void, E>
        readonly logged: Readonly<Record<string, string>>
      },
    ) =>
      Effect.gen(function* () {
        const now = new Date()
        const token = yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* users.pruneSessions(now, new Date(now.getTime() - SESSION_IDLE_MS))
            if (request.previousToken !== undefined && request.previousToken.length <= 100) {
              yield* users.deleteSession(hashToken(request.previousToken))
            }
            const token = yield* startSession(user.id, request.ip, sessionUserAgent(request.userAgent), how.enrolOnly)
            yield* how.also
            yield* audit.record({
              orgId: user.orgId,
              actor: user.id,
              action: "signin",
              target: user.id,
              ip: request.ip,
              detail: how.detail,
            })
            return token
          }),
        )
        yield* Effect.logInfo("console sign-in").pipe(
          Effect.annotateLogs({ userId: user.id, ip: request.ip, ...how.logged }),
        )
        return {
          _tag: "SignedIn",
          token,
          userId: user.id,
          orgId: user.orgId,
          device: deviceCookie(user, new Date(), how.deviceId),
          enrolOnly: how.enrolOnly,
        } as Extract<SignInResult, { _tag: "SignedIn" }>
      })

    /** The session of a sign-in that passed every check; the window's failures of this email and address go. */
    const completeSignIn = (
      candidate: UserRow,
      email: string,
      admitted: { readonly ipBucket: string; readonly deviceId: string | undefined; readonly since: Date },
      ip: string,
      enrolOnly: boolean,
      previousToken: string | undefined,
      userAgent: string | undefined,
    ) =>
      openSession(
        candidate,
        { ip, previousToken, userAgent },
        {
          enrolOnly,
          deviceId: admitted.deviceId,
          detail: null,
          also: users.clearFailures(email, admitted.ipBucket, admitted.deviceId ?? null, admitted.since),
          logged: {},
        },
      )

    /**
     * Throttled first (admit), then the same answer and the same work for an unknown email and a wrong password. A
     * fresh session on every sign-in, and the browser's previous session (its cookie, when it sent one) ends. A
     * user with two-factor codes gets a pending sign-in (5 minutes, this browser's cookie) instead of a session: the
     * code step (signInWithCode) is throttled and counted like a password. A user whose organization requires codes
     * and who has none gets a session that opens only enrolment.
     */
    const signIn = Effect.fn("SignIn.signIn")(function* (
      emailInput: string,
      password: string,
      ip: string,
      previousToken?: string,
      device?: string,
      userAgent?: string,
    ) {
      // Control characters never reach the database (PostgreSQL refuses NUL): the attempt is still counted.
      const email = normalizeEmail(emailInput)
        .replace(/\p{Cc}/gu, "\uFFFD")
        .slice(0, 320)
      const now = new Date()
      const candidate = Option.getOrUndefined(yield* users.findByEmail(email))
      const admitted = yield* admit(email, ip, candidate, device, now)
      if (admitted._tag === "Throttled") return admitted as SignInResult
      const matches = yield* Effect.promise(async () =>
        Bun.password
          .verify(password.slice(0, PASSWORD_MAX * 4), candidate?.passwordHash ?? (await DUMMY_HASH()))
          .catch(() => false),
      )
      if (!candidate || candidate.passwordHash === null || candidate.disabledAt !== null || !matches) {
        return yield* refused(candidate, ip, null)
      }
      // Said only to someone who knew the password: the organization has turned passwords off for its provider.
      const provider = yield* providers.forOrg(candidate.orgId)
      if (Option.isSome(provider) && !provider.value.passwordAllowed) {
        yield* refused(candidate, ip, "password sign-in is off (the organization signs in through its provider)")
        return { _tag: "PasswordOff" } as SignInResult
      }
      const state = yield* twoFactor.stateOf(candidate.id, candidate.orgId)
      if (state.enrolled) {
        // The password alone is not a sign-in: its attempt is no failure, and the window's failures stay until the
        // code is right too.
        yield* users.forgetAttempt(admitted.attemptId)
        const pending = newToken()
        yield* sql`delete from console_pending_signins where expires_at < ${now}`.pipe(dbErrors)
        yield* sql`insert into console_pending_signins (token_hash, user_id, device_id, created_at, expires_at)
            values (${hashToken(pending)}, ${candidate.id}, ${admitted.deviceId ?? ""}, ${now},
              ${new Date(now.getTime() + PENDING_SIGNIN_MS)})`.pipe(dbErrors)
        return { _tag: "CodeNeeded", pending } as SignInResult
      }
      return yield* completeSignIn(candidate, email, admitted, ip, state.required, previousToken, userAgent)
    })

    /**
     * The second step: the pending sign-in of this browser (made by signIn for this user and this browser's known
     * device, if any, within PENDING_SIGNIN_MS) and a two-factor or recovery code. Throttled and counted exactly as a
     * password (a wrong code is a failed sign-in of the user's email); the pending sign-in is spent by the session.
     */
    const signInWithCode = Effect.fn("SignIn.signInWithCode")(function* (
      pending: string,
      code: string,
      ip: string,
      previousToken?: string,
      device?: string,
      userAgent?: string,
    ) {
      const expired = { _tag: "PendingExpired" } as SignInResult
      if (pending.length > 100) return expired
      const now = new Date()
      const rows = yield* sql<{ userId: UserId; deviceId: string }>`
        select user_id, device_id from console_pending_signins
        where token_hash = ${hashToken(pending)} and expires_at > ${now}`.pipe(dbErrors)
      const row = rows[0]
      if (row === undefined) return expired
      const candidate = Option.getOrUndefined(yield* users.findById(row.userId))
      if (candidate === undefined || candidate.disabledAt !== null || candidate.passwordHash === null) return expired
      // Bound to the browser's known device as the password step saw it: another browser's cookie is no match.
      if ((deviceOf(device, candidate, now) ?? "") !== row.deviceId) return expired
      const admitted = yield* admit(candidate.email, ip, candidate, device, now)
      if (admitted._tag === "Throttled") return admitted as SignInResult
      const taken = yield* twoFactor.checkCode({ userId: candidate.id, orgId: candidate.orgId, ip }, code.slice(0, 64))
      if (!taken) return yield* refused(candidate, ip, "wrong two-factor code")
      const spent = yield* sql`delete from console_pending_signins where token_hash = ${hashToken(pending)}
          returning user_id`.pipe(dbErrors)
      if (spent.length !== 1) return expired
      return yield* completeSignIn(candidate, candidate.email, admitted, ip, false, previousToken, userAgent)
    })

    /**
     * A session for a user the organization's provider vouched for (ProviderSignIn checked the answer): no password
     * and no code of ours (the provider's own sign-in policy, its second factor included, governs it). The browser's
     * previous session ends, as with a password.
     */
    const providerSession = (
      user: UserRow,
      issuer: string,
      ip: string,
      previousToken: string | undefined,
      userAgent: string | undefined,
    ) =>
      openSession(
        user,
        { ip, previousToken, userAgent },
        {
          enrolOnly: false,
          deviceId: undefined,
          detail: `through ${issuer.slice(0, 200)}`,
          also: Effect.void,
          logged: { through: "provider" },
        },
      )

    /**
     * The live session of a cookie value (idle 12 h, absolute 7 d, user enabled). A page load touches last_seen_at;
     * a background read (`touch: false`, the live refresh a tab polls every 10 s) does not, so an unattended tab
     * still idles out after 12 h.
     */
    const session = Effect.fn("SignIn.session")(function* (
      token: string,
      options: { readonly touch: boolean } = { touch: true },
    ) {
      if (token.length < 16 || token.length > 100) return Option.none<SessionRow>()
      const now = new Date()
      const tokenHash = hashToken(token)
      const found = yield* users.findSession(tokenHash, now, new Date(now.getTime() - SESSION_IDLE_MS))
      if (options.touch && Option.isSome(found) && now.getTime() - found.value.lastSeenAt.getTime() > TOUCH_EVERY_MS) {
        yield* users.touchSession(tokenHash, now)
      }
      return found
    })

    /** The session ends now; audited for the user's organization. */
    const signOut = Effect.fn("SignIn.signOut")(function* (session: {
      readonly token: string
      readonly userId: UserId
      readonly orgId: OrgId
      readonly ip: string | null
    }) {
      yield* sql.withTransaction(
        Effect.zipRight(
          users.deleteSession(hashToken(session.token)),
          audit.record({
            orgId: session.orgId,
            actor: session.userId,
            action: "signout",
            target: session.userId,
            ip: session.ip,
            detail: null,
          }),
        ),
      )
    })

    /** The user's live sessions, the most recently used first (the list a user sees of their own). */
    const sessionsOf = Effect.fn("SignIn.sessionsOf")(function* (userId: UserId) {
      const now = new Date()
      return yield* users.listSessionsOf(userId, now, new Date(now.getTime() - SESSION_IDLE_MS))
    })

    /**
     * A user ends one of their own sessions (by its public id): false when they have none of that id, whether it is
     * another user's, ended already or no id at all (nothing ends, nothing is audited). Audited `session.end`.
     */
    const endSession = Effect.fn("SignIn.endSession")(function* (
      by: { readonly userId: UserId; readonly orgId: OrgId; readonly ip: string | null },
      sessionId: string,
    ) {
      if (!isId("consoleSession", sessionId)) return false
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          if (!(yield* users.deleteSessionOfUser(by.userId, sessionId))) return false
          yield* audit.record({
            orgId: by.orgId,
            actor: by.userId,
            action: "session.end",
            target: sessionId,
            ip: by.ip,
            detail: null,
          })
          return true
        }),
      )
    })

    /** Every session of the user but the one this request came with ends; how many. Audited `session.end_others`. */
    const endOtherSessions = Effect.fn("SignIn.endOtherSessions")(function* (session: {
      readonly token: string
      readonly userId: UserId
      readonly orgId: OrgId
      readonly ip: string | null
    }) {
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const ended = yield* users.deleteOtherSessionsOf(session.userId, hashToken(session.token))
          yield* audit.record({
            orgId: session.orgId,
            actor: session.userId,
            action: "session.end_others",
            target: session.userId,
            ip: session.ip,
            detail: `${ended} session(s) ended`,
          })
          return ended
        }),
      )
    })

    return {
      sessionsOf,
      endSession,
      endOtherSessions,
      linkState,
      setPassword,
      signIn,
      signInWithCode,
      providerSession,
      session,
      signOut,
    } as const
  }),
}) {}
