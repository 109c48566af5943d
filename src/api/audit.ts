import { HttpApiBuilder } from "@effect/platform"
import { Effect, Either } from "effect"
import { auditFilterDigestInput, encodeAuditEntry, parseAuditFilters } from "../domain/audit.ts"
import { type CursorScope, encodeCursor } from "../domain/cursor.ts"
import { Keys } from "../platform/keys.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { ChangesRepo } from "./ChangesRepo.ts"
import { type AuditListParams, Caller, IncidentApi } from "./contract/definition.ts"
import { type FeedParams, feedPage } from "./feeds.ts"
import { page } from "./paging.ts"
import { InvalidQuery, parseCursor, parseLimit, readCursor, singleParam, TimeRangeInverted } from "./params.ts"
import { feedFailures, listFailures } from "./problems.ts"
import { json } from "./queries.ts"

/**
 * GET /v1/audit and GET /v1/audit/changes (scope audit:read): the organization's audit log, as a filtered list
 * (newest first, keyset cursors like the other lists) and as a change feed with the incident feed's rules (tokens,
 * the horizon, 410 after a purge mark). A key sees its own organization's rows only; rows of no organization (the
 * operator's commands on the whole service, sign-ins of an unknown address) are in no organization's answer.
 */

/** The same keys as the other lists and feeds (api/queries.ts), derived from SECRET_KEY. */
const cursorKey = Effect.map(Keys, (keys) => keys.derive("cursor-v1"))
const feedTokenKey = Effect.map(Keys, (keys) => keys.derive("feed-token-v1"))

const parseAuditListParams = (p: typeof AuditListParams.Type) =>
  Either.gen(function* () {
    const actor = yield* singleParam("actor", p.actor)
    const action = yield* singleParam("action", p.action)
    const from = yield* singleParam("from", p.from)
    const to = yield* singleParam("to", p.to)
    const filters = yield* Either.mapLeft(parseAuditFilters({ actor, action, from, to }), (problem) =>
      problem.parameter === "range"
        ? new TimeRangeInverted()
        : new InvalidQuery({ parameter: problem.parameter, allowed: problem.allowed }),
    )
    const limit = yield* parseLimit(p.limit)
    const cursor = yield* parseCursor(p.cursor)
    return { filters, limit, cursor }
  })

export const AuditHandlers = HttpApiBuilder.group(IncidentApi, "audit", (handlers) =>
  Effect.gen(function* () {
    const audit = yield* AuditRepo
    const changes = yield* ChangesRepo
    const key = yield* cursorKey
    const tokenKey = yield* feedTokenKey

    return handlers
      .handle("listAudit", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) =>
          Effect.gen(function* () {
            const input = yield* parseAuditListParams(urlParams)
            const scope: CursorScope = {
              endpoint: "audit",
              orgId: caller.orgId,
              filters: auditFilterDigestInput(input.filters),
            }
            const after = yield* readCursor(key, scope, input.cursor)
            const rows = yield* audit.search({
              orgId: caller.orgId,
              filters: input.filters,
              after,
              fetch: input.limit + 1,
            })
            return json(
              page(
                rows,
                input.limit,
                (r) => r.at,
                encodeAuditEntry,
                (at) => encodeCursor(key, scope, at),
              ),
            )
          }).pipe(listFailures),
        ),
      )
      .handle("auditChanges", ({ urlParams }) =>
        Effect.flatMap(Caller, (caller) =>
          feedPage(
            tokenKey,
            "audit/changes",
            caller.orgId,
            urlParams as FeedParams,
            changes.audit,
            encodeAuditEntry,
          ).pipe(feedFailures, Effect.map(json)),
        ),
      )
  }),
)
