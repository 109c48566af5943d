import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import { dbErrors } from "../platform/db/errors.ts"
import type { IncidentRow } from "../repos/IncidentsRepo.ts"

/** The incident columns as IncidentsRepo reads them (IncidentRow's names). */
const INCIDENT_COLUMNS = `i.id, i.org_id as "orgId", i.sensor_id as "sensorId", s.name as "sensorName",
  i.source_ip as "sourceIp", i.status, i.severity, i.title, i.narrative, i.recommended_action as "recommendedAction",
  i.event_count as "eventCount", i.event_types as "eventTypes", i.tags, i.usernames,
  i.high_confidence as "highConfidence", i.first_seen_at as "firstSeenAt", i.last_seen_at as "lastSeenAt",
  i.resolved_at as "resolvedAt"`

/**
 * The console's reads beyond the API's (D30): the incident list with a severity filter, the overview's figures and
 * the live-refresh check. Every query takes the organization id.
 */
export class ConsoleReads extends Effect.Service<ConsoleReads>()("ConsoleReads", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    return {
      /** Keyset on (last_seen_at desc, id desc), as the API (D7). */
      incidents: (q: {
        orgId: string
        status: string | undefined
        severity: string | undefined
        after: CursorPosition | undefined
        fetch: number
      }) => {
        const params: Array<unknown> = [q.orgId]
        let where = "i.org_id = $1"
        if (q.status) {
          params.push(q.status)
          where += ` and i.status = $${params.length}`
        }
        if (q.severity) {
          params.push(q.severity)
          where += ` and i.severity = $${params.length}`
        }
        if (q.after) {
          params.push(q.after.time, q.after.id)
          where += ` and (i.last_seen_at, i.id) < ($${params.length - 1}::timestamptz, $${params.length})`
        }
        params.push(q.fetch)
        return sql
          .unsafe<IncidentRow>(
            `select ${INCIDENT_COLUMNS} from incidents i join sensors s on s.id = i.sensor_id where ${where}
             order by i.last_seen_at desc, i.id desc limit $${params.length}`,
            params,
          )
          .withoutTransform.pipe(dbErrors)
      },
      openBySeverity: (orgId: string) =>
        sql<{ severity: string; n: number }>`select severity, count(*)::int as n from incidents
          where org_id = ${orgId} and status = 'open' group by severity`.pipe(dbErrors),
      /** Events per UTC day since `from`. */
      activity: (orgId: string, from: Date) =>
        sql<{ day: string; n: number }>`select to_char(date_trunc('day', time at time zone 'UTC'), 'YYYY-MM-DD') as day,
            count(*)::int as n
          from events where org_id = ${orgId} and time >= ${from} group by 1 order by 1`.pipe(dbErrors),
      /** Whether any incident of the organization saw activity after `since` (live refresh). */
      changedSince: (orgId: string, since: Date) =>
        sql<{ changed: boolean }>`select exists (select 1 from incidents
          where org_id = ${orgId} and last_seen_at > ${since}) as changed`.pipe(
          Effect.map((rows) => rows[0]?.changed === true),
          dbErrors,
        ),
    } as const
  }),
}) {}
