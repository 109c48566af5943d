import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Either } from "effect"
import {
  BLOCKLIST_DAYS_DEFAULT,
  BLOCKLIST_DAYS_MAX,
  BLOCKLIST_MAX_LINES,
  blocklistBody,
  blocklistEtag,
  ifNoneMatchHits,
  parseBlocklistDays,
} from "../domain/blocklist.ts"
import type { OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { type BlocklistParams, Caller, IncidentApi } from "./contract/definition.ts"
import { InvalidQuery, singleParam } from "./params.ts"
import { listFailures } from "./problems.ts"

const DAY_MS = 86_400_000

/**
 * The firewall blocklist: the external sources an organization's decoys saw in the last `days` days.
 *
 * Read from the incidents, which hold only events no ignore rule ignored (an ignored event belongs to no incident),
 * so a source whose every event was ignored is never listed. `source_scope` is the judgement against the
 * organization's own networks as they stand now (a change of the networks re-judges every incident), so an inside
 * address is never listed either: blocking one's own machine at the firewall would be an outage, not a defence. A
 * source whose every incident in the window a person closed as a false positive or an authorized test is left out.
 *
 * Past BLOCKLIST_MAX_LINES sources, the most recently seen ones are kept. The list is sorted by address (IPv4 before
 * IPv6, numerically), so the same sources always give the same bytes and the same ETag.
 */
const makeBlocklist = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return (orgId: OrgId, since: Date) =>
    Effect.map(
      sql<{ ip: string; total: string }>`
        select ip, total::text as total from (
          select source_ip as ip, max(last_seen_at) as seen, count(*) over () as total
          from incidents
          where org_id = ${orgId} and last_seen_at >= ${since}
            and source_scope = 'external'
            and not (status = 'closed' and close_reason in ('false_positive', 'authorized_test'))
          group by source_ip
          order by seen desc, source_ip
          limit ${BLOCKLIST_MAX_LINES}
        ) recent
        order by ip::inet`,
      (rows) => ({ addresses: rows.map((r) => r.ip), truncated: Number(rows[0]?.total ?? 0) > rows.length }),
    ).pipe(dbErrors)
})

const parseDays = (raw: typeof BlocklistParams.Type.days) =>
  Either.flatMap(singleParam("days", raw), (text) => {
    const days = parseBlocklistDays(text)
    return days === undefined
      ? Either.left(
          new InvalidQuery({
            parameter: "days",
            allowed: `an integer from 1 to ${BLOCKLIST_DAYS_MAX} (default ${BLOCKLIST_DAYS_DEFAULT})`,
          }),
        )
      : Either.right(days)
  })

export const IntelHandlers = HttpApiBuilder.group(IncidentApi, "intel", (handlers) =>
  Effect.gen(function* () {
    const blocklist = yield* makeBlocklist
    return handlers.handle("blocklist", ({ urlParams }) =>
      Effect.gen(function* () {
        const caller = yield* Caller
        const request = yield* HttpServerRequest.HttpServerRequest
        const days = yield* parseDays(urlParams.days)
        const now = Date.now()
        const { addresses, truncated } = yield* blocklist(caller.orgId, new Date(now - days * DAY_MS))
        const body = blocklistBody(addresses)
        const etag = blocklistEtag(body)
        const headers: Record<string, string> = { etag, ...(truncated ? { "blocklist-truncated": "true" } : {}) }
        if (ifNoneMatchHits(request.headers["if-none-match"], etag)) {
          return HttpServerResponse.empty({ status: 304, headers })
        }
        return HttpServerResponse.text(body, { contentType: "text/plain; charset=utf-8", headers })
      }).pipe(listFailures),
    )
  }),
)
