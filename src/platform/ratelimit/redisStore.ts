import { createHash, randomBytes } from "node:crypto"
import { RedisClient } from "bun"
import { Duration, Effect, Redacted, type Scope } from "effect"
import {
  decision,
  type RateDecision,
  type RateLimitStore,
  RateLimitStoreError,
  type WindowSettings,
  windowSettings,
} from "./core.ts"

/**
 * Shared exact sliding log for several replicas: one Redis sorted set per bucket, member = one counted request,
 * score = its timestamp in ms. One Lua script does prune, count, record and read-oldest atomically, so concurrent
 * requests from any number of processes never over-admit.
 *
 * Timestamps are the caller's `nowMs` (from Effect `Clock`), not Redis `TIME`: tests stay deterministic, and replicas
 * agree as long as their clocks agree (NTP). A replica whose clock is off by `s` ms sees each entry leave the window
 * `s` ms early or late; nothing else breaks. The key's PEXPIRE (the window, refreshed on every counted request) is only
 * garbage collection: by then every entry has left the window anyway.
 */
export interface RedisStoreOptions {
  readonly limit?: number
  readonly windowMs?: number
  /** Key prefix (default "dsvc:rl:"); the bucket name follows it. */
  readonly prefix?: string
  /** Per-request budget for the Redis round trip (default 1000 ms); beyond it the hit fails (and the limiter fails open). */
  readonly timeoutMs?: number
}

export interface RedisRateLimitStore extends RateLimitStore {
  readonly settings: WindowSettings
  readonly prefix: string
  /** The Redis key of a bucket. */
  readonly keyOf: (bucket: string) => string
  /** Stops background reconnects (call before closing the client). */
  readonly shutdown: () => void
}

export const DEFAULT_PREFIX = "dsvc:rl:"
export const DEFAULT_TIMEOUT_MS = 1000

/**
 * KEYS[1] bucket key. ARGV: [1] now ms, [2] cutoff ms (now - window; entries with score <= cutoff have left),
 * [3] limit, [4] unique member for this request, [5] window ms (key TTL).
 * Returns { allowed (0/1), counted after this request, oldest counted score as a string or false }.
 */
export const SLIDING_LOG_SCRIPT = `
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
local counted = redis.call("ZCARD", KEYS[1])
local allowed = 0
if counted < tonumber(ARGV[3]) then
  redis.call("ZADD", KEYS[1], ARGV[1], ARGV[4])
  redis.call("PEXPIRE", KEYS[1], ARGV[5])
  counted = counted + 1
  allowed = 1
end
local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
return { allowed, counted, oldest[2] or false }
`

export const SLIDING_LOG_SHA = createHash("sha1").update(SLIDING_LOG_SCRIPT).digest("hex")

const errorCode = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "code" in e && typeof e.code === "string" ? e.code : undefined

const isNoScript = (e: unknown): boolean => e instanceof Error && e.message.startsWith("NOSCRIPT")

/** Builds the store over an existing client (the caller owns the client). */
export const makeRedisStore = (client: RedisClient, options: RedisStoreOptions = {}): RedisRateLimitStore => {
  const settings = windowSettings(options)
  const prefix = options.prefix ?? DEFAULT_PREFIX
  const timeout = Duration.millis(options.timeoutMs ?? DEFAULT_TIMEOUT_MS)
  // Members must be unique across processes even for equal timestamps.
  const instance = randomBytes(6).toString("base64url")
  let sequence = 0
  let lastReconnectAt = 0
  let reconnecting = false
  let stopped = false

  // Bun's client gives up after its retries ("Connection has failed") and then needs connect(); try again at most
  // once a second, off the request path.
  const reconnectSoon = () => {
    const now = Date.now()
    if (stopped || client.connected || reconnecting || now - lastReconnectAt < 1000) return
    reconnecting = true
    lastReconnectAt = now
    client
      .connect()
      .catch(() => undefined)
      .finally(() => {
        reconnecting = false
      })
  }

  const run = async (args: Array<string>): Promise<unknown> => {
    try {
      return await client.send("EVALSHA", [SLIDING_LOG_SHA, ...args])
    } catch (e) {
      if (!isNoScript(e)) throw e
      // Script cache flushed or a fresh server: EVAL runs it and caches it again.
      return await client.send("EVAL", [SLIDING_LOG_SCRIPT, ...args])
    }
  }

  const hit = (bucket: string, nowMs: number) => {
    sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER
    const member = `${nowMs}-${instance}-${sequence}`
    const args = [
      "1",
      prefix + bucket,
      String(nowMs),
      String(nowMs - settings.windowMs),
      String(settings.limit),
      member,
      String(settings.windowMs),
    ]
    return Effect.tryPromise({
      try: () => run(args),
      catch: (cause) => {
        if (errorCode(cause) === "ERR_REDIS_CONNECTION_CLOSED" || !client.connected) reconnectSoon()
        return new RateLimitStoreError({
          message: `Redis rate limit script failed (${errorCode(cause) ?? "error"})`,
          cause,
        })
      },
    }).pipe(
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => new RateLimitStoreError({ message: "Redis rate limit script timed out" }),
      }),
      Effect.flatMap((reply) => {
        if (!Array.isArray(reply) || reply.length < 2) {
          return Effect.fail(new RateLimitStoreError({ message: "unexpected reply from the rate limit script" }))
        }
        const [allowed, counted, oldest] = reply as [unknown, unknown, unknown]
        const oldestMs = typeof oldest === "string" || typeof oldest === "number" ? Number(oldest) : undefined
        if (typeof counted !== "number" || (oldestMs !== undefined && !Number.isFinite(oldestMs))) {
          return Effect.fail(new RateLimitStoreError({ message: "unexpected reply from the rate limit script" }))
        }
        const decided = decision(settings, allowed === 1, counted, oldestMs, nowMs)
        return Effect.succeed(decided.allowed ? { ...decided, ticket: member } : decided)
      }),
    )
  }

  const release = (bucket: string, decided: RateDecision) => {
    const ticket = decided.ticket
    if (!decided.allowed || ticket === undefined) return Effect.void
    return Effect.tryPromise({
      try: () => client.send("ZREM", [prefix + bucket, ticket]),
      catch: (cause) =>
        new RateLimitStoreError({ message: `Redis rate limit release failed (${errorCode(cause) ?? "error"})`, cause }),
    }).pipe(
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => new RateLimitStoreError({ message: "Redis rate limit release timed out" }),
      }),
      Effect.asVoid,
    )
  }

  const shutdown = () => {
    stopped = true
  }

  return { settings, prefix, keyOf: (bucket) => prefix + bucket, hit, release, shutdown }
}

export interface RedisConnectOptions {
  /** How long start-up waits for the first connection (default 2000 ms). */
  readonly connectTimeoutMs?: number
}

/**
 * A Bun RedisClient for the rate limiter, closed when the scope ends. Start-up does not fail when Redis is
 * unreachable: a warning is logged, requests fail open meanwhile, and the store reconnects in the background.
 * The URL (it may hold a password) is never logged.
 */
export const redisClientScoped = (
  url: string | Redacted.Redacted<string>,
  options: RedisConnectOptions = {},
): Effect.Effect<RedisClient, never, Scope.Scope> =>
  Effect.gen(function* () {
    const connectTimeoutMs = options.connectTimeoutMs ?? 2000
    const client = yield* Effect.acquireRelease(
      Effect.sync(
        () =>
          new RedisClient(Redacted.isRedacted(url) ? Redacted.value(url) : url, {
            // Fail fast while disconnected (the limiter fails open) instead of queueing requests behind a reconnect.
            enableOfflineQueue: false,
            connectionTimeout: connectTimeoutMs,
            autoReconnect: true,
          }),
      ),
      (client) => Effect.sync(() => client.close()),
    )
    const connected = yield* Effect.tryPromise(async () => {
      await client.connect()
      // Warm the script cache; EVALSHA falls back to EVAL anyway.
      await client.send("SCRIPT", ["LOAD", SLIDING_LOG_SCRIPT])
    }).pipe(
      Effect.timeout(Duration.millis(connectTimeoutMs)),
      Effect.as(true),
      Effect.catchAll((e) =>
        Effect.logWarning("rate limiter: Redis not reachable at start-up; failing open until it is").pipe(
          Effect.annotateLogs({ error: e._tag === "TimeoutException" ? "timeout" : (errorCode(e.error) ?? "error") }),
          Effect.as(false),
        ),
      ),
    )
    if (connected) yield* Effect.logDebug("rate limiter: connected to Redis")
    return client
  })

/** The store over its own client (scoped: connects now, closes on release). */
export const redisStoreScoped = (
  options: RedisStoreOptions & RedisConnectOptions & { readonly url: string | Redacted.Redacted<string> },
): Effect.Effect<RedisRateLimitStore, never, Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* redisClientScoped(options.url, options)
    const store = makeRedisStore(client, options)
    // Finalizers run in reverse order: stop reconnecting, then close the client.
    yield* Effect.addFinalizer(() => Effect.sync(store.shutdown))
    return store
  })
