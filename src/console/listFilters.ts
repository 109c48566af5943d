import { EVENT_TYPE_NAMES } from "../domain/eventTypes.ts"
import { isId } from "../domain/ids.ts"
import { parseNetwork } from "../domain/ip.ts"
import { SEVERITIES, type Severity } from "../domain/severity.ts"
import { parseTimestamp } from "../domain/time.ts"
import type { EventFilters } from "../repos/EventsRepo.ts"

/** The Events page's filters as typed (kept as typed, so a value that cannot be read is shown back to be fixed). */
export interface EventFiltersForm {
  readonly type: string
  readonly severity: string
  readonly sensorId: string
  readonly sourceIp: string
  readonly from: string
  readonly to: string
  readonly incidentId: string
}

export const EVENT_FILTER_NAMES = ["type", "severity", "sensorId", "sourceIp", "from", "to", "incidentId"] as const

export const eventFiltersForm = (params: URLSearchParams): EventFiltersForm => {
  const get = (name: string) => (params.get(name) ?? "").trim()
  return {
    type: get("type"),
    severity: get("severity"),
    sensorId: get("sensorId"),
    sourceIp: get("sourceIp"),
    from: get("from"),
    to: get("to"),
    incidentId: get("incidentId"),
  }
}

const PLAIN_DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/**
 * A date as the console reads it: a plain date `2026-11-26` is that day in UTC (its start for `from`, the start of
 * the next day, the exclusive end, for `to`), or an RFC 3339 time with a zone (as the API reads it).
 */
export const parseDateBound = (text: string, bound: "from" | "to"): Date | undefined => {
  const day = PLAIN_DATE.exec(text)
  if (day === null) return parseTimestamp(text)
  const start = parseTimestamp(`${text}T00:00:00Z`)
  if (start === undefined) return undefined
  return bound === "from" ? start : new Date(start.getTime() + 86_400_000)
}

/** What the Events page and its CSV export read from the filters: the list query's part, and what could not be read. */
export interface ReadEventFilters {
  readonly filters: EventFilters
  /** A source network (CIDR) to keep, beyond `filters` (the API has no such filter). */
  readonly sourceNetwork: string | undefined
  /** One sentence per value that could not be read: which field, and what it accepts. That filter is not applied. */
  readonly errors: ReadonlyArray<string>
}

export const readEventFilters = (form: EventFiltersForm): ReadEventFilters => {
  const errors: Array<string> = []
  const type = EVENT_TYPE_NAMES.includes(form.type) ? form.type : undefined
  if (form.type !== "" && type === undefined) errors.push(`“Type” must be one of the listed event types.`)
  const severity = (SEVERITIES as ReadonlyArray<string>).includes(form.severity)
    ? (form.severity as Severity)
    : undefined
  if (form.severity !== "" && severity === undefined) {
    errors.push(`“Severity” must be one of ${SEVERITIES.join(", ")}.`)
  }
  const sensorId = isId("sensor", form.sensorId) ? form.sensorId : undefined
  if (form.sensorId !== "" && sensorId === undefined) errors.push("“Sensor” must be one of the listed sensors.")
  const source = form.sourceIp === "" ? undefined : parseNetwork(form.sourceIp)
  if (form.sourceIp !== "" && source === undefined) {
    errors.push(
      "“Source IP” must be an IPv4 address (203.0.113.7), an IPv6 address (2001:db8::7) or a network in CIDR form (203.0.113.0/24).",
    )
  }
  const from = form.from === "" ? undefined : parseDateBound(form.from, "from")
  if (form.from !== "" && from === undefined) {
    errors.push("“From” must be a date such as 2026-11-26 (that day in UTC) or a time such as 2026-11-26T08:00:00Z.")
  }
  const to = form.to === "" ? undefined : parseDateBound(form.to, "to")
  if (form.to !== "" && to === undefined) {
    errors.push(
      "“To” must be a date such as 2026-11-26 (up to the end of that day in UTC) or a time such as 2026-11-26T18:00:00Z.",
    )
  }
  if (from !== undefined && to !== undefined && from > to) errors.push("“From” must not be later than “To”.")
  const incidentId = isId("incident", form.incidentId) ? form.incidentId : undefined
  if (form.incidentId !== "" && incidentId === undefined) {
    errors.push("“Incident” must be an incident id: inc_ and 26 letters and digits, as an incident page shows it.")
  }
  const ordered = !(from !== undefined && to !== undefined && from > to)
  return {
    filters: {
      type,
      severity,
      sensorId,
      sourceIp: source?.single === true ? source.address : undefined,
      from: ordered ? from : undefined,
      to: ordered ? to : undefined,
      incidentId,
    },
    sourceNetwork: source !== undefined && !source.single ? source.cidr : undefined,
    errors,
  }
}

/** The incident list's filters (status, severity): a value it does not know is no filter, as on the Incidents page. */
export const readIncidentFilters = (params: URLSearchParams) => {
  const status = params.get("status")
  const severity = params.get("severity") ?? ""
  return {
    status: status === "open" || status === "closed" ? (status as "open" | "closed") : undefined,
    severity: (SEVERITIES as ReadonlyArray<string>).includes(severity) ? (severity as Severity) : undefined,
  }
}

/** Rows on one page of a console list. */
export const PAGE_SIZE = 50

/** ?after= of the incident and event lists: the keyset position as `<ms>.<id>` (the SQL reads it within the organization). */
export const encodeAfter = (time: Date, id: string) => `${time.getTime()}.${id}`
export const decodeAfter = (text: string | null | undefined, kind: "incident" | "event") => {
  if (text === undefined || text === null) return undefined
  const match = /^(\d{1,15})\.(.+)$/.exec(text)
  if (!match || !isId(kind, match[2] as string)) return undefined
  return { time: new Date(Number(match[1])), id: match[2] as string }
}
