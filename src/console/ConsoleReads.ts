import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** How many rows each of the overview's "top" charts shows. */
export const TOP_ROWS = 10
/** At most this many countries come back for the map (there are fewer than 250). */
export const COUNTRIES_MAX = 250
/** Usernames and commands are grouped and returned by their first this many characters. */
export const ATTACKER_VALUE_CHARS = 200

/** A time bucket's count: `bucket` is `YYYY-MM-DD HH` by hour, `YYYY-MM-DD` by day (UTC). */
export interface BucketCount {
  readonly bucket: string
  readonly n: number
}

export interface SourceCount {
  readonly sourceIp: string
  readonly n: number
  /** The address's country (ISO 3166 alpha-2) when enrichment knows it. */
  readonly country: string | null
}

export interface SensorCount {
  readonly sensorId: string
  readonly name: string
  readonly n: number
}

export interface ServiceCount {
  readonly service: string
  readonly port: number
  readonly n: number
}

export interface ValueCount {
  readonly value: string
  readonly n: number
}

export interface CountryCount {
  readonly country: string
  readonly n: number
}

/** Which attacker-input member a "top values" read counts. */
export type AttackerField = "username" | "command"

/**
 * The overview's statements, built on a client but not run: ConsoleReads runs them, and the EXPLAIN test
 * (test/console/overview.test.ts) plans exactly these. The overview's reads count events that are not ignored (an
 * ignored event is not activity), from `from` on, each on an index (sql/0035_overview_indexes.sql), each with a limit
 * on the rows it returns.
 */
export const overviewStatements = (sql: SqlClient.SqlClient) => {
  /** A UTC time column cut to its hour or day (grouped on this; formatted once per bucket, not per row). */
  const truncated = (unit: "hour" | "day", column: "time" | "first_seen_at") =>
    unit === "hour"
      ? sql`date_trunc('hour', ${sql(column)} at time zone 'UTC')`
      : sql`date_trunc('day', ${sql(column)} at time zone 'UTC')`
  /** `YYYY-MM-DD HH` or `YYYY-MM-DD` of a bucket `at`, the form range.ts's bucketKey writes. */
  const bucketText = (unit: "hour" | "day") =>
    unit === "hour" ? sql`to_char(at, 'YYYY-MM-DD HH24')` : sql`to_char(at, 'YYYY-MM-DD')`
  /**
   * The member tested and read as SQL text, not a parameter: the planner matches the partial index of commands
   * (sql/0035) only against the same literal condition.
   */
  const member = (field: AttackerField) =>
    field === "username"
      ? { has: sql`attacker_input ? 'username'`, value: sql`attacker_input ->> 'username'` }
      : { has: sql`attacker_input ? 'command'`, value: sql`attacker_input ->> 'command'` }

  return {
    openBySeverity: (orgId: OrgId) =>
      sql<{ severity: string; n: number }>`select severity, count(*)::int as n from incidents
        where org_id = ${orgId} and status = 'open' group by severity`,

    /** Events per UTC hour or day since `from`. */
    eventsOverTime: (orgId: OrgId, from: Date, unit: "hour" | "day") =>
      sql<BucketCount>`select ${bucketText(unit)} as bucket, n from (
          select ${truncated(unit, "time")} as at, count(*)::int as n
          from events where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
          group by 1
        ) b order by at limit 31`,

    /** Incidents that began (their first event) per UTC hour or day since `from`. */
    incidentsOverTime: (orgId: OrgId, from: Date, unit: "hour" | "day") =>
      sql<BucketCount>`select ${bucketText(unit)} as bucket, n from (
          select ${truncated(unit, "first_seen_at")} as at, count(*)::int as n
          from incidents where org_id = ${orgId} and first_seen_at >= ${from}
          group by 1
        ) b order by at limit 31`,

    /** The source addresses with the most events since `from`, with their country when enrichment knows it. */
    topSources: (orgId: OrgId, from: Date) =>
      sql<SourceCount>`select s.source_ip as "sourceIp", s.n, a.country from (
          select source_ip, count(*)::int as n from events
          where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
          group by source_ip order by n desc, source_ip limit ${TOP_ROWS}
        ) s left join address_enrichment a on a.address = s.source_ip
        order by s.n desc, s.source_ip`,

    /** The sensors with the most events since `from`, with their names. */
    topSensors: (orgId: OrgId, from: Date) =>
      sql<SensorCount>`select t.sensor_id as "sensorId", s.name, t.n from (
          select sensor_id, count(*)::int as n from events
          where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
          group by sensor_id order by n desc, sensor_id limit ${TOP_ROWS}
        ) t join sensors s on s.id = t.sensor_id and s.org_id = ${orgId}
        order by t.n desc, s.name`,

    /** The services and ports with the most events since `from`. */
    topServices: (orgId: OrgId, from: Date) =>
      sql<ServiceCount>`select service, port, count(*)::int as n from events
        where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
        group by service, port order by n desc, service, port limit ${TOP_ROWS}`,

    /** The event types with the most events since `from`. */
    topTypes: (orgId: OrgId, from: Date) =>
      sql<ValueCount>`select type as value, count(*)::int as n from events
        where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
        group by type order by n desc, type limit ${TOP_ROWS}`,

    /**
     * The most frequent values of one attacker-input member (usernames tried, commands run) since `from`, by their
     * first ATTACKER_VALUE_CHARS characters (attacker text: bounded before it is grouped or returned).
     */
    topAttackerValues: (orgId: OrgId, from: Date, field: AttackerField) =>
      sql<ValueCount>`select left(${member(field).value}, ${ATTACKER_VALUE_CHARS}) as value, count(*)::int as n
        from events
        where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null and ${member(field).has}
        group by 1 order by n desc, value limit ${TOP_ROWS}`,

    /**
     * Events since `from` per country of their source address, for addresses enrichment knows a country of and that
     * are outside the organization's networks (`internal`, CIDRs).
     */
    eventsByCountry: (orgId: OrgId, from: Date, internal: ReadonlyArray<string>) =>
      sql<CountryCount>`with own as materialized (
          select coalesce(array_agg(c::cidr), '{}') as nets
          from jsonb_array_elements_text(${JSON.stringify(internal)}::text::jsonb) as c
        )
        select a.country, sum(s.n)::int as n from (
          select source_ip, count(*)::int as n from events
          where org_id = ${orgId} and time >= ${from} and ignore_rule_id is null
          group by source_ip
        ) s join address_enrichment a on a.address = s.source_ip
        cross join own
        where a.country is not null and not (s.source_ip::inet <<= any(own.nets))
        group by a.country order by n desc, a.country limit ${COUNTRIES_MAX}`,
  } as const
}

/**
 * The console's reads beyond the API's: the overview's figures and the live-refresh check. Every query takes the
 * organization id.
 */
export class ConsoleReads extends Effect.Service<ConsoleReads>()("ConsoleReads", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const statements = overviewStatements(sql)

    return {
      openBySeverity: (orgId: OrgId) => statements.openBySeverity(orgId).pipe(dbErrors),
      /** Events per UTC hour or day since `from`. */
      eventsOverTime: (orgId: OrgId, from: Date, unit: "hour" | "day") =>
        statements.eventsOverTime(orgId, from, unit).pipe(dbErrors),
      /** Incidents that began (their first event) per UTC hour or day since `from`. */
      incidentsOverTime: (orgId: OrgId, from: Date, unit: "hour" | "day") =>
        statements.incidentsOverTime(orgId, from, unit).pipe(dbErrors),
      /** The source addresses with the most events since `from`, with their country when enrichment knows it. */
      topSources: (orgId: OrgId, from: Date) => statements.topSources(orgId, from).pipe(dbErrors),
      /** The sensors with the most events since `from`, with their names. */
      topSensors: (orgId: OrgId, from: Date) => statements.topSensors(orgId, from).pipe(dbErrors),
      /** The services and ports with the most events since `from`. */
      topServices: (orgId: OrgId, from: Date) => statements.topServices(orgId, from).pipe(dbErrors),
      /** The event types with the most events since `from`. */
      topTypes: (orgId: OrgId, from: Date) => statements.topTypes(orgId, from).pipe(dbErrors),
      /** Usernames tried or commands run since `from`, the most frequent first (a value that is not text: left out). */
      topAttackerValues: (orgId: OrgId, from: Date, field: AttackerField) =>
        statements.topAttackerValues(orgId, from, field).pipe(
          Effect.map((rows) => rows.filter((r) => r.value !== null)),
          dbErrors,
        ),
      /** Events since `from` per country of their outside source addresses (`internal`: the organization's CIDRs). */
      eventsByCountry: (orgId: OrgId, from: Date, internal: ReadonlyArray<string>) =>
        statements.eventsByCountry(orgId, from, internal).pipe(dbErrors),
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
