import { FetchHttpClient } from "@effect/platform"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Either, Logger, Redacted } from "effect"
import {
  type ApiError,
  type EventFilters,
  type IncidentClient,
  type IncidentFilters,
  makeClient,
} from "../client/effect.ts"
import { problemBody } from "../domain/problem.ts"
import type { Scope } from "../domain/scopes.ts"
import { formatConfigError, mcpStdioConfig } from "../platform/config.ts"
import { type Backend, makeMcpServer, type ProblemBody, type ToolName } from "./tools.ts"

/**
 * `bun run mcp`: the MCP server over stdio for a desktop agent. It reads API_KEY and BASE_URL and calls the read API
 * through the TypeScript client (src/client), so it runs anywhere the API is reachable; the tools, their text and the
 * fence are those of POST /mcp (mcp/tools.ts). stdout carries JSON-RPC only: every log line goes to stderr.
 */

const log = (message: string, fields: Record<string, unknown> = {}) =>
  process.stderr.write(`${JSON.stringify({ level: "INFO", message, ...fields })}\n`)

const fail = (message: string): never => {
  process.stderr.write(`mcp: ${message}\n`)
  process.exit(1)
}

type Api = IncidentClient
type Args = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/**
 * The client's typed filters from the tool's raw arguments: the API validates them and answers a bad value with
 * its 400, exactly as for any other caller, so they are passed on as they came (the types only describe good ones).
 */
const asFilters = <F>(args: Args): F => args as unknown as F

/**
 * The endpoint behind each tool, through the client. The id is passed as it came: the client escapes it as one path
 * segment (`../` never walks to another endpoint), so escaping it here too would send it encoded twice.
 */
const request = (api: Api, tool: ToolName, args: Args): Effect.Effect<unknown, ApiError> => {
  const id = String(args.id ?? "")
  const cursor = typeof args.cursor === "string" ? args.cursor : undefined
  switch (tool) {
    case "list_incidents":
      return api.incidents.page(asFilters<IncidentFilters>(args), cursor)
    case "get_incident":
      return api.incidents.get(id)
    case "get_source":
      return api.incidents.source(String(args.ip ?? ""))
    case "list_events":
      return api.events.page(asFilters<EventFilters>(args), cursor)
    case "get_event":
      return api.events.get(id)
    case "incident_changes":
      return api.incidents.changes(asFilters<{ after?: string; from?: string; limit?: string }>(args))
    case "event_changes":
      return api.events.changes(asFilters<{ after?: string; from?: string; limit?: string }>(args))
  }
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
}

/** The API's problem (status, code, detail) as a tool error; no answer at all is a 503. */
const problemOf = (error: ApiError): ProblemBody => {
  const status = error.status === 0 ? 503 : error.status
  const code = error.status === 0 ? "unavailable" : error.code
  const detail =
    error.status === 0 ? "The API could not be reached (BASE_URL). Retry later." : error.detail || `HTTP ${status}`
  return problemBody(status, TITLES[status] ?? "Error", code, detail)
}

/** Runs the client's effects with logs on stderr (stdout is the JSON-RPC channel). */
const runEither = <A>(effect: Effect.Effect<A, ApiError>) =>
  Effect.runPromise(
    Effect.either(effect).pipe(
      Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))),
    ),
  )

/**
 * The tools' backend through the TypeScript client (src/client): the API's JSON (the client's decoded values written
 * back as JSON, the API's own encoding), its problem documents as tool errors. The client retries 429 after Retry-After
 * and 503 and connection failures with back-off.
 */
export const clientBackend = (api: Api): Backend => ({
  call: async (tool, args) => {
    const result = await runEither(request(api, tool, args))
    return Either.isRight(result)
      ? { ok: true, body: JSON.parse(JSON.stringify(result.right)) }
      : { ok: false, problem: problemOf(result.left) }
  },
})

/**
 * The key's scopes, learnt from the API (it has no endpoint that names them) on the first tools/list or call: a
 * one-item list per scope; 403 insufficient_scope means the key lacks it. A refused key or an unreachable API is
 * that request's JSON-RPC error (the agent sees the API's reason) and is asked again next time.
 */
const scopeProbe = (api: Api) => {
  let known: ReadonlyArray<Scope> | undefined
  return async (): Promise<ReadonlyArray<Scope>> => {
    if (known !== undefined) return known
    const scopes: Array<Scope> = []
    const probes: ReadonlyArray<readonly [Scope, Effect.Effect<unknown, ApiError>]> = [
      ["incidents:read", api.incidents.page({ limit: 1 }, undefined)],
      ["events:read", api.events.page({ limit: 1 }, undefined)],
    ]
    for (const [scope, probe] of probes) {
      const result = await runEither(probe)
      if (Either.isRight(result)) scopes.push(scope)
      else if (result.left.status !== 403 || result.left.code !== "insufficient_scope") {
        const p = problemOf(result.left)
        log("the API refused a request", { status: p.status, code: p.code })
        throw new McpError(
          ErrorCode.InternalError,
          `The API answered ${p.status} ${p.code}: ${p.detail} (check API_KEY)`,
        )
      }
    }
    known = scopes
    return scopes
  }
}

/** API_KEY, BASE_URL and MCP_MAX_RESULT_CHARS, read and checked as the server reads its settings; a bad one ends here. */
const readSettings = async () => {
  const settings = await Effect.runPromise(Effect.either(mcpStdioConfig))
  if (Either.isLeft(settings)) return fail(formatConfigError(settings.left))
  return { ...settings.right, apiKey: Redacted.value(settings.right.apiKey) }
}

if (import.meta.main) {
  const { apiKey, baseUrl, maxChars } = await readSettings()
  const api = await Effect.runPromise(makeClient({ baseUrl, apiKey }).pipe(Effect.provide(FetchHttpClient.layer)))
  const server = makeMcpServer(clientBackend(api), scopeProbe(api), maxChars)
  await server.connect(new StdioServerTransport())
  log("mcp stdio server ready", { baseUrl })
}
