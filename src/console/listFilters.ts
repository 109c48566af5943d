import { EVENT_TYPE_NAMES } from "../domain/eventTypes.ts"
import { isId, type UserId } from "../domain/ids.ts"
import { parseNetwork } from "../domain/ip.ts"
import { SEVERITIES, type Severity } from "../domain/severity.ts"
import { parseTimestamp } from "../domain/time.ts"
import type { ConsoleIncidentFilters } from "../repos/ConsoleListsRepo.ts"
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
  /** Left out: no such filter (callers from before the console had it). */
  readonly scope?: string
  readonly q?: string
}

export const EVENT_FILTER_NAMES = [
  "type",
  "severity",
  "sensorId",
  "sourceIp",
  "from",
  "to",
  "incidentId",
  "scope",
  "q",
] as const

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
    scope: get("scope"),
    q: get("q"),
  }
}

/** The longest search, in characters. */
export const SEARCH_MAX = 200

const SCOPES = ["internal", "external"] as const
type Scope = (typeof SCOPES)[number]

const readScope = (text: string, errors: Array<string>): Scope | undefined => {
  if (text === "") return undefined
  if ((SCOPES as ReadonlyArray<string>).includes(text)) return text as Scope
  errors.push("“Inside or outside” must be internal (inside your networks) or external.")
  return undefined
}

/** A search: 1 to SEARCH_MAX characters (any text: it is a parameter, and `%`, `_` and `\` are literal). */
const readSearch = (text: string, errors: Array<string>): string | undefined => {
  if (text === "") return undefined
  const length = [...text].length
  if (length <= SEARCH_MAX) return text
  errors.push(`“Search” must be at most ${SEARCH_MAX} characters (it has ${length}).`)
  return undefined
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
  /** Inside or outside the organization's networks (the console's filter, not the API's). */
  readonly scope: Scope | undefined
  /** The search (the console's, not the API's). */
  readonly q: string | undefined
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
  const scope = readScope(form.scope ?? "", errors)
  const q = readSearch(form.q ?? "", errors)
  const ordered = !(from !== undefined && to !== undefined && from > to)
  return {
    scope,
    q,
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

/** The Incidents page's filters as typed (kept as typed, so a value that cannot be read is shown back to be fixed). */
export interface IncidentFiltersForm {
  readonly status: string
  readonly severity: string
  readonly sensor: string
  readonly source: string
  readonly type: string
  readonly owner: string
  readonly scope: string
  readonly from: string
  readonly to: string
  readonly q: string
}

export const INCIDENT_FILTER_NAMES = [
  "status",
  "severity",
  "sensor",
  "source",
  "type",
  "owner",
  "scope",
  "from",
  "to",
  "q",
] as const satisfies ReadonlyArray<keyof IncidentFiltersForm>

export const incidentFiltersForm = (params: URLSearchParams): IncidentFiltersForm => {
  const get = (name: string) => (params.get(name) ?? "").trim()
  return Object.fromEntries(INCIDENT_FILTER_NAMES.map((name) => [name, get(name)])) as unknown as IncidentFiltersForm
}

/** The query string of the filters as typed (empty ones left out), with `extra` after them. */
export const incidentFilterQuery = (form: IncidentFiltersForm, extra: Record<string, string> = {}): string => {
  const params = new URLSearchParams()
  for (const name of INCIDENT_FILTER_NAMES) if (form[name] !== "") params.set(name, form[name])
  for (const [k, v] of Object.entries(extra)) params.set(k, v)
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

export interface ReadIncidentFilters {
  readonly filters: ConsoleIncidentFilters
  /** One sentence per value that could not be read: which field, and what it accepts. That filter is not applied. */
  readonly errors: ReadonlyArray<string>
}

/**
 * The Incidents page's filters, each read on its own as the Events page's are. `owner` is a user id of the
 * organization (one of `users`), `me` (the signed-in user) or `none`.
 */
export const readIncidentFilters = (
  form: IncidentFiltersForm,
  viewer: UserId,
  users: ReadonlyArray<{ readonly id: string }>,
): ReadIncidentFilters => {
  const errors: Array<string> = []
  const status = form.status === "open" || form.status === "closed" ? form.status : undefined
  if (form.status !== "" && status === undefined) errors.push("“Status” must be open or closed.")
  const severity = (SEVERITIES as ReadonlyArray<string>).includes(form.severity)
    ? (form.severity as Severity)
    : undefined
  if (form.severity !== "" && severity === undefined) errors.push(`“Severity” must be one of ${SEVERITIES.join(", ")}.`)
  const sensorId = isId("sensor", form.sensor) ? form.sensor : undefined
  if (form.sensor !== "" && sensorId === undefined) errors.push("“Sensor” must be one of the listed sensors.")
  const source = form.source === "" ? undefined : parseNetwork(form.source)
  if (form.source !== "" && source === undefined) {
    errors.push(
      "“Source” must be an IPv4 address (203.0.113.7), an IPv6 address (2001:db8::7) or a network in CIDR form (203.0.113.0/24).",
    )
  }
  const type = EVENT_TYPE_NAMES.includes(form.type) ? form.type : undefined
  if (form.type !== "" && type === undefined) errors.push("“Event type” must be one of the listed event types.")
  let owner: ConsoleIncidentFilters["owner"]
  if (form.owner === "me") owner = { user: viewer }
  else if (form.owner === "none") owner = "none"
  else if (form.owner !== "") {
    const user = users.find((u) => u.id === form.owner)
    if (user !== undefined && isId("consoleUser", user.id)) owner = { user: user.id }
    else errors.push("“Owner” must be me, nobody or one of the listed users.")
  }
  const scope = readScope(form.scope, errors)
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
  const ordered = !(from !== undefined && to !== undefined && from > to)
  if (!ordered) errors.push("“From” must not be later than “To”.")
  const q = readSearch(form.q, errors)
  return {
    filters: {
      status,
      severity,
      sensorId,
      sourceIp: source?.single === true ? source.address : undefined,
      sourceNetwork: source !== undefined && !source.single ? source.cidr : undefined,
      type,
      owner,
      scope,
      from: ordered ? from : undefined,
      to: ordered ? to : undefined,
      q,
    },
    errors,
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
