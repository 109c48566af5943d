/**
 * The conventional peer of the API benchmark: what a team would build instead of the service for the same three read
 * endpoints, a Node.js service on Fastify with the `pg` driver (bench-only dependencies). It runs the service's own
 * statements (src/repos: incidentListStatement, eventListStatement, incidentByIdStatement, eventMembersStatement) on
 * the same database and writes the same bytes (the service's encode… functions, page fitting and signed cursors),
 * behind the same key check (a `dsk_…` bearer token: key row read from api_keys with its organization, SHA-256 of the
 * secret compared in constant time, revoked, expired, scope and Deception checked; a verified key is kept for 60 s, as
 * the service's key cache keeps one) and a rate limit per key (@fastify/rate-limit, RATE_LIMIT per RATE_LIMIT_WINDOW).
 *
 * Node runs it from a bundle (bench/lib/proc.ts builds it with `bun build --target=node`, the three packages left
 * external), so no TypeScript loader is measured:
 *   DATABASE_URL=… SECRET_KEY=<hex> APP_URL=… PORT=0 node dist/bench-peer/fastify.mjs
 */
import rateLimit from "@fastify/rate-limit"
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify"
import pg from "pg"
import { page } from "../../src/api/paging.ts"
import { eventFilterDigestInput } from "../../src/api/params.ts"
import { deriveKey } from "../../src/domain/crypto.ts"
import { type CursorScope, decodeCursor, encodeCursor } from "../../src/domain/cursor.ts"
import { EVENT_TYPE_NAMES } from "../../src/domain/eventTypes.ts"
import { isId, type OrgId } from "../../src/domain/ids.ts"
import { API_KEY_TOKEN, bearerToken, parseToken, secretMatches } from "../../src/domain/secretToken.ts"
import { decodeSecretKey } from "../../src/platform/config.ts"
import { type EventRow, eventListStatement, eventMembersStatement } from "../../src/repos/EventsRepo.ts"
import { type IncidentRow, incidentByIdStatement, incidentListStatement } from "../../src/repos/IncidentsRepo.ts"
import { encodeEvent, encodeIncident, encodeIncidentSummary, serializedAnswer } from "../../src/repos/present.ts"
import { parseLimit, READ_HEADERS } from "../lib/readEndpoints.ts"

const secret = decodeSecretKey(process.env.SECRET_KEY ?? "")
if (secret === undefined) throw new Error("SECRET_KEY is required (hex or base64, 32+ bytes)")
const cursorKey = deriveKey(secret, "cursor-v1")
const appUrl = (process.env.APP_URL ?? "http://localhost:3000").replace(/\/+$/, "")
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? "", max: Number(process.env.POOL ?? 10) })
const types = new Set<string>(EVENT_TYPE_NAMES)
const INCIDENT_EVENTS_SHOWN = 200

class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code)
  }
}

interface Key {
  // Branded as read: the table's foreign key guarantees the kind.
  readonly orgId: OrgId
  readonly keyId: string
  readonly scopes: ReadonlyArray<string>
  readonly expiresAt: Date | null
  readonly at: number
}
const verified = new Map<string, Key>()
const KEY_CACHE_MS = 60_000

const authenticate = async (request: FastifyRequest, scope: string): Promise<Key> => {
  const token = bearerToken(request.headers.authorization)
  const parsed = token === undefined ? undefined : parseToken(API_KEY_TOKEN, token)
  if (parsed === undefined) throw new Problem(401, "unauthorized")
  const now = Date.now()
  let key = verified.get(token ?? "")
  if (key === undefined || now - key.at >= KEY_CACHE_MS) {
    const { rows } = await pool.query(
      `select k.id, k.org_id as "orgId", k.scopes, k.expires_at as "expiresAt", k.revoked_at as "revokedAt",
         k.secret_hash as "secretHash", o.deception_enabled as "deceptionEnabled"
       from api_keys k join organizations o on o.id = k.org_id where k.id = $1`,
      [parsed.id],
    )
    const row = rows[0]
    if (row === undefined || !secretMatches(parsed.secret, row.secretHash)) throw new Problem(401, "unauthorized")
    if (row.revokedAt !== null) throw new Problem(401, "unauthorized")
    if (!row.deceptionEnabled) throw new Problem(403, "deception_disabled")
    key = { orgId: row.orgId, keyId: row.id, scopes: row.scopes, expiresAt: row.expiresAt, at: now }
    verified.set(token ?? "", key)
  }
  if (key.expiresAt !== null && key.expiresAt.getTime() <= now) throw new Problem(401, "unauthorized")
  if (!key.scopes.includes(scope)) throw new Problem(403, "forbidden")
  return key
}

const limitOf = (raw: string | undefined): number => {
  const limit = parseLimit(raw)
  if (limit === undefined) throw new Problem(400, "invalid_parameter")
  return limit
}

const readAfter = (scope: CursorScope, cursor: string | undefined) => {
  if (cursor === undefined) return undefined
  const decoded = decodeCursor(cursorKey, scope, cursor)
  if (!decoded.ok) throw new Problem(400, "invalid_cursor")
  return decoded.position
}

type Query = Record<string, string | undefined>

const app = Fastify({ logger: false })
await app.register(rateLimit, {
  max: Number(process.env.RATE_LIMIT ?? 120),
  timeWindow: process.env.RATE_LIMIT_WINDOW ?? "1 minute",
  // Per key, as the service counts an authenticated client (the key id is in the token; the check comes after).
  keyGenerator: (request) =>
    parseToken(API_KEY_TOKEN, bearerToken(request.headers.authorization) ?? "")?.id ?? request.ip,
})
app.setErrorHandler((error, _request, reply) => {
  const status = error instanceof Problem ? error.status : ((error as { statusCode?: number }).statusCode ?? 500)
  if (status >= 500) console.error(error)
  reply
    .code(status)
    .headers({ ...READ_HEADERS, "content-type": "application/problem+json" })
    .send(JSON.stringify({ status, code: error instanceof Problem ? error.code : "error" }))
})
// A page's text was made while fitting it (as the service sends it); an incident is serialized here.
const send = (reply: FastifyReply, body: object) =>
  reply.headers(READ_HEADERS).send(serializedAnswer(body) ?? JSON.stringify(body))

app.get("/v1/incidents", async (request, reply) => {
  const key = await authenticate(request, "incidents:read")
  const q = request.query as Query
  const status = q.status
  if (status !== undefined && status !== "open" && status !== "closed") throw new Problem(400, "invalid_parameter")
  const limit = limitOf(q.limit)
  const scope: CursorScope = { endpoint: "incidents", orgId: key.orgId, filters: { status } }
  const after = readAfter(scope, q.cursor)
  const { text, params } = incidentListStatement({ orgId: key.orgId, status, after, fetch: limit + 1 })
  const { rows } = await pool.query<IncidentRow>(text, [...params])
  return send(
    reply,
    page(
      rows,
      limit,
      (r) => r.lastSeenAt,
      (r) => encodeIncidentSummary(r, appUrl),
      (at) => encodeCursor(cursorKey, scope, at),
    ),
  )
})

app.get("/v1/incidents/:id", async (request, reply) => {
  const key = await authenticate(request, "incidents:read")
  const { id } = request.params as { id: string }
  if (!isId("incident", id)) throw new Problem(404, "not_found")
  const one = incidentByIdStatement(key.orgId, id)
  const [row] = (await pool.query<IncidentRow>(one.text, [...one.params])).rows
  if (row === undefined) throw new Problem(404, "not_found")
  const members = eventMembersStatement(key.orgId, id, INCIDENT_EVENTS_SHOWN, false)
  const events = (await pool.query<EventRow>(members.text, [...members.params])).rows
  return send(reply, encodeIncident(row, events, appUrl))
})

app.get("/v1/events", async (request, reply) => {
  const key = await authenticate(request, "events:read")
  const q = request.query as Query
  const type = q.type
  if (type !== undefined && !types.has(type)) throw new Problem(400, "invalid_parameter")
  const limit = limitOf(q.limit)
  const scope: CursorScope = { endpoint: "events", orgId: key.orgId, filters: eventFilterDigestInput({ type }) }
  const after = readAfter(scope, q.cursor)
  const { text, params } = eventListStatement({ orgId: key.orgId, filters: { type }, after, fetch: limit + 1 })
  const { rows } = await pool.query<EventRow>(text, [...params])
  return send(
    reply,
    page(
      rows,
      limit,
      (r) => r.time,
      encodeEvent,
      (at) => encodeCursor(cursorKey, scope, at),
    ),
  )
})

const address = await app.listen({ host: process.env.HOST ?? "127.0.0.1", port: Number(process.env.PORT ?? 0) })
const port = Number(new URL(address).port)

process.on("SIGTERM", () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)))
})

console.log(JSON.stringify({ message: "peer listening", annotations: { port } }))
