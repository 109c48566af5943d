import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isId, newId, type UserId } from "../domain/ids.ts"
import { AppConfig } from "../platform/config.ts"
import { ConsoleUsersRepo, ROLES, type Role } from "../repos/ConsoleUsersRepo.ts"
import { requireAdmin, requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { invalid, missing, notFound } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"
import { hashToken, LINK_VALID_MS, newToken, normalizeEmail } from "./SignIn.ts"

const EMAIL = /^[^\s@\p{Cc}\p{Cf}]{1,64}@[^\s@\p{Cc}\p{Cf}]{1,255}$/u

/**
 * Console users: created with a one-time link to set a password (the link is the secret, returned once,
 * never audited), disabled, reset, unlocked. Only an administrator of the user's organization, or the operator.
 */
export class UserAdmin extends Effect.Service<UserAdmin>()("UserAdmin", {
  effect: Effect.gen(function* () {
    const users = yield* ConsoleUsersRepo
    const orgAdmin = yield* OrgAdmin
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing
    const { appUrl } = yield* AppConfig

    const linkFor = (userId: UserId, at: Date) =>
      Effect.gen(function* () {
        const token = newToken()
        yield* users.expireLinks(userId, at)
        yield* users.insertLink({
          tokenHash: hashToken(token),
          userId,
          expiresAt: new Date(at.getTime() + LINK_VALID_MS),
          createdAt: at,
        })
        return { link: `${appUrl}/set-password/${token}`, expiresAt: new Date(at.getTime() + LINK_VALID_MS) }
      })

    /** A user the actor may see (another organization's user is unknown, as for ids). */
    const find = Effect.fn("UserAdmin.find")(function* (userId: string) {
      const found = isId("consoleUser", userId) ? yield* users.findById(userId) : Option.none()
      if (Option.isNone(found)) return yield* notFound("user", userId)
      yield* requireScope(found.value.orgId, "user", userId)
      return found.value
    })

    const create = Effect.fn("UserAdmin.create")(function* (input: {
      readonly orgId: string
      readonly email: string | undefined
      readonly role: string | undefined
    }) {
      yield* requireAdmin
      const orgId = (yield* orgAdmin.require(input.orgId)).id
      if (input.email === undefined) return yield* missing("email")
      if (input.role === undefined) return yield* missing("role")
      const email = normalizeEmail(input.email)
      if (!EMAIL.test(email) || email.length > 254)
        return yield* invalid({
          field: "email",
          reason: "malformed",
          detail: "the email must be an address like a@b.example",
        })
      if (!ROLES.includes(input.role as Role))
        return yield* invalid({
          field: "role",
          reason: "malformed",
          detail: `the role must be one of ${ROLES.join(", ")}`,
        })
      const role = input.role as Role
      // Emails are unique across organizations (sign-in is by email alone). The refusal is the same whether the
      // address is taken here or elsewhere: it never tells an admin another organization's users.
      if (Option.isSome(yield* users.findByEmail(email))) {
        return yield* invalid({
          field: "email",
          reason: "taken",
          detail: "this email cannot be used for a new user; choose another address",
        })
      }
      const at = new Date()
      const id = newId("consoleUser", at.getTime())
      yield* users.insertUser({ id, orgId, email, role, createdAt: at })
      const link = yield* linkFor(id, at)
      yield* audited(orgId, "user.create", id, `${email} (${role})`)
      return { id, email, role, link: link.link, linkExpiresAt: link.expiresAt.toISOString() }
    }, sql.withTransaction)

    const list = Effect.fn("UserAdmin.list")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      return (yield* users.listByOrg(orgId)).map((u) => ({
        id: u.id,
        email: u.email,
        role: u.role,
        status: u.disabledAt !== null ? "disabled" : u.passwordHash === null ? "invited" : "active",
        createdAt: u.createdAt.toISOString(),
      }))
    })

    /** A disabled user's sessions end at once. Nobody disables themselves. */
    const disable = Effect.fn("UserAdmin.disable")(function* (userId: string) {
      const actor = yield* requireAdmin
      const user = yield* find(userId)
      if (user.id === actor.id)
        return yield* invalid({ field: "user", reason: "state", detail: "you cannot disable yourself" })
      const at = new Date()
      yield* users.setDisabled(user.id, at)
      yield* users.deleteSessionsOf(user.id)
      yield* users.expireLinks(user.id, at)
      // Its known-device cookies no longer lift the email's lock (a re-enabled user gets a new one).
      yield* users.bumpDeviceGeneration(user.id)
      yield* audited(user.orgId, "user.disable", user.id, user.email)
      return { id: user.id, disabled: true }
    }, sql.withTransaction)

    /**
     * A new one-time link, and every session ends now. The old password stops working at once (a reset is what
     * an admin does when it may be known to someone else): the user signs in again only after using the link. Every
     * known-device cookie of the user stops counting as known (one may be stolen too). A disabled user stays
     * disabled until the link is used.
     */
    const reset = Effect.fn("UserAdmin.reset")(function* (userId: string) {
      yield* requireAdmin
      const user = yield* find(userId)
      const at = new Date()
      yield* users.deleteSessionsOf(user.id)
      yield* users.setPasswordHash(user.id, null)
      yield* users.bumpDeviceGeneration(user.id)
      const link = yield* linkFor(user.id, at)
      yield* audited(user.orgId, "user.reset", user.id, user.email)
      return { id: user.id, email: user.email, link: link.link, linkExpiresAt: link.expiresAt.toISOString() }
    }, sql.withTransaction)

    /**
     * Every session of the user ends now (a lost laptop, a shared browser); the password and the known-device cookies
     * stay. Audited `user.end_sessions` with the number ended.
     */
    const endSessions = Effect.fn("UserAdmin.endSessions")(function* (userId: string) {
      yield* requireAdmin
      const user = yield* find(userId)
      const ended = yield* users.deleteSessionsOf(user.id)
      yield* audited(user.orgId, "user.end_sessions", user.id, `${user.email} (${ended} session(s) ended)`)
      return { id: user.id, email: user.email, ended }
    }, sql.withTransaction)

    /**
     * `admin user unlock <email>`: every failed sign-in of the window for this email is forgotten, so every address
     * is verified again at once (after an attack, for a user with no known device). Audited.
     */
    const unlock = Effect.fn("UserAdmin.unlock")(function* (emailInput: string) {
      const actor = yield* requireAdmin
      const email = normalizeEmail(emailInput)
      const found = email.length <= 320 ? yield* users.findByEmail(email) : Option.none()
      if (Option.isNone(found) || (actor._tag === "OrgUser" && found.value.orgId !== actor.orgId)) {
        return yield* invalid({ field: "email", reason: "unknown", detail: "no console user has this email" })
      }
      const user = found.value
      const cleared = yield* users.clearEmailFailures(email)
      yield* audited(user.orgId, "user.unlock", user.id, `${email} (${cleared} failed sign-ins cleared)`)
      return { id: user.id, email, cleared }
    }, sql.withTransaction)

    return { find, create, list, disable, reset, endSessions, unlock } as const
  }),
}) {}
