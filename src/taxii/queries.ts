import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { techniquesForEventTypes } from "../domain/eventTypes.ts"
import type { OrgId } from "../domain/ids.ts"
import {
  DEFAULT_TLP,
  type StixIncident,
  type StixObject,
  stixId,
  stixObjectsFor,
  TLP_LEVELS,
  type TlpLevel,
} from "../domain/stix.ts"
import { mergeTechniques, techniquesForTags } from "../domain/techniques.ts"
import { dbErrors } from "../platform/db/errors.ts"

/**
 * What the TAXII collection of one organization holds: the STIX objects domain/stix.ts builds from its external
 * incidents (internal sources give none; ignored events belong to no incident), each with its `date_added`.
 *
 * `date_added` is a function of the stored data, so two reads of the same data give the same answer: the
 * organization's creation time for the organization identity and the TLP marking, and for every other object the
 * latest change time (`updated_at`) of the incidents it is built from. An object whose data changes therefore gets a
 * newer date_added and comes again after the `added_after` a client last used (its new version); a new incident's
 * objects come after everything the client has read. At most MAX_INCIDENTS incidents (the most recently changed) are
 * read per request, which bounds the work and the collection.
 *
 * Every object carries the organization's TLP 2.0 marking (`organizations.tlp`, set by an admin; amber unless set).
 */
export const MAX_INCIDENTS = 5_000

export interface CollectionEntry {
  readonly object: StixObject
  /** date_added, in milliseconds. */
  readonly addedMs: number
}

export interface OrgCollection {
  readonly orgName: string
  readonly entries: ReadonlyArray<CollectionEntry>
}

interface Row {
  readonly id: string
  readonly title: string
  readonly narrative: string
  readonly sensorId: string
  readonly sensorName: string
  readonly sourceIp: string
  readonly eventCount: number
  readonly baitCredential: boolean | null
  readonly firstSeenAt: Date
  readonly lastSeenAt: Date
  readonly updatedAt: Date
  readonly eventTypes: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
}

const toStix = (r: Row): StixIncident => ({
  id: r.id as StixIncident["id"],
  title: r.title,
  narrative: r.narrative,
  sensor: { id: r.sensorId as StixIncident["sensor"]["id"], name: r.sensorName },
  sourceIp: r.sourceIp,
  eventCount: r.eventCount,
  baitCredentialUsed: r.baitCredential === true,
  firstSeenAt: r.firstSeenAt,
  lastSeenAt: r.lastSeenAt,
  techniques: mergeTechniques([techniquesForEventTypes(r.eventTypes), techniquesForTags(r.tags)]),
  source: { scope: "external" },
})

/** The collection from the rows: the objects of all incidents, dated by the incidents each object comes from. */
export const collectionOf = (
  orgName: string,
  orgId: string,
  orgCreatedAt: Date,
  rows: ReadonlyArray<{ readonly incident: StixIncident; readonly updatedAt: Date }>,
  tlp: TlpLevel = DEFAULT_TLP,
): ReadonlyArray<CollectionEntry> => {
  const options = { organizationCreatedAt: orgCreatedAt, tlp }
  const objects = stixObjectsFor(
    orgName,
    orgId,
    rows.map((r) => r.incident),
    options,
  )
  const [marking, organization] = objects
  // An incident gives its sighting and its techniques' attack patterns; its sighting names the indicator and the
  // sensor it also feeds. Each object is dated by the latest change of the incidents it comes from.
  const added = new Map<string, number>()
  const bump = (id: string, ms: number) => added.set(id, Math.max(added.get(id) ?? 0, ms))
  for (const { incident, updatedAt } of rows) {
    bump(stixId("sighting", orgId, incident.id), updatedAt.getTime())
    for (const t of incident.techniques) bump(stixId("attack-pattern", orgId, t.id), updatedAt.getTime())
  }
  for (const o of objects) {
    if (o.type !== "sighting") continue
    const ms = added.get(o.id) ?? 0
    bump(o.sighting_of_ref, ms)
    for (const sensor of o.where_sighted_refs) bump(sensor, ms)
  }
  for (const fixed of [marking, organization]) if (fixed !== undefined) added.set(fixed.id, orgCreatedAt.getTime())
  return objects
    .map((object) => ({ object, addedMs: added.get(object.id) ?? orgCreatedAt.getTime() }))
    .sort((a, b) => a.addedMs - b.addedMs || (a.object.id < b.object.id ? -1 : a.object.id > b.object.id ? 1 : 0))
}

export const makeTaxiiQueries = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const load = (orgId: OrgId) =>
    Effect.gen(function* () {
      const orgs = yield* sql<{ name: string; createdAt: Date; tlp: string }>`
        select name, created_at as "createdAt", tlp from organizations where id = ${orgId}`
      const org = orgs[0]
      if (org === undefined) return { orgName: "", entries: [] } satisfies OrgCollection
      const rows = yield* sql<Row>`
        select i.id, i.title, i.narrative, i.sensor_id as "sensorId", s.name as "sensorName",
          i.source_ip as "sourceIp", i.event_count as "eventCount", i.bait_credential as "baitCredential",
          i.first_seen_at as "firstSeenAt", i.last_seen_at as "lastSeenAt", i.updated_at as "updatedAt",
          i.event_types as "eventTypes", i.tags
        from incidents i join sensors s on s.id = i.sensor_id
        where i.org_id = ${orgId} and i.source_scope = 'external'
        order by i.updated_at desc, i.id desc
        limit ${MAX_INCIDENTS}`
      const entries = collectionOf(
        org.name,
        orgId,
        new Date(org.createdAt),
        rows.map((r) => ({
          incident: toStix({
            ...r,
            firstSeenAt: new Date(r.firstSeenAt),
            lastSeenAt: new Date(r.lastSeenAt),
          }),
          updatedAt: new Date(r.updatedAt),
        })),
        TLP_LEVELS.find((l) => l === org.tlp) ?? DEFAULT_TLP,
      )
      return { orgName: org.name, entries } satisfies OrgCollection
    }).pipe(dbErrors)
  return { load }
})
