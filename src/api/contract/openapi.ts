import {
  Forbidden,
  Gone,
  InternalError,
  InvalidRequest,
  MAX_URL_LENGTH,
  NotFound,
  PROBLEM_CONTENT_TYPE,
  RateLimited,
  ServiceUnavailable,
  Unauthorized,
  URI_TOO_LONG,
  WWW_AUTHENTICATE,
} from "../../domain/problem.ts"
import type { Scope } from "../../domain/scopes.ts"

/**
 * The OpenAPI document as the server behaves. `OpenApi.fromApi` describes what the HttpApi itself
 * would do; the edge (api/edge.ts) and the handlers answer differently in a few ways, and this transform (an
 * `OpenApi.Transform` annotation of the HttpApi) writes those into the generated document:
 * - no `HttpApiDecodeError` 400: query parameters are taken as text and path ids as any string, so the HttpApi's
 *   decoding never fails; the handlers answer bad parameters with `invalid_request` problems and malformed ids with
 *   404;
 * - errors are `application/problem+json` (the edge re-types them) with a closed `{type, title, status, detail, code}`
 *   body whose `title` and `code` are enumerated per status;
 * - the edge's own 414 answer to a URL over MAX_URL_LENGTH characters;
 * - headers: `RateLimit`/`RateLimit-Policy` on every response, `Retry-After` on 429, `WWW-Authenticate` on 401;
 * - timestamps as `string`/`date-time` instead of the decoder's "DateFromString";
 * - the TAXII 2.1 server the same listener serves under /taxii2/ (its own protocol, outside the HttpApi): a paragraph
 *   of the description and `externalDocs` pointing at its discovery endpoint.
 * test/api/openapi.test.ts holds each point against the running server's answers.
 */

// Only the parts of the document this transform reads or writes.
type JsonSchema = Record<string, unknown>
interface Header {
  readonly description: string
  readonly required?: boolean
  readonly schema: JsonSchema
}
interface Response {
  description: string
  headers?: Record<string, Header | { readonly $ref: string }>
  content?: Record<string, { schema: JsonSchema }>
}
interface Operation {
  responses: Record<string, Response>
}
interface Doc {
  info: { description?: string } & Record<string, unknown>
  externalDocs?: { url: string; description: string }
  paths: Record<string, Record<string, Operation>>
  components: {
    schemas: Record<string, JsonSchema>
    headers?: Record<string, Header>
  } & Record<string, unknown>
}

/** Where the TAXII 2.1 server starts (its discovery endpoint), on the API's own listener. */
export const TAXII_DISCOVERY_PATH = "/taxii2/"
/** What the reference says of the TAXII 2.1 server, which the HttpApi does not describe. */
export const TAXII_REFERENCE =
  "TAXII 2.1: the same listener serves a read-only TAXII 2.1 server at `/taxii2/` (discovery, API root `/taxii2/api/`, one collection per organization) with the organization's threat intelligence as STIX 2.1 objects, each marked with the organization's TLP 2.0 level. It needs a key with the intel:read scope, as a Bearer token or as the password of HTTP Basic. It is described in the API guide, section \"TAXII 2.1 for threat-intelligence platforms\"."

/** The HttpApi's own decode failure, which this server never sends. */
const DECODE_ERROR = "HttpApiDecodeError"
/** What JSON Schema generation calls a Date's encoded side; the API's timestamps are documented as TIMESTAMP. */
const DATE_FROM_STRING = "DateFromString"
const TIMESTAMP = "Timestamp"
const URI_TOO_LONG_SCHEMA = "UriTooLong"
const URI_TOO_LONG_DESCRIPTION = `uri_too_long: the request URL is longer than ${MAX_URL_LENGTH} characters`
/** The description fromApi gives a response whose schema includes HttpApiDecodeError. */
const DECODE_ERROR_DESCRIPTION = "The request did not match the expected schema"

const ref = (component: string) => `#/components/schemas/${component}`

/**
 * Every problem the API's handlers and middleware construct, from the constructors they call: per status the one
 * title and every code. The edge's own 404, 429 and 500 answers use the same titles and codes; its 414 is added below.
 */
const PROBLEMS_SENT = [
  InvalidRequest.of(""),
  Unauthorized.of(""),
  Forbidden.insufficientScope(""),
  Forbidden.featureDisabled(),
  NotFound.of(""),
  Gone.tokenExpired(),
  RateLimited.of(""),
  InternalError.of(),
  ServiceUnavailable.of(),
  ServiceUnavailable.busy(),
]

interface ProblemKind {
  readonly title: string
  readonly codes: ReadonlyArray<string>
}
const PROBLEMS: ReadonlyMap<number, ProblemKind> = (() => {
  const byStatus = new Map<number, { title: string; codes: Array<string> }>()
  for (const p of PROBLEMS_SENT) {
    const kind = byStatus.get(p.status) ?? { title: p.title, codes: [] }
    if (!kind.codes.includes(p.code)) kind.codes.push(p.code)
    byStatus.set(p.status, kind)
  }
  byStatus.set(414, { title: URI_TOO_LONG.title, codes: [URI_TOO_LONG.code] })
  return byStatus
})()

/** What `detail` says, per status: only a 400 names a parameter. */
const DETAIL_BY_STATUS: ReadonlyMap<number, string> = new Map([
  [400, "What went wrong, for a human: names the offending parameter and its allowed values"],
  [401, "Why the key was refused (missing, malformed, unknown, revoked or expired) and how to send one"],
  [403, "The scope the endpoint needs, or that the feature is off for the organization"],
  [404, "Which kind of record was not found in the caller's organization"],
  [410, "That the feed token is from before changes deleted under the retention windows, and to start again with from"],
  [414, "The longest request URL the API accepts"],
  [429, "That the rate limit was reached; Retry-After says when to try again"],
  [500, "A fixed message: nothing about the cause is disclosed"],
  [503, "Why the service cannot answer now (database unreachable or busy); retry after Retry-After seconds"],
])
const DETAIL_GENERIC = "What went wrong and what to do, for a human"

const problemSchema = (status: number, kind: ProblemKind, description: string): JsonSchema => ({
  type: "object",
  required: ["type", "title", "status", "detail", "code"],
  properties: {
    type: {
      type: "string",
      enum: ["about:blank"],
      description: "Always about:blank (RFC 9457 §4.2.1): `code` tells the cases apart",
    },
    title: { type: "string", enum: [kind.title], description: "The HTTP status phrase" },
    status: { type: "integer", enum: [status], description: "The HTTP status code" },
    detail: {
      type: "string",
      description: DETAIL_BY_STATUS.get(status) ?? DETAIL_GENERIC,
    },
    code: { type: "string", enum: [...kind.codes], description: "Stable snake_case error code" },
  },
  additionalProperties: false,
  description,
})

const HEADERS: Record<string, Header> = {
  RateLimit: {
    description:
      'The tighter of the two limits (per API key, per client address): `"default";r=<requests remaining>;t=<seconds until the window frees one>`',
    required: true,
    schema: { type: "string", pattern: '^"default";r=[0-9]+;t=[0-9]+$', examples: ['"default";r=119;t=60'] },
  },
  "RateLimit-Policy": {
    description: '`"default";q=<requests>;w=<window seconds>`, the same for every response',
    required: true,
    schema: { type: "string", pattern: '^"default";q=[0-9]+;w=[0-9]+$', examples: ['"default";q=120;w=60'] },
  },
  "Retry-After": {
    description: "Whole seconds until a request would be allowed again (at least 1); on a 503, when to try again",
    required: true,
    schema: { type: "integer", minimum: 1 },
  },
  "WWW-Authenticate": {
    description: "RFC 6750: the API takes a bearer API key",
    required: true,
    schema: { type: "string", enum: [WWW_AUTHENTICATE] },
  },
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })

/** The schemas referenced (transitively) from outside `components.schemas`; the rest are dropped. */
const referencedSchemas = (doc: Doc): Set<string> => {
  const found = new Set<string>()
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== "object") return
    if (Array.isArray(value)) {
      for (const item of value) visit(item)
      return
    }
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string" && inner.startsWith(ref(""))) {
        const name = inner.slice(ref("").length)
        if (!found.has(name)) {
          found.add(name)
          visit(doc.components.schemas[name])
        }
      } else visit(inner)
    }
  }
  visit({ ...doc, components: { ...doc.components, schemas: {} } })
  return found
}

/** Replaces every `$ref` to `from` by a `$ref` to `to`. */
const renameRefs = (value: unknown, from: string, to: string): void => {
  if (value === null || typeof value !== "object") return
  if (Array.isArray(value)) {
    for (const item of value) renameRefs(item, from, to)
    return
  }
  const record = value as Record<string, unknown>
  for (const [key, inner] of Object.entries(record)) {
    if (key === "$ref" && inner === ref(from)) record[key] = ref(to)
    else renameRefs(inner, from, to)
  }
}

/** The schema without the alternatives that are HttpApiDecodeError; undefined when nothing else is left. */
const withoutDecodeError = (schema: JsonSchema): JsonSchema | undefined => {
  if (schema.$ref === ref(DECODE_ERROR)) return undefined
  if (!Array.isArray(schema.anyOf)) return schema
  const rest = (schema.anyOf as Array<JsonSchema>).filter((s) => s.$ref !== ref(DECODE_ERROR))
  if (rest.length === 0) return undefined
  if (rest.length === 1 && rest[0] !== undefined) return rest[0]
  return { ...schema, anyOf: rest }
}

/** The problem component a response's schema names, with the status its `status` literal says. */
const problemComponent = (doc: Doc, schema: JsonSchema): { name: string; status: number } | undefined => {
  const target = typeof schema.$ref === "string" ? schema.$ref : undefined
  if (target === undefined || !target.startsWith(ref(""))) return undefined
  const name = target.slice(ref("").length)
  const status = (doc.components.schemas[name]?.properties as Record<string, JsonSchema> | undefined)?.status?.enum
  return Array.isArray(status) && typeof status[0] === "number" ? { name, status: status[0] } : undefined
}

/**
 * An endpoint's required scope in its security requirement (OpenAPI 3.1 lets a non-OAuth scheme list the roles it
 * needs) and in its description. Used as an `OpenApi.Transform` annotation of each endpoint of a group.
 */
export const requiresScope =
  (scope: Scope) =>
  (operation: Record<string, unknown>): Record<string, unknown> => {
    const security = (operation.security ?? []) as Array<Record<string, Array<string>>>
    const sentence = `Requires an API key with the scope ${scope}.`
    const description = typeof operation.description === "string" ? operation.description : undefined
    return {
      ...operation,
      security: security.map((requirement) => Object.fromEntries(Object.keys(requirement).map((n) => [n, [scope]]))),
      description:
        description === undefined ? sentence : description.includes(scope) ? description : `${description} ${sentence}`,
    }
  }

/**
 * The blocklist's own validators and caching, which the HttpApi cannot express: the ETag and Cache-Control of its
 * 200, the 304 an unchanged list gets, and the header a cut list carries. Used as the endpoint's `OpenApi.Transform`.
 */
export const describeBlocklist = (operation: Record<string, unknown>): Record<string, unknown> => {
  const responses = { ...(operation.responses as Record<string, Response>) }
  const etag: Header = {
    description: "A digest of the body; send it back in If-None-Match",
    required: true,
    schema: { type: "string" },
  }
  const ok = responses["200"]
  if (ok !== undefined) {
    responses["200"] = {
      ...ok,
      description: "One address a line (UTF-8 text/plain), sorted by address; empty when there is nothing to block",
      content: { "text/plain; charset=utf-8": { schema: { type: "string" } } },
      headers: {
        ETag: etag,
        "Cache-Control": {
          description: "no-cache: a cache may keep the list but must ask again (with If-None-Match) before using it",
          required: true,
          schema: { type: "string", enum: ["no-cache"] },
        },
        "Blocklist-Truncated": {
          description: "true when more sources than the list holds were seen: the most recently seen ones are kept",
          schema: { type: "string", enum: ["true"] },
        },
      },
    }
  }
  responses["304"] = {
    description: "If-None-Match named the list's current ETag: nothing changed, no body",
    headers: { ETag: etag },
  }
  const parameters = [...((operation.parameters ?? []) as Array<Record<string, unknown>>)]
  parameters.push({
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "The ETag of the list you hold: an unchanged list is answered 304 with no body",
    schema: { type: "string" },
  })
  return { ...operation, responses, parameters }
}

export const describeServer = (generated: Record<string, unknown>): Record<string, unknown> => {
  const doc = structuredClone(generated) as unknown as Doc
  const schemas = doc.components.schemas
  doc.components.headers = { ...doc.components.headers, ...HEADERS }
  doc.info.description = [doc.info.description, TAXII_REFERENCE].filter((d) => d !== undefined).join("\n\n")
  doc.externalDocs = { url: TAXII_DISCOVERY_PATH, description: "TAXII 2.1 server (discovery endpoint)" }

  schemas[URI_TOO_LONG_SCHEMA] = problemSchema(414, PROBLEMS.get(414) as ProblemKind, URI_TOO_LONG_DESCRIPTION)

  for (const item of Object.values(doc.paths)) {
    for (const operation of Object.values(item)) {
      const responses = operation.responses
      responses["414"] = {
        description: URI_TOO_LONG_DESCRIPTION,
        content: { "application/json": { schema: { $ref: ref(URI_TOO_LONG_SCHEMA) } } },
      }
      for (const [status, response] of Object.entries(responses)) {
        const code = Number(status)
        const media = response.content?.["application/json"]
        if (code >= 400 && media !== undefined) {
          const schema = withoutDecodeError(media.schema)
          if (schema === undefined) {
            delete responses[status]
            continue
          }
          // The edge re-types every JSON error body (edge.ts `secure`).
          response.content = { [PROBLEM_CONTENT_TYPE]: { schema } }
          const problem = problemComponent(doc, schema)
          const kind = PROBLEMS.get(code)
          // A problem class without a constructor in PROBLEMS_SENT keeps its generated schema (the test fails on it).
          if (problem !== undefined && problem.status === code && kind !== undefined) {
            const description = String(schemas[problem.name]?.description ?? kind.codes.join(", "))
            schemas[problem.name] = problemSchema(code, kind, description)
            if (response.description === DECODE_ERROR_DESCRIPTION) response.description = description
          }
        }
        response.headers = {
          ...response.headers,
          ...(code === 401 ? { "WWW-Authenticate": headerRef("WWW-Authenticate") } : {}),
          ...(code === 429 || code === 503 ? { "Retry-After": headerRef("Retry-After") } : {}),
          RateLimit: headerRef("RateLimit"),
          "RateLimit-Policy": headerRef("RateLimit-Policy"),
        }
      }
      operation.responses = Object.fromEntries(
        Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)),
      ) as Record<string, Response>
    }
  }

  if (schemas[DATE_FROM_STRING] !== undefined) {
    delete schemas[DATE_FROM_STRING]
    renameRefs(doc, DATE_FROM_STRING, TIMESTAMP)
    schemas[TIMESTAMP] = {
      type: "string",
      format: "date-time",
      description: "RFC 3339 UTC timestamp with milliseconds, e.g. 2026-11-21T15:57:42.053Z",
    }
  }

  const used = referencedSchemas(doc)
  for (const name of Object.keys(schemas)) if (!used.has(name)) delete schemas[name]
  return doc as unknown as Record<string, unknown>
}
