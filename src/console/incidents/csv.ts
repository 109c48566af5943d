import type { IncidentSummary } from "../../domain/models.ts"
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
] as const

/** One incident as a record of the export, in INCIDENT_CSV_COLUMNS' order. */
export const incidentCsvRecord = (i: IncidentSummary): string =>
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
  ])
