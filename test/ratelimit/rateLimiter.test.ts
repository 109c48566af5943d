import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { randomBytes } from "node:crypto"
import { RedisClient } from "bun"
import { ConfigProvider, Effect, Exit, HashMap, Logger, Metric, Scope, TestClock, TestContext } from "effect"
import { makeMemoryStore } from "../../src/platform/ratelimit/memoryStore.ts"
import {
  makeRateLimiter,
  type RateDecision,
  RateLimiter,
  type RateLimitStore,
  RateLimitStoreError,
  rateLimitHeaders,
  rateLimitStoreErrors,
} from "../../src/platform/ratelimit/RateLimiter.ts"
import { makeRedisStore, redisStoreScoped, SLIDING_LOG_SHA } from "../../src/platform/ratelimit/redisStore.ts"

const REDIS_URL = process.env.RATELIMIT_TEST_REDIS_URL ?? "redis://127.0.0.1:6379"
const T = 1_700_000_000_000
const WINDOW = 60_000

const hit = (store: RateLimitStore, bucket: string, nowMs: number): Promise<RateDecision> =>
  Effect.runPromise(store.hit(bucket, nowMs))

const hitMany = async (store: RateLimitStore, bucket: string, nowMs: number, n: number) => {
  const out: Array<RateDecision> = []
  for (let i = 0; i < n; i++) out.push(await hit(store, bucket, nowMs))
  return out
}

const errorCount = () => Effect.runPromise(Metric.value(rateLimitStoreErrors)).then((state) => state.count)

const redisReachable = async (): Promise<boolean> => {
  const client = new RedisClient(REDIS_URL, { connectionTimeout: 1000, maxRetries: 0, autoReconnect: false })
  try {
    await Promise.race([client.connect(), Bun.sleep(1500).then(() => Promise.reject(new Error("timeout")))])
    return (await client.send("PING", [])) === "PONG"
  } catch {
    return false
  } finally {
    client.close()
  }
}
// The Redis tests are not skipped when Redis is missing: they fail, starting with this check.
const redisUp = await redisReachable()
test(`the Redis store tests have a Redis at ${REDIS_URL}`, () => {
  expect(redisUp).toBe(true)
})

const deleteKeys = async (client: RedisClient, pattern: string) => {
  let cursor = "0"
  do {
    const [next, keys] = (await client.send("SCAN", [cursor, "MATCH", pattern, "COUNT", "1000"])) as [string, string[]]
    if (keys.length > 0) await client.send("DEL", keys)
    cursor = next
  } while (cursor !== "0")
}

/** The exactness tests, run against the memory store and the Redis store. */
const exactnessSuite = (
  name: string,
  makeStore: (options: { limit?: number; windowMs?: number }) => RateLimitStore,
) => {
  test(`${name}: 120 pass, the 121st is rejected with Retry-After = the real wait; after that wait it passes`, async () => {
    const store = makeStore({})
    const first = await hitMany(store, "key:k1", T, 120)
    expect(first.every((d) => d.allowed && d.limit === 120 && d.retryAfterSeconds === 0)).toBe(true)
    expect(first.map((d) => d.remaining)).toEqual(Array.from({ length: 120 }, (_, i) => 119 - i))
    expect(first[0]?.resetSeconds).toBe(60)

    // 12.345 s later: the oldest counted request (at T) leaves the window at T + 60 s, 47.655 s from now.
    const rejected = await hit(store, "key:k1", T + 12_345)
    expect(rejected).toEqual({ allowed: false, limit: 120, remaining: 0, resetSeconds: 48, retryAfterSeconds: 48 })

    // Exact boundary: 1 ms before the slot frees it is still refused (and says 1 s), at T + 60 s it passes.
    expect(await hit(store, "key:k1", T + 59_999)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    const atBoundary = await hit(store, "key:k1", T + 60_000)
    expect(atBoundary).toMatchObject({
      allowed: true,
      limit: 120,
      remaining: 119,
      resetSeconds: 60,
      retryAfterSeconds: 0,
    })
  })

  test(`${name}: a released request (rejected later by another check) no longer counts`, async () => {
    const store = makeStore({ limit: 3 })
    const a = await hit(store, "ip:r", T)
    const b = await hit(store, "ip:r", T + 1)
    expect(b.ticket).toBeDefined()
    await Effect.runPromise(store.release("ip:r", b))
    // Releasing a rejected decision or an unknown ticket changes nothing.
    await Effect.runPromise(store.release("ip:r", { ...b, allowed: false }))
    await Effect.runPromise(store.release("ip:other", b))
    expect(await hit(store, "ip:r", T + 2)).toMatchObject({ allowed: true, remaining: 1 })
    expect(await hit(store, "ip:r", T + 3)).toMatchObject({ allowed: true, remaining: 0 })
    expect(await hit(store, "ip:r", T + 4)).toMatchObject({ allowed: false })
    // Releasing the only request of a bucket empties it.
    const single = await hit(store, "ip:s", T)
    await Effect.runPromise(store.release("ip:s", single))
    await Effect.runPromise(store.release("ip:r", a))
    expect(await hit(store, "ip:s", T + 5)).toMatchObject({ allowed: true, remaining: 2 })
    expect(await hit(store, "ip:r", T + 5)).toMatchObject({ allowed: true, remaining: 0 })
  })

  test(`${name}: a client that sleeps Retry-After seconds then succeeds`, async () => {
    const store = makeStore({})
    for (let i = 0; i < 120; i++) await hit(store, "ip:198.51.100.7", T + i * 250) // spread over 29.75 s
    const now = T + 40_100
    const rejected = await hit(store, "ip:198.51.100.7", now)
    expect(rejected.allowed).toBe(false)
    expect(rejected.retryAfterSeconds).toBe(Math.ceil((T + WINDOW - now) / 1000)) // 20
    expect(rejected.retryAfterSeconds).toBe(20)
    expect(await hit(store, "ip:198.51.100.7", now + rejected.retryAfterSeconds * 1000)).toMatchObject({
      allowed: true,
      remaining: 0, // the oldest entry (T) left; T + 250 ms ... are still counted
    })
  })

  test(`${name}: rejected requests do not count (1000 refused, the slot frees at the same time)`, async () => {
    const store = makeStore({})
    await hitMany(store, "key:hammer", T, 120)
    for (let i = 0; i < 1000; i++) {
      const d = await hit(store, "key:hammer", T + 1 + i * 59)
      expect(d.allowed).toBe(false)
      expect(d.retryAfterSeconds).toBe(Math.max(1, Math.ceil((T + WINDOW - (T + 1 + i * 59)) / 1000)))
    }
    expect(await hit(store, "key:hammer", T + 59_999)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    // All 120 counted requests (at T) left at T + 60 s; the refused ones were never recorded.
    expect(await hit(store, "key:hammer", T + 60_000)).toMatchObject({ allowed: true, remaining: 119 })
  })

  test(`${name}: sliding window, not a fixed one`, async () => {
    const store = makeStore({})
    await hitMany(store, "key:slide", T + 50_000, 60) // late in one clock minute...
    await hitMany(store, "key:slide", T + 70_000, 60) // ...and early in the next: a fixed window would allow more
    expect(await hit(store, "key:slide", T + 75_000)).toMatchObject({ allowed: false, retryAfterSeconds: 35 })
    expect(await hit(store, "key:slide", T + 109_999)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    // At T + 110 s the first 60 left: exactly 60 more pass, then the wait is for the second group (T + 130 s).
    const next = await hitMany(store, "key:slide", T + 110_000, 61)
    expect(next.filter((d) => d.allowed)).toHaveLength(60)
    expect(next[59]).toMatchObject({ allowed: true, remaining: 0, resetSeconds: 20 })
    expect(next[60]).toMatchObject({ allowed: false, retryAfterSeconds: 20 })
  })

  test(`${name}: buckets are independent`, async () => {
    const store = makeStore({})
    await hitMany(store, "key:a", T, 120)
    expect(await hit(store, "key:a", T + 1)).toMatchObject({ allowed: false })
    expect(await hit(store, "key:b", T + 1)).toMatchObject({ allowed: true, remaining: 119 })
    expect(await hit(store, "ip:203.0.113.1", T + 1)).toMatchObject({ allowed: true, remaining: 119 })
    expect(await hit(store, "ip:2001:db8::1", T + 1)).toMatchObject({ allowed: true, remaining: 119 })
  })

  test(`${name}: a small limit and window`, async () => {
    const store = makeStore({ limit: 1, windowMs: 2_000 })
    expect(await hit(store, "key:one", T)).toMatchObject({
      allowed: true,
      limit: 1,
      remaining: 0,
      resetSeconds: 2,
      retryAfterSeconds: 0,
    })
    expect(await hit(store, "key:one", T + 1_500)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    expect(await hit(store, "key:one", T + 2_000)).toMatchObject({ allowed: true })
  })
}

describe("memory store", () => {
  exactnessSuite("memory", (options) => makeMemoryStore(options))

  test("memory: 100,000 one-off clients are dropped once their window has passed", async () => {
    const store = makeMemoryStore()
    await Effect.runPromise(
      Effect.forEach(
        Array.from({ length: 100_000 }, (_, i) => i),
        (i) => store.hit(`ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, T + (i >> 10)),
        { discard: true },
      ),
    )
    expect(store.size()).toBe(100_000)
    await hitMany(store, "key:busy", T + 30_000, 120) // still in its window later on
    await hit(store, "ip:192.0.2.1", T + WINDOW + 200)
    await hit(store, "ip:192.0.2.2", T + WINDOW + 201)
    expect(store.size()).toBe(3)
    expect(await hit(store, "key:busy", T + WINDOW + 202)).toMatchObject({ allowed: false, retryAfterSeconds: 30 })
    expect(store.sweep(T + 2 * WINDOW + 300)).toBe(3)
    expect(store.size()).toBe(0)
  })

  test("memory: maxBuckets is a hard cap, the least recently counted buckets go first", async () => {
    const capped = makeMemoryStore({ maxBuckets: 1000 })
    for (let i = 0; i < 5000; i++) await hit(capped, `ip:${i}`, T + i)
    expect(capped.size()).toBe(1000)
    expect(await hit(capped, "ip:4999", T + 5000)).toMatchObject({ remaining: 118 }) // still tracked
    expect(await hit(capped, "ip:0", T + 5001)).toMatchObject({ remaining: 119 }) // evicted, starts afresh
    expect(capped.size()).toBe(1000)

    const lru = makeMemoryStore({ limit: 5, maxBuckets: 3 })
    await hit(lru, "a", T)
    await hit(lru, "b", T + 1)
    await hit(lru, "a", T + 2) // a counted again: b is now the quietest
    await hit(lru, "c", T + 3)
    await hit(lru, "d", T + 4) // evicts b
    expect(lru.size()).toBe(3)
    expect(await hit(lru, "a", T + 5)).toMatchObject({ remaining: 2 }) // a kept its 2 entries
    expect(await hit(lru, "b", T + 6)).toMatchObject({ remaining: 4 }) // b restarted (evicting c)
    expect(await hit(lru, "d", T + 7)).toMatchObject({ remaining: 3 })
    expect(lru.size()).toBe(3)
  })

  test("memory: a clock going backwards never lets a bucket exceed the limit", async () => {
    const store = makeMemoryStore({ limit: 3, windowMs: 10_000 })
    await hit(store, "k", T + 5_000)
    await hit(store, "k", T + 4_000) // recorded at T + 5 s
    await hit(store, "k", T + 3_000)
    expect(await hit(store, "k", T + 14_999)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    expect(await hit(store, "k", T + 15_000)).toMatchObject({ allowed: true })
  })
})

describe("redis store", () => {
  const prefix = `test:rl:${randomBytes(6).toString("hex")}:`
  let client: RedisClient
  let other: RedisClient
  let n = 0
  const fresh = () => `${prefix}${++n}:`

  beforeAll(async () => {
    client = new RedisClient(REDIS_URL)
    other = new RedisClient(REDIS_URL)
    await Promise.all([client.connect(), other.connect()])
  })
  afterAll(async () => {
    await deleteKeys(client, `${prefix}*`)
    client.close()
    other.close()
  })

  exactnessSuite("redis", (options) => makeRedisStore(client, { ...options, prefix: fresh() }))

  test("redis: two processes share the count; the 121st across both is refused", async () => {
    const p = fresh()
    const a = makeRedisStore(client, { prefix: p })
    const b = makeRedisStore(other, { prefix: p }) // another connection, as another replica would have
    for (let i = 0; i < 120; i++) {
      const d = await hit(i % 2 === 0 ? a : b, "key:shared", T + i)
      expect(d).toMatchObject({ allowed: true, remaining: 119 - i })
    }
    expect(await hit(a, "key:shared", T + 1_000)).toMatchObject({ allowed: false, retryAfterSeconds: 59 })
    expect(await hit(b, "key:shared", T + 1_000)).toMatchObject({ allowed: false, retryAfterSeconds: 59 })
    expect(await hit(b, "key:shared", T + 60_000)).toMatchObject({ allowed: true, remaining: 0 })
    expect(await hit(a, "key:shared", T + 60_000)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    // Rejected requests were not recorded: 120 members in the sorted set.
    expect(await client.send("ZCARD", [a.keyOf("key:shared")])).toBe(120)
  })

  test("redis: 200 concurrent hits from two connections admit exactly 120 (atomic)", async () => {
    const p = fresh()
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const a = yield* redisStoreScoped({ url: REDIS_URL, prefix: p })
          const b = yield* redisStoreScoped({ url: REDIS_URL, prefix: p })
          const results = yield* Effect.promise(() =>
            Promise.all(Array.from({ length: 200 }, (_, i) => hit(i % 2 === 0 ? a : b, "ip:203.0.113.9", T))),
          )
          const allowed = results.filter((d) => d.allowed)
          expect(allowed).toHaveLength(120)
          expect(allowed.map((d) => d.remaining).sort((x, y) => x - y)).toEqual(
            Array.from({ length: 120 }, (_, i) => i),
          )
          expect(results.filter((d) => !d.allowed).every((d) => d.retryAfterSeconds === 60)).toBe(true)
        }),
      ),
    )
  })

  test("redis: keys live under the prefix and expire with the window", async () => {
    const p = fresh()
    const store = makeRedisStore(client, { prefix: p, windowMs: 5_000 })
    await hit(store, "key:ttl", Date.now())
    expect(store.keyOf("key:ttl")).toBe(`${p}key:ttl`)
    const ttl = (await client.send("PTTL", [`${p}key:ttl`])) as number
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(5_000)
  })

  test("redis: layerFromEnv uses Redis when REDIS_URL is set", async () => {
    const bucket = `test-fromenv-${randomBytes(6).toString("hex")}`
    const provider = ConfigProvider.fromMap(new Map([["REDIS_URL", REDIS_URL]]))
    const decision = await Effect.runPromise(
      RateLimiter.pipe(
        Effect.flatMap((limiter) => limiter.hit(bucket)),
        Effect.provide(RateLimiter.layerFromEnv),
        Effect.withConfigProvider(provider),
      ),
    )
    expect(decision).toMatchObject({ allowed: true, limit: 120, remaining: 119 })
    expect(await client.send("ZCARD", [`dsvc:rl:${bucket}`])).toBe(1)
    await client.send("DEL", [`dsvc:rl:${bucket}`])
  })
})

// A Redis server of our own, to stop and flush without disturbing the shared one.
const redisServer = Bun.which("redis-server")
describe("redis store on a private server (restart, script flush)", () => {
  const randomPort = () => 20_000 + Math.floor(Math.random() * 30_000)
  let port = randomPort()
  let url = `redis://127.0.0.1:${port}`
  let server: ReturnType<typeof Bun.spawn> | undefined

  /** Starts redis-server on `port`; on the first start a port already in use is replaced by another one. */
  const start = async (samePort = false) => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const proc = Bun.spawn(
        [redisServer ?? "redis-server", "--port", String(port), "--save", "", "--appendonly", "no"],
        {
          stdout: "ignore",
          stderr: "ignore",
        },
      )
      server = proc
      for (let i = 0; i < 100 && proc.exitCode === null; i++) {
        const probe = new RedisClient(url, { maxRetries: 0, autoReconnect: false, connectionTimeout: 500 })
        try {
          await probe.connect()
          if ((await probe.send("PING", [])) === "PONG") return
        } catch {
          await Bun.sleep(50)
        } finally {
          probe.close()
        }
      }
      proc.kill()
      await proc.exited
      server = undefined
      if (samePort) break
      port = randomPort()
      url = `redis://127.0.0.1:${port}`
    }
    throw new Error("private redis-server did not start")
  }
  const stop = async () => {
    server?.kill()
    await server?.exited
    server = undefined
  }

  beforeAll(() => start(), 30_000)
  afterAll(stop)

  test("redis: EVALSHA falls back to EVAL after SCRIPT FLUSH", async () => {
    const client = new RedisClient(url)
    try {
      await client.connect()
      await client.send("SCRIPT", ["FLUSH"])
      const store = makeRedisStore(client, { limit: 2 })
      expect(await hit(store, "k", T)).toMatchObject({ allowed: true, remaining: 1 })
      expect(await client.send("SCRIPT", ["EXISTS", SLIDING_LOG_SHA])).toEqual([1])
      expect(await hit(store, "k", T)).toMatchObject({ allowed: true, remaining: 0 })
      expect(await hit(store, "k", T)).toMatchObject({ allowed: false, retryAfterSeconds: 60 })
    } finally {
      client.close()
    }
  })

  test("redis: fails open while Redis is down, counts again once it is back", async () => {
    const before = await errorCount()
    const scope = Effect.runSync(Scope.make())
    try {
      const store = await Effect.runPromise(Scope.extend(redisStoreScoped({ url, limit: 5, timeoutMs: 500 }), scope))
      const limiter = makeRateLimiter(store, { limit: 5 })
      const limiterHit = (bucket: string) =>
        Effect.runPromise(limiter.hit(bucket).pipe(Effect.provide(Logger.remove(Logger.defaultLogger))))
      expect(await limiterHit("k")).toMatchObject({ allowed: true, remaining: 4 })

      await stop()
      const down = await limiterHit("k")
      expect(down).toEqual({ allowed: true, limit: 5, remaining: 5, resetSeconds: 0, retryAfterSeconds: 0 })
      expect(await errorCount()).toBeGreaterThan(before)

      await start(true)
      let back: RateDecision | undefined
      for (let i = 0; i < 100 && back === undefined; i++) {
        const d = await limiterHit(`after-restart-${i}`)
        if (d.remaining === 4) back = d
        else await Bun.sleep(100)
      }
      expect(back).toMatchObject({ allowed: true, remaining: 4 })
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 30_000)
})

describe("RateLimiter", () => {
  const failing: RateLimitStore = {
    hit: () =>
      Effect.fail(
        new RateLimitStoreError({
          message: "Redis rate limit script failed (ERR_REDIS_CONNECTION_CLOSED)",
          cause: new Error("connect ECONNREFUSED redis://:hunter2@10.0.0.5:6379"),
        }),
      ),
    release: () => Effect.fail(new RateLimitStoreError({ message: "Redis rate limit release failed (error)" })),
  }

  test("fail-open: a failing store allows the request, counts the error, warns at most once a minute", async () => {
    const logs: Array<string> = []
    const capture = Logger.make(({ logLevel, message, annotations }) => {
      logs.push(`${logLevel.label} ${JSON.stringify(message)} ${JSON.stringify(HashMap.toEntries(annotations))}`)
    })
    const before = await errorCount()
    const decisions = await Effect.runPromise(
      Effect.gen(function* () {
        const limiter = yield* RateLimiter
        const out: Array<RateDecision> = []
        for (let i = 0; i < 3; i++) out.push(yield* limiter.hit("key:k1"))
        yield* TestClock.adjust("59 seconds")
        out.push(yield* limiter.hit("key:k1"))
        yield* TestClock.adjust("1 second")
        out.push(yield* limiter.hit("ip:192.0.2.1"))
        return out
      }).pipe(
        Effect.provide(RateLimiter.layerStore(failing)),
        Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
        Effect.provide(TestContext.TestContext),
      ),
    )
    for (const d of decisions) {
      expect(d).toEqual({ allowed: true, limit: 120, remaining: 120, resetSeconds: 0, retryAfterSeconds: 0 })
    }
    expect((await errorCount()) - before).toBe(5)
    const warnings = logs.filter((line) => line.startsWith("WARN"))
    expect(warnings).toHaveLength(2) // at 0 s and at 60 s
    expect(warnings[0]).toContain("fail-open")
    expect(warnings[1]).toContain('"suppressedFailures",3')
    expect(logs.join("\n")).not.toContain("hunter2")
  })

  test("RateLimiter reads Effect Clock (TestClock): limit, Retry-After, recovery", async () => {
    const out = await Effect.runPromise(
      Effect.gen(function* () {
        const limiter = yield* RateLimiter
        yield* TestClock.setTime(T)
        const first = yield* Effect.forEach([1, 2, 3], () => limiter.hit("key:k1"))
        yield* TestClock.adjust("2500 millis")
        const refused = yield* limiter.hit("key:k1")
        yield* TestClock.adjust(`${refused.retryAfterSeconds} seconds`)
        const after = yield* limiter.hit("key:k1")
        return { first, refused, after, policy: limiter.policyHeader }
      }).pipe(
        Effect.provide(RateLimiter.layerMemory({ limit: 3, windowMs: 10_000 })),
        Effect.provide(TestContext.TestContext),
      ),
    )
    expect(out.first.map((d) => d.remaining)).toEqual([2, 1, 0])
    expect(out.refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 8, retryAfterSeconds: 8 })
    expect(out.after).toMatchObject({ allowed: true, remaining: 2 }) // all three (at T) have left the window
    expect(out.policy).toBe('"default";q=3;w=10')
  })

  test('with no policy configured, the policy header names the default: "default";q=120;w=60', async () => {
    const policy = await Effect.runPromise(
      Effect.map(RateLimiter, (l) => l.policyHeader).pipe(Effect.provide(RateLimiter.layerMemory())),
    )
    expect(policy).toBe('"default";q=120;w=60')
  })

  test("layerFromEnv: memory without REDIS_URL; RATE_LIMIT and RATE_LIMIT_WINDOW override 120/60 s", async () => {
    const run = (env: Record<string, string>) =>
      Effect.runPromiseExit(
        Effect.gen(function* () {
          const limiter = yield* RateLimiter
          const decisions = yield* Effect.forEach([1, 2, 3], () => limiter.hit("key:env"))
          return { policy: limiter.policyHeader, decisions }
        }).pipe(
          Effect.provide(RateLimiter.layerFromEnv),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
        ),
      )
    const custom = await run({ RATE_LIMIT: "2", RATE_LIMIT_WINDOW: "5 seconds", REDIS_URL: " " })
    expect(Exit.isSuccess(custom)).toBe(true)
    if (Exit.isSuccess(custom)) {
      expect(custom.value.policy).toBe('"default";q=2;w=5')
      expect(custom.value.decisions.map((d) => d.allowed)).toEqual([true, true, false])
      expect(custom.value.decisions[2]?.retryAfterSeconds).toBe(5)
    }
    const defaults = await run({})
    expect(Exit.isSuccess(defaults) && defaults.value.policy).toBe('"default";q=120;w=60')
    expect(Exit.isFailure(await run({ RATE_LIMIT: "0" }))).toBe(true)
    expect(Exit.isFailure(await run({ RATE_LIMIT_WINDOW: "soon" }))).toBe(true)
  })

  test("layerRedis: start-up does not fail when Redis is unreachable; requests fail open", async () => {
    const before = await errorCount()
    const decision = await Effect.runPromise(
      Effect.flatMap(RateLimiter, (l) => l.hit("key:k1")).pipe(
        Effect.provide(RateLimiter.layerRedis({ url: "redis://127.0.0.1:1", connectTimeoutMs: 300, timeoutMs: 300 })),
        Effect.provide(Logger.remove(Logger.defaultLogger)),
      ),
    )
    expect(decision).toMatchObject({ allowed: true, remaining: 120 })
    expect((await errorCount()) - before).toBe(1)
  })
})

describe("headers", () => {
  const policy = { policyHeader: '"default";q=120;w=60' }

  test("rateLimitHeaders: allowed", () => {
    const allowed: RateDecision = { allowed: true, limit: 120, remaining: 119, resetSeconds: 60, retryAfterSeconds: 0 }
    expect(rateLimitHeaders(policy, allowed)).toEqual({
      "RateLimit-Policy": '"default";q=120;w=60',
      RateLimit: '"default";r=119;t=60',
    })
  })

  test("rateLimitHeaders: rejected carries Retry-After in whole seconds", () => {
    const rejected: RateDecision = { allowed: false, limit: 120, remaining: 0, resetSeconds: 48, retryAfterSeconds: 48 }
    expect(rateLimitHeaders(policy, rejected)).toEqual({
      "RateLimit-Policy": '"default";q=120;w=60',
      RateLimit: '"default";r=0;t=48',
      "Retry-After": "48",
    })
  })

  test("rateLimitHeaders takes the policy from the limiter", async () => {
    const limiter = await Effect.runPromise(Effect.provide(RateLimiter, RateLimiter.layerMemory({ limit: 2 })))
    const decisions = await Effect.runPromise(Effect.forEach([1, 2, 3], () => limiter.hit("ip:192.0.2.9")))
    const last = decisions[2]
    expect(last).toBeDefined()
    if (last !== undefined) {
      expect(rateLimitHeaders(limiter, last)).toEqual({
        "RateLimit-Policy": '"default";q=2;w=60',
        RateLimit: `"default";r=0;t=${last.resetSeconds}`,
        "Retry-After": String(last.retryAfterSeconds),
      })
      expect(last.retryAfterSeconds).toBeGreaterThanOrEqual(59)
    }
  })
})
