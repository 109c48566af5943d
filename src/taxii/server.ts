import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { v5 as uuidv5 } from "uuid"
import { authenticateRequest } from "../api/auth.ts"
import type { OrgId } from "../domain/ids.ts"
import { openToken, sealToken } from "../domain/signedToken.ts"
import { STIX_ID_NAMESPACE, type StixObject } from "../domain/stix.ts"
import { Keys } from "../platform/keys.ts"
import { RateLimiter } from "../platform/ratelimit/RateLimiter.ts"
import { KeyAuth } from "../repos/KeyAuth.ts"
import { type CollectionEntry, makeTaxiiQueries } from "./queries.ts"

/**
 * A read-only TAXII 2.1 server on the API listener, for threat-intelligence platforms: discovery at /taxii2/, one API
 * root (/taxii2/api/) and one collection per organization, its objects the STIX objects of taxii/queries.ts. Behind
 * the API edge (per-IP limit, security headers, access log) and the API's checks in the API's order: key (Bearer, or
 * HTTP Basic with the key as the password), Deception, the intel:read scope, the per-key limit. Every answer is
 * `application/taxii+json;version=2.1`, errors included (TAXII error messages).
 */

export const TAXII_PREFIX = "/taxii2"
export const TAXII_CONTENT_TYPE = "application/taxii+json;version=2.1"
const STIX_MEDIA_TYPE = "application/stix+json;version=2.1"
const API_ROOT = `${TAXII_PREFIX}/api/`
export const TAXII_LIMIT_DEFAULT = 100
export const TAXII_LIMIT_MAX = 1000
/** match[id] and match[type] hold at most this many values. */
const MATCH_MAX = 100

/** The collection id of an organization: stable for ever (clients store it). */
export const collectionIdFor = (orgId: string): string => uuidv5(`taxii-collection:${orgId}`, STIX_ID_NAMESPACE)

class TaxiiError {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

const taxii = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: TAXII_CONTENT_TYPE, headers })

const errorResponse = (e: TaxiiError) =>
  taxii({ title: e.title, description: e.description, http_status: String(e.status) }, e.status, e.headers)

const badRequest = (description: string) => new TaxiiError(400, "Bad Request", description)
const notFound = (description: string) => new TaxiiError(404, "Not Found", description)

/** The client may ask for TAXII 2.1 (with or without the version) or anything; anything else is 406. */
export const acceptable = (accept: string | undefined): boolean => {
  if (accept === undefined || accept.trim() === "") return true
  return accept.split(",").some((range) => {
    const [type = "", ...params] = range.split(";").map((p) => p.trim().toLowerCase())
    if (type === "*/*" || type === "application/*") return true
    if (type !== "application/taxii+json") return false
    const version = params.find((p) => p.startsWith("version="))
    return version === undefined || version === "version=2.1"
  })
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/

const stamp = (ms: number) => new Date(ms).toISOString()

/** One query parameter, given at most once and at most 2,000 characters. */
const single = (params: URLSearchParams, name: string): string | undefined => {
  const all = params.getAll(name)
  if (all.length > 1) throw badRequest(`The parameter ${name} may be given once.`)
  const value = all[0]
  if (value !== undefined && value.length > 2000) throw badRequest(`The parameter ${name} is too long.`)
  return value
}

interface Filters {
  readonly addedAfterMs: number | undefined
  readonly ids: ReadonlyArray<string> | undefined
  readonly types: ReadonlyArray<string> | undefined
}

const readFilters = (params: URLSearchParams): Filters => {
  const addedAfter = single(params, "added_after")
  let addedAfterMs: number | undefined
  if (addedAfter !== undefined) {
    addedAfterMs = TIMESTAMP.test(addedAfter) ? Date.parse(addedAfter) : Number.NaN
    if (Number.isNaN(addedAfterMs)) {
      throw badRequest("added_after must be a timestamp such as 2026-01-31T12:00:00.000Z (UTC, with the Z).")
    }
  }
  const list = (name: string) => {
    const raw = single(params, name)
    if (raw === undefined) return undefined
    const values = raw.split(",").filter((v) => v !== "")
    if (values.length > MATCH_MAX) throw badRequest(`${name} may hold at most ${MATCH_MAX} values.`)
    return values
  }
  return { addedAfterMs, ids: list("match[id]"), types: list("match[type]") }
}

const readLimit = (params: URLSearchParams): number => {
  const raw = single(params, "limit")
  if (raw === undefined) return TAXII_LIMIT_DEFAULT
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw badRequest("limit must be a whole number of at least 1.")
  return Math.min(Number(raw), TAXII_LIMIT_MAX)
}

const versionOf = (o: StixObject): string => ("modified" in o ? o.modified : o.created)

const filtered = (entries: ReadonlyArray<CollectionEntry>, f: Filters) =>
  entries.filter(
    (e) =>
      (f.addedAfterMs === undefined || e.addedMs > f.addedAfterMs) &&
      (f.ids === undefined || f.ids.includes(e.object.id)) &&
      (f.types === undefined || f.types.includes(e.object.type)),
  )

export const TaxiiRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const auth = yield* KeyAuth
    const limiter = yield* RateLimiter
    const queries = yield* makeTaxiiQueries
    const key = (yield* Keys).derive("taxii-next-v1")

    /** `next`: the position after which the following page starts, bound to the organization and the filters. */
    const filterDigest = (orgId: string, endpoint: string, f: Filters) =>
      JSON.stringify([orgId, endpoint, f.addedAfterMs ?? null, f.ids ?? null, f.types ?? null])
    const page = (
      orgId: string,
      endpoint: string,
      entries: ReadonlyArray<CollectionEntry>,
      params: URLSearchParams,
    ) => {
      const filters = readFilters(params)
      const limit = readLimit(params)
      let rest = filtered(entries, filters)
      const next = single(params, "next")
      if (next !== undefined) {
        const fields = openToken(key, next)
        const [digest, addedMs, id] = fields ?? []
        if (
          digest !== filterDigest(orgId, endpoint, filters) ||
          typeof addedMs !== "number" ||
          typeof id !== "string"
        ) {
          throw badRequest("next is not valid here: pass the next value of the previous page, with the same filters.")
        }
        rest = rest.filter((e) => e.addedMs > addedMs || (e.addedMs === addedMs && e.object.id > id))
      }
      const items = rest.slice(0, limit)
      const more = rest.length > items.length
      const last = items[items.length - 1]
      const headers: Record<string, string> =
        items.length === 0
          ? {}
          : {
              "x-taxii-date-added-first": stamp(items[0]?.addedMs ?? 0),
              "x-taxii-date-added-last": stamp(last?.addedMs ?? 0),
            }
      const nextToken =
        more && last !== undefined
          ? sealToken(key, [filterDigest(orgId, endpoint, filters), last.addedMs, last.object.id])
          : undefined
      return { items, more, next: nextToken, headers }
    }

    const collectionOf = (orgId: string, orgName: string) => ({
      id: collectionIdFor(orgId),
      title: `${orgName} decoy sightings`.slice(0, 250),
      description:
        "What this organization's decoy sensors saw: indicators of the external addresses that contacted them, a " +
        "sighting per incident, the sensors and the ATT&CK techniques. Read-only.",
      can_read: true,
      can_write: false,
      media_types: [STIX_MEDIA_TYPE],
    })

    const route = (orgId: OrgId, path: string, params: URLSearchParams) =>
      Effect.gen(function* () {
        if (path === `${TAXII_PREFIX}/`) {
          return taxii({
            title: "Decoy sightings (TAXII 2.1)",
            description: "The STIX 2.1 objects this service publishes from what its decoys saw.",
            default: API_ROOT,
            api_roots: [API_ROOT],
          })
        }
        if (path === API_ROOT) {
          return taxii({
            title: "Decoy sightings",
            versions: [TAXII_CONTENT_TYPE],
            max_content_length: 0,
          })
        }
        const rest = path.startsWith(API_ROOT) ? path.slice(API_ROOT.length) : undefined
        const parts = rest === undefined || !rest.endsWith("/") ? undefined : rest.slice(0, -1).split("/")
        if (parts === undefined || parts[0] !== "collections") {
          return yield* Effect.fail(notFound("No such TAXII resource. Discovery is at /taxii2/."))
        }
        const load = queries.load(orgId)
        if (parts.length === 1) {
          const { orgName } = yield* load
          return taxii({ collections: [collectionOf(orgId, orgName)] })
        }
        if (parts[1] !== collectionIdFor(orgId)) {
          return yield* Effect.fail(notFound("No such collection for this API key's organization."))
        }
        const { orgName, entries } = yield* load
        const [, , what, objectId, versions] = parts
        if (parts.length === 2) return taxii(collectionOf(orgId, orgName))
        if (what === "objects" && parts.length === 3) {
          const p = page(orgId, "objects", entries, params)
          return taxii(
            {
              more: p.more,
              ...(p.next === undefined ? {} : { next: p.next }),
              ...(p.items.length === 0 ? {} : { objects: p.items.map((e) => e.object) }),
            },
            200,
            p.headers,
          )
        }
        if (what === "manifest" && parts.length === 3) {
          const p = page(orgId, "manifest", entries, params)
          return taxii(
            {
              more: p.more,
              ...(p.next === undefined ? {} : { next: p.next }),
              ...(p.items.length === 0
                ? {}
                : {
                    objects: p.items.map((e) => ({
                      id: e.object.id,
                      date_added: stamp(e.addedMs),
                      version: versionOf(e.object),
                      media_type: STIX_MEDIA_TYPE,
                    })),
                  }),
            },
            200,
            p.headers,
          )
        }
        if (what === "objects" && objectId !== undefined && (parts.length === 4 || versions === "versions")) {
          if (parts.length > 5) return yield* Effect.fail(notFound("No such TAXII resource."))
          const entry = entries.find((e) => e.object.id === objectId)
          if (entry === undefined) return yield* Effect.fail(notFound("No such object in this collection."))
          const headers = {
            "x-taxii-date-added-first": stamp(entry.addedMs),
            "x-taxii-date-added-last": stamp(entry.addedMs),
          }
          if (parts.length === 4) return taxii({ more: false, objects: [entry.object] }, 200, headers)
          return taxii({ more: false, versions: [versionOf(entry.object)] }, 200, headers)
        }
        return yield* Effect.fail(notFound("No such TAXII resource."))
      })

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const url = new URL(request.url, "http://taxii.invalid")
      const caller = yield* authenticateRequest(auth, limiter, request, "intel:read", { basic: true }).pipe(
        Effect.mapError((p) =>
          p.status === 401
            ? new TaxiiError(
                401,
                "Unauthorized",
                `${p.detail} TAXII clients may also send HTTP Basic with the API key as the password.`,
                {
                  "www-authenticate": 'Basic realm="taxii"',
                },
              )
            : new TaxiiError(p.status, p.title, p.detail),
        ),
      )
      if (request.method !== "GET" && request.method !== "HEAD") {
        return yield* Effect.fail(
          new TaxiiError(405, "Method Not Allowed", "This TAXII server is read-only: only GET is allowed.", {
            allow: "GET, HEAD",
          }),
        )
      }
      if (!acceptable(request.headers.accept)) {
        return yield* Effect.fail(
          new TaxiiError(406, "Not Acceptable", `Send Accept: ${TAXII_CONTENT_TYPE}: the only media type served.`),
        )
      }
      // Parameter checks throw a TaxiiError: it becomes its answer here.
      return yield* route(caller.orgId, url.pathname, url.searchParams).pipe(
        Effect.catchAllDefect((d) => (d instanceof TaxiiError ? Effect.fail(d) : Effect.die(d))),
      )
    }).pipe(
      Effect.catchAll((e) =>
        Effect.succeed(
          e instanceof TaxiiError
            ? errorResponse(e)
            : "status" in e && typeof e.status === "number" && e.status === 503
              ? errorResponse(
                  new TaxiiError(503, "Service Unavailable", "The database is busy or unreachable. Retry shortly."),
                )
              : errorResponse(
                  new TaxiiError(500, "Internal Server Error", "An unexpected error occurred. It has been logged."),
                ),
        ),
      ),
    )
    yield* router.all(TAXII_PREFIX, app)
    yield* router.all(`${TAXII_PREFIX}/*`, app)
  }),
)
