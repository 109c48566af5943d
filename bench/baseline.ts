/**
 * The baseline of the API benchmark: a bare `Bun.serve` with Bun's built-in SQL client, running the service's own
 * statements (src/repos: incidentListStatement, incidentByIdStatement, eventMembersStatement, eventListStatement; a
 * copy of them fell behind once, missed the partial indexes' condition and scanned every event) and writing the same
 * JSON (the service's pure `encode…` functions and its signed keyset cursors), without authentication, rate
 * limiting, access logs, metrics or Effect. What the service spends beyond this is the cost of its framework and of its
 * per-request checks.
 *
 * The organization comes from `?org=` (there is no key to take it from). Started by bench/run.ts:
 *   DATABASE_URL=… SECRET_KEY=<hex> APP_URL=… PORT=0 bun bench/baseline.ts
 */
import { SQL } from "bun"
import { deriveKey } from "../src/domain/crypto.ts"
import { type CursorScope, decodeCursor, encodeCursor } from "../src/domain/cursor.ts"
import { EVENT_TYPE_NAMES } from "../src/domain/eventTypes.ts"
import { isId, type OrgId } from "../src/domain/ids.ts"
import { decodeSecretKey } from "../src/platform/config.ts"
import { type EventRow, eventListStatement, eventMembersStatement } from "../src/repos/EventsRepo.ts"
import { type IncidentRow, incidentByIdStatement, incidentListStatement } from "../src/repos/IncidentsRepo.ts"
import { encodeEvent, encodeIncident, encodeIncidentSummary } from "../src/repos/present.ts"
import { parseLimit, READ_HEADERS } from "./lib/readEndpoints.ts"

const secret = decodeSecretKey(process.env.SECRET_KEY ?? "")
if (secret === undefined) throw new Error("SECRET_KEY is required (hex or base64, 32+ bytes)")
const cursorKey = deriveKey(secret, "cursor-v1")
const appUrl = (process.env.APP_URL ?? "http://localhost:3000").replace(/\/+$/, "")
// 20 connections, more than the service's API pool (10): the baseline is never held back by its pool.
const sql = new SQL({ url: process.env.DATABASE_URL ?? "", max: 20 })
const types = new Set(EVENT_TYPE_NAMES)

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: READ_HEADERS })
const fail = (status: number, detail: string) => json({ status, detail }, status)

const limitOf = (params: URLSearchParams) => parseLimit(params.get("limit"))

const page = <Row extends { readonly id: string }>(
  rows: ReadonlyArray<Row>,
  limit: number,
  scope: CursorScope,
  position: (row: Row) => Date,
  present: (row: Row) => unknown,
) => {
  const shown = rows.slice(0, limit)
  const last = shown[shown.length - 1]
  return {
    data: shown.map(present),
    nextCursor:
      rows.length > limit && last ? encodeCursor(cursorKey, scope, { time: position(last), id: last.id }) : null,
  }
}

const listIncidents = async (orgId: OrgId, params: URLSearchParams) => {
  const status = params.get("status") ?? undefined
  if (status !== undefined && status !== "open" && status !== "closed") return fail(400, "status")
  const limit = limitOf(params)
  if (limit === undefined) return fail(400, "limit")
  const scope: CursorScope = { endpoint: "incidents", orgId, filters: { status } }
  const cursor = params.get("cursor")
  const decoded = cursor === null ? undefined : decodeCursor(cursorKey, scope, cursor)
  if (decoded !== undefined && !decoded.ok) return fail(400, "cursor")
  const after = decoded?.position
  const statement = incidentListStatement({ orgId, status, after, fetch: limit + 1 })
  const rows = (await sql.unsafe(statement.text, [...statement.params])) as Array<IncidentRow>
  return json(
    page(
      rows,
      limit,
      scope,
      (r) => r.lastSeenAt,
      (r) => encodeIncidentSummary(r, appUrl),
    ),
  )
}

const getIncident = async (orgId: OrgId, id: string) => {
  if (!isId("incident", id)) return fail(404, "not found")
  const one = incidentByIdStatement(orgId, id)
  const [row] = (await sql.unsafe(one.text, [...one.params])) as Array<IncidentRow>
  if (row === undefined) return fail(404, "not found")
  const shown = eventMembersStatement(orgId, id, 200, false)
  const members = (await sql.unsafe(shown.text, [...shown.params])) as Array<EventRow>
  return json(encodeIncident(row, members, appUrl))
}

const listEvents = async (orgId: OrgId, params: URLSearchParams) => {
  const type = params.get("type") ?? undefined
  if (type !== undefined && !types.has(type)) return fail(400, "type")
  const limit = limitOf(params)
  if (limit === undefined) return fail(400, "limit")
  const scope: CursorScope = { endpoint: "events", orgId, filters: { type } }
  const cursor = params.get("cursor")
  const decoded = cursor === null ? undefined : decodeCursor(cursorKey, scope, cursor)
  if (decoded !== undefined && !decoded.ok) return fail(400, "cursor")
  const after = decoded?.position
  const statement = eventListStatement({ orgId, filters: { type }, after, fetch: limit + 1 })
  const rows = (await sql.unsafe(statement.text, [...statement.params])) as Array<EventRow>
  return json(page(rows, limit, scope, (r) => r.time, encodeEvent))
}

const server = Bun.serve({
  hostname: process.env.HOST ?? "127.0.0.1",
  port: Number(process.env.PORT ?? 0),
  async fetch(request) {
    const url = new URL(request.url)
    const orgId = url.searchParams.get("org") ?? ""
    if (!isId("organization", orgId)) return fail(404, "not found")
    try {
      if (url.pathname === "/v1/incidents") return await listIncidents(orgId, url.searchParams)
      if (url.pathname === "/v1/events") return await listEvents(orgId, url.searchParams)
      const single = /^\/v1\/incidents\/([^/]+)$/.exec(url.pathname)
      if (single?.[1]) return await getIncident(orgId, single[1])
      return fail(404, "not found")
    } catch (error) {
      console.error(error)
      return fail(500, "internal")
    }
  },
})

// Exit on SIGTERM (the runner's stop) through process.exit, so `bun --cpu-prof` writes the profile.
process.on("SIGTERM", () => {
  server.stop(true)
  process.exit(0)
})

console.log(JSON.stringify({ message: "baseline listening", annotations: { port: server.port } }))
