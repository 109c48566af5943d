import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

/**
 * The console's reads beyond the API's: the overview's figures and
 * the live-refresh check. Every query takes the organization id.
 */
export class ConsoleReads extends Effect.Service<ConsoleReads>()("ConsoleReads", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    return {
      openBySeverity: (orgId: OrgId) =>
        sql<{ severity: string; n: number }>`select severity, count(*)::int as n from incidents
          where org_id = ${orgId} and status = 'open' group by severity`.pipe(dbErrors),
      /** Events per UTC day since `from` (ignored ones are not activity). */
      activity: (orgId: OrgId, from: Date) =>
        sql<{ day: string; n: number }>`select to_char(date_trunc('day', time at time zone 'UTC'), 'YYYY-MM-DD') as day,
            count(*)::int as n
          from events where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
          group by 1 order by 1`.pipe(dbErrors),
      /** Whether any incident of the organization saw activity after `since` (live refresh). */
      changedSince: (orgId: OrgId, since: Date) =>
        sql<{ changed: boolean }>`select exists (select 1 from incidents
          where org_id = ${orgId} and last_seen_at > ${since}) as changed`.pipe(
          Effect.map((rows) => rows[0]?.changed === true),
          dbErrors,
        ),
    } as const
  }),
}) {}
