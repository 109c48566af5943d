import type { Event } from "../../domain/models.ts"
import { csvRecord } from "../csv.ts"

/** The columns of the event list's CSV export (/events.csv), in their order. */
export const EVENT_CSV_COLUMNS = [
  "time",
  "id",
  "incidentId",
  "sensorId",
  "sensorName",
  "sourceIp",
  "sourcePort",
  "service",
  "port",
  "type",
  "action",
  "severity",
  "confidence",
  "tags",
  "summary",
  "attackerInput",
] as const

/** One event (and the incident it belongs to) as a record of the export, in EVENT_CSV_COLUMNS' order. */
export const eventCsvRecord = (e: Event, incidentId: string | null): string =>
  csvRecord([
    e.time.toISOString(),
    e.id,
    incidentId,
    e.sensor.id,
    e.sensor.name,
    e.sourceIp,
    e.sourcePort,
    e.service,
    e.port,
    e.type,
    e.action,
    e.severity,
    e.confidence,
    e.tags.join(" "),
    e.summary,
    JSON.stringify(e.attackerInput),
  ])
