import { FetchHttpClient } from "@effect/platform"
import { Cause, Effect, Exit, Option } from "effect"
import type { AuditEntry as AuditEntrySchema } from "../domain/audit.ts"
import type { Event, Incident, IncidentSummary, SourceProfile } from "../domain/models.ts"
import {
  ApiError,
  type AuditFilters,
  baseUrlProblem,
  type ChangePage,
  type ClientOptions,
  type EventFilters,
  type FollowOptions,
  type IncidentClient,
  type IncidentFilters,
  invalidBaseUrl,
  makeClient,
} from "./effect.ts"

/** One entry of the audit trail (GET /v1/audit), `at` as a Date. */
export type AuditEntry = typeof AuditEntrySchema.Type

export type {
  AuditFilters,
  ChangePage,
  ClientOptions,
  Event,
  EventFilters,
  FollowOptions,
  Incident,
  IncidentFilters,
  IncidentSummary,
  SourceProfile,
}
/**
 * The read API's client with plain Promises. `list` pages for you (async iterators), `get` fetches one,
 * `follow` yields every change of a feed from a saved token and keeps the token to save (`follower.token`).
 * 429s are retried after Retry-After, 503s and connection failures with back-off; every failure is an ApiError
 * with the problem's `status` and `code`. Built on the Effect flavour (./effect.ts) over fetch.
 */
export { ApiError }

export interface FollowHandle<A> extends AsyncIterable<A> {
  /**
   * The token to save: everything before it has been yielded and the loop came back for more. Resuming with it
   * (`follow({ after: token })`) loses nothing; items after the last saved token may come again.
   */
  readonly token: string | undefined
}

/** Options of the Promise flavour's follow. */
export interface FollowCallOptions extends FollowOptions {
  /** Stops the loop (it then ends without an error). */
  readonly signal?: AbortSignal
  /**
   * Called with each new token to save, once every item before it has been handled (also after a page with no
   * items), and awaited before the next request: a process killed at any moment resumes from the last page it saved.
   */
  readonly onToken?: ((token: string) => void | Promise<void>) | undefined
}

export interface Client {
  readonly incidents: {
    list(filters?: IncidentFilters): AsyncIterable<IncidentSummary>
    get(id: string): Promise<Incident>
    follow(options?: FollowCallOptions): FollowHandle<IncidentSummary>
    /** GET /v1/sources/{ip}: inside or outside, enrichment, and the address's incidents on every sensor. */
    source(ip: string): Promise<SourceProfile>
  }
  readonly events: {
    list(filters?: EventFilters): AsyncIterable<Event>
    get(id: string): Promise<Event>
    follow(options?: FollowCallOptions): FollowHandle<Event>
  }
  /** The audit trail: needs a key with the audit:read scope. */
  readonly audit: {
    list(filters?: AuditFilters): AsyncIterable<AuditEntry>
    follow(options?: FollowCallOptions): FollowHandle<AuditEntry>
  }
}

/** Runs an effect of the client; its ApiError is thrown as itself. */
const run = async <A>(effect: Effect.Effect<A, ApiError>, signal?: AbortSignal): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect, signal ? { signal } : undefined)
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) throw failure.value
  throw Cause.squash(exit.cause)
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener("abort", done)
      resolve()
    }
    signal?.addEventListener("abort", done, { once: true })
  })

export const createClient = (options: ClientOptions): Client => {
  // An unusable baseUrl is thrown here, at once, rather than failing every call after its retries.
  const problem = baseUrlProblem(options.baseUrl)
  if (problem !== undefined) throw invalidBaseUrl(problem)
  // The HttpClient (fetch) is captured when the client is made; its calls need nothing more.
  const client: Promise<IncidentClient> = run(makeClient(options).pipe(Effect.provide(FetchHttpClient.layer)))
  const provided = <A>(f: (c: IncidentClient) => Effect.Effect<A, ApiError>, signal?: AbortSignal) =>
    client.then((c) => run(f(c), signal))

  const list = <A>(
    page: (
      c: IncidentClient,
      cursor: string | undefined,
    ) => Effect.Effect<{ readonly data: ReadonlyArray<A>; readonly nextCursor: string | null }, ApiError>,
  ): AsyncIterable<A> => ({
    async *[Symbol.asyncIterator]() {
      let cursor: string | undefined
      do {
        const p = await provided((c) => page(c, cursor))
        yield* p.data
        cursor = p.nextCursor ?? undefined
      } while (cursor !== undefined)
    },
  })

  const follow = <A>(
    changes: (
      c: IncidentClient,
      params: { after?: string; from?: string; limit: string },
    ) => Effect.Effect<ChangePage<A>, ApiError>,
    options: FollowCallOptions = {},
  ): FollowHandle<A> => {
    const moveTo = async (token: string) => {
      if (token === handle.token) return
      handle.token = token
      await options.onToken?.(token)
    }
    const handle = {
      token: options.after,
      async *[Symbol.asyncIterator]() {
        const { signal } = options
        const limit = String(options.limit ?? 100)
        const from =
          options.after === undefined && options.from !== undefined
            ? options.from instanceof Date
              ? options.from.toISOString()
              : options.from
            : undefined
        while (!signal?.aborted) {
          let p: ChangePage<A>
          try {
            p = await provided(
              (c) =>
                changes(
                  c,
                  handle.token === undefined
                    ? { ...(from === undefined ? {} : { from }), limit }
                    : { after: handle.token, limit },
                ),
              signal,
            )
          } catch (error) {
            if (signal?.aborted) return
            throw error
          }
          // The loop comes back for the next item only once it has handled this one: after the page's last item
          // the page's token is the one to save (a `break` does not come back, so that page may come again).
          for (const [i, item] of p.data.entries()) {
            yield item
            if (i === p.data.length - 1) await moveTo(p.nextToken)
            if (signal?.aborted) return
          }
          await moveTo(p.nextToken)
          if (!p.hasMore) await sleep(options.pollIntervalMs ?? 2000, signal)
        }
      },
    }
    return handle
  }

  return {
    incidents: {
      list: (filters = {}) => list((c, cursor) => c.incidents.page(filters, cursor)),
      get: (id) => provided((c) => c.incidents.get(id)),
      follow: (options) => follow((c, params) => c.incidents.changes(params), options),
      source: (ip) => provided((c) => c.incidents.source(ip)),
    },
    events: {
      list: (filters = {}) => list((c, cursor) => c.events.page(filters, cursor)),
      get: (id) => provided((c) => c.events.get(id)),
      follow: (options) => follow((c, params) => c.events.changes(params), options),
    },
    audit: {
      list: (filters = {}) => list((c, cursor) => c.audit.page(filters, cursor)),
      follow: (options) => follow((c, params) => c.audit.changes(params), options),
    },
  }
}
