/**
 * A local Splunk HTTP Event Collector stand-in (HTTPS, Bun.serve, certificate from tls.ts) that applies HEC's
 * documented rules and answers with HEC's own status codes and bodies:
 *
 *   POST /services/collector/event, /services/collector/event/1.0, /services/collector (JSON event protocol)
 *   no Authorization header                  401 {"text":"Token is required","code":2}
 *   not "Splunk <token>"                     401 {"text":"Invalid authorization","code":3}
 *   an unknown token                         403 {"text":"Invalid token","code":4}
 *   an empty body                            400 {"text":"No data","code":5}
 *   not JSON objects, or `time` not a number 400 {"text":"Invalid data format","code":6,"invalid-event-number":n}
 *   an object without `event`                400 {"text":"Event field is required","code":12,"invalid-event-number":n}
 *   `event` null, "" or {}                   400 {"text":"Event field cannot be blank","code":13,"invalid-event-number":n}
 *   `fields` not flat (nested values)        400 {"text":"Error in handling indexed fields","code":15,...}
 *   otherwise                                200 {"text":"Success","code":0}
 *
 * A body may hold several JSON objects one after another (HEC's batch form). A request is accepted whole or not at
 * all (stricter than Splunk, which may index the events before the bad one): `accepted` holds the events of
 * accepted requests only, `requests` every request.
 */

export interface HecRequest {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  readonly status: number
  readonly answer: { readonly text: string; readonly code: number }
}

export interface HecReceiver {
  readonly url: string
  readonly port: number
  readonly token: string
  readonly requests: ReadonlyArray<HecRequest>
  /** Every event object of every accepted request, in order. */
  readonly accepted: ReadonlyArray<Readonly<Record<string, unknown>>>
  readonly stop: () => Promise<void>
}

const PATHS = new Set(["/services/collector/event", "/services/collector/event/1.0", "/services/collector"])

/** Splits HEC's batch form (JSON objects one after another, whitespace between) into the texts of its values. */
const splitConcatenated = (text: string): ReadonlyArray<string> | undefined => {
  const values: Array<string> = []
  let index = 0
  while (index < text.length) {
    while (index < text.length && /\s/.test(text[index] ?? "")) index++
    if (index >= text.length) break
    if (text[index] !== "{") return undefined
    const start = index
    let depth = 0
    let inString = false
    for (; index < text.length; index++) {
      const c = text[index]
      if (inString) {
        if (c === "\\") index++
        else if (c === '"') inString = false
      } else if (c === '"') inString = true
      else if (c === "{" || c === "[") depth++
      else if (c === "}" || c === "]") {
        depth--
        if (depth === 0) {
          index++
          break
        }
      }
    }
    if (depth !== 0) return undefined
    values.push(text.slice(start, index))
  }
  return values
}

const isBlank = (value: unknown): boolean =>
  value === null ||
  value === "" ||
  (typeof value === "object" && !Array.isArray(value) && Object.keys(value as object).length === 0)

const isFlat = (fields: unknown): boolean =>
  typeof fields === "object" &&
  fields !== null &&
  !Array.isArray(fields) &&
  Object.values(fields).every(
    (value) => typeof value === "string" || (Array.isArray(value) && value.every((v) => typeof v === "string")),
  )

type Verdict = { readonly status: number; readonly answer: { text: string; code: number; [k: string]: unknown } }

const check = (
  authorization: string | null,
  token: string,
  body: string,
): { readonly verdict: Verdict; readonly events: ReadonlyArray<Record<string, unknown>> } => {
  const refuse = (status: number, text: string, code: number, extra: Record<string, unknown> = {}) => ({
    verdict: { status, answer: { text, code, ...extra } },
    events: [],
  })
  if (authorization === null || authorization === "") return refuse(401, "Token is required", 2)
  const match = /^Splunk (\S+)$/.exec(authorization)
  if (match === null) return refuse(401, "Invalid authorization", 3)
  if (match[1] !== token) return refuse(403, "Invalid token", 4)
  if (body.trim() === "") return refuse(400, "No data", 5)
  const texts = splitConcatenated(body)
  if (texts === undefined) return refuse(400, "Invalid data format", 6, { "invalid-event-number": 0 })
  const events: Array<Record<string, unknown>> = []
  for (const [number, text] of texts.entries()) {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return refuse(400, "Invalid data format", 6, { "invalid-event-number": number })
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return refuse(400, "Invalid data format", 6, { "invalid-event-number": number })
    }
    const event = value as Record<string, unknown>
    if (!("event" in event)) return refuse(400, "Event field is required", 12, { "invalid-event-number": number })
    if (isBlank(event.event)) return refuse(400, "Event field cannot be blank", 13, { "invalid-event-number": number })
    if ("time" in event && typeof event.time !== "number") {
      return refuse(400, "Invalid data format", 6, { "invalid-event-number": number })
    }
    if ("fields" in event && !isFlat(event.fields)) {
      return refuse(400, "Error in handling indexed fields", 15, { "invalid-event-number": number })
    }
    events.push(event)
  }
  return { verdict: { status: 200, answer: { text: "Success", code: 0 } }, events }
}

export const startHecReceiver = (
  certificate: { readonly cert: string; readonly key: string },
  token: string,
): HecReceiver => {
  const requests: Array<HecRequest> = []
  const accepted: Array<Record<string, unknown>> = []
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { cert: certificate.cert, key: certificate.key },
    fetch: async (request) => {
      const url = new URL(request.url)
      const body = await request.text()
      const headers = Object.fromEntries(request.headers)
      const reply = (verdict: Verdict) => {
        requests.push({ path: url.pathname, headers, body, status: verdict.status, answer: verdict.answer })
        return Response.json(verdict.answer, { status: verdict.status })
      }
      if (!PATHS.has(url.pathname)) {
        return reply({ status: 404, answer: { text: "The requested URL was not found on this server.", code: 404 } })
      }
      if (request.method !== "POST") return reply({ status: 405, answer: { text: "Method Not Allowed", code: 405 } })
      const result = check(request.headers.get("authorization"), token, body)
      accepted.push(...result.events)
      return reply(result.verdict)
    },
  })
  const port = server.port ?? 0
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    token,
    requests,
    accepted,
    stop: () => server.stop(true),
  }
}
