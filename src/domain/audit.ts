import { Either, Schema } from "effect"
import { isId } from "./ids.ts"
import { Timestamp } from "./models.ts"
import { parseTimestamp } from "./time.ts"

/**
 * The audit trail as the API, the client and the admin CLI show it: every change made in the console or with the admin
 * CLI, and every sign-in (success and failure), as the audit log stored it (never a secret: the writers keep
 * names and settings only). Each text is bounded, so no row can grow an answer without limit.
 */

/** The longest text of each field, in UTF-16 code units (so also in characters); a longer one ends in "…". */
export const AUDIT_BOUNDS = {
  actorId: 64,
  email: 254,
  action: 64,
  target: 512,
  detail: 2000,
  ip: 64,
} as const

/** Who acted on a row of the operator's CLI. */
export const CLI_ACTOR = "cli"

const bounded = (max: number, description: string) =>
  Schema.String.annotations({ description, jsonSchema: { type: "string", maxLength: max, description } })

export const AuditActor = Schema.Struct({
  id: bounded(
    AUDIT_BOUNDS.actorId,
    "Who acted: a console user's id (usr_<ULID>), or cli for the operator's admin command line",
  ),
  email: Schema.NullOr(bounded(AUDIT_BOUNDS.email, "The console user's email address as it is now")).annotations({
    description: "The console user's email address; null for cli and for a user no longer known",
  }),
}).annotations({ identifier: "AuditActor" })

export const AuditEntry = Schema.Struct({
  id: Schema.String.annotations({ description: "Audit entry identifier, aud_<ULID>" }),
  actor: AuditActor,
  action: bounded(
    AUDIT_BOUNDS.action,
    "What was done, a dotted word such as key.create, webhook.rotate, user.disable, signin or signin.failed",
  ),
  target: Schema.NullOr(
    bounded(AUDIT_BOUNDS.target, "The id of what it was done to (a key, a channel, a user, an incident…)"),
  ),
  detail: Schema.NullOr(
    bounded(
      AUDIT_BOUNDS.detail,
      "Names and settings of the change, for a human (never a secret, a token or a password); longer text ends in …",
    ),
  ),
  ip: Schema.NullOr(bounded(AUDIT_BOUNDS.ip, "The address the console request came from; null for the CLI")),
  at: Timestamp,
}).annotations({ identifier: "AuditEntry" })
export type AuditEntryJson = typeof AuditEntry.Encoded

export const AuditPage = Schema.Struct({
  data: Schema.Array(AuditEntry).annotations({ description: "Audit entries, newest first" }),
  nextCursor: Schema.NullOr(Schema.String).annotations({
    description: "Opaque cursor of the next page; null on the last page",
  }),
}).annotations({ identifier: "AuditPage" })

export const AuditChangePage = Schema.Struct({
  data: Schema.Array(AuditEntry).annotations({ description: "Audit entries in the order they were written" }),
  nextToken: Schema.String.annotations({
    description:
      "Opaque token to pass as `after` on the next call; never null. Keep it (it stays valid while the entries exist) and ask again",
  }),
  hasMore: Schema.Boolean.annotations({
    description: "True when more entries are ready now: ask again at once. False: wait a moment, then ask again",
  }),
}).annotations({ identifier: "AuditChangePage" })

/** `text` cut to at most `max` UTF-16 code units, ending in "…" when cut (never half a surrogate pair). */
export const boundText = (text: string, max: number): string => {
  if (text.length <= max) return text
  let end = max - 1
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return `${text.slice(0, end)}…`
}

/** A stored audit row with its actor's email (a console user's, looked up when read). */
export interface AuditRowWithActor {
  readonly id: string
  readonly actor: string
  readonly actorEmail: string | null
  readonly action: string
  readonly target: string | null
  readonly ip: string | null
  readonly detail: string | null
  readonly at: Date
}

const orNull = (text: string | null, max: number) => (text === null ? null : boundText(text, max))

/** The API's shape of a row, as JSON (the timestamp as its ISO string). */
export const encodeAuditEntry = (row: AuditRowWithActor): AuditEntryJson => ({
  id: row.id,
  actor: { id: boundText(row.actor, AUDIT_BOUNDS.actorId), email: orNull(row.actorEmail, AUDIT_BOUNDS.email) },
  action: boundText(row.action, AUDIT_BOUNDS.action),
  target: orNull(row.target, AUDIT_BOUNDS.target),
  detail: orNull(row.detail, AUDIT_BOUNDS.detail),
  ip: orNull(row.ip, AUDIT_BOUNDS.ip),
  at: row.at.toISOString(),
})

/**
 * The list's filters: `actor` (cli, a console user's id, or a console user's email address, any case), `action`
 * (one action, exactly), `from` (inclusive) and `to` (exclusive) on the time of the entry.
 */
export interface AuditFilters {
  readonly actor?: { readonly id: string } | { readonly email: string } | undefined
  readonly action?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
}

/** Why a filter was refused: the parameter and what it accepts, in the words a client is told. */
export interface AuditFilterProblem {
  readonly parameter: "actor" | "action" | "from" | "to"
  readonly allowed: string
}

export const AUDIT_ACTOR_ALLOWED = "cli, a console user's id (usr_…) or a console user's email address"
export const AUDIT_ACTION_ALLOWED = "an action name: lower-case words joined by dots, for example key.create"
export const AUDIT_ACTION_PATTERN = "^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)*$"
const ACTION = new RegExp(AUDIT_ACTION_PATTERN)
const EMAIL = /^[^\s@]+@[^\s@]+$/
const TIME_ALLOWED = "an RFC 3339 timestamp with a time zone, for example 2026-11-21T15:57:42.053Z"

/** The filters from their text (each given at most once), or the first one refused. */
export const parseAuditFilters = (text: {
  readonly actor?: string | undefined
  readonly action?: string | undefined
  readonly from?: string | undefined
  readonly to?: string | undefined
}): Either.Either<AuditFilters, AuditFilterProblem | { readonly parameter: "range" }> =>
  Either.gen(function* () {
    let actor: AuditFilters["actor"]
    if (text.actor !== undefined) {
      const a = text.actor
      if (a === CLI_ACTOR || isId("consoleUser", a)) actor = { id: a }
      else if (a.length <= AUDIT_BOUNDS.email && EMAIL.test(a)) actor = { email: a.toLowerCase() }
      else return yield* Either.left({ parameter: "actor", allowed: AUDIT_ACTOR_ALLOWED } as const)
    }
    const action = text.action
    if (action !== undefined && (action.length > AUDIT_BOUNDS.action || !ACTION.test(action))) {
      return yield* Either.left({ parameter: "action", allowed: AUDIT_ACTION_ALLOWED } as const)
    }
    const time = (parameter: "from" | "to", value: string | undefined) => {
      if (value === undefined) return Either.right(undefined)
      const date = parseTimestamp(value)
      return date === undefined
        ? Either.left({ parameter, allowed: TIME_ALLOWED } as const)
        : Either.right<Date | undefined>(date)
    }
    const from = yield* time("from", text.from)
    const to = yield* time("to", text.to)
    if (from !== undefined && to !== undefined && from.getTime() > to.getTime()) {
      return yield* Either.left({ parameter: "range" } as const)
    }
    return { actor, action, from, to }
  })

/** The filters as the cursor digest sees them: a cursor is bound to exactly these. */
export const auditFilterDigestInput = (f: AuditFilters): Record<string, string | undefined> => ({
  actor: f.actor === undefined ? undefined : "id" in f.actor ? `id:${f.actor.id}` : `email:${f.actor.email}`,
  action: f.action,
  from: f.from?.toISOString(),
  to: f.to?.toISOString(),
})
