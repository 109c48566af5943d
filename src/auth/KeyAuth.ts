import { Clock, Effect, FiberSet, Option } from "effect"
import { Forbidden, Unauthorized } from "../domain/problem.ts"
import { API_KEY_TOKEN, bearerToken, parseToken, secretMatches } from "../domain/secretToken.ts"
import { ApiKeysRepo, type Scope } from "../repos/ApiKeysRepo.ts"

export interface AuthenticatedKey {
  readonly orgId: string
  readonly keyId: string
  readonly scopes: ReadonlyArray<Scope>
}

// lastUsedAt is written at most once a minute per key and process, off the request path.
const LAST_USED_EVERY_MS = 60_000

/**
 * API key authentication (spec "API keys", D9, D10): key, then Deception active, then scope.
 * One primary-key read per request; the secret's SHA-256 is compared in constant time; revocation and expiry
 * are read from the row on every request, so they take effect at once.
 */
export class KeyAuth extends Effect.Service<KeyAuth>()("KeyAuth", {
  scoped: Effect.gen(function* () {
    const keys = yield* ApiKeysRepo
    const background = yield* FiberSet.make()
    const lastWrites = new Map<string, number>()

    const recordUse = (keyId: string, now: number) => {
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

    const invalid = Unauthorized.of("The API key is not valid. Send Authorization: Bearer <API_KEY>.")

    const authenticate = (authorization: string | undefined, scope: Scope) =>
      Effect.gen(function* () {
        if (authorization === undefined || authorization.trim() === "") {
          return yield* Effect.fail(
            Unauthorized.of("The Authorization header is missing. Send Authorization: Bearer <API_KEY>."),
          )
        }
        const token = bearerToken(authorization)
        if (token === undefined) {
          return yield* Effect.fail(Unauthorized.of("The Authorization header must be Bearer <API_KEY>."))
        }
        const parsed = parseToken(API_KEY_TOKEN, token)
        if (parsed === undefined) return yield* Effect.fail(invalid)
        const found = yield* keys.findCredential(parsed.id)
        if (Option.isNone(found) || !secretMatches(parsed.secret, found.value.secretHash)) {
          return yield* Effect.fail(invalid)
        }
        const key = found.value
        const now = yield* Clock.currentTimeMillis
        if (key.revokedAt !== null) return yield* Effect.fail(Unauthorized.of("The API key has been revoked."))
        if (key.expiresAt !== null && key.expiresAt.getTime() <= now) {
          return yield* Effect.fail(Unauthorized.of("The API key has expired."))
        }
        if (!key.deceptionEnabled) return yield* Effect.fail(Forbidden.featureDisabled())
        if (!key.scopes.includes(scope)) return yield* Effect.fail(Forbidden.insufficientScope(scope))
        yield* recordUse(key.id, now)
        return {
          orgId: key.orgId,
          keyId: key.id,
          scopes: key.scopes as ReadonlyArray<Scope>,
        } satisfies AuthenticatedKey
      })

    return { authenticate } as const
  }),
}) {}
