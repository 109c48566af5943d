import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import type { OrgId, SensorId, UserId } from "../domain/ids.ts"
import type { Severity } from "../domain/severity.ts"
import { readRows } from "../platform/db/directReads.ts"
import { type DatabaseError, dbErrors } from "../platform/db/errors.ts"
import { eventSearchCondition, searchPattern } from "./EventsRepo.ts"
import { type IncidentRow, incidentSelect } from "./IncidentsRepo.ts"
import type { SqlText } from "./statement.ts"

/**
 * The console's incident list filters (the API's list has only status). Each one given narrows the list; all are
 * read within the organization.
 */
export interface ConsoleIncidentFilters {
  readonly status?: "open" | "closed" | undefined
  readonly severity?: Severity | undefined
  readonly sensorId?: SensorId | undefined
  /** One source address (canonical text, as stored). */
  readonly sourceIp?: string | undefined
  /** A source network (CIDR text, host bits cleared). */
  readonly sourceNetwork?: string | undefined
  /** Incidents whose member events include this type. */
  readonly type?: string | undefined
  /** Assigned to this user, or to nobody. */
  readonly owner?: { readonly user: UserId } | "none" | undefined
  readonly scope?: "internal" | "external" | undefined
  /** Activity overlapping [from, to): last seen at or after `from`, first seen before `to`. */
  readonly from?: Date | undefined
  readonly to?: Date | undefined
  /** Search text (1–200 characters): incidents with a listed member event whose search text holds it. */
  readonly q?: string | undefined
}

export interface ConsoleIncidentQuery {
  readonly orgId: OrgId
  readonly filters: ConsoleIncidentFilters
  readonly after: CursorPosition | undefined
  /** Rows to fetch: the page size plus one, to know whether a next page exists. */
  readonly fetch: number
}

/**
 * One page of the console's incident list, keyset on (last_seen_at desc, id desc). A search reads the trigram index
 * of events (events_search_idx) for the matching events' incidents; the other filters are conditions on the incident.
 */
export const consoleIncidentListStatement = ({ orgId, filters: f, after, fetch }: ConsoleIncidentQuery): SqlText => {
  const params: Array<unknown> = [orgId]
  let where = "i.org_id = $1"
  const and = (condition: (n: number) => string, value: unknown) => {
    params.push(value)
    where += ` and ${condition(params.length)}`
  }
  if (f.status !== undefined) and((n) => `i.status = $${n}`, f.status)
  if (f.severity !== undefined) and((n) => `i.severity = $${n}`, f.severity)
  if (f.sensorId !== undefined) and((n) => `i.sensor_id = $${n}`, f.sensorId)
  if (f.sourceIp !== undefined) and((n) => `i.source_ip = $${n}`, f.sourceIp)
  // Stored source addresses are canonical address text (domain/ip.ts), so the cast cannot fail.
  if (f.sourceNetwork !== undefined) and((n) => `i.source_ip::inet <<= $${n}::cidr`, f.sourceNetwork)
  if (f.type !== undefined) and((n) => `i.event_types @> array[$${n}::text]`, f.type)
  if (f.owner === "none") where += " and i.assignee_user_id is null"
  else if (f.owner !== undefined) and((n) => `i.assignee_user_id = $${n}`, f.owner.user)
  if (f.scope !== undefined) and((n) => `i.source_scope = $${n}`, f.scope)
  // Times go as Date objects: the driver spells years past 9999 (and BC) the way PostgreSQL reads them.
  if (f.from !== undefined) and((n) => `i.last_seen_at >= $${n}::timestamptz`, f.from)
  if (f.to !== undefined) and((n) => `i.first_seen_at < $${n}::timestamptz`, f.to)
  if (f.q !== undefined) {
    and(
      (n) => `i.id in (select e.incident_id from events e
        where e.org_id = $1 and e.ignore_rule_id is null and ${eventSearchCondition(n)})`,
      searchPattern(f.q),
    )
  }
  if (after) {
    params.push(after.time, after.id)
    where += ` and (i.last_seen_at, i.id) < ($${params.length - 1}::timestamptz, $${params.length})`
  }
  params.push(fetch)
  // The page's ids first, then their columns: the texts, the owner's email and the enrichment are read for the rows
  // shown, not for every incident a search or filter matched before the sort.
  const page = `select i.id from incidents i where ${where} order by i.last_seen_at desc, i.id desc limit $${params.length}`
  return {
    text: `${incidentSelect(true)} where i.id = any(array(${page})) order by i.last_seen_at desc, i.id desc`,
    params,
  }
}

/** The console's own list reads: incidents by every filter and search, the organization's users to pick from. */
export class ConsoleListsRepo extends Effect.Service<ConsoleListsRepo>()("ConsoleListsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      incidents: (q: ConsoleIncidentQuery) => {
        const { text, params } = consoleIncidentListStatement(q)
        return readRows<IncidentRow>(sql, text, params).pipe(dbErrors) as Effect.Effect<
          ReadonlyArray<IncidentRow>,
          DatabaseError
        >
      },
      /** The organization's enabled users (id and email), by email: owners to filter by and assign to. */
      users: (orgId: OrgId) =>
        readRows<{ id: UserId; email: string }>(
          sql,
          "select id, email from console_users where org_id = $1 and disabled_at is null order by email, id",
          [orgId],
        ).pipe(dbErrors) as Effect.Effect<ReadonlyArray<{ id: UserId; email: string }>, DatabaseError>,
    } as const
  }),
}) {}
