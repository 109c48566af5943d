import { HttpApiClient, HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { Chunk, Data, Duration, Effect, Option, Stream } from "effect"
import { IncidentApi } from "../api/contract/definition.ts"
import type { AuditEntry } from "../domain/audit.ts"
import type { Event, Incident, IncidentSummary, SourceProfile } from "../domain/models.ts"

/**
 * The client of the read API, for Effect users. It is derived from the server's own HttpApi definition
 * (HttpApiClient), so paths, parameters, response schemas and problem bodies are the server's. It imports nothing
 * else of the service. src/client/index.ts wraps it in Promises and async iterators.
 */

export interface ClientOptions {
  /** The API's base URL, e.g. https://incidents.example.com */
  readonly baseUrl: string
  /** An API key, `dsk_…` (sent as a bearer token, never logged). */
  readonly apiKey: string
  /** Extra headers for every request. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Retries of a 429, a 503 or a connection failure before the error is raised (default 6). */
  readonly maxRetries?: number | undefined
  /** First back-off after a 503 or a connection failure, doubled each time up to maxDelayMs (default 500 ms). */
  readonly baseDelayMs?: number | undefined
  /** Longest wait, also for a 429's Retry-After (default 60 s). */
  readonly maxDelayMs?: number | undefined
}

/** A failed call: the problem's HTTP status and `code`, or status 0 and `connection_failed`. */
export class ApiError extends Data.TaggedError("ApiError")<{
  readonly status: number
  readonly code: string
  readonly detail: string
}> {
  override get message() {
    return `${this.status} ${this.code}: ${this.detail}`
  }
}

export type IncidentFilters = {
  readonly status?: "open" | "closed" | "all" | undefined
  /** Page size of each request (1–100). */
  readonly limit?: number | undefined
}

export type EventFilters = {
  readonly sensorId?: string | undefined
  readonly severity?: "low" | "medium" | "high" | "critical" | undefined
  readonly type?: string | undefined
  readonly sourceIp?: string | undefined
  readonly incidentId?: string | undefined
  readonly from?: Date | string | undefined
  readonly to?: Date | string | undefined
  readonly limit?: number | undefined
}

export type AuditFilters = {
  /** cli, a console user's id (usr_…) or a console user's email address. */
  readonly actor?: string | undefined
  /** One action, exactly: key.create, webhook.rotate, signin.failed… */
  readonly action?: string | undefined
  readonly from?: Date | string | undefined
  readonly to?: Date | string | undefined
  readonly limit?: number | undefined
}

export interface FollowOptions {
  /** A token saved from an earlier follow (nextToken): resume exactly there. */
  readonly after?: string | undefined
  /** First start only: the changes at or after this time (ignored with after). */
  readonly from?: Date | string | undefined
  /** Page size (1–100, default 100). */
  readonly limit?: number | undefined
  /** Wait between polls once caught up (default 2 s). */
  readonly pollIntervalMs?: number | undefined
}

/** One page of a change feed: handle `data`, then persist `nextToken`. */
export interface ChangePage<A> {
  readonly data: ReadonlyArray<A>
  readonly nextToken: string
  readonly hasMore: boolean
}

const text = (value: Date | string | number | undefined) =>
  value === undefined ? undefined : value instanceof Date ? value.toISOString() : String(value)

/** Seconds or an HTTP date (RFC 9110), as milliseconds from now. */
const retryAfterMs = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined
  if (/^[0-9]+$/.test(header.trim())) return Number(header.trim()) * 1000
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/**
 * Retries at the HTTP level: a 429 after its Retry-After, a 503 (its Retry-After, at least the back-off) and a
 * connection failure with exponential back-off and jitter. Only GETs are sent, so a retry never repeats a write.
 */
const retrying =
  (maxRetries: number, baseDelayMs: number, maxDelayMs: number) =>
  (client: HttpClient.HttpClient): HttpClient.HttpClient =>
    HttpClient.transform(client, (effect) => {
      const backoff = (n: number) => Math.min(maxDelayMs, baseDelayMs * 2 ** n * (0.75 + Math.random() * 0.5))
      // Each attempt decides from its own request's outcome only (Effect.either), so a failure that comes back
      // from a deeper attempt is never caught again here: at most maxRetries + 1 requests in all.
      const attempt = (n: number): typeof effect =>
        Effect.either(effect).pipe(
          Effect.flatMap((outcome) => {
            if (outcome._tag === "Left") {
              const error = outcome.left
              if (n >= maxRetries || error._tag !== "RequestError") return Effect.fail(error)
              return Effect.sleep(Duration.millis(backoff(n))).pipe(Effect.zipRight(attempt(n + 1)))
            }
            const response = outcome.right
            if (n >= maxRetries || (response.status !== 429 && response.status !== 503)) return Effect.succeed(response)
            const told = retryAfterMs(response.headers["retry-after"])
            const wait = response.status === 429 ? (told ?? backoff(n)) : Math.max(told ?? 0, backoff(n))
            // The refused answer's body is read and dropped, so its connection goes back to the pool.
            return Effect.ignore(response.arrayBuffer).pipe(
              Effect.zipRight(Effect.sleep(Duration.millis(Math.min(maxDelayMs, wait)))),
              Effect.zipRight(attempt(n + 1)),
            )
          }),
        )
      return attempt(0)
    })

/** The longest baseUrl quoted back in the error about it. */
const MAX_QUOTED_URL = 100

/**
 * Why `baseUrl` cannot be used, or undefined when it can: an absolute http:// or https:// URL without credentials.
 * Anything else would only fail every request as a connection failure, retried with back-off for half a minute.
 */
export const baseUrlProblem = (baseUrl: unknown): string | undefined => {
  const expected = "baseUrl must be an absolute http:// or https:// URL, e.g. https://incidents.example.com"
  if (typeof baseUrl !== "string") return `${expected} (got ${baseUrl === null ? "null" : typeof baseUrl})`
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    const quoted = baseUrl.length > MAX_QUOTED_URL ? `${baseUrl.slice(0, MAX_QUOTED_URL)}…` : baseUrl
    return `${expected} (got ${JSON.stringify(quoted)}, not a URL)`
  }
  // Credentials are never quoted back: neither is a URL that holds any.
  if (url.username !== "" || url.password !== "") return `${expected}, without user or password`
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${expected} (got a ${url.protocol} URL)`
  return undefined
}

/** An unusable baseUrl: status 0, code `invalid_base_url`, raised before any request. */
export const invalidBaseUrl = (detail: string) => new ApiError({ status: 0, code: "invalid_base_url", detail })

/** Any failure of a call as an ApiError: a problem body keeps its status and code. */
const toApiError = (error: unknown): ApiError => {
  if (typeof error === "object" && error !== null) {
    const e = error as { status?: unknown; code?: unknown; detail?: unknown; _tag?: unknown }
    if (typeof e.status === "number" && typeof e.code === "string") {
      return new ApiError({ status: e.status, code: e.code, detail: typeof e.detail === "string" ? e.detail : "" })
    }
    if (HttpClientError.isHttpClientError(error)) {
      if (error._tag === "RequestError") {
        return new ApiError({ status: 0, code: "connection_failed", detail: error.message })
      }
      return new ApiError({ status: error.response.status, code: "unexpected_response", detail: error.message })
    }
  }
  return new ApiError({ status: 0, code: "unexpected_response", detail: String(error) })
}

/**
 * An id as one path segment: HttpApiClient puts path parameters into the URL as they are, so an id such as
 * "../../v1/events" would otherwise become another request.
 */
const pathSegment = (id: string) => encodeURIComponent(id)

const call = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ApiError, R> =>
  Effect.mapError(effect, toApiError)

/** Follows nextCursor from the first page to the last, one item at a time. */
const paged = <A>(
  page: (
    cursor: string | undefined,
  ) => Effect.Effect<{ readonly data: ReadonlyArray<A>; readonly nextCursor: string | null }, ApiError>,
): Stream.Stream<A, ApiError> =>
  Stream.paginateChunkEffect(undefined as string | undefined, (cursor) =>
    Effect.map(page(cursor), (p) => [Chunk.fromIterable(p.data), Option.fromNullable(p.nextCursor)] as const),
  )

/** Calls a change feed forever from a token, one page at a time; waits pollIntervalMs whenever caught up. */
const following = <A>(
  page: (params: { after?: string; from?: string; limit: string }) => Effect.Effect<ChangePage<A>, ApiError>,
  options: FollowOptions,
): Stream.Stream<ChangePage<A>, ApiError> => {
  const limit = String(options.limit ?? 100)
  const interval = Duration.millis(options.pollIntervalMs ?? 2000)
  const from = options.after === undefined ? text(options.from) : undefined
  return Stream.paginateEffect(
    { token: options.after, wait: false },
    (state: { token: string | undefined; wait: boolean }) =>
      Effect.gen(function* () {
        if (state.wait) yield* Effect.sleep(interval)
        const p = yield* page(
          state.token === undefined
            ? { ...(from === undefined ? {} : { from }), limit }
            : { after: state.token, limit },
        )
        return [p, Option.some({ token: p.nextToken, wait: !p.hasMore })] as const
      }),
  )
}

export const makeClient = (options: ClientOptions) =>
  Effect.gen(function* () {
    const problem = baseUrlProblem(options.baseUrl)
    if (problem !== undefined) return yield* Effect.fail(invalidBaseUrl(problem))
    const api = yield* HttpApiClient.make(IncidentApi, {
      baseUrl: options.baseUrl,
      transformClient: (client) =>
        client.pipe(
          HttpClient.mapRequest((request) =>
            request.pipe(
              HttpClientRequest.bearerToken(options.apiKey),
              HttpClientRequest.setHeaders(options.headers ?? {}),
            ),
          ),
          retrying(options.maxRetries ?? 6, options.baseDelayMs ?? 500, options.maxDelayMs ?? 60_000),
        ),
    })

    const incidentPage = (filters: IncidentFilters, cursor: string | undefined) =>
      call(
        api.incidents.listIncidents({
          urlParams: { status: filters.status, limit: text(filters.limit), cursor },
        }),
      )
    const eventPage = (f: EventFilters, cursor: string | undefined) =>
      call(
        api.events.listEvents({
          urlParams: {
            sensorId: f.sensorId,
            severity: f.severity,
            type: f.type,
            sourceIp: f.sourceIp,
            incidentId: f.incidentId,
            from: text(f.from),
            to: text(f.to),
            limit: text(f.limit),
            cursor,
          },
        }),
      )
    const incidentChanges = (urlParams: { after?: string; from?: string; limit?: string }) =>
      call(api.incidents.incidentChanges({ urlParams }))
    const eventChanges = (urlParams: { after?: string; from?: string; limit?: string }) =>
      call(api.events.eventChanges({ urlParams }))
    const auditPage = (f: AuditFilters, cursor: string | undefined) =>
      call(
        api.audit.listAudit({
          urlParams: {
            actor: f.actor,
            action: f.action,
            from: text(f.from),
            to: text(f.to),
            limit: text(f.limit),
            cursor,
          },
        }),
      )
    const auditChanges = (urlParams: { after?: string; from?: string; limit?: string }) =>
      call(api.audit.auditChanges({ urlParams }))

    return {
      incidents: {
        /** One page of GET /v1/incidents. */
        page: incidentPage,
        /** Every incident matching the filters, most recent activity first, paging as needed. */
        list: (filters: IncidentFilters = {}): Stream.Stream<IncidentSummary, ApiError> =>
          paged((cursor) => incidentPage(filters, cursor)),
        /** One incident with its first 200 events. */
        get: (id: string): Effect.Effect<Incident, ApiError> =>
          call(api.incidents.getIncident({ path: { id: pathSegment(id) } })),
        /** One page of GET /v1/incidents/changes. */
        changes: incidentChanges,
        /** What the organization knows of one source address, with its incidents on every sensor. */
        source: (ip: string): Effect.Effect<SourceProfile, ApiError> =>
          call(api.incidents.getSource({ path: { ip: pathSegment(ip) } })),
        /** The incident change feed, page after page, forever (interrupt it to stop). */
        follow: (options: FollowOptions = {}): Stream.Stream<ChangePage<IncidentSummary>, ApiError> =>
          following(incidentChanges, options),
      },
      events: {
        page: eventPage,
        /** Every event matching the filters, newest first, paging as needed. */
        list: (filters: EventFilters = {}): Stream.Stream<Event, ApiError> =>
          paged((cursor) => eventPage(filters, cursor)),
        get: (id: string): Effect.Effect<Event, ApiError> =>
          call(api.events.getEvent({ path: { id: pathSegment(id) } })),
        changes: eventChanges,
        /** The event change feed, page after page, forever. */
        follow: (options: FollowOptions = {}): Stream.Stream<ChangePage<Event>, ApiError> =>
          following(eventChanges, options),
      },
      /** The audit trail (a key with the audit:read scope). */
      audit: {
        /** One page of GET /v1/audit. */
        page: auditPage,
        /** Every audit entry matching the filters, newest first, paging as needed. */
        list: (filters: AuditFilters = {}): Stream.Stream<typeof AuditEntry.Type, ApiError> =>
          paged((cursor) => auditPage(filters, cursor)),
        /** One page of GET /v1/audit/changes. */
        changes: auditChanges,
        /** The audit feed, page after page, forever. */
        follow: (options: FollowOptions = {}): Stream.Stream<ChangePage<typeof AuditEntry.Type>, ApiError> =>
          following(auditChanges, options),
      },
    } as const
  })

export type IncidentClient = Effect.Effect.Success<ReturnType<typeof makeClient>>
