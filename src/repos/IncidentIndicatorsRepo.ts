import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ATTACKER_INPUT_MAX_STRING, maskSecretsInText } from "../domain/attackerInput.ts"
import type { IncidentId, OrgId } from "../domain/ids.ts"
import {
  type CountedIndicator,
  INDICATOR_SOURCES,
  INDICATORS_SHOWN,
  type IncidentIndicators,
  indicatorsFromCounts,
  URL_IN_TEXT_SQL,
} from "../domain/indicators.ts"
import { sanitizeText, truncateCodePoints } from "../domain/sanitize.ts"
import { readRows } from "../platform/db/directReads.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { STORED_INPUT_READ_MAX } from "./EventsRepo.ts"
import type { SqlText } from "./statement.ts"

/**
 * An incident's indicators over ALL of its member events (not only the 200 its page lists), counted and bounded in
 * SQL: each event's top-level attacker-input members are read once (jsonb_each), matched to the sources of
 * domain/indicators.ts, and only the INDICATORS_SHOWN most frequent values of each kind leave the database, each cut
 * to the stored bound, with their kind's distinct count. An incident of 100,000 events gives at most 7 × 20 rows.
 * Events an ignore rule ignored are not members; a row stored before attacker input was bounded, too large to read,
 * is skipped as the event lists skip it.
 */
export const indicatorsStatement = (
  orgId: OrgId,
  incidentId: IncidentId,
  shown: number = INDICATORS_SHOWN,
): SqlText => ({
  text: `with src as (
      select * from jsonb_to_recordset($3::text::jsonb)
        as s(kind text, member text, label text, action text, urls boolean)
    ),
    hits as (
      select s.kind, s.label, s.urls, j.value
      from events e
      cross join lateral jsonb_each(case when jsonb_typeof(e.attacker_input) = 'object' then e.attacker_input
        else '{}'::jsonb end) j
      join src s on s.member = j.key and (s.action is null or s.action = e.action)
      where e.org_id = $1 and e.incident_id = $2 and e.ignore_rule_id is null
        and coalesce(e.attacker_input_bytes, pg_column_size(e.attacker_input)) <= ${STORED_INPUT_READ_MAX}
    ),
    vals as (
      select kind, label, value #>> '{}' as v from hits
      where kind <> 'passwords' and not urls and jsonb_typeof(value) = 'string'
      union all
      select kind, value ->> 'length', value ->> 'fingerprint' from hits
      where kind = 'passwords' and jsonb_typeof(value) = 'object' and jsonb_typeof(value -> 'length') = 'number'
        and (value ->> 'length') ~ '^[0-9]{1,9}$' and (value ->> 'fingerprint') ~ '^[0-9a-f]{32}$'
        and value ->> 'masked' = repeat('*', least(case when (value ->> 'length') ~ '^[0-9]{1,9}$'
          then (value ->> 'length')::int else 0 end, 32))
      union all
      select kind, label, m[1] from hits cross join lateral regexp_matches(value #>> '{}', $4, 'gi') m
      where urls and jsonb_typeof(value) = 'string'
    ),
    counted as (
      select kind, label, v, count(*)::int as n from vals where v <> '' group by kind, label, v
    )
    select kind, label, left(v, ${ATTACKER_INPUT_MAX_STRING}) as value, n as count, distinct_n as "distinct"
    from (
      select c.*, count(*) over (partition by kind)::int as distinct_n,
        row_number() over (partition by kind order by n desc, v collate "C", label collate "C") as rn
      from counted c
    ) r
    where rn <= $5
    order by kind, rn`,
  params: [orgId, incidentId, JSON.stringify(INDICATOR_SOURCES), URL_IN_TEXT_SQL, shown],
})

/** How long an incident page waits for its indicators over every member event. */
export const INDICATORS_WITHIN_MS = 3_000

/** The member-event count the indicators were read over. */
const countStatement = (orgId: OrgId, incidentId: IncidentId): SqlText => ({
  text: "select count(*)::int as n from events where org_id = $1 and incident_id = $2 and ignore_rule_id is null",
  params: [orgId, incidentId],
})

/** A stored value as the page shows it: cleaned of invisible characters and secrets as every read is, bounded. */
const readable = (value: string): string =>
  truncateCodePoints(maskSecretsInText(sanitizeText(value)), ATTACKER_INPUT_MAX_STRING)

/** The indicators of one incident of an organization (incident page). Every query filters on the organization. */
export class IncidentIndicatorsRepo extends Effect.Service<IncidentIndicatorsRepo>()("IncidentIndicatorsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      /**
       * The incident's indicators over every member event: an unknown incident (or another organization's) has none.
       * The reads may take at most `withinMs` together (PostgreSQL cancels them after that, `statement_timeout` in
       * their own transaction): an incident of hundreds of thousands of events must not hold its page; the caller
       * then counts the events it shows.
       */
      forIncident: (
        orgId: OrgId,
        incidentId: IncidentId,
        shown: number = INDICATORS_SHOWN,
        withinMs: number = INDICATORS_WITHIN_MS,
      ) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql.unsafe(`set local statement_timeout = ${Math.max(1, Math.floor(withinMs))}`)
              const statement = indicatorsStatement(orgId, incidentId, shown)
              const rows = yield* readRows<CountedIndicator>(sql, statement.text, statement.params)
              const counts = yield* readRows<{ readonly n: number }>(sql, countStatement(orgId, incidentId).text, [
                orgId,
                incidentId,
              ])
              const values = rows.map((r) => ({ ...r, value: r.kind === "passwords" ? r.value : readable(r.value) }))
              return indicatorsFromCounts(values, counts[0]?.n ?? 0, shown) satisfies IncidentIndicators
            }),
          )
          .pipe(dbErrors),
    } as const
  }),
}) {}
