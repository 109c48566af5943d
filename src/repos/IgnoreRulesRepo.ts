import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import type { OrgId, SensorId } from "../domain/ids.ts"
import { readRows } from "../platform/db/directReads.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { EVENT_SELECT, type EventRow } from "./EventsRepo.ts"

/** An ignore rule as stored (sql/0024_ignore_rules.sql). `source` is PostgreSQL's cidr text (`192.0.2.0/24`). */
export interface IgnoreRuleRow {
  readonly id: string
  // Branded as read: the table's foreign keys guarantee the kinds.
  readonly orgId: OrgId
  readonly source: string
  readonly sensorId: SensorId | null
  readonly port: number | null
  readonly eventType: string | null
  readonly note: string
  readonly createdBy: string
  readonly createdAt: Date
  readonly expiresAt: Date | null
  readonly hitCount: number
  readonly lastHitAt: Date | null
  readonly removedAt: Date | null
}

export type NewIgnoreRule = Omit<IgnoreRuleRow, "hitCount" | "lastHitAt" | "removedAt">

/** What of an event a rule looks at; `key` is the caller's own (an index into its batch). */
export interface IgnoreProbe {
  readonly key: number
  readonly sourceIp: string
  readonly port: number
  readonly type: string
}

/** An ignored event as the console lists it: the event and the rule that ignored it. */
export type IgnoredEventRow = EventRow & { readonly ignoreRuleId: string; readonly ignoreRuleNote: string }

const COLUMNS = `id, org_id, host(source) || '/' || masklen(source) as source, sensor_id, port, event_type, note,
  created_by, created_at, expires_at, hit_count::float8 as hit_count, last_hit_at, removed_at`

/**
 * Ignore rules. `match` and `recordHits` run on the caller's connection, inside the ingest transaction: the
 * events' marks and the rules' hit counts commit together.
 */
export class IgnoreRulesRepo extends Effect.Service<IgnoreRulesRepo>()("IgnoreRulesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    return {
      /** The active rule whose network holds the address, the most specific first (GET /v1/sources/{ip}). */
      holding: (orgId: OrgId, address: string, now: Date) =>
        sql<{ id: string; source: string; sensorId: SensorId | null; port: number | null; eventType: string | null }>`
          select id, source::text as source, sensor_id, port, event_type from ignore_rules
          where org_id = ${orgId} and removed_at is null and (expires_at is null or expires_at > ${now})
            and source >>= ${address}::inet
          order by masklen(source) desc, sensor_id nulls first, port nulls first, event_type nulls first, id
          limit 1`.pipe(
          Effect.map((rows) => rows[0]),
          dbErrors,
        ),
      create: (rule: NewIgnoreRule) =>
        sql<IgnoreRuleRow>`insert into ignore_rules (id, org_id, source, sensor_id, port, event_type, note, created_by,
            created_at, expires_at)
          values (${rule.id}, ${rule.orgId}, ${rule.source}::cidr, ${rule.sensorId}, ${rule.port}, ${rule.eventType},
            ${rule.note}, ${rule.createdBy}, ${rule.createdAt}, ${rule.expiresAt})
          returning ${sql.unsafe(COLUMNS)}`.pipe(
          Effect.map((rows) => rows[0] as IgnoreRuleRow),
          dbErrors,
        ),
      /** The organization's rules not removed (expired ones included), oldest first. */
      listByOrg: (orgId: OrgId) =>
        sql<IgnoreRuleRow>`select ${sql.unsafe(COLUMNS)} from ignore_rules
          where org_id = ${orgId} and removed_at is null order by created_at, id`.pipe(dbErrors),
      /** One rule, removed or not, whatever its organization (the caller checks who may see it). */
      findById: (id: string) =>
        sql<IgnoreRuleRow>`select ${sql.unsafe(COLUMNS)} from ignore_rules where id = ${id}`.pipe(
          Effect.map((rows) => rows[0]),
          dbErrors,
        ),
      /** Removed from now on; the events it ignored keep naming it. False when it was removed already. */
      remove: (id: string, by: string, at: Date) =>
        sql<{ id: string }>`update ignore_rules set removed_at = ${at}, removed_by = ${by}
          where id = ${id} and removed_at is null returning id`.pipe(
          Effect.map((rows) => rows.length > 0),
          dbErrors,
        ),
      /**
       * For each probe, the rule that ignores it: the oldest active rule of the organization (not removed, not
       * expired at `now`) whose network contains the source and whose sensor, port and type, when it names them, are
       * the event's. One statement for a whole batch; each probe is one lookup of the rules' network tree
       * (ignore_rules_source_idx), however many rules the organization has. Probes no rule matches are left out.
       */
      match: (orgId: OrgId, sensorId: SensorId, probes: ReadonlyArray<IgnoreProbe>, now: Date) =>
        probes.length === 0
          ? Effect.succeed([] as ReadonlyArray<{ readonly key: number; readonly ruleId: string }>)
          : sql<{ readonly key: number; readonly ruleId: string }>`
              select k.key, m.id as rule_id
              from jsonb_to_recordset(${JSON.stringify(probes)}::text::jsonb)
                as k(key integer, "sourceIp" text, port integer, type text)
              cross join lateral (
                select r.id from ignore_rules r
                where r.source >>= k."sourceIp"::inet and r.removed_at is null and r.org_id = ${orgId}
                  and (r.expires_at is null or r.expires_at > ${now})
                  and (r.sensor_id is null or r.sensor_id = ${sensorId})
                  and (r.port is null or r.port = k.port)
                  and (r.event_type is null or r.event_type = k.type)
                order by r.created_at, r.id
                limit 1
              ) m`.pipe(dbErrors),
      /**
       * Adds each rule's hits of one request, locking the rules in id order (two requests that hit the same rules
       * take their row locks in one order); meant as the ingest transaction's last write, so the rows stay locked
       * only until its commit. The lock is `no key update`, the one an update of these columns takes: the events'
       * foreign key holds `key share` on the rule (both requests inserted events naming it), which `for update`
       * would wait for on both sides (a deadlock). A negative `n` takes back hits of events the rule no longer
       * ignores (a Cowrie session's connect changed their port or type) and leaves the last hit as it was.
       */
      recordHits: (orgId: OrgId, hits: ReadonlyArray<{ readonly id: string; readonly n: number }>, at: Date) =>
        hits.length === 0
          ? Effect.void
          : sql`with h as (select * from jsonb_to_recordset(${JSON.stringify(hits)}::text::jsonb) as x(id text, n integer)),
                locked as (select r.id from ignore_rules r where r.id in (select id from h) and r.org_id = ${orgId}
                  order by r.id for no key update)
              update ignore_rules r set hit_count = r.hit_count + h.n,
                last_hit_at = case when h.n > 0 then greatest(r.last_hit_at, ${at}::timestamptz) else r.last_hit_at end
              from h join locked l on l.id = h.id
              where r.id = h.id`.pipe(Effect.asVoid, dbErrors),
      /** The console's "show ignored events": newest first, keyset on (time desc, id desc), with each one's rule. */
      ignoredEvents: (orgId: OrgId, after: CursorPosition | undefined, fetch: number) => {
        const params: Array<unknown> = [orgId]
        let where = "e.org_id = $1 and e.ignore_rule_id is not null"
        if (after) {
          params.push(after.time, after.id)
          where += ` and (e.time, e.id) < ($2::timestamptz, $3)`
        }
        params.push(fetch)
        const text = `${EVENT_SELECT.replace(
          "select e.id,",
          `select e.ignore_rule_id as "ignoreRuleId", r.note as "ignoreRuleNote", e.id,`,
        )} join ignore_rules r on r.id = e.ignore_rule_id
          where ${where} order by e.time desc, e.id desc limit $${params.length}`
        return readRows<IgnoredEventRow>(sql, text, params).pipe(dbErrors)
      },
    } as const
  }),
}) {}
