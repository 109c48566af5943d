import type { Statement } from "@effect/sql"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { CursorPosition } from "../domain/cursor.ts"
import { type IncidentId, type OrgId, type SensorId, StoredId, type UserId, ulid } from "../domain/ids.ts"
import { CloseReason, IncidentStatus } from "../domain/models.ts"
import { Severity } from "../domain/severity.ts"
import { readRows } from "../platform/db/directReads.ts"
import { type DatabaseError, dbErrors } from "../platform/db/errors.ts"
import type { SqlText } from "./statement.ts"

/** Member events by type (ingestion's, not read by the API's queries). */
const TypeCounts = Schema.Record({ key: Schema.String, value: Schema.Number })

export const IncidentRow = Schema.Struct({
  id: StoredId.IncidentId,
  orgId: StoredId.OrgId,
  sensorId: StoredId.SensorId,
  sensorName: Schema.String,
  sourceIp: Schema.String,
  status: IncidentStatus,
  severity: Severity,
  title: Schema.String,
  narrative: Schema.String,
  recommendedAction: Schema.String,
  eventCount: Schema.Int,
  eventTypes: Schema.Array(Schema.String),
  tags: Schema.Array(Schema.String),
  usernames: Schema.Array(Schema.String),
  highConfidence: Schema.Boolean,
  firstSeenAt: Schema.DateFromSelf,
  lastSeenAt: Schema.DateFromSelf,
  resolvedAt: Schema.NullOr(Schema.DateFromSelf),
  /**
   * Triage, read-only in the API: the latest close's reason (shown only while closed), the assignee's email (joined
   * in on read), when the incident was first acknowledged. Absent on a row ingestion built itself.
   */
  closeReason: Schema.optional(Schema.NullOr(CloseReason)),
  assignee: Schema.optional(Schema.NullOr(Schema.String)),
  acknowledgedAt: Schema.optional(Schema.NullOr(Schema.DateFromSelf)),
  /** Member events by type. */
  typeCounts: Schema.optional(TypeCounts),
  /** The highest severity of the member events (the judged `severity` adds floors and steps to it). */
  eventsSeverity: Schema.optional(Severity),
  /** A member event logged in with a bait credential. */
  baitCredential: Schema.Boolean,
  /** Whether the source is inside one of the organization's networks, and which (judged when created and re-judged). */
  sourceScope: Schema.Literal("internal", "external"),
  sourceNetwork: Schema.NullOr(Schema.Struct({ cidr: Schema.String, label: Schema.String })),
  /** The source was on another of the organization's sensors when this incident began. */
  linked: Schema.Boolean,
  /** Other sensors that saw the source within 7 days of this incident's activity (written when one of them begins). */
  otherSensors: Schema.optional(Schema.Number),
  /**
   * What the enrichment job knows of the source address (address_enrichment), joined in on read: null when nothing
   * is known, absent on a row ingestion built itself (it never waits for enrichment).
   */
  sourceReverseDns: Schema.optional(Schema.NullOr(Schema.String)),
  sourceAsn: Schema.optional(Schema.NullOr(Schema.Number)),
  sourceAsOrganization: Schema.optional(Schema.NullOr(Schema.String)),
  sourceCountry: Schema.optional(Schema.NullOr(Schema.String)),
})
export type IncidentRow = typeof IncidentRow.Type

/** A stored incident as written (ingestion and tests); the sensor name and the enrichment are joined in on read. */
export type NewIncident = Omit<IncidentRow, "sensorName" | EnrichmentColumn | JudgementColumn> &
  Partial<Pick<IncidentRow, JudgementColumn>> & { readonly createdAt?: Date }

/** How an incident was judged; an incident written without them (tests, fixtures) is external and unjudged. */
type JudgementColumn = "typeCounts" | "eventsSeverity" | "baitCredential" | "sourceScope" | "sourceNetwork" | "linked"

type EnrichmentColumn = "sourceReverseDns" | "sourceAsn" | "sourceAsOrganization" | "sourceCountry"

/**
 * The enrichment columns of an incident's source address (`a`: address_enrichment left-joined on the address), as
 * IncidentRow names them. The ASN is a bigint column read as a float8 so both drivers give a number.
 */
export const SOURCE_COLUMNS = `a.reverse_dns as "sourceReverseDns", a.asn::float8 as "sourceAsn",
  a.as_organization as "sourceAsOrganization", a.country as "sourceCountry"`

export interface IncidentListQuery {
  readonly orgId: OrgId
  readonly status: "open" | "closed" | undefined
  /** The console's list filters by severity too; the API does not. */
  readonly severity?: Severity | undefined
  readonly after: CursorPosition | undefined
  /** Rows to fetch: the page size plus one, to know whether a next page exists. */
  readonly fetch: number
}

/** Triage's bulk close: an organization's open incidents of a sensor, a source, last seen before a time (all given). */
export interface BulkCloseFilter {
  readonly orgId: OrgId
  readonly sensorId?: SensorId | undefined
  readonly sourceIp?: string | undefined
  readonly seenBefore?: Date | undefined
}

/** One acknowledgement or (un)assignment as an incident's history shows it, with the emails of who and whom. */
export interface TriageRow {
  readonly id: string
  readonly kind: "acknowledged" | "assigned" | "unassigned"
  readonly at: Date
  /** A console user's id, or `cli` for the operator. */
  readonly actor: string
  readonly actorEmail: string | null
  readonly assigneeEmail: string | null
}

/** incident_triage's ids: this prefix and a ULID, time-sortable like every id. */
const TRIAGE_ID_PREFIX = "itg"

/** What ingestion reads of a grouping key's newest incident (rules.ts CurrentIncident). */
const KeyIncident = Schema.Struct({
  ...IncidentRow.pick(
    "id",
    "sourceIp",
    "status",
    "severity",
    "eventCount",
    "eventTypes",
    "tags",
    "usernames",
    "highConfidence",
    "firstSeenAt",
    "lastSeenAt",
    "resolvedAt",
    "baitCredential",
    "sourceScope",
    "sourceNetwork",
    "linked",
    "otherSensors",
  ).fields,
  typeCounts: TypeCounts,
  eventsSeverity: Severity,
})
export type KeyIncident = typeof KeyIncident.Type

// A lone UTF-16 surrogate would make jsonb refuse the batch (as a text parameter the driver sent U+FFFD instead).
const wellFormed = (s: string) => s.toWellFormed()

/**
 * Incident rows as upsertMany's jsonb_to_recordset reads them (snake_case keys, ISO times: toJSON is what
 * JSON.stringify writes for a Date, and an object holding a Date is serialized on its slow path).
 */
const incidentsJson = (rows: ReadonlyArray<NewIncident & { readonly updatedAt: Date }>) =>
  JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      org_id: r.orgId,
      sensor_id: r.sensorId,
      source_ip: r.sourceIp,
      status: r.status,
      severity: r.severity,
      title: wellFormed(r.title),
      narrative: wellFormed(r.narrative),
      recommended_action: wellFormed(r.recommendedAction),
      event_count: r.eventCount,
      event_types: r.eventTypes,
      tags: r.tags,
      usernames: r.usernames.map(wellFormed),
      high_confidence: r.highConfidence,
      first_seen_at: r.firstSeenAt.toJSON(),
      last_seen_at: r.lastSeenAt.toJSON(),
      resolved_at: r.resolvedAt === null ? null : r.resolvedAt.toJSON(),
      type_counts: r.typeCounts ?? {},
      events_severity: r.eventsSeverity ?? r.severity,
      bait_credential: r.baitCredential ?? false,
      source_scope: r.sourceScope ?? "external",
      source_network: r.sourceNetwork ?? null,
      linked: r.linked ?? false,
      other_sensors: r.otherSensors ?? 0,
      created_at: (r.createdAt ?? r.firstSeenAt).toJSON(),
      updated_at: r.updatedAt.toJSON(),
      // Every incident written here is one an event of this request joined (idleness counts from arrival).
      last_activity_at: r.updatedAt.toJSON(),
    })),
  )

/**
 * How many other sensors of the organization saw the source of `alias`'s incident within the linking window (7 days)
 * of its activity, counted now: what ingestion writes to `other_sensors` when an incident of the address begins.
 */
const countOtherSensors = (alias: string) => `(select count(distinct o.sensor_id)::int from incidents o
    where o.org_id = ${alias}.org_id and o.source_ip = ${alias}.source_ip and o.sensor_id <> ${alias}.sensor_id
      and o.last_seen_at >= ${alias}.first_seen_at - interval '7 days'
      and o.first_seen_at <= ${alias}.last_seen_at + interval '7 days')`

/** How the incident was judged, as IncidentRow names the columns. */
export const JUDGEMENT_COLUMNS = `i.bait_credential as "baitCredential", i.source_scope as "sourceScope", i.source_network as "sourceNetwork",
  i.linked, i.other_sensors as "otherSensors"`

/**
 * Triage as IncidentRow names it: the close reason only while closed, the assignee's email (a user is never deleted,
 * only disabled, so the subquery always finds one), when first acknowledged.
 */
export const TRIAGE_COLUMNS = `case when i.status = 'closed' then i.close_reason end as "closeReason",
  (select u.email from console_users u where u.id = i.assignee_user_id) as "assignee",
  i.acknowledged_at as "acknowledgedAt"`

/** The API's incident columns, aliased to IncidentRow's names (the read path runs without name transforms). */
const INCIDENT_COLUMNS = `select i.id, i.org_id as "orgId", i.sensor_id as "sensorId", s.name as "sensorName",
  i.source_ip as "sourceIp", i.status, i.severity, i.title, i.narrative, i.recommended_action as "recommendedAction",
  i.event_count as "eventCount", i.event_types as "eventTypes", i.tags, i.usernames,
  i.high_confidence as "highConfidence", i.first_seen_at as "firstSeenAt", i.last_seen_at as "lastSeenAt",
  i.resolved_at as "resolvedAt", ${JUDGEMENT_COLUMNS}, ${TRIAGE_COLUMNS}`
/**
 * With the source address's enrichment joined in, or (`enriched` false: no address has any yet, as with enrichment
 * off, its default) without the join, which costs a probe per row: a row without the columns shows nothing known.
 */
export const incidentSelect = (enriched: boolean) =>
  enriched
    ? `${INCIDENT_COLUMNS}, ${SOURCE_COLUMNS}
  from incidents i join sensors s on s.id = i.sensor_id left join address_enrichment a on a.address = i.source_ip`
    : `${INCIDENT_COLUMNS} from incidents i join sensors s on s.id = i.sensor_id`

/** One page of GET /v1/incidents, keyset on (last_seen_at desc, id desc), served by incidents_org_(status_)recent_idx. */
export const incidentListStatement = (q: IncidentListQuery, enriched = true): SqlText => {
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
  return {
    text: `${incidentSelect(enriched)} where ${where} order by i.last_seen_at desc, i.id desc limit $${params.length}`,
    params,
  }
}

export const incidentByIdStatement = (orgId: OrgId, id: IncidentId, enriched = true): SqlText => ({
  text: `${incidentSelect(enriched)} where i.org_id = $1 and i.id = $2`,
  params: [orgId, id],
})

/** Incidents. Every query takes the organization id and filters on it in SQL. */
export class IncidentsRepo extends Effect.Service<IncidentsRepo>()("IncidentsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    // The API's reads, cheap per row: fixed SQL text with camelCase aliases, run without the client's
    // name transforms and without a per-row Schema decode (the columns' SQL types and checks are the row's types).
    // The statement text depends only on which filters are present, so compiling it costs nothing.
    const readIncidents = ({ text, params }: SqlText) =>
      readRows<IncidentRow>(sql, text, params).pipe(dbErrors) as Effect.Effect<
        ReadonlyArray<IncidentRow>,
        DatabaseError
      >

    /**
     * Whether any address has enrichment facts: once one has, for the life of the process; until then asked again
     * at most every 2 s (a fact found by the job shows within that), so the reads skip the join while nothing is known.
     */
    let anyEnrichment = false
    let askedAt = 0
    const enriched = Effect.suspend(() => {
      const now = Date.now()
      if (anyEnrichment || now - askedAt < 2_000) return Effect.succeed(anyEnrichment)
      askedAt = now
      return readRows<{ found: boolean }>(
        sql,
        `select exists (select from address_enrichment where reverse_dns is not null or asn is not null
          or as_organization is not null or country is not null) as found`,
        [],
      ).pipe(
        Effect.map((rows) => {
          anyEnrichment = rows[0]?.found === true
          return anyEnrichment
        }),
        dbErrors,
      )
    })

    const list = (q: IncidentListQuery) => Effect.flatMap(enriched, (e) => readIncidents(incidentListStatement(q, e)))

    const findById = (orgId: OrgId, id: IncidentId) =>
      Effect.flatMap(enriched, (e) =>
        Effect.map(readIncidents(incidentByIdStatement(orgId, id, e)), (rows) => Option.fromNullable(rows[0])),
      )

    // The newest incident of each grouping key (organization, sensor, sourceIp) of one sensor, locked for the
    // rest of the transaction, in one statement. LockRows runs above the sort, so the rows are locked in id order.
    const newestForKeys = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: Schema.String, sensorId: Schema.String, sourceIps: Schema.Array(Schema.String) }),
      Result: KeyIncident,
      execute: ({ orgId, sensorId, sourceIps }) => sql`
        select i.id, i.source_ip, i.status, i.severity, i.event_count, i.event_types, i.tags, i.usernames,
          i.high_confidence, i.first_seen_at, i.last_seen_at, i.resolved_at, i.type_counts,
          coalesce(i.events_severity, i.severity) as events_severity,
          i.bait_credential, i.source_scope, i.source_network, i.linked, i.other_sensors
        from incidents i
        where i.id in (
          select (
            select n.id from incidents n
            where n.org_id = ${orgId} and n.sensor_id = ${sensorId} and n.source_ip = k.ip
            order by n.created_at desc, n.id desc
            limit 1
          )
          from jsonb_array_elements_text(${JSON.stringify(sourceIps)}::text::jsonb) as k(ip)
        )
        order by i.id
        for update`,
    })

    const closedRow = Schema.Struct({
      id: StoredId.IncidentId,
      orgId: StoredId.OrgId,
      severity: Severity,
      resolvedAt: Schema.DateFromSelf,
    })
    // Closing sets resolvedAt and touches only open incidents, so two closers never close one twice.
    // resolvedAt is never earlier than lastSeenAt (an event may be dated up to MAX_CLOCK_SKEW ahead of now).
    // The close's reason is a person's choice; null when the service closed it (the idle-close sweep).
    const closeWhere = (condition: Statement.Fragment, now: Date, reason: CloseReason | null) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: closedRow,
        execute: () => sql`
          update incidents set status = 'closed', resolved_at = greatest(${now}::timestamptz, last_seen_at),
            updated_at = ${now}, close_reason = ${reason}
          where status = 'open' and ${condition}
          returning id, org_id, severity, resolved_at`,
      })(undefined).pipe(dbErrors)

    /** The open incidents a bulk close matches, as one condition (also rechecked on a row changed meanwhile). */
    const bulkCondition = (f: BulkCloseFilter) =>
      sql.and([
        sql`org_id = ${f.orgId}`,
        sql`status = 'open'`,
        ...(f.sensorId === undefined ? [] : [sql`sensor_id = ${f.sensorId}`]),
        ...(f.sourceIp === undefined ? [] : [sql`source_ip = ${f.sourceIp}`]),
        ...(f.seenBefore === undefined ? [] : [sql`last_seen_at < ${f.seenBefore}`]),
      ])

    /** bulkCondition as statement text and its parameters, for the reads that run without name transforms. */
    const bulkConditionText = (f: BulkCloseFilter) => {
      const params: Array<unknown> = [f.orgId]
      let where = "org_id = $1 and status = 'open'"
      if (f.sensorId !== undefined) {
        params.push(f.sensorId)
        where += ` and sensor_id = $${params.length}`
      }
      if (f.sourceIp !== undefined) {
        params.push(f.sourceIp)
        where += ` and source_ip = $${params.length}`
      }
      if (f.seenBefore !== undefined) {
        params.push(f.seenBefore)
        where += ` and last_seen_at < $${params.length}`
      }
      return { where, params }
    }

    /** One incident_triage row per incident changed, all at `now` by `actor`. */
    const insertTriage = (
      orgId: OrgId,
      ids: ReadonlyArray<IncidentId>,
      kind: TriageRow["kind"],
      actor: string,
      assignee: UserId | null,
      now: Date,
    ) =>
      ids.length === 0
        ? Effect.void
        : sql`insert into incident_triage ${sql.insert(
            ids.map((incidentId) => ({
              id: `${TRIAGE_ID_PREFIX}_${ulid(now.getTime())}`,
              orgId,
              incidentId,
              kind,
              actor,
              assigneeUserId: assignee,
              at: now,
            })),
          )}`.pipe(Effect.asVoid)

    return {
      list,
      /** How many open incidents a bulk close would close now (before its cap). */
      countMatching: (f: BulkCloseFilter) =>
        sql<{ n: number }>`select count(*)::int as n from incidents where ${bulkCondition(f)}`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0),
          dbErrors,
        ),
      /** Closes at most `cap` of the open incidents matching `f` (least recently seen first); returns what it closed. */
      closeMatching: (f: BulkCloseFilter, now: Date, cap: number, reason: CloseReason) =>
        closeWhere(
          sql`${bulkCondition(f)} and id in (
            select id from incidents where ${bulkCondition(f)} order by last_seen_at, id limit ${cap})`,
          now,
          reason,
        ),
      /**
       * The open incidents a bulk close would close first (least recently seen first, as it closes them), at most
       * `limit`: what its preview lists.
       */
      previewMatching: (f: BulkCloseFilter, limit: number) =>
        Effect.flatMap(enriched, (e) => {
          const { where, params } = bulkConditionText(f)
          return readIncidents({
            text: `${incidentSelect(e)} where i.id in (
                select id from incidents where ${where} order by last_seen_at, id limit $${params.length + 1})
              order by i.last_seen_at, i.id`,
            params: [...params, limit],
          })
        }),
      /**
       * Which of these ids are incidents of the organization (the others are unknown there, or another's). Locked for
       * the rest of the transaction, in id order, so two triage changes of the same incidents run one after the other.
       */
      lockOwned: (orgId: OrgId, ids: ReadonlyArray<IncidentId>) =>
        ids.length === 0
          ? Effect.succeed([] as ReadonlyArray<IncidentId>)
          : sql<{ id: IncidentId }>`select id from incidents where org_id = ${orgId} and id in ${sql.in(ids)}
              order by id for update`.pipe(
              Effect.map((rows) => rows.map((r) => r.id)),
              dbErrors,
            ),
      /**
       * Acknowledges those of the incidents not acknowledged yet (the first acknowledgement stands) and records each
       * in incident_triage; returns the ids it changed. An incident acknowledged already is not written, so the
       * incident feed shows no change for it.
       */
      acknowledge: (orgId: OrgId, ids: ReadonlyArray<IncidentId>, actor: string, now: Date) =>
        Effect.gen(function* () {
          if (ids.length === 0) return [] as ReadonlyArray<IncidentId>
          const changed = (yield* sql<{ id: IncidentId }>`
            update incidents set acknowledged_at = ${now}, acknowledged_by = ${actor}, updated_at = ${now}
            where org_id = ${orgId} and id in ${sql.in(ids)} and acknowledged_at is null
            returning id`).map((r) => r.id)
          yield* insertTriage(orgId, changed, "acknowledged", actor, null, now)
          return changed
        }).pipe(dbErrors),
      /**
       * Assigns the incidents to a user (null: to nobody) where that changes the owner, and records each in
       * incident_triage; returns the ids it changed. The same owner again writes nothing, so no feed change either.
       */
      assign: (orgId: OrgId, ids: ReadonlyArray<IncidentId>, assignee: UserId | null, actor: string, now: Date) =>
        Effect.gen(function* () {
          if (ids.length === 0) return [] as ReadonlyArray<IncidentId>
          const changed = (yield* sql<{ id: IncidentId }>`
            update incidents set assignee_user_id = ${assignee}, updated_at = ${now}
            where org_id = ${orgId} and id in ${sql.in(ids)} and assignee_user_id is distinct from ${assignee}::text
            returning id`).map((r) => r.id)
          yield* insertTriage(orgId, changed, assignee === null ? "unassigned" : "assigned", actor, assignee, now)
          return changed
        }).pipe(dbErrors),
      /** An incident's acknowledgements and (un)assignments, oldest first, with the actor's and the assignee's email. */
      triageHistory: (orgId: OrgId, incidentId: IncidentId) =>
        sql<TriageRow>`
          select t.id, t.kind, t.at, t.actor, u.email as actor_email, a.email as assignee_email
          from incident_triage t
            left join console_users u on u.id = t.actor
            left join console_users a on a.id = t.assignee_user_id
          where t.org_id = ${orgId} and t.incident_id = ${incidentId} order by t.at, t.id`.pipe(dbErrors),
      /**
       * The note of each incident's latest close (null when it was closed without one, or by the service); incidents
       * never closed are absent. For the incidents export, a page of ids at a time.
       */
      latestCloseNotes: (orgId: OrgId, ids: ReadonlyArray<IncidentId>) =>
        ids.length === 0
          ? Effect.succeed(new Map<string, string | null>() as ReadonlyMap<string, string | null>)
          : sql<{ incidentId: string; closeNote: string | null }>`
              select distinct on (t.incident_id) t.incident_id, t.close_note from incident_transitions t
              where t.org_id = ${orgId} and t.incident_id in ${sql.in(ids)} and t.kind = 'closed'
              order by t.incident_id, t.at desc, t.id desc`.pipe(
              Effect.map(
                (rows) => new Map(rows.map((r) => [r.incidentId, r.closeNote])) as ReadonlyMap<string, string | null>,
              ),
              dbErrors,
            ),
      /** Who first acknowledged the incident: a console user's email, `cli` for the operator, none when nobody has. */
      acknowledgedBy: (orgId: OrgId, incidentId: IncidentId) =>
        sql<{ actor: string | null; email: string | null }>`
          select i.acknowledged_by as actor, u.email from incidents i
            left join console_users u on u.id = i.acknowledged_by
          where i.org_id = ${orgId} and i.id = ${incidentId}`.pipe(
          Effect.map((rows) => {
            const r = rows[0]
            if (r === undefined || r.actor === null) return undefined
            return r.email ?? r.actor
          }),
          dbErrors,
        ),
      /** The newest incident of each of a sensor's grouping keys, locked (ingestion, under the keys' locks). */
      newestForKeys: (orgId: OrgId, sensorId: SensorId, sourceIps: ReadonlyArray<string>) =>
        sourceIps.length === 0
          ? Effect.succeed([] as ReadonlyArray<KeyIncident>)
          : newestForKeys({ orgId, sensorId, sourceIps }).pipe(dbErrors),
      /**
       * Writes the incidents one ingestion request created or changed, in one statement: a new id is inserted, a
       * known one gets its aggregate and texts (created_at stays). The rows travel as one JSON parameter.
       */
      upsertMany: (rows: ReadonlyArray<NewIncident & { readonly updatedAt: Date }>) =>
        rows.length === 0
          ? Effect.void
          : sql`
            insert into incidents (id, org_id, sensor_id, source_ip, status, severity, title, narrative,
              recommended_action, event_count, event_types, tags, usernames, high_confidence, first_seen_at,
              last_seen_at, resolved_at, type_counts, events_severity, bait_credential, source_scope, source_network,
              linked, other_sensors, created_at, updated_at, last_activity_at)
            select id, org_id, sensor_id, source_ip, status, severity, title, narrative, recommended_action,
              event_count, event_types, tags, usernames, high_confidence, first_seen_at, last_seen_at, resolved_at,
              type_counts, events_severity, bait_credential, source_scope, source_network, linked, other_sensors,
              created_at, updated_at, last_activity_at
            from jsonb_to_recordset(${incidentsJson(rows)}::text::jsonb) as r(id text, org_id text, sensor_id text,
              source_ip text, status text, severity text, title text, narrative text, recommended_action text,
              event_count integer, event_types text[], tags text[], usernames text[], high_confidence boolean,
              first_seen_at timestamptz, last_seen_at timestamptz, resolved_at timestamptz, type_counts jsonb,
              events_severity text, bait_credential boolean, source_scope text, source_network jsonb, linked boolean,
              other_sensors integer, created_at timestamptz, updated_at timestamptz, last_activity_at timestamptz)
            on conflict (id) do update set status = excluded.status, severity = excluded.severity,
              type_counts = excluded.type_counts, events_severity = excluded.events_severity,
              bait_credential = excluded.bait_credential, source_scope = excluded.source_scope,
              source_network = excluded.source_network, linked = excluded.linked,
              other_sensors = excluded.other_sensors,
              title = excluded.title, narrative = excluded.narrative, recommended_action = excluded.recommended_action,
              event_count = excluded.event_count, event_types = excluded.event_types, tags = excluded.tags,
              usernames = excluded.usernames, high_confidence = excluded.high_confidence,
              first_seen_at = excluded.first_seen_at, last_seen_at = excluded.last_seen_at,
              resolved_at = excluded.resolved_at, updated_at = excluded.updated_at,
              last_activity_at = excluded.last_activity_at`.pipe(Effect.asVoid, dbErrors),
      /**
       * For each source address, how many other sensors of the organization saw it since `since`, and when the
       * earliest of those incidents began (a source first seen elsewhere links and steps up the incident here).
       */
      seenOnOtherSensors: (orgId: OrgId, sensorId: SensorId, sourceIps: ReadonlyArray<string>, since: Date) =>
        sourceIps.length === 0
          ? Effect.succeed(new Map<string, { sensors: number; earliestFirstSeen: Date }>())
          : sql<{ sourceIp: string; sensors: number; earliestFirstSeen: Date }>`
              select o.source_ip, count(distinct o.sensor_id)::int as sensors, min(o.first_seen_at) as earliest_first_seen
              from incidents o
              where o.org_id = ${orgId} and o.source_ip in ${sql.in([...sourceIps])} and o.sensor_id <> ${sensorId}
                and o.last_seen_at >= ${since}
              group by o.source_ip`.pipe(
              Effect.map(
                (rows) =>
                  new Map(
                    rows.map((r) => [
                      r.sourceIp,
                      { sensors: r.sensors, earliestFirstSeen: new Date(r.earliestFirstSeen) },
                    ]),
                  ),
              ),
              dbErrors,
            ),
      /** An address's incidents on every sensor, newest activity first, and what they add up to. */
      forSource: (orgId: OrgId, sourceIp: string, limit: number) =>
        Effect.all({
          rows: readIncidents({
            text: `${incidentSelect(true)} where i.org_id = $1 and i.source_ip = $2 order by i.last_seen_at desc, i.id desc limit $3`,
            params: [orgId, sourceIp, limit],
          }),
          totals: sql<{ incidents: number; sensors: number; firstSeenAt: Date | null; lastSeenAt: Date | null }>`
            select count(*)::int as incidents, count(distinct sensor_id)::int as sensors,
              min(first_seen_at) as first_seen_at, max(last_seen_at) as last_seen_at
            from incidents where org_id = ${orgId} and source_ip = ${sourceIp}`.pipe(
            Effect.map((rows) => rows[0] ?? { incidents: 0, sensors: 0, firstSeenAt: null, lastSeenAt: null }),
            dbErrors,
          ),
          anyEvent: sql<{ found: boolean }>`
            select exists (select from events where org_id = ${orgId} and source_ip = ${sourceIp}) as found`.pipe(
            Effect.map((rows) => rows[0]?.found === true),
            dbErrors,
          ),
        }),
      /**
       * What the enrichment job knows of an address, as IncidentRow names it (empty when nothing yet): for a row that
       * ingestion built itself, which never waits for enrichment.
       */
      sourceFacts: (address: string) =>
        readRows<Partial<IncidentRow>>(sql, `select ${SOURCE_COLUMNS} from address_enrichment a where a.address = $1`, [
          address,
        ]).pipe(
          Effect.map((rows) => rows[0] ?? {}),
          dbErrors,
        ),
      /**
       * The other incidents of these addresses on other sensors, active since `since`, count their other sensors
       * again: an incident just began on `sensorId` (in this transaction), so each sibling now has one more.
       */
      recountOtherSensors: (orgId: OrgId, sensorId: SensorId, sourceIps: ReadonlyArray<string>, since: Date) =>
        sourceIps.length === 0
          ? Effect.void
          : sql
              .unsafe(
                `update incidents i set other_sensors = ${countOtherSensors("i")}
                where i.org_id = $1 and i.source_ip in (select jsonb_array_elements_text($2::text::jsonb))
                  and i.sensor_id <> $3 and i.last_seen_at >= $4`,
                [orgId, JSON.stringify(sourceIps), sensorId, since],
              )
              .pipe(Effect.asVoid, dbErrors),
      /** Recounts after a concurrent duplicate slipped past the pre-check (rare); returns the new counts. */
      recount: (orgId: OrgId, ids: ReadonlyArray<IncidentId>) =>
        sql<{ readonly id: IncidentId; readonly eventCount: number }>`
          update incidents i set event_count = (
            select count(*) from events e where e.org_id = ${orgId} and e.incident_id = i.id
          )
          where i.id in ${sql.in(ids)}
          returning i.id, i.event_count`.pipe(dbErrors),
      /**
       * Closes open incidents whose latest event arrived before `cutoff` (arrival, not the sensor's event time:
       * a late-reported event is new activity); returns what it closed.
       */
      /** Closes at most `limit` open incidents quiet since before `cutoff`, the quietest first. */
      closeIdle: (cutoff: Date, now: Date, limit: number) =>
        closeWhere(
          sql`id in (select id from incidents where status = 'open' and last_activity_at < ${cutoff}
            order by last_activity_at, id limit ${limit} for update skip locked)`,
          now,
          null,
        ),
      /** Closes one open incident (admin); none when it is unknown or already closed. */
      close: (id: IncidentId, now: Date, reason: CloseReason) =>
        closeWhere(sql`id = ${id}`, now, reason).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
      findById,
      insert: (row: NewIncident, now: Date = new Date()) =>
        sql`insert into incidents ${sql.insert({
          ...row,
          eventTypes: [...row.eventTypes],
          tags: [...row.tags],
          usernames: [...row.usernames],
          createdAt: row.createdAt ?? row.firstSeenAt,
          updatedAt: now,
          lastActivityAt: now,
        })}`.pipe(Effect.asVoid, dbErrors),
    } as const
  }),
}) {}
