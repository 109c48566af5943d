import { Clock, type ConfigError, Context, Duration, Effect, Layer, Metric, Option, type Redacted } from "effect"
import { type RateLimitSettings, rateLimitConfig } from "../config.ts"
import {
  failOpenDecision,
  policyHeaderValue,
  type RateDecision,
  type RateLimitStore,
  type RateLimitStoreError,
  windowSeconds,
  windowSettings,
} from "./core.ts"
import { type MemoryStoreOptions, makeMemoryStore } from "./memoryStore.ts"
import { type RedisConnectOptions, type RedisStoreOptions, redisStoreScoped } from "./redisStore.ts"

export {
  DEFAULT_LIMIT,
  DEFAULT_WINDOW_MS,
  type RateDecision,
  type RateLimitStore,
  RateLimitStoreError,
} from "./core.ts"

/**
 * Rate limiting: at most `limit` (120) requests in any rolling window (60 s) per bucket, exact sliding log,
 * rejected requests not counted. Buckets are named by the caller, e.g. `key:<apiKeyId>` or `ip:<address>`.
 *
 * The limiter reads the time from Effect `Clock` (tests can use TestClock) and FAILS OPEN: when the store fails
 * (Redis down or slow), the request is allowed with the full quota, `ratelimit_store_errors_total` is incremented and
 * a warning is logged at most once a minute per limiter.
 */
export interface RateLimiterService {
  /**
   * Counts one request in a bucket at `atMs` (default: now). The API counts a request at its arrival in both of its
   * buckets, so the address's Retry-After also holds for the key's limit when the same requests filled both.
   */
  readonly hit: (bucket: string, atMs?: number) => Effect.Effect<RateDecision>
  /** Un-counts an allowed hit whose request was then rejected with 429 by a later check (a 429 counts nowhere). */
  readonly release: (bucket: string, counted: RateDecision) => Effect.Effect<void>
  /** `"default";q=<limit>;w=<window seconds>`, the `RateLimit-Policy` header value (default `"default";q=120;w=60`). */
  readonly policyHeader: string
}

/** Counts store failures (each one a request let through by fail-open). Read it with `Metric.value`. */
export const rateLimitStoreErrors = Metric.counter("ratelimit_store_errors_total", {
  description: "Rate limit store failures; each request affected was allowed (fail-open)",
  incremental: true,
})

const WARN_EVERY_MS = 60_000

export interface LimiterOptions {
  readonly limit?: number
  readonly windowMs?: number
}

/** A limiter over any store. `limit`/`windowMs` must match the store's (they feed the headers and fail-open). */
export const makeRateLimiter = (store: RateLimitStore, options: LimiterOptions = {}): RateLimiterService => {
  const { limit, windowMs } = windowSettings(options)
  let lastWarningAt: number | undefined
  let suppressed = 0

  const failOpen = (error: RateLimitStoreError, nowMs: number) =>
    Effect.gen(function* () {
      yield* Metric.increment(rateLimitStoreErrors)
      if (lastWarningAt === undefined || nowMs - lastWarningAt >= WARN_EVERY_MS || nowMs < lastWarningAt) {
        const more = suppressed
        lastWarningAt = nowMs
        suppressed = 0
        // The message is ours (never the URL or a password); the cause is not logged.
        yield* Effect.logWarning("rate limit store failed; allowing requests (fail-open)").pipe(
          Effect.annotateLogs({ error: error.message, suppressedFailures: more }),
        )
      } else {
        suppressed++
      }
      return failOpenDecision(limit)
    })

  return {
    policyHeader: policyHeaderValue(limit, windowSeconds(windowMs)),
    release: (bucket, counted) =>
      store
        .release(bucket, counted)
        .pipe(Effect.catchAll((error) => Effect.flatMap(Clock.currentTimeMillis, (nowMs) => failOpen(error, nowMs)))),
    hit: (bucket, atMs) =>
      Effect.flatMap(atMs === undefined ? Clock.currentTimeMillis : Effect.succeed(atMs), (nowMs) =>
        store.hit(bucket, nowMs).pipe(Effect.catchAll((error) => failOpen(error, nowMs))),
      ),
  }
}

/**
 * The headers of a response (IETF httpapi RateLimit headers draft): `RateLimit-Policy` (taken from the limiter
 * that made the decision), `RateLimit` and, when the request was rejected, `Retry-After` (whole seconds).
 */
export const rateLimitHeaders = (
  limiter: Pick<RateLimiterService, "policyHeader">,
  decision: RateDecision,
): Record<string, string> => {
  const headers: Record<string, string> = {
    "RateLimit-Policy": limiter.policyHeader,
    RateLimit: `"default";r=${decision.remaining};t=${decision.resetSeconds}`,
  }
  if (!decision.allowed) headers["Retry-After"] = String(Math.max(1, decision.retryAfterSeconds))
  return headers
}

export class RateLimiter extends Context.Tag("RateLimiter")<RateLimiter, RateLimiterService>() {
  /** A limiter over a given store (tests, custom stores). */
  static readonly layerStore = (store: RateLimitStore, options: LimiterOptions = {}): Layer.Layer<RateLimiter> =>
    Layer.sync(RateLimiter, () => makeRateLimiter(store, options))

  /** In-process sliding log (single replica). */
  static readonly layerMemory = (options: MemoryStoreOptions = {}): Layer.Layer<RateLimiter> =>
    Layer.sync(RateLimiter, () => makeRateLimiter(makeMemoryStore(options), options))

  /** Shared through Redis (scoped: connects at start-up, closes on release; start-up does not fail if unreachable). */
  static readonly layerRedis = (
    options: RedisStoreOptions & RedisConnectOptions & { readonly url: string | Redacted.Redacted<string> },
  ): Layer.Layer<RateLimiter> =>
    Layer.scoped(
      RateLimiter,
      Effect.map(redisStoreScoped(options), (store) => makeRateLimiter(store, options)),
    )

  /** Redis when a URL is given, memory otherwise. */
  static readonly layerFrom = (settings: RateLimitSettings): Layer.Layer<RateLimiter> => {
    const limit = settings.limit
    const windowMs = Math.ceil(Duration.toMillis(settings.window))
    return Option.match(settings.redisUrl, {
      onNone: () => RateLimiter.layerMemory({ limit, windowMs }),
      onSome: (url) => RateLimiter.layerRedis({ url, limit, windowMs }),
    })
  }

  /** Redis when `REDIS_URL` is set, memory otherwise; `RATE_LIMIT` and `RATE_LIMIT_WINDOW` override 120/60 s. */
  static readonly layerFromEnv: Layer.Layer<RateLimiter, ConfigError.ConfigError> = Layer.unwrapEffect(
    Effect.map(rateLimitConfig, RateLimiter.layerFrom),
  )
}
