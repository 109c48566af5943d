// authenticate runs on every API request, whose tracing is off for CPU: Effect.fnUntraced (no span, no stack capture).
import { randomBytes } from "node:crypto"
import { PgClient } from "@effect/sql-pg"
import { Clock, Data, Deferred, Effect, FiberSet, Option } from "effect"
import type { ApiKeyId, OrgId } from "../domain/ids.ts"
import type { Scope } from "../domain/scopes.ts"
import { API_KEY_TOKEN, bearerToken, parseToken, secretMatches } from "../domain/secretToken.ts"
import { AppConfig } from "../platform/config.ts"
import { listenForever } from "../platform/db/listen.ts"
import {
  ApiKeysRepo,
  KEY_CACHE_APPLICATION_NAME,
  KEY_CHANGES_ACK_CHANNEL,
  KEY_CHANGES_CHANNEL,
  type KeyCredentialRow,
  LAST_USED_EVERY_MS,
} from "./ApiKeysRepo.ts"

export interface AuthenticatedKey {
  readonly orgId: OrgId
  readonly keyId: ApiKeyId
  readonly scopes: ReadonlyArray<Scope>
}

// Why a request was not authenticated (spec "API keys" 7-8), in check order. They say what happened; only the
// API edge (api/problems.ts authProblem) turns them into HTTP answers: 401 for every key failure (a malformed token,
// an unknown key id and a wrong secret get one and the same answer), 403 for Deception off and a missing scope.
// None carries the key value or its secret: at most the id of a key that exists (not secret: logs show it).

/** No Authorization header, or a blank one. */
export class KeyMissing extends Data.TaggedError("KeyMissing") {}
/** The Authorization header is not `Bearer <one token>`. */
export class AuthorizationMalformed extends Data.TaggedError("AuthorizationMalformed") {}
/** The bearer token does not have the shape of an API key (`dsk_<key id>_<secret>`). */
export class KeyMalformed extends Data.TaggedError("KeyMalformed") {}
/** No key has the token's key id. */
export class KeyUnknown extends Data.TaggedError("KeyUnknown") {}
/** The key exists but the token's secret is not its secret. */
export class KeyMismatch extends Data.TaggedError("KeyMismatch")<{ readonly keyId: ApiKeyId }> {}
export class KeyRevoked extends Data.TaggedError("KeyRevoked")<{ readonly keyId: ApiKeyId }> {}
export class KeyExpired extends Data.TaggedError("KeyExpired")<{ readonly keyId: ApiKeyId }> {}
/** The key is valid, but Deception is not active for its organization (spec "API keys" 8). */
export class DeceptionDisabled extends Data.TaggedError("DeceptionDisabled")<{
  readonly keyId: ApiKeyId
  readonly orgId: OrgId
}> {}
/** The key is valid but lacks the endpoint's scope. */
export class ScopeMissing extends Data.TaggedError("ScopeMissing")<{
  readonly keyId: ApiKeyId
  /** The scope asked for (`a or b` when any of several would do). */
  readonly scope: string
}> {}

export type KeyAuthError =
  | KeyMissing
  | AuthorizationMalformed
  | KeyMalformed
  | KeyUnknown
  | KeyMismatch
  | KeyRevoked
  | KeyExpired
  | DeceptionDisabled
  | ScopeMissing

/** A cached credential row is used for at most this long, even while no NOTIFY says it changed (belt and braces). */
export const KEY_CACHE_MAX_AGE_MS = 60_000
const KEY_CACHE_MAX_ENTRIES = 20_000
/** How long the LISTEN connection waits for its own probe notification before it declares NOTIFY unusable. */
const PROBE_TIMEOUT_MS = 2_000

interface CachedKey {
  readonly row: KeyCredentialRow
  readonly cachedAt: number
}

/**
 * The key cache: credential rows by key id, so a request needs no authentication query.
 * It is trusted only while this process LISTENs on KEY_CHANGES_CHANNEL and has seen its own probe notification come
 * back through PostgreSQL: revocations and Deception switches NOTIFY in the transaction that makes them, and the
 * listener drops what they name. When the LISTEN connection is lost the cache is emptied and bypassed until
 * listening again (a notification sent meanwhile is lost). The commands that send them wait until every cache has
 * acknowledged (ApiKeysRepo.announced), so the very next request sees the change. Expiry is checked against the
 * clock on every request.
 * With the embedded database (one machine) the cache stays off: every request reads its key.
 */
const makeKeyCache = () => {
  const entries = new Map<string, CachedKey>()
  let listening = false
  // Bumped by every invalidation and every change of the listening state: a row read before a bump may predate the
  // change that caused it, so it is not stored.
  let generation = 0

  const dropAll = () => {
    entries.clear()
    generation++
  }

  return {
    get listening() {
      return listening
    },
    get size() {
      return entries.size
    },
    generation: () => generation,
    get: (keyId: string, now: number): KeyCredentialRow | undefined => {
      if (!listening) return undefined
      const hit = entries.get(keyId)
      if (hit === undefined) return undefined
      if (now - hit.cachedAt >= KEY_CACHE_MAX_AGE_MS || now < hit.cachedAt) {
        entries.delete(keyId)
        return undefined
      }
      return hit.row
    },
    /** Stores a row read while `generation` was `readAt`, unless anything was invalidated since. */
    set: (row: KeyCredentialRow, readAt: number, now: number) => {
      if (!listening || generation !== readAt) return
      if (entries.size >= KEY_CACHE_MAX_ENTRIES) {
        const oldest = entries.keys().next()
        if (!oldest.done) entries.delete(oldest.value)
      }
      entries.set(row.id, { row, cachedAt: now })
    },
    /** A NOTIFY payload: `key:<id>`, `org:<id>`; anything else empties the cache. */
    invalidate: (payload: string) => {
      generation++
      if (payload.startsWith("key:")) entries.delete(payload.slice(4))
      else if (payload.startsWith("org:")) {
        const orgId = payload.slice(4)
        for (const [id, cached] of entries) if (cached.row.orgId === orgId) entries.delete(id)
      } else entries.clear()
    },
    start: () => {
      dropAll()
      listening = true
    },
    stop: () => {
      listening = false
      dropAll()
    },
  }
}
export type KeyCache = ReturnType<typeof makeKeyCache>

/**
 * Keeps the cache's LISTEN connection for as long as the scope lives: connect, LISTEN, send a probe NOTIFY through
 * the pool and wait for it; only then is the cache used. When the connection errs or ends, the cache is emptied and
 * off until the next connection's probe comes back (after 1 s, backing off to 30 s).
 */
const listenForKeyChanges = (pg: PgClient.PgClient, cache: KeyCache) => {
  // The current connection's probe: its own notification coming back shows that NOTIFY reaches this process.
  let probe: { readonly nonce: string; readonly heard: Deferred.Deferred<void> } | undefined
  return listenForever(pg.config, {
    channels: [KEY_CHANGES_CHANNEL],
    applicationName: KEY_CACHE_APPLICATION_NAME,
    maxDelay: "30 seconds",
    onNotification: (message, connection) => {
      const payload = message.payload ?? ""
      if (probe !== undefined && payload === probe.nonce) Deferred.unsafeDone(probe.heard, Effect.void)
      if (payload.startsWith("probe:")) return
      // `<change>|<nonce>`: the announcing command waits for every cache's acknowledgement (ApiKeysRepo.announced).
      const bar = payload.indexOf("|")
      cache.invalidate(bar < 0 ? payload : payload.slice(0, bar))
      if (bar >= 0) connection.notify(KEY_CHANGES_ACK_CHANNEL, payload.slice(bar + 1))
    },
    onLost: cache.stop,
    whileConnected: (connection) =>
      Effect.gen(function* () {
        yield* Effect.addFinalizer(() => Effect.sync(cache.stop))
        const nonce = `probe:${randomBytes(12).toString("base64url")}`
        const heard = yield* Deferred.make<void>()
        probe = { nonce, heard }
        yield* pg`select pg_notify(${KEY_CHANGES_CHANNEL}, ${nonce})`
        const probed = yield* Deferred.await(heard).pipe(Effect.timeout(PROBE_TIMEOUT_MS), Effect.option)
        if (Option.isNone(probed)) {
          yield* Effect.logWarning("api key cache off: this process does not receive NOTIFY; keys are read per request")
          return
        }
        if (yield* connection.isLost) return
        cache.start()
        yield* Effect.logInfo("api key cache on")
        yield* connection.lost
        yield* Effect.logWarning(
          "api key cache off: LISTEN connection lost; keys are read per request until it is back",
        )
      }),
  })
}

/**
 * API key authentication (spec "API keys"): key, then Deception active, then scope. It fails with the
 * KeyAuthError that says what was wrong (or a DatabaseError); the API edge maps them to problem documents.
 * The credential row comes from the key cache (see makeKeyCache) or, when it cannot answer, from one primary-key
 * read; the secret's SHA-256 is compared in constant time on every request; revocation and Deception changes reach
 * every process through NOTIFY at once, and expiry is compared with the clock on every request.
 */
export class KeyAuth extends Effect.Service<KeyAuth>()("KeyAuth", {
  scoped: Effect.gen(function* () {
    const keys = yield* ApiKeysRepo
    const config = yield* AppConfig
    const pg = yield* PgClient.PgClient
    const background = yield* FiberSet.make()
    const lastWrites = new Map<string, number>()
    const cache = makeKeyCache()
    // The embedded database runs without the cache (docs/api.md "Authentication").
    if (Option.isSome(config.databaseUrl)) yield* Effect.forkScoped(listenForKeyChanges(pg, cache))

    // lastUsedAt, off the request path: this map lets through at most one write per key a minute from this process,
    // and the repository's guard lets through one per key a minute across all processes (ApiKeysRepo.touchLastUsed).
    const recordUse = (keyId: ApiKeyId, now: number) => {
      const last = lastWrites.get(keyId)
      if (last !== undefined && now - last < LAST_USED_EVERY_MS) return Effect.void
      lastWrites.set(keyId, now)
      if (lastWrites.size > 100_000) lastWrites.clear()
      return FiberSet.run(
        background,
        keys
          .touchLastUsed(keyId, new Date(now))
          .pipe(Effect.catchAll((e) => Effect.logWarning("could not record key use", e.cause._tag))),
      ).pipe(Effect.asVoid)
    }

    const credential = (keyId: ApiKeyId, now: number) => {
      const cached = cache.get(keyId, now)
      if (cached !== undefined) return Effect.succeed(Option.some(cached))
      const readAt = cache.generation()
      return Effect.tap(keys.findCredential(keyId), (found) => {
        if (Option.isSome(found)) cache.set(found.value, readAt, now)
      })
    }

    /** `scope`: the one the endpoint needs, or a list of which any one will do (MCP: any read scope). */
    const authenticate = Effect.fnUntraced(function* (
      authorization: string | undefined,
      scope: Scope | ReadonlyArray<Scope>,
    ) {
      if (authorization === undefined || authorization.trim() === "") return yield* new KeyMissing()
      const token = bearerToken(authorization)
      if (token === undefined) return yield* new AuthorizationMalformed()
      const parsed = parseToken(API_KEY_TOKEN, token)
      if (parsed === undefined) return yield* new KeyMalformed()
      const now = yield* Clock.currentTimeMillis
      const found = yield* credential(parsed.id, now)
      if (Option.isNone(found)) return yield* new KeyUnknown()
      const key = found.value
      if (!secretMatches(parsed.secret, key.secretHash)) return yield* new KeyMismatch({ keyId: key.id })
      if (key.revokedAt !== null) return yield* new KeyRevoked({ keyId: key.id })
      if (key.expiresAt !== null && key.expiresAt.getTime() <= now) return yield* new KeyExpired({ keyId: key.id })
      if (!key.deceptionEnabled) return yield* new DeceptionDisabled({ keyId: key.id, orgId: key.orgId })
      const wanted: ReadonlyArray<Scope> = typeof scope === "string" ? [scope] : scope
      if (!wanted.some((s) => key.scopes.includes(s))) {
        return yield* new ScopeMissing({ keyId: key.id, scope: wanted.join(" or ") })
      }
      yield* recordUse(key.id, now)
      return {
        orgId: key.orgId,
        keyId: key.id,
        scopes: key.scopes as ReadonlyArray<Scope>,
      } satisfies AuthenticatedKey
    })

    return {
      authenticate,
      /** Whether the key cache is in use (LISTEN connected and its probe heard); for tests and diagnostics. */
      cacheActive: () => cache.listening,
    } as const
  }),
}) {}
