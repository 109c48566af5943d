import { Clock, Data, Effect, FiberSet, Option } from "effect"
import { constantTimeEqual, sha256 } from "../domain/crypto.ts"
import type { SensorId } from "../domain/ids.ts"
import { Unauthorized } from "../domain/problem.ts"
import { bearerToken, parseToken, SENSOR_TOKEN } from "../domain/secretToken.ts"
import type { DatabaseError } from "../platform/db/errors.ts"
import { LAST_SEEN_EVERY_MS, SensorsRepo } from "../repos/SensorsRepo.ts"
import type { SensorIdentity } from "./batch.ts"

/**
 * Why a sensor token was refused. Each face maps it to its own answer: the `/ingest/v1/*` routes answer 401 for
 * every reason (`authenticate`); the Splunk HEC face answers `missing` with 401 code 2 "Token is required" and the
 * others with 403 code 4 "Invalid token", as Splunk does. Never carries the token or its secret.
 */
export class SensorTokenRejected extends Data.TaggedError("SensorTokenRejected")<{
  /** No token was presented. */
  readonly reason: "missing" | "invalid" | "revoked"
}> {}

/**
 * Sensors authenticate with their own token (`dst_sen_<id>_<secret>`), stored hashed and compared in
 * constant time. An API key is not a sensor token, so it is refused here, as a sensor token is on the API.
 *
 * There is no token cache: every request reads its sensor's row (one primary-key read), so a revocation or a
 * rotation takes effect on the very next request in every process. During a rotation's grace the previous token
 * works too, until its expiry (compared with the clock on every request).
 *
 * A request that authenticates is contact ("last heard from"): recorded off the request path, at most once per
 * sensor per LAST_SEEN_EVERY_MS from this process, and once per interval across processes (SensorsRepo.touchLastSeen).
 */
export class SensorAuth extends Effect.Service<SensorAuth>()("SensorAuth", {
  scoped: Effect.gen(function* () {
    const sensors = yield* SensorsRepo
    const background = yield* FiberSet.make()
    const lastWrites = new Map<string, number>()

    const recordContact = (sensorId: SensorId, now: number) => {
      const last = lastWrites.get(sensorId)
      if (last !== undefined && now - last < LAST_SEEN_EVERY_MS && now >= last) return Effect.void
      lastWrites.set(sensorId, now)
      if (lastWrites.size > 100_000) lastWrites.clear()
      return FiberSet.run(
        background,
        sensors
          .touchLastSeen(sensorId, new Date(now))
          .pipe(Effect.catchAll((e) => Effect.logWarning("could not record sensor contact", e.cause._tag))),
      ).pipe(Effect.asVoid)
    }

    /** The sensor of a presented token (undefined: none presented), or why it was refused. */
    const verifyToken: (
      token: string | undefined,
    ) => Effect.Effect<SensorIdentity, SensorTokenRejected | DatabaseError> = Effect.fn("SensorAuth.verifyToken")(
      function* (token: string | undefined) {
        if (token === undefined || token === "") return yield* new SensorTokenRejected({ reason: "missing" })
        const parsed = parseToken(SENSOR_TOKEN, token)
        if (parsed === undefined) return yield* new SensorTokenRejected({ reason: "invalid" })
        const found = yield* sensors.findCredential(parsed.id)
        if (Option.isNone(found)) return yield* new SensorTokenRejected({ reason: "invalid" })
        const s = found.value
        const now = yield* Clock.currentTimeMillis
        const presented = sha256(parsed.secret)
        // Both hashes are compared whenever a previous one is stored, so the answer's timing says nothing of which.
        const current = constantTimeEqual(presented, s.tokenHash)
        const previous =
          s.previousTokenHash !== null && constantTimeEqual(presented, s.previousTokenHash)
            ? s.previousTokenExpiresAt !== null && s.previousTokenExpiresAt.getTime() > now
            : false
        if (!current && !previous) return yield* new SensorTokenRejected({ reason: "invalid" })
        if (s.revokedAt !== null) return yield* new SensorTokenRejected({ reason: "revoked" })
        yield* recordContact(s.id, now)
        return { sensorId: s.id, orgId: s.orgId, name: s.name, profile: s.profile } satisfies SensorIdentity
      },
    )

    /** `Authorization: Bearer <token>`: the sensor, or a SensorTokenRejected. */
    const check = (authorization: string | undefined) =>
      verifyToken(
        authorization === undefined || authorization.trim() === "" ? undefined : (bearerToken(authorization) ?? "-"),
      )

    /** The `/ingest/v1/*` routes: every refusal is a 401 problem (a revoked token at once). */
    const authenticate = (authorization: string | undefined) =>
      Effect.catchTag(check(authorization), "SensorTokenRejected", (e) =>
        Effect.fail(
          e.reason === "revoked"
            ? Unauthorized.of("The sensor token has been revoked.")
            : e.reason === "missing"
              ? Unauthorized.of(
                  "The sensor token is missing. Send it in the Authorization header: Authorization: Bearer <sensor token>.",
                )
              : Unauthorized.of("The sensor token is not valid. Send Authorization: Bearer <sensor token>."),
        ),
      )

    return { authenticate, check, verifyToken } as const
  }),
}) {}
