import { Command } from "@effect/cli"
import { Effect, Either } from "effect"
import { encodeAuditEntry, parseAuditFilters } from "../../domain/audit.ts"
import { AuditRepo } from "../../repos/AuditRepo.ts"
import { OrgAdmin } from "../OrgAdmin.ts"
import { asAdmin, flag, json, optionalFlag, print, required, table, usage } from "./shared.ts"

/** The most entries one `audit list` prints; narrow with --to (exclusive) to go further back. */
export const AUDIT_LIST_MAX = 1000
const AUDIT_LIST_DEFAULT = 100

/**
 * `audit list`: an organization's audit trail, newest first, with the API's filters (GET /v1/audit): the same rows in
 * the same shape, so `--json` prints what the API's `data` holds.
 */
const list = Command.make(
  "list",
  {
    org: flag("org", "<org-id>", "the organization"),
    actor: optionalFlag("actor", "cli|<user-id>|<email>", "only entries of this actor"),
    action: optionalFlag("action", "<action>", "only entries of this action, exactly (key.create, signin.failed…)"),
    from: optionalFlag("from", "<RFC 3339>", "only entries at or after this time"),
    to: optionalFlag("to", "<RFC 3339>", "only entries before this time"),
    limit: optionalFlag(
      "limit",
      "<n>",
      `how many entries at most, 1 to ${AUDIT_LIST_MAX} (default ${AUDIT_LIST_DEFAULT}), newest first`,
    ),
    json,
  },
  (input) =>
    asAdmin(
      Effect.gen(function* () {
        const orgId = (yield* (yield* OrgAdmin).require(yield* required(input.org, "--org"))).id
        const parsed = parseAuditFilters({ actor: input.actor, action: input.action, from: input.from, to: input.to })
        if (Either.isLeft(parsed)) {
          const problem = parsed.left
          return yield* usage(
            problem.parameter === "range"
              ? "--from must not be later than --to"
              : `--${problem.parameter} must be ${problem.allowed}`,
          )
        }
        const limitText = input.limit ?? String(AUDIT_LIST_DEFAULT)
        const limit = /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN
        if (!(limit >= 1 && limit <= AUDIT_LIST_MAX)) {
          return yield* usage(`--limit must be an integer from 1 to ${AUDIT_LIST_MAX}`)
        }
        const rows = yield* (yield* AuditRepo).search({ orgId, filters: parsed.right, after: undefined, fetch: limit })
        const entries = rows.map(encodeAuditEntry)
        return yield* print(input.json, entries, () =>
          table(
            entries.map((e) => ({
              at: e.at,
              actor: e.actor.email ?? e.actor.id,
              action: e.action,
              target: e.target ?? "-",
              ip: e.ip ?? "-",
              detail: e.detail ?? "",
            })),
          ),
        )
      }),
    ),
).pipe(Command.withDescription("list an organization's audit trail, newest first (never a secret)"))

export const audit = Command.make("audit").pipe(
  Command.withDescription("the audit trail: every change made in the console or here, and every sign-in"),
  Command.withSubcommands([list]),
)
