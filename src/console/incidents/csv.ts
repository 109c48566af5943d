import { Effect } from "effect"
import type { IncidentId, OrgId } from "../../domain/ids.ts"
import type { IncidentSummary } from "../../domain/models.ts"
import type { IncidentRow } from "../../repos/IncidentsRepo.ts"
import { csvRecord } from "../csv.ts"

/** The columns of the incident list's CSV export (/incidents.csv), in their order. */
export const INCIDENT_CSV_COLUMNS = [
  "id",
  "status",
  "severity",
  "title",
  "sensorId",
  "sensorName",
  "sourceIp",
  "eventCount",
  "eventTypes",
  "highConfidence",
  "firstSeenAt",
  "lastSeenAt",
  "resolvedAt",
  "url",
  // After the first columns, so a reader of the earlier file finds them where they were.
  "sourceReverseDns",
  "sourceAsn",
  "sourceAsOrganization",
  "sourceCountry",
  "sourceScope",
  "sourceNetwork",
  "baitCredentialUsed",
  "otherSensors",
  // Triage: why it was closed (while closed), who owns it, when first acknowledged, the latest close's note.
  "closeReason",
  "assignee",
  "acknowledgedAt",
  "closeNote",
] as const

/** An incident row of the export with the note of its latest close (null: none, or closed without a note). */
export type IncidentCsvRow = IncidentRow & { readonly closeNote: string | null }

/**
 * A page of the export's rows with the note of each one's latest close, read in one more query per page (the
 * export's `read`: `withCloseNotes(incidents.latestCloseNotes, orgId, read(after, fetch))`).
 */
export const withCloseNotes = <E, R, E2, R2>(
  latestCloseNotes: (
    orgId: OrgId,
    ids: ReadonlyArray<IncidentId>,
  ) => Effect.Effect<ReadonlyMap<string, string | null>, E2, R2>,
  orgId: OrgId,
  page: Effect.Effect<ReadonlyArray<IncidentRow>, E, R>,
): Effect.Effect<ReadonlyArray<IncidentCsvRow>, E | E2, R | R2> =>
  Effect.flatMap(page, (rows) =>
    Effect.map(
      latestCloseNotes(
        orgId,
        rows.map((r) => r.id),
      ),
      (notes) => rows.map((r) => ({ ...r, closeNote: notes.get(r.id) ?? null })),
    ),
  )

/**
 * One incident as a record of the export, in INCIDENT_CSV_COLUMNS' order; `closeNote` is the note of its latest
 * close (a person's text: neutralised and quoted like every cell).
 */
export const incidentCsvRecord = (i: IncidentSummary, closeNote: string | null = null): string =>
  csvRecord([
    i.id,
    i.status,
    i.severity,
    i.title,
    i.sensor.id,
    i.sensor.name,
    i.sourceIp,
    i.eventCount,
    i.eventTypes.join(" "),
    i.highConfidence,
    i.firstSeenAt.toISOString(),
    i.lastSeenAt.toISOString(),
    i.resolvedAt?.toISOString() ?? "",
    i.url,
    // Attacker text like the title: neutralised and quoted by csvRecord.
    i.source.reverseDns,
    i.source.asn,
    i.source.asOrganization,
    i.source.country,
    i.source.scope,
    i.source.network === null ? "" : `${i.source.network.cidr} ${i.source.network.label}`,
    i.baitCredentialUsed,
    i.otherSensors,
    i.closeReason ?? "",
    i.assignee ?? "",
    i.acknowledgedAt?.toISOString() ?? "",
    closeNote ?? "",
  ])
