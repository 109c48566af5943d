import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type { Scope } from "../repos/ApiKeysRepo.ts"
import { type Backend, DEFAULT_MAX_RESULT_CHARS, makeMcpServer, type ProblemBody, type ToolName } from "./tools.ts"

/**
 * `bun run mcp`: the MCP server over stdio for a desktop agent (D39). It reads API_KEY and BASE_URL and calls the
 * read API over HTTP, so it runs anywhere the API is reachable; the tools, their text and the fence are those of
 * POST /mcp (mcp/tools.ts). stdout carries JSON-RPC only: every log line goes to stderr.
 */

const log = (message: string, fields: Record<string, unknown> = {}) =>
  process.stderr.write(`${JSON.stringify({ level: "INFO", message, ...fields })}\n`)

const fail = (message: string): never => {
  process.stderr.write(`mcp: ${message}\n`)
  process.exit(1)
}

/** The endpoint (path and query) behind each tool; ids are path segments, escaped so they cannot leave theirs. */
const requestPath = (tool: ToolName, args: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>) => {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(args)) {
    if (name === "id" || value === undefined) continue
    for (const v of typeof value === "string" ? [value] : value) query.append(name, v)
  }
  const q = query.size > 0 ? `?${query}` : ""
  const id = encodeURIComponent(String(args.id ?? ""))
  switch (tool) {
    case "list_incidents":
      return `/v1/incidents${q}`
    case "get_incident":
      return `/v1/incidents/${id}`
    case "list_events":
      return `/v1/events${q}`
    case "get_event":
      return `/v1/events/${id}`
    case "incident_changes":
      return `/v1/incidents/changes${q}`
    case "event_changes":
      return `/v1/events/changes${q}`
  }
}

const MAX_TRIES = 4

/** The tools' backend over HTTP: the API's JSON as is, its problem documents as tool errors. */
export const httpBackend = (baseUrl: string, apiKey: string): Backend & { readonly get: typeof get } => {
  const get = async (path: string): Promise<{ status: number; body: unknown }> => {
    for (let attempt = 1; ; attempt++) {
      let response: Response
      try {
        response = await fetch(`${baseUrl}${path}`, {
          headers: { authorization: `Bearer ${apiKey}`, accept: "application/json" },
        })
      } catch (error) {
        if (attempt >= MAX_TRIES) throw error
        await Bun.sleep(500 * 2 ** attempt)
        continue
      }
      // 429 and 503 say when to come back (D11, D37): wait that long (at most 10 s) and try again.
      if ((response.status === 429 || response.status === 503) && attempt < MAX_TRIES) {
        const wait = Math.min(10, Number(response.headers.get("retry-after") ?? "1") || 1)
        await response.body?.cancel()
        await Bun.sleep(wait * 1000)
        continue
      }
      const text = await response.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {}
      return { status: response.status, body }
    }
  }
  return {
    get,
    call: async (tool, args) => {
      try {
        const { status, body } = await get(requestPath(tool, args))
        if (status === 200) return { ok: true, body }
        const p = body as Partial<ProblemBody>
        return {
          ok: false,
          problem: {
            type: typeof p?.type === "string" ? p.type : "about:blank",
            title: typeof p?.title === "string" ? p.title : "Error",
            status,
            detail: typeof p?.detail === "string" ? p.detail : `The API answered ${status}.`,
            code: typeof p?.code === "string" ? p.code : "internal",
          },
        }
      } catch {
        return {
          ok: false,
          problem: {
            type: "about:blank",
            title: "Service Unavailable",
            status: 503,
            detail: "The API could not be reached (BASE_URL). Retry later.",
            code: "unavailable",
          },
        }
      }
    },
  }
}

/**
 * The key's scopes, learnt from the API (it has no endpoint that names them) on the first tools/list or call: a
 * one-item list per scope; 403 insufficient_scope means the key lacks it. A refused key or an unreachable API is
 * that request's error (the agent sees the API's reason) and is asked again next time.
 */
const scopeProbe = (backend: ReturnType<typeof httpBackend>) => {
  let known: ReadonlyArray<Scope> | undefined
  return async (): Promise<ReadonlyArray<Scope>> => {
    if (known !== undefined) return known
    const scopes: Array<Scope> = []
    for (const [scope, path] of [
      ["incidents:read", "/v1/incidents?limit=1"],
      ["events:read", "/v1/events?limit=1"],
    ] as const) {
      let answer: { status: number; body: unknown }
      try {
        answer = await backend.get(path)
      } catch {
        throw new McpError(ErrorCode.InternalError, "The API could not be reached (BASE_URL). Retry later.")
      }
      const { status, body } = answer
      if (status === 200) scopes.push(scope)
      else if (status !== 403 || (body as { code?: unknown }).code !== "insufficient_scope") {
        const detail = (body as { detail?: unknown }).detail
        log("the API refused a request", { status })
        throw new McpError(
          ErrorCode.InternalError,
          `The API answered ${status}: ${typeof detail === "string" ? detail : "see its logs"} (check API_KEY)`,
        )
      }
    }
    known = scopes
    return scopes
  }
}

const readSettings = () => {
  const apiKey = (process.env.API_KEY ?? "").trim()
  if (apiKey === "") fail("API_KEY is required: an API key of the read API (dsk_<key id>_<secret>)")
  const rawUrl = (process.env.BASE_URL ?? "").trim()
  let baseUrl = ""
  try {
    const url = new URL(rawUrl)
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("scheme")
    baseUrl = url.toString().replace(/\/+$/, "")
  } catch {
    fail("BASE_URL is required: the read API's address, e.g. https://api.example.com")
  }
  // Decimal digits only, as the server reads it (config.ts): Number() would also take "1e3" or "0x10".
  const rawMax = (process.env.MCP_MAX_RESULT_CHARS ?? "").trim()
  if (rawMax !== "" && !/^[0-9]{1,9}$/.test(rawMax)) fail("MCP_MAX_RESULT_CHARS must be an integer of at least 1")
  const maxChars = rawMax === "" ? DEFAULT_MAX_RESULT_CHARS : Number(rawMax)
  if (maxChars < 1) fail("MCP_MAX_RESULT_CHARS must be an integer of at least 1")
  return { apiKey, baseUrl, maxChars }
}

if (import.meta.main) {
  const { apiKey, baseUrl, maxChars } = readSettings()
  const backend = httpBackend(baseUrl, apiKey)
  const server = makeMcpServer(backend, scopeProbe(backend), maxChars)
  await server.connect(new StdioServerTransport())
  log("mcp stdio server ready", { baseUrl })
}
