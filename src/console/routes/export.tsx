import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, Stream } from "effect"
import type { CursorPosition } from "../../domain/cursor.ts"
import { AppConfig } from "../../platform/config.ts"
import { type EventListQuery, EventsRepo } from "../../repos/EventsRepo.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentEvent, presentIncidentSummary } from "../../repos/present.ts"
import { csvRecord } from "../csv.ts"
import type { Kit } from "../kit.ts"
import { eventFiltersForm, readEventFilters, readIncidentFilters } from "../listFilters.ts"
import { query } from "../session.ts"

/** The most rows one export holds; past it a last line says the export was cut (narrow the filter for the rest). */
export const EXPORT_MAX_ROWS = 100_000
/** Rows read per statement: one keyset page of the list's own statement at a time, never the whole result. */
const EXPORT_PAGE_ROWS = 200

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

/**
 * A CSV body streamed page by page: the header line, then each page of `read` (after the last row of the one
 * before) as it is sent, at most EXPORT_MAX_ROWS rows; when more exist, a last line `# cut at … rows`.
 */
const csvStream = <Row, E>(
  columns: ReadonlyArray<string>,
  read: (after: CursorPosition | undefined, fetch: number) => Effect.Effect<ReadonlyArray<Row>, E>,
  position: (row: Row) => CursorPosition,
  record: (row: Row) => string,
): Stream.Stream<Uint8Array, E> => {
  type State = { readonly after: CursorPosition | undefined; readonly sent: number } | "cut"
  const pages = Stream.paginateChunkEffect<State, string, E, never>({ after: undefined, sent: 0 }, (state) => {
    if (state === "cut") {
      return Effect.succeed([
        Chunk.of(`# cut at ${EXPORT_MAX_ROWS} rows: narrow the filter to export the rest\r\n`),
        Option.none(),
      ] as const)
    }
    const room = EXPORT_MAX_ROWS - state.sent
    const fetch = Math.min(EXPORT_PAGE_ROWS, room)
    return Effect.map(read(state.after, fetch + 1), (rows) => {
      const shown = rows.slice(0, fetch)
      const last = shown[shown.length - 1]
      const text = shown.map(record).join("")
      const more = rows.length > fetch && last !== undefined
      const next: Option.Option<State> = !more
        ? Option.none()
        : fetch === room
          ? Option.some("cut")
          : Option.some({ after: position(last), sent: state.sent + shown.length })
      return [text === "" ? Chunk.empty<string>() : Chunk.of(text), next] as const
    })
  })
  return Stream.encodeText(Stream.concat(Stream.make(csvRecord(columns)), pages))
}

const csvResponse = <E,>(name: string, body: Stream.Stream<Uint8Array, E>) =>
  HttpServerResponse.stream(body, {
    contentType: "text/csv; charset=utf-8",
    headers: {
      "content-disposition": `attachment; filename="${name}-${new Date().toISOString().slice(0, 10)}.csv"`,
      "cache-control": "no-store",
      "x-export-row-limit": String(EXPORT_MAX_ROWS),
    },
  })

/**
 * CSV exports of the incident and event lists for the filters of their pages (the same query parameters), for any
 * signed-in user of the organization. Cells are neutralised and quoted by csv.ts.
 */
export const exportRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const { page } = kit
    return HttpRouter.empty.pipe(
      HttpRouter.get(
        "/incidents.csv",
        page((s) =>
          Effect.gen(function* () {
            const filters = readIncidentFilters(yield* query)
            const body = csvStream(
              INCIDENT_CSV_COLUMNS,
              (after, fetch) => incidents.list({ orgId: s.orgId, ...filters, after, fetch }),
              (row) => ({ time: row.lastSeenAt, id: row.id }),
              (row) => {
                const i = presentIncidentSummary(row, config.appUrl)
                return csvRecord([
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
              },
            )
            return csvResponse("incidents", body)
          }),
        ),
      ),
      HttpRouter.get(
        "/events.csv",
        page((s) =>
          Effect.gen(function* () {
            const read = readEventFilters(eventFiltersForm(yield* query))
            // A filter that cannot be read is never silently dropped from a file: the export is refused, saying why.
            if (read.errors.length > 0) {
              return HttpServerResponse.text(`Nothing exported. ${read.errors.join(" ")}\n`, {
                status: 400,
                headers: { "cache-control": "no-store" },
              })
            }
            const listQuery = (after: CursorPosition | undefined, fetch: number): EventListQuery => ({
              orgId: s.orgId,
              filters: read.filters,
              sourceNetwork: read.sourceNetwork,
              after,
              fetch,
            })
            const body = csvStream(
              EVENT_CSV_COLUMNS,
              (after, fetch) => events.list(listQuery(after, fetch)),
              (row) => ({ time: row.time, id: row.id }),
              (row) => {
                const e = presentEvent(row)
                return csvRecord([
                  e.time.toISOString(),
                  e.id,
                  row.incidentId,
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
              },
            )
            return csvResponse("events", body)
          }),
        ),
      ),
    )
  })
