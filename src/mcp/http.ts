import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Context, Effect, Either, Runtime } from "effect"
import { authenticateRequest } from "../api/auth.ts"
import type { Caller, EventListParams, IncidentListParams } from "../api/contract/definition.ts"
import { makeReadQueries, type ReadQueries } from "../api/queries.ts"
import { problemBody } from "../domain/problem.ts"
import { AppConfig } from "../platform/config.ts"
import { problem, problemResponse } from "../platform/http/responses.ts"
import { RateLimiter } from "../platform/ratelimit/RateLimiter.ts"
import { KeyAuth } from "../repos/KeyAuth.ts"
import type { Backend, ProblemBody, ToolArgs, ToolName } from "./tools.ts"

/** The scopes whose tools the MCP door serves. */
const MCP_SCOPES = ["incidents:read", "events:read"] as const

/**
 * The MCP SDK (and zod beneath it) is loaded by the first POST /mcp, not at start-up: about 16 MiB of resident
 * memory that a server no agent talks to need not hold.
 */
let sdk:
  | Promise<{
      readonly makeMcpServer: typeof import("./tools.ts").makeMcpServer
      readonly Transport: typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js").WebStandardStreamableHTTPServerTransport
      readonly readRequestBody: typeof import("@modelcontextprotocol/sdk/server/requestBody.js").readRequestBody
    }>
  | undefined
const loadSdk = () =>
  (sdk ??= Promise.all([
    import("./tools.ts"),
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("@modelcontextprotocol/sdk/server/requestBody.js"),
  ]).then(([tools, http, body]) => ({
    makeMcpServer: tools.makeMcpServer,
    Transport: http.WebStandardStreamableHTTPServerTransport,
    readRequestBody: body.readRequestBody,
  })))

/**
 * `POST /mcp` on the API listener: MCP Streamable HTTP, stateless (no session: every POST stands alone) with JSON
 * responses, behind the API edge (per-IP limit, security headers, access log) and the same checks, in the same order,
 * as every endpoint: key (401 with WWW-Authenticate), Deception (403), a read scope (403), the per-key limit (429).
 * HTTP-level failures are problem documents; JSON-RPC errors stay JSON-RPC. The tools call the HttpApi handlers' own
 * query code (api/handlers.ts makeReadQueries) for the authenticated caller.
 */

export const MCP_PATH = "/mcp"
/** A JSON-RPC request to these tools is small; anything larger is refused before it is parsed. */
const MAX_BODY_BYTES = 64 * 1024

type CallerInfo = Context.Tag.Service<Caller>

const asProblem = (p: {
  readonly status: number
  readonly title: string
  readonly code: string
  readonly detail: string
}) => problemBody(p.status, p.title, p.code, p.detail) as ProblemBody

/** The tools' backend for one caller: the query code of the endpoints, run in the request's runtime. */
const localBackend = (queries: ReadQueries, caller: CallerInfo, runtime: Runtime.Runtime<never>): Backend => {
  type Problemish = { readonly status: number; readonly title: string; readonly code: string; readonly detail: string }
  const query = (tool: ToolName, args: ToolArgs): Effect.Effect<unknown, Problemish> => {
    switch (tool) {
      case "list_incidents":
        return queries.listIncidents(caller, args as typeof IncidentListParams.Type)
      case "get_incident":
        return queries.getIncident(caller, String(args.id))
      case "get_source":
        return queries.getSource(caller, String(args.ip))
      case "list_events":
        return queries.listEvents(caller, args as typeof EventListParams.Type)
      case "get_event":
        return queries.getEvent(caller, String(args.id))
      case "incident_changes":
        return queries.incidentChanges(caller, args)
      case "event_changes":
        return queries.eventChanges(caller, args)
    }
  }
  return {
    call: (tool, args) =>
      Runtime.runPromise(runtime)(
        Effect.either(query(tool, args)).pipe(
          Effect.map(
            Either.match({
              onLeft: (p) => ({ ok: false, problem: asProblem(p) }) as const,
              onRight: (body) => ({ ok: true, body: JSON.parse(JSON.stringify(body)) }) as const,
            }),
          ),
          Effect.catchAllDefect((defect) =>
            Effect.as(Effect.logError("mcp tool defect", defect), {
              ok: false,
              problem: problemBody(
                500,
                "Internal Server Error",
                "internal",
                "An unexpected error occurred. It has been logged.",
              ),
            } as const),
          ),
        ),
      ),
  }
}

/** HTTP statuses the MCP transport answers itself, as problem documents with our own words (never its echo). */
const TRANSPORT_PROBLEMS: Record<number, readonly [string, string, string]> = {
  400: ["Bad Request", "invalid_request", "The body must be one JSON-RPC 2.0 message (MCP Streamable HTTP)."],
  405: ["Method Not Allowed", "method_not_allowed", "The MCP endpoint takes POST only (stateless, no SSE stream)."],
  406: [
    "Not Acceptable",
    "not_acceptable",
    "Send Accept: application/json, text/event-stream (MCP Streamable HTTP); answers are JSON.",
  ],
  413: ["Content Too Large", "payload_too_large", `A request body may hold at most ${MAX_BODY_BYTES} bytes.`],
  415: ["Unsupported Media Type", "unsupported_media_type", "Send Content-Type: application/json."],
}

export const McpRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const auth = yield* KeyAuth
    const limiter = yield* RateLimiter
    const queries = yield* makeReadQueries
    const maxChars = (yield* AppConfig).mcpMaxResultChars

    const app = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method !== "POST") {
        const [title, code, detail] = TRANSPORT_PROBLEMS[405] ?? ["", "", ""]
        return problem(405, title, code, detail, { allow: "POST" })
      }
      // The MCP tools read incidents and events: a key with neither scope (an intelligence reader's) is refused here.
      const caller = yield* authenticateRequest(auth, limiter, request, MCP_SCOPES)
      const web = yield* HttpServerRequest.toWeb(request)
      const runtime = yield* Effect.runtime<never>()
      const backend = localBackend(queries, caller, runtime)
      // Stateless (no sessionIdGenerator): each POST is a whole exchange; the body is the API's JSON, serialized.
      const answer = yield* Effect.promise(async () => {
        const { makeMcpServer, Transport, readRequestBody } = await loadSdk()
        // The body is read here (bounded) to refuse a JSON-RPC batch: one POST carrying up to 100 messages would
        // count once against the rate limits. Protocol 2025-06-18 removed batching; the SDK's client never sends one.
        const read = await readRequestBody(web, MAX_BODY_BYTES)
        if (read.tooLarge) return { status: 413, body: "" }
        let parsedBody: unknown
        try {
          parsedBody = JSON.parse(read.text ?? "")
        } catch {
          return { status: 400, body: "" }
        }
        if (Array.isArray(parsedBody)) return { status: 400, body: "", batch: true }
        const server = makeMcpServer(backend, caller.scopes, maxChars)
        const transport = new Transport({
          enableJsonResponse: true,
          maxRequestBodySize: MAX_BODY_BYTES,
        })
        await server.connect(transport)
        try {
          const response = await transport.handleRequest(web, { parsedBody })
          return { status: response.status, body: await response.text() }
        } finally {
          await server.close()
        }
      })
      if ("batch" in answer) {
        const detail = "JSON-RPC batches are not accepted: send one message per POST (MCP 2025-06-18 removed batching)."
        return problem(400, "Bad Request", "invalid_request", detail)
      }
      if (answer.status >= 400) {
        const [title, code, detail] = TRANSPORT_PROBLEMS[answer.status] ?? TRANSPORT_PROBLEMS[400] ?? ["", "", ""]
        const status = TRANSPORT_PROBLEMS[answer.status] ? answer.status : 400
        return problem(status, title, code, detail, status === 405 ? { allow: "POST" } : {})
      }
      if (answer.body === "") return HttpServerResponse.empty({ status: answer.status })
      return HttpServerResponse.text(answer.body, {
        status: answer.status,
        contentType: "application/json; charset=utf-8",
      })
    }).pipe(
      Effect.catchTag("RequestError", () =>
        Effect.succeed(problem(400, "Bad Request", "invalid_request", "The request body could not be read.")),
      ),
      Effect.catchAll((p) => Effect.succeed(problemResponse(p))),
    )
    yield* router.all(MCP_PATH, app)
  }),
)
