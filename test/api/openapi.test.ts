import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import fc from "fast-check"
import { EVENT_TYPE_NAMES } from "../../src/domain/eventTypes.ts"
import { ID_PREFIXES, isId, newId } from "../../src/domain/ids.ts"
import { IncidentStatus } from "../../src/domain/models.ts"
import { SEVERITIES } from "../../src/domain/severity.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant, get, seedIncident, setDeception } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase
let key: string
/** A second server that allows 2 requests a window (D11), for the 429s; the test runner is its trusted proxy. */
let limited: RunningServer
let limitedDb: TestDatabase
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document is walked field by field
type J = any
let doc: J

beforeAll(async () => {
  // Started together; one that did start is stopped by afterAll even when the other did not.
  const [main, second] = await Promise.allSettled([
    startServer(),
    startServer({ env: await testEnv({ RATE_LIMIT: "2", TRUST_PROXY: "127.0.0.1/32,::1/128" }) }),
  ])
  if (main.status === "fulfilled") server = main.value
  if (second.status === "fulfilled") limited = second.value
  if (main.status === "rejected") throw main.reason
  if (second.status === "rejected") throw second.reason
  db = testDatabase(server.env)
  limitedDb = testDatabase(limited.env)
  ;({ key } = await createTenant(db))
  doc = (await get(server.url, "/openapi.json")).body
})

afterAll(() => Promise.all([shutdown(server, db), shutdown(limited, limitedDb)]))

/** `#/components/...` references followed to their target; a dangling one fails the test. */
const resolve = (node: J): J => {
  let current = node
  for (let hops = 0; current !== undefined && typeof current.$ref === "string"; hops++) {
    if (hops > 20) throw new Error(`reference loop at ${node.$ref}`)
    const target = (current.$ref as string)
      .replace(/^#\//, "")
      .split("/")
      .reduce((at: J, part: string) => at?.[part], doc)
    if (target === undefined) throw new Error(`dangling reference ${current.$ref}`)
    current = target
  }
  return current
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
const KEYWORDS = new Set([
  "$ref",
  "$id",
  "type",
  "enum",
  "anyOf",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "pattern",
  "format",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "description",
  "title",
  "default",
  "examples",
])

/**
 * The JSON Schema keywords this document uses, checked against a value: what the server sent must be what the
 * document says. Any other keyword fails, so a schema this checker cannot judge never passes silently.
 */
const conform = (node: J, value: unknown, where: string, errors: Array<string>): void => {
  const schema = resolve(node)
  for (const keyword of Object.keys(schema)) if (!KEYWORDS.has(keyword)) errors.push(`${where}: keyword ${keyword}`)
  if (Array.isArray(schema.anyOf)) {
    const fits = schema.anyOf.some((alternative: J) => {
      const inner: Array<string> = []
      conform(alternative, value, where, inner)
      return inner.length === 0
    })
    if (!fits) errors.push(`${where}: ${JSON.stringify(value)} matches no alternative`)
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value))
    errors.push(`${where}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`)
  const actual =
    value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value
  if (schema.type !== undefined && schema.type !== actual && !(schema.type === "number" && actual === "integer")) {
    errors.push(`${where}: ${actual} where the document says ${schema.type}`)
    return
  }
  if (typeof value === "string") {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value))
      errors.push(`${where}: ${JSON.stringify(value)} does not match ${schema.pattern}`)
    if (schema.format === "date-time" && !(RFC3339.test(value) && !Number.isNaN(Date.parse(value))))
      errors.push(`${where}: ${JSON.stringify(value)} is not a date-time`)
    if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${where}: too short`)
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(`${where}: too long`)
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${where}: below ${schema.minimum}`)
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${where}: above ${schema.maximum}`)
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    value.forEach((item, i) => {
      conform(schema.items, item, `${where}[${i}]`, errors)
    })
  }
  if (actual === "object" && (schema.properties !== undefined || schema.required !== undefined)) {
    const record = value as Record<string, unknown>
    for (const name of schema.required ?? []) if (!(name in record)) errors.push(`${where}.${name}: missing`)
    for (const [name, inner] of Object.entries(record)) {
      if (schema.properties?.[name] !== undefined) conform(schema.properties[name], inner, `${where}.${name}`, errors)
      else if (schema.additionalProperties === false) errors.push(`${where}.${name}: not in the document`)
      else if (typeof schema.additionalProperties === "object")
        conform(schema.additionalProperties, inner, `${where}.${name}`, errors)
    }
  }
}

const OPERATIONS = [
  "/v1/incidents",
  "/v1/incidents/{id}",
  "/v1/events",
  "/v1/events/{id}",
  "/v1/incidents/changes",
  "/v1/events/changes",
  "/v1/sources/{ip}",
  "/v1/audit",
  "/v1/audit/changes",
] as const
type OperationPath = (typeof OPERATIONS)[number]
const operation = (path: OperationPath): J => doc.paths[path].get
const parameter = (path: OperationPath, name: string): J => operation(path).parameters.find((p: J) => p.name === name)

/** What the server answers, per status (D4, D10, D11 and the edge in api/edge.ts). */
const CODES: Record<string, ReadonlyArray<string>> = {
  "400": ["invalid_request"],
  "401": ["unauthorized"],
  "403": ["insufficient_scope", "feature_disabled"],
  "404": ["not_found"],
  "410": ["token_expired"],
  "414": ["uri_too_long"],
  "429": ["rate_limited"],
  "500": ["internal"],
  "503": ["unavailable"],
}
const COMMON = ["200", "401", "403", "414", "429", "500", "503"]
const RESPONSES: Record<OperationPath, ReadonlyArray<string>> = {
  "/v1/incidents": [...COMMON, "400"].sort(),
  "/v1/incidents/{id}": [...COMMON, "404"].sort(),
  "/v1/events": [...COMMON, "400"].sort(),
  "/v1/events/{id}": [...COMMON, "404"].sort(),
  // D32 change feeds.
  "/v1/incidents/changes": [...COMMON, "400", "410"].sort(),
  "/v1/events/changes": [...COMMON, "400", "410"].sort(),
  "/v1/sources/{ip}": [...COMMON, "400", "404"].sort(),
  "/v1/audit": [...COMMON, "400"].sort(),
  "/v1/audit/changes": [...COMMON, "400", "410"].sort(),
}
/** Headers the edge may send that the document describes per response. */
const DESCRIBED_HEADERS = ["ratelimit", "ratelimit-policy", "retry-after", "www-authenticate"]

const documentedHeaders = (response: J): Map<string, J> =>
  new Map(Object.entries(response.headers ?? {}).map(([name, header]) => [name.toLowerCase(), resolve(header)]))

describe("OpenAPI and docs", () => {
  test("GET /openapi.json needs no key and describes every endpoint, parameter, bound and error", async () => {
    const res = await get(server.url, "/openapi.json")
    expect(res.status).toBe(200)
    expect(res.body).toEqual(doc)
    expect(doc.openapi).toBe("3.1.0")
    // The JSON operations, and the firewall blocklist (plain text, its own checks in blocklist.test.ts).
    expect(Object.keys(doc.paths).sort()).toEqual([...OPERATIONS, "/v1/blocklist.txt"].sort())
    for (const path of OPERATIONS) expect(Object.keys(doc.paths[path])).toEqual(["get"])
    const list = "/v1/incidents"
    expect(parameter(list, "limit").schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 50 })
    expect(parameter(list, "status").schema).toMatchObject({ default: "all" })
    for (const name of ["sensorId", "severity", "type", "sourceIp", "incidentId", "from", "to", "limit", "cursor"]) {
      expect({ name, required: parameter("/v1/events", name)?.required }).toEqual({ name, required: false })
    }
    expect(parameter("/v1/events", "cursor").schema).toMatchObject({ type: "string", minLength: 1 })
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
    for (const [path, scope] of [
      ["/v1/incidents", "incidents:read"],
      ["/v1/incidents/{id}", "incidents:read"],
      ["/v1/events", "events:read"],
      ["/v1/events/{id}", "events:read"],
      ["/v1/incidents/changes", "incidents:read"],
      ["/v1/events/changes", "events:read"],
      ["/v1/sources/{ip}", "incidents:read"],
      ["/v1/audit", "audit:read"],
      ["/v1/audit/changes", "audit:read"],
    ] as const) {
      expect({ path, security: operation(path).security }).toEqual({ path, security: [{ bearer: [scope] }] })
    }
    const schemas = JSON.stringify(doc.components.schemas)
    for (const field of ["recommendedAction", "highConfidence", "resolvedAt", "attackerInput", "fingerprint"]) {
      expect(schemas).toContain(field)
    }
  })

  test("every reference resolves and every schema uses only keywords the conformance check judges", () => {
    const errors: Array<string> = []
    const walk = (node: unknown, where: string): void => {
      if (node === null || typeof node !== "object") return
      for (const [name, inner] of Object.entries(node)) {
        if (name === "$ref") {
          try {
            resolve(node)
          } catch (error) {
            errors.push(`${where}: ${(error as Error).message}`)
          }
        } else walk(inner, `${where}/${name}`)
      }
    }
    walk(doc, "#")
    for (const [name, schema] of Object.entries(doc.components.schemas)) conform(schema, undefined, name, errors)
    expect(errors.filter((e) => e.includes("reference") || e.includes("keyword"))).toEqual([])
  })

  test("enums equal the server's value sets (status, severity, type) and the server takes exactly those", async () => {
    expect(parameter("/v1/incidents", "status").schema.enum).toEqual([...IncidentStatus.literals, "all"])
    expect(parameter("/v1/events", "severity").schema.enum).toEqual([...SEVERITIES])
    expect(parameter("/v1/events", "type").schema.enum).toEqual([...EVENT_TYPE_NAMES])
    const accepted = async (path: string) => (await get(server.url, path, key)).status
    for (const status of parameter("/v1/incidents", "status").schema.enum) {
      expect({ status, answer: await accepted(`/v1/incidents?status=${status}`) }).toEqual({ status, answer: 200 })
    }
    for (const name of ["severity", "type"]) {
      for (const value of parameter("/v1/events", name).schema.enum) {
        const answer = await accepted(`/v1/events?${name}=${encodeURIComponent(value)}`)
        expect({ name, value, answer }).toEqual({ name, value, answer: 200 })
      }
      expect(await accepted(`/v1/events?${name}=unknown.value`)).toBe(400)
    }
    expect(await accepted("/v1/incidents?status=pending")).toBe(400)
  })

  test("id parameters carry the id pattern the server accepts; sourceIp says IPv4 or IPv6", async () => {
    const patterns: Array<[OperationPath, string, keyof typeof ID_PREFIXES]> = [
      ["/v1/incidents/{id}", "id", "incident"],
      ["/v1/events/{id}", "id", "event"],
      ["/v1/events", "sensorId", "sensor"],
      ["/v1/events", "incidentId", "incident"],
    ]
    for (const [path, name, kind] of patterns) {
      const pattern = new RegExp(parameter(path, name).schema.pattern)
      expect(pattern.test(newId(kind))).toBe(true)
      // The documented pattern and the server's own check (isId) agree on ids, near-ids and any text.
      const nearId = fc
        .tuple(fc.constantFrom(...Object.values(ID_PREFIXES), "", "INC"), fc.constantFrom("_", "-", ""), fc.string())
        .map(([prefix, sep, rest]) => `${prefix}${sep}${rest}`)
      const mutated = fc
        .tuple(fc.nat(30), fc.constantFrom("I", "L", "O", "U", "a", "0", "Z", "_", ""))
        .map(([at, c]) => {
          const id = newId(kind)
          const i = ID_PREFIXES[kind].length + 1 + (at % 26)
          return `${id.slice(0, i)}${c}${id.slice(i + 1)}`
        })
      fc.assert(
        fc.property(fc.oneof(fc.string(), nearId, mutated), (text) => pattern.test(text) === isId(kind, text)),
        { numRuns: 500 },
      )
    }
    expect(parameter("/v1/incidents/{id}", "id").required).toBe(true)
    expect(parameter("/v1/events/{id}", "id").required).toBe(true)
    const sourceIp = parameter("/v1/events", "sourceIp")
    expect(sourceIp.description).toContain("IPv4")
    expect(sourceIp.description).toContain("IPv6")
    // A malformed sensorId is a 400, a malformed path id a 404 (D1), as the parameters' descriptions say.
    expect((await get(server.url, "/v1/events?sensorId=sen_x", key)).status).toBe(400)
    expect(parameter("/v1/events/{id}", "id").description).toContain("404")
  })

  test("response timestamps and from/to are strings with format date-time", () => {
    const timestamps: Array<[string, string]> = [
      ["IncidentSummary", "firstSeenAt"],
      ["IncidentSummary", "lastSeenAt"],
      ["Incident", "firstSeenAt"],
      ["Incident", "lastSeenAt"],
      ["Event", "time"],
    ]
    for (const [schema, field] of timestamps) {
      const property = resolve(doc.components.schemas[schema].properties[field])
      expect({ schema, field, property }).toMatchObject({
        schema,
        field,
        property: { type: "string", format: "date-time" },
      })
      expect(property.description).toContain("milliseconds")
    }
    for (const schema of ["IncidentSummary", "Incident"]) {
      const resolvedAt = doc.components.schemas[schema].properties.resolvedAt
      expect(resolvedAt.anyOf.map(resolve)).toMatchObject([{ type: "string", format: "date-time" }, { type: "null" }])
    }
    for (const name of ["from", "to"]) {
      const p = parameter("/v1/events", name)
      expect(p.schema).toMatchObject({ type: "string", format: "date-time" })
      expect(p.description).toContain("RFC 3339")
      expect(p.description).toContain("zone")
    }
    expect(JSON.stringify(doc)).not.toContain("DateFromString")
    expect(JSON.stringify(doc)).not.toContain("a string to be decoded into a Date")
  })

  test("exactly the responses the server sends; every error is application/problem+json with its problem body", () => {
    expect(JSON.stringify(doc)).not.toContain("HttpApiDecodeError")
    for (const path of OPERATIONS) {
      const responses = operation(path).responses
      expect({ path, statuses: Object.keys(responses).sort() }).toEqual({ path, statuses: [...RESPONSES[path]] })
      expect(Object.keys(responses[200].content)).toEqual(["application/json"])
      for (const [status, response] of Object.entries<J>(responses)) {
        if (Number(status) < 400) continue
        const where = `${path} ${status}`
        expect({ where, types: Object.keys(response.content) }).toEqual({ where, types: ["application/problem+json"] })
        const schema = resolve(response.content["application/problem+json"].schema)
        expect({ where, required: [...schema.required].sort() }).toEqual({
          where,
          required: ["code", "detail", "status", "title", "type"],
        })
        expect({ where, closed: schema.additionalProperties }).toEqual({ where, closed: false })
        const properties = schema.properties
        expect({ where, status: properties.status.enum }).toEqual({ where, status: [Number(status)] })
        expect({ where, codes: properties.code.enum }).toEqual({ where, codes: CODES[status] })
        expect({ where, type: properties.type.enum }).toEqual({ where, type: ["about:blank"] })
        expect(properties.title.enum).toHaveLength(1)
        expect(properties.detail.type).toBe("string")
        expect(response.description.length).toBeGreaterThan(0)
      }
    }
  })

  test("RateLimit headers on every response, Retry-After on 429 (and on 503 when the database is busy), WWW-Authenticate on 401", () => {
    for (const path of OPERATIONS) {
      for (const [status, response] of Object.entries<J>(operation(path).responses)) {
        const headers = documentedHeaders(response)
        const expected = ["ratelimit", "ratelimit-policy"]
        if (status === "401") expected.push("www-authenticate")
        if (status === "429" || status === "503") expected.push("retry-after")
        expect({ path, status, headers: [...headers.keys()].sort() }).toEqual({
          path,
          status,
          headers: expected.sort(),
        })
        for (const [name, header] of headers)
          expect({ name, required: header.required }).toEqual({ name, required: true })
      }
      const retryAfter = documentedHeaders(operation(path).responses[429]).get("retry-after")
      expect(retryAfter.schema).toEqual({ type: "integer", minimum: 1 })
      const challenge = documentedHeaders(operation(path).responses[401]).get("www-authenticate")
      expect(challenge.schema.enum).toEqual(['Bearer realm="incident-api"'])
    }
  })

  test("GET /docs serves a readable reference without a key", async () => {
    const res = await fetch(`${server.url}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/html")
    const html = await res.text()
    expect(html).toContain("openapi")
    // The reference page embeds the same (transformed) document.
    expect(html).toContain("application/problem+json")
    expect(html).not.toContain("HttpApiDecodeError")
  })
})

describe("the document against the running server's answers", () => {
  test("every documented response of every operation (but 500/503) is answered as documented: status, content type, body, headers", async () => {
    // Two organizations' data and keys of every kind the checks need (D10: key, Deception, scope).
    const tenant = await createTenant(db, "Conformance")
    const sensor = await createSensor(db, tenant.orgId)
    const open = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "203.0.113.9",
      events: [
        { time: new Date("2026-03-01T10:00:00.123Z"), type: "ssh.login_attempt", username: "<b>admin</b>" },
        { time: new Date("2026-03-01T10:01:00.000Z"), type: "ssh.command" },
      ],
    })
    const closed = await seedIncident(db, {
      orgId: tenant.orgId,
      sensorId: sensor.id,
      sourceIp: "2001:db8::9",
      status: "closed",
      resolvedAt: new Date("2026-03-02T00:00:00.000Z"),
      events: [{ time: new Date("2026-03-01T09:00:00.000Z"), type: "http.request" }],
    })
    const eventsOnly = (await createKey(db, tenant.orgId, "events:read")).key
    const incidentsOnly = (await createKey(db, tenant.orgId, "incidents:read")).key
    const dark = await createTenant(db, "Dark")
    await setDeception(db, dark.orgId, "off")
    const eventId = open.events[0]?.id ?? ""
    const longQuery = `?q=${"a".repeat(9000)}`

    const exercised = new Set<string>()
    const problems: Array<string> = []
    const check = async (
      base: string,
      path: OperationPath,
      url: string,
      expected: number,
      headers: Record<string, string> = {},
    ) => {
      const res = await fetch(`${base}${url}`, { headers })
      const where = `${path} ${url.slice(0, 120)} -> ${res.status}`
      if (res.status !== expected) problems.push(`${where}: expected ${expected}`)
      const response = operation(path).responses[String(res.status)]
      if (response === undefined) {
        problems.push(`${where}: status not in the document`)
        return
      }
      exercised.add(`${path} ${res.status}`)
      const [mediaType] = Object.keys(response.content)
      if (res.headers.get("content-type")?.split(";")[0] !== mediaType)
        problems.push(`${where}: content type ${res.headers.get("content-type")}, documented ${mediaType}`)
      conform(response.content[mediaType as string].schema, await res.json(), where, problems)
      const documented = documentedHeaders(response)
      for (const name of DESCRIBED_HEADERS) {
        const value = res.headers.get(name)
        const header = documented.get(name)
        if (header === undefined) {
          if (value !== null) problems.push(`${where}: sends ${name}, not in the document`)
          continue
        }
        if (value === null) {
          if (header.required) problems.push(`${where}: documented ${name} missing`)
          continue
        }
        const typed = header.schema.type === "integer" && /^[0-9]+$/.test(value) ? Number(value) : value
        conform(header.schema, typed, `${where} header ${name}`, problems)
      }
    }
    const auth = (k: string) => ({ authorization: `Bearer ${k}` })
    const base = server.url

    // 200s, with every filter and both incident states (resolvedAt null and a timestamp).
    await check(base, "/v1/incidents", "/v1/incidents", 200, auth(tenant.key))
    await check(base, "/v1/incidents", "/v1/incidents?status=closed&limit=1", 200, auth(tenant.key))
    await check(base, "/v1/incidents/{id}", `/v1/incidents/${open.incident.id}`, 200, auth(tenant.key))
    await check(base, "/v1/incidents/{id}", `/v1/incidents/${closed.incident.id}`, 200, auth(tenant.key))
    await check(base, "/v1/events", "/v1/events?limit=1", 200, auth(tenant.key))
    const filters = new URLSearchParams({
      sensorId: sensor.id,
      incidentId: open.incident.id,
      severity: open.events[0]?.severity ?? "low",
      type: "ssh.login_attempt",
      sourceIp: "203.0.113.9",
      from: "2026-03-01T11:00:00+01:00",
      to: "2026-03-01T10:00:59.999999Z",
    })
    await check(base, "/v1/events", `/v1/events?${filters}`, 200, auth(tenant.key))
    await check(base, "/v1/events/{id}", `/v1/events/${eventId}`, 200, auth(tenant.key))
    // 400s: bounds, enums, malformed ids and times, repeated parameters, cursors (D5).
    for (const query of ["limit=0", "limit=101", "status=pending", "cursor=", "cursor=abc", "limit=1&limit=2"]) {
      await check(base, "/v1/incidents", `/v1/incidents?${query}`, 400, auth(tenant.key))
    }
    for (const query of [
      "type=nope",
      "severity=huge",
      "sensorId=sen_x",
      "incidentId=evt_x",
      "sourceIp=1.2.3",
      "from=2026-01-01",
      "to=yesterday",
    ]) {
      await check(base, "/v1/events", `/v1/events?${query}`, 400, auth(tenant.key))
    }
    // The audit trail: a key with audit:read, its list with every filter, and refused filters.
    const auditKey = (await createKey(db, tenant.orgId, "audit:read")).key
    await check(base, "/v1/audit", "/v1/audit", 200, auth(auditKey))
    const auditFilters = new URLSearchParams({
      actor: "cli",
      action: "key.create",
      from: "2026-01-01T00:00:00Z",
      to: "2100-01-01T00:00:00+01:00",
      limit: "1",
    })
    await check(base, "/v1/audit", `/v1/audit?${auditFilters}`, 200, auth(auditKey))
    for (const query of ["actor=nobody", "action=Key.Create", "from=yesterday", "limit=0", "cursor=abc"]) {
      await check(base, "/v1/audit", `/v1/audit?${query}`, 400, auth(auditKey))
    }
    // D32 feeds: 200 (incidents as of their change, events) and 400 (bad token, bad from, after with from).
    for (const feed of ["/v1/incidents/changes", "/v1/events/changes", "/v1/audit/changes"] as const) {
      const feedKey = feed === "/v1/audit/changes" ? auditKey : tenant.key
      await check(base, feed, `${feed}?limit=2`, 200, auth(feedKey))
      for (const query of ["after=abc", "from=yesterday", "limit=0", "after=x&from=2026-01-01T00:00:00Z"]) {
        await check(base, feed, `${feed}?${query}`, 400, auth(feedKey))
      }
    }
    // D49 feeds: 410 token_expired for a token from before changes the retention purge deleted (its mark, set here).
    // A mark counts once it is below the horizon: once every older writer of the PostgreSQL server has ended.
    await olderWritersEnded(db)
    const feedTables = {
      "/v1/incidents/changes": "incident_changes",
      "/v1/events/changes": "events",
      "/v1/audit/changes": "audit_log",
    } as const
    for (const feed of ["/v1/incidents/changes", "/v1/events/changes", "/v1/audit/changes"] as const) {
      const feedKey = feed === "/v1/audit/changes" ? auditKey : tenant.key
      const token = (await get(base, `${feed}?limit=1`, feedKey)).body.nextToken as string
      await db.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`insert into feed_purges (org_id, feed, purged_xid, purged_seq)
            select org_id, ${feed.slice(4)}, change_xid, change_seq
            from ${sql(feedTables[feed])}
            where org_id = ${tenant.orgId} order by change_xid desc, change_seq desc limit 1
            on conflict do nothing`,
        ),
      )
      await check(base, feed, `${feed}?after=${encodeURIComponent(token)}`, 410, auth(feedKey))
    }
    const incidentScoped = (path: string) => path.startsWith("/v1/incidents") || path.startsWith("/v1/sources")
    for (const path of OPERATIONS) {
      const url = path
        .replace("{id}", path.startsWith("/v1/incidents") ? open.incident.id : eventId)
        .replace("{ip}", open.incident.sourceIp)
      // A key with every other scope but the endpoint's: the audit trail needs audit:read whatever else a key has.
      const other = path.startsWith("/v1/audit") ? tenant.key : incidentScoped(path) ? eventsOnly : incidentsOnly
      await check(base, path, url, 401)
      await check(base, path, url, 401, { authorization: "Bearer dsk_nope" })
      await check(base, path, url, 403, auth(other))
      await check(base, path, url, 403, auth(dark.key))
      await check(base, path, `${url}${longQuery}`, 414, auth(tenant.key))
    }
    // 404: malformed ids (D1), ids of the other kind, unknown ids, another organization's ids.
    for (const id of ["inc_x", "%20", eventId, newId("incident")]) {
      await check(base, "/v1/incidents/{id}", `/v1/incidents/${id}`, 404, auth(tenant.key))
    }
    await check(base, "/v1/incidents/{id}", `/v1/incidents/${open.incident.id}`, 404, auth(key))
    for (const id of ["evt_x", open.incident.id, newId("event")]) {
      await check(base, "/v1/events/{id}", `/v1/events/${id}`, 404, auth(tenant.key))
    }
    // A source: its profile, a malformed address (400), one never seen and another organization's (404).
    await check(base, "/v1/sources/{ip}", `/v1/sources/${open.incident.sourceIp}`, 200, auth(tenant.key))
    await check(base, "/v1/sources/{ip}", "/v1/sources/not-an-address", 400, auth(tenant.key))
    await check(base, "/v1/sources/{ip}", "/v1/sources/192.0.2.251", 404, auth(tenant.key))
    await check(base, "/v1/sources/{ip}", `/v1/sources/${open.incident.sourceIp}`, 404, auth(key))

    // 429 from both limits (D11), on the server that allows 2 requests a window, each client its own address.
    const limitedTenant = await createTenant(limitedDb, "Limited")
    let address = 0
    const from = () => ({ "x-forwarded-for": `198.51.100.${++address}` })
    for (const path of OPERATIONS) {
      const url = path
        .replace("{id}", path.startsWith("/v1/incidents") ? newId("incident") : newId("event"))
        .replace("{ip}", "192.0.2.250")
      // The per-address limit: 401s count against it (D11).
      const client = from()
      await check(limited.url, path, url, 401, client)
      await check(limited.url, path, url, 401, client)
      await check(limited.url, path, url, 429, client)
      // The per-key limit, from fresh addresses.
      const perKey = (await createKey(limitedDb, limitedTenant.orgId, "incidents:read,events:read,audit:read")).key
      const listOrMissing = path.endsWith("{id}") || path.endsWith("{ip}") ? 404 : 200
      await check(limited.url, path, url, listOrMissing, { ...auth(perKey), ...from() })
      await check(limited.url, path, url, listOrMissing, { ...auth(perKey), ...from() })
      await check(limited.url, path, url, 429, { ...auth(perKey), ...from() })
    }

    expect(problems).toEqual([])
    // 500 and 503 need a failing database: the fault suite (faults/postgres-restart) answers them; their bodies are
    // the same problem shape, checked above in the document.
    const documented = OPERATIONS.flatMap((path) =>
      Object.keys(operation(path).responses)
        .filter((status) => status !== "500" && status !== "503")
        .map((status) => `${path} ${status}`),
    )
    expect([...exercised].sort()).toEqual(documented.sort())
  })
})

describe("security headers on every response", () => {
  test("successes, errors, unknown paths, read-only 405s and docs all carry them", async () => {
    const cases: Array<[string, RequestInit, number]> = [
      ["/v1/incidents", { headers: { authorization: `Bearer ${key}` } }, 200],
      ["/v1/incidents", {}, 401],
      ["/v1/events?limit=0", { headers: { authorization: `Bearer ${key}` } }, 400],
      ["/v1/events/evt_x", { headers: { authorization: `Bearer ${key}` } }, 404],
      ["/nope", {}, 404],
      ["/v1/incidents", { method: "POST", body: "{}" }, 405],
      ["/v1/incidents/inc_x", { method: "DELETE" }, 405],
      ["/openapi.json", {}, 200],
    ]
    for (const [path, init, status] of cases) {
      const res = await fetch(`${server.url}${path}`, init)
      expect({ path, status: res.status }).toEqual({ path, status })
      expect(res.headers.get("x-content-type-options")).toBe("nosniff")
      expect(res.headers.get("cache-control")).toBe("no-store")
      expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'")
      expect(res.headers.get("content-type")).toBe(
        status >= 400 ? "application/problem+json; charset=utf-8" : "application/json; charset=utf-8",
      )
      if (status >= 400) {
        const body = (await res.json()) as Record<string, unknown>
        expect(body.status).toBe(status)
        expect(typeof body.code).toBe("string")
      }
    }
    const docs = await fetch(`${server.url}/docs`)
    expect(docs.headers.get("x-content-type-options")).toBe("nosniff")
    expect(docs.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
  })

  test("405 answers carry Allow: GET, HEAD and change nothing", async () => {
    const res = await fetch(`${server.url}/v1/events`, { method: "PUT", body: "{}" })
    expect(res.status).toBe(405)
    expect(res.headers.get("allow")).toBe("GET, HEAD")
    expect(((await res.json()) as { code: string }).code).toBe("method_not_allowed")
  })
})

describe("oversized requests never crash the server", () => {
  test("a URL over 8 KiB gets a 414 problem; an oversized header Bun's 431; the server keeps serving", async () => {
    const long = await fetch(`${server.url}/v1/incidents?x=${"a".repeat(9000)}`, {
      headers: { authorization: `Bearer ${key}` },
    })
    expect(long.status).toBe(414)
    expect(long.headers.get("content-type")).toBe("application/problem+json; charset=utf-8")
    expect(long.headers.get("x-content-type-options")).toBe("nosniff")
    expect(((await long.json()) as { code: string }).code).toBe("uri_too_long")
    const huge = await fetch(`${server.url}/v1/incidents`, { headers: { "x-big": "b".repeat(200_000) } }).catch(
      () => undefined,
    )
    if (huge) expect(huge.status).toBe(431)
    expect((await get(server.url, "/v1/incidents", key)).status).toBe(200)
  })
})
