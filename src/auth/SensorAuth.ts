import { Effect, Option } from "effect"
import { Unauthorized } from "../domain/problem.ts"
import { bearerToken, parseToken, SENSOR_TOKEN, secretMatches } from "../domain/secretToken.ts"
import type { SensorIdentity } from "../ingest/Ingestor.ts"
import { SensorsRepo } from "../repos/SensorsRepo.ts"

/**
 * D22: sensors authenticate with their own token (`dst_sen_<id>_<secret>`), stored hashed and compared in
 * constant time. An API key is not a sensor token, so it is refused here, as a sensor token is on the API.
 */
export class SensorAuth extends Effect.Service<SensorAuth>()("SensorAuth", {
  effect: Effect.gen(function* () {
    const sensors = yield* SensorsRepo
    const invalid = Unauthorized.of("The sensor token is not valid. Send Authorization: Bearer <SENSOR_TOKEN>.")
    const authenticate = (authorization: string | undefined) =>
      Effect.gen(function* () {
        const token = bearerToken(authorization)
        const parsed = token === undefined ? undefined : parseToken(SENSOR_TOKEN, token)
        if (parsed === undefined) return yield* Effect.fail(invalid)
        const found = yield* sensors.findCredential(parsed.id)
        if (Option.isNone(found) || !secretMatches(parsed.secret, found.value.tokenHash))
          return yield* Effect.fail(invalid)
        if (found.value.revokedAt !== null)
          return yield* Effect.fail(Unauthorized.of("The sensor token has been revoked."))
        const s = found.value
        return { sensorId: s.id, orgId: s.orgId, name: s.name, profile: s.profile } satisfies SensorIdentity
      })
    return { authenticate } as const
  }),
}) {}
