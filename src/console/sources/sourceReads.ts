import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../../domain/ids.ts"
import { dbErrors } from "../../platform/db/errors.ts"

/**
 * The most events of one address the source page counts: past it the counts say "at least", so a scanner with
 * millions of events costs the page a bounded read.
 */
export const SOURCE_EVENTS_COUNTED = 100_000

/** How many events of one address one sensor recorded of one type (events an ignore rule held are not counted). */
export interface SourceEventCount {
  readonly sensorId: string
  readonly type: string
  readonly n: number
}

/**
 * An address's events counted by sensor and type: at most SOURCE_EVENTS_COUNTED of its newest events, through the
 * (org_id, source_ip, time desc, id desc) index of the events no ignore rule held. `capped` when there were more: each count is then a lower bound.
 */
export const sourceEventCounts = (sql: SqlClient.SqlClient, orgId: OrgId, sourceIp: string) =>
  sql<{ sensorId: string; type: string; n: number }>`
      select e.sensor_id, e.type, count(*)::int as n
      from (
        select sensor_id, type from events
        where org_id = ${orgId} and source_ip = ${sourceIp} and ignore_rule_id is null
        order by time desc, id desc
        limit ${SOURCE_EVENTS_COUNTED + 1}
      ) e
      group by e.sensor_id, e.type
      order by n desc, e.sensor_id, e.type`.pipe(
    Effect.map((rows) => {
      const total = rows.reduce((sum, r) => sum + r.n, 0)
      return { counts: rows as ReadonlyArray<SourceEventCount>, capped: total > SOURCE_EVENTS_COUNTED }
    }),
    dbErrors,
  )
