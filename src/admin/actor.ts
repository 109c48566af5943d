import { Context, Effect } from "effect"
import type { OrgId, UserId } from "../domain/ids.ts"
import type { Role } from "../repos/ConsoleUsersRepo.ts"
import { Forbidden, notFound, type Thing } from "./errors.ts"

/**
 * Who is acting, given to every admin service through the context (never as an argument). Two kinds:
 * - the operator at the CLI (`bun run admin`), who may act on every organization;
 * - a console user, who acts only in their own organization and with their role.
 * Audit rows name `id` and `ip`.
 */
export type AdminActorValue =
  | { readonly _tag: "Operator"; readonly id: "cli"; readonly ip: null }
  | {
      readonly _tag: "OrgUser"
      readonly id: UserId
      readonly ip: string | null
      readonly orgId: OrgId
      readonly role: Role
    }

export class AdminActor extends Context.Tag("AdminActor")<AdminActor, AdminActorValue>() {}

export const OPERATOR: AdminActorValue = { _tag: "Operator", id: "cli", ip: null }

export const orgUser = (user: { id: UserId; ip: string | null; orgId: OrgId; role: Role }): AdminActorValue => ({
  _tag: "OrgUser",
  ...user,
})

/** Runs an admin effect as the CLI's operator. */
export const asOperator = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provideService(effect, AdminActor, OPERATOR)

/** Whether the actor may see and change this organization's rows. */
export const actsOn = (actor: AdminActorValue, orgId: OrgId) => actor._tag === "Operator" || actor.orgId === orgId

/**
 * A row of another organization is answered as one that does not exist: `field` and `id` say what was asked for.
 */
export const requireScope = (orgId: OrgId, field: Thing, id: string, reason: "unknown" | "notOpen" = "unknown") =>
  Effect.flatMap(AdminActor, (actor) =>
    actsOn(actor, orgId) ? Effect.succeed(actor) : Effect.fail(notFound(field, id, reason)),
  )

/** A change to settings: the operator, or an organization's administrator (an analyst or a viewer reads only). */
export const requireAdmin = Effect.flatMap(AdminActor, (actor) =>
  actor._tag === "Operator" || actor.role === "admin"
    ? Effect.succeed(actor)
    : Effect.fail(new Forbidden({ reason: "adminOnly" })),
)

/** A change an analyst makes (closing, notes, triage): the operator, an administrator or an analyst; not a viewer. */
export const requireWriter = Effect.flatMap(AdminActor, (actor) =>
  actor._tag === "Operator" || actor.role === "admin" || actor.role === "analyst"
    ? Effect.succeed(actor)
    : Effect.fail(new Forbidden({ reason: "readOnly" })),
)
