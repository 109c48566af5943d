import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Data, Duration, Effect, Option } from "effect"
import { sha256 } from "../domain/crypto.ts"
import { isId } from "../domain/ids.ts"
import { SCOPES, type Scope } from "../domain/scopes.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { API_KEY_TOKEN, issueToken, SENSOR_TOKEN } from "../domain/secretToken.ts"
import { parseTimestamp } from "../domain/time.ts"
import { AppConfig, parseShortDuration, sealerOf } from "../platform/config.ts"
import { ApiKeysRepo } from "../repos/ApiKeysRepo.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { type SensorRow, SensorsRepo, statusOf } from "../repos/SensorsRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { DEFAULT_PROFILE, findProfile, profileIds } from "./sensorSetup.ts"

/** A refused admin command: the message is shown to the operator as is. */
export class AdminError extends Data.TaggedError("AdminError")<{
  readonly message: string
  /** No such id in the caller's organization: the console answers its 404 page (D30), the CLI the message. */
  readonly kind?: "unknown"
}> {}

const MIN_HEARTBEAT_SECONDS = 30
const MAX_HEARTBEAT_SECONDS = 7 * 86_400
/** Rotation grace, as for webhook secrets. */
const MAX_GRACE_MS = 30 * 86_400_000

/** A sensor as the CLI and the console list it (never its token or a hash). */
export const describeSensor = (s: SensorRow, now: Date) => ({
  id: s.id,
  name: s.name,
  profile: s.profile,
  status: statusOf(s, now),
  lastSeenAt: s.lastSeenAt?.toISOString() ?? null,
  heartbeatIntervalSeconds: s.heartbeatIntervalSeconds,
  createdAt: s.createdAt.toISOString(),
  revokedAt: s.revokedAt?.toISOString() ?? null,
  previousTokenValidUntil:
    s.previousTokenExpiresAt !== null && s.previousTokenExpiresAt > now ? s.previousTokenExpiresAt.toISOString() : null,
})
export type SensorView = ReturnType<typeof describeSensor>

const refuse = (message: string) => Effect.fail(new AdminError({ message }))

const checkName = (what: string, name: string | undefined) => {
  if (name === undefined) return refuse(`${what} is required`)
  const trimmed = name?.trim() ?? ""
  if (trimmed === "" || trimmed.length > 200 || /[\p{Cc}\p{Cf}]/u.test(trimmed)) {
    return refuse(`${what} must be 1 to 200 printable characters`)
  }
  return Effect.succeed(trimmed)
}

/**
 * The operations behind `bun run admin` (D24), also used by the demo and the tests. Every command checks
 * its input and refuses with a clear message; nothing here prints a secret except as its return value.
 */
export class AdminOperations extends Effect.Service<AdminOperations>()("AdminOperations", {
  effect: Effect.gen(function* () {
    const orgs = yield* OrgsRepo
    const keys = yield* ApiKeysRepo
    const sensors = yield* SensorsRepo
    const incidents = yield* IncidentsRepo
    const transitions = yield* TransitionsRepo
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const sealer = sealerOf(config)

    const requireOrg = (orgId: string) =>
      Effect.gen(function* () {
        const org = isId("organization", orgId) ? yield* orgs.findById(orgId) : Option.none()
        if (Option.isNone(org)) return yield* refuse(`unknown organization: ${orgId}`)
        return org.value
      })

    const createOrg = (name: string | undefined) =>
      Effect.gen(function* () {
        const checked = yield* checkName("--name", name)
        // D19: the per-organization fingerprint key, sealed under SECRET_KEY.
        const org = yield* orgs.create({ name: checked, fingerprintKey: sealer.seal(randomBytes(32)) })
        return { id: org.id }
      })

    const setDeception = (orgId: string, state: string | undefined) =>
      Effect.gen(function* () {
        if (state !== "on" && state !== "off") return yield* refuse("usage: org deception <org-id> on|off")
        yield* requireOrg(orgId)
        yield* orgs.setDeception(orgId, state === "on")
        return { id: orgId, deception: state }
      })

    const createKey = (input: {
      readonly orgId: string
      readonly name: string | undefined
      readonly scopes: string | undefined
      readonly expires: string | undefined
    }) =>
      Effect.gen(function* () {
        yield* requireOrg(input.orgId)
        const name = yield* checkName("--name", input.name)
        const scopes = [
          ...new Set(
            (input.scopes ?? "")
              .split(",")
              .map((s) => s.trim())
              .filter((s) => s !== ""),
          ),
        ]
        if (scopes.length === 0)
          return yield* refuse(`--scopes is required: a comma-separated list of ${SCOPES.join(", ")}`)
        const unknown = scopes.filter((s) => !(SCOPES as ReadonlyArray<string>).includes(s))
        if (unknown.length > 0) {
          return yield* refuse(`unknown scope ${unknown.join(", ")}; allowed scopes: ${SCOPES.join(", ")}`)
        }
        let expiresAt: Date | null = null
        if (input.expires !== undefined) {
          const parsed = parseTimestamp(input.expires)
          if (parsed === undefined) return yield* refuse("--expires must be an RFC 3339 timestamp with a time zone")
          if (parsed.getTime() <= Date.now()) return yield* refuse("--expires must be in the future")
          expiresAt = parsed
        }
        const issued = issueToken(API_KEY_TOKEN)
        yield* keys.create({
          id: issued.id,
          orgId: input.orgId,
          name,
          scopes: scopes as Array<Scope>,
          secretHash: issued.secretHash,
          expiresAt,
        })
        return { id: issued.id, key: issued.token }
      })

    const listKeys = (orgId: string) =>
      Effect.gen(function* () {
        yield* requireOrg(orgId)
        const rows = yield* keys.listByOrg(orgId)
        return rows.map((k) => ({
          id: k.id,
          name: k.name,
          scopes: k.scopes,
          createdAt: k.createdAt.toISOString(),
          expiresAt: k.expiresAt?.toISOString() ?? null,
          revokedAt: k.revokedAt?.toISOString() ?? null,
          lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
        }))
      })

    const revokeKey = (keyId: string) =>
      Effect.gen(function* () {
        const done = isId("apiKey", keyId) ? yield* keys.revoke(keyId) : false
        if (!done) return yield* refuse(`unknown key: ${keyId}`)
        return { id: keyId, revoked: true }
      })

    /** D43: one of the documented profiles (src/admin/sensorSetup.ts); anything else is refused with the list. */
    const checkProfile = (profile: string | undefined) => {
      const chosen = (profile ?? DEFAULT_PROFILE).trim()
      return findProfile(chosen) === undefined
        ? refuse(`--profile must be one of ${profileIds().join(", ")} (got ${JSON.stringify(chosen.slice(0, 40))})`)
        : Effect.succeed(chosen)
    }

    /**
     * `30s`…`7d` as whole seconds; `off` (or `none`, or an empty form field): no heartbeat expected, so the sensor
     * is never `silent`.
     */
    const checkHeartbeatInterval = (text: string | undefined) => {
      if (text === undefined || ["", "off", "none"].includes(text.trim())) return Effect.succeed(null)
      const parsed = parseShortDuration(text.trim())
      const seconds = parsed === undefined ? Number.NaN : Duration.toMillis(parsed) / 1000
      if (!Number.isInteger(seconds) || seconds < MIN_HEARTBEAT_SECONDS || seconds > MAX_HEARTBEAT_SECONDS) {
        return refuse("--heartbeat-interval must be a duration from 30s to 7d (such as 60s, 5m or 1h), or off")
      }
      return Effect.succeed(seconds)
    }

    const createSensor = (input: {
      readonly orgId: string
      readonly name: string | undefined
      readonly profile: string | undefined
      readonly heartbeatInterval?: string | undefined
    }) =>
      Effect.gen(function* () {
        yield* requireOrg(input.orgId)
        const name = yield* checkName("--name", input.name)
        const profile = yield* checkProfile(input.profile)
        const heartbeatIntervalSeconds = yield* checkHeartbeatInterval(input.heartbeatInterval)
        const issued = issueToken(SENSOR_TOKEN)
        yield* sensors.create({
          id: issued.id,
          orgId: input.orgId,
          name,
          profile,
          tokenHash: issued.secretHash,
          heartbeatIntervalSeconds,
        })
        return { id: issued.id, token: issued.token }
      })

    /** The sensor, whichever organization it belongs to (AdminActions checks the caller's). */
    const requireSensor = (sensorId: string | undefined) =>
      Effect.gen(function* () {
        const found =
          sensorId !== undefined && isId("sensor", sensorId) ? yield* sensors.findById(sensorId) : Option.none()
        if (Option.isNone(found)) {
          return yield* Effect.fail(new AdminError({ message: `unknown sensor: ${sensorId ?? ""}`, kind: "unknown" }))
        }
        return found.value
      })

    const notRevoked = (sensor: SensorRow) =>
      sensor.revokedAt === null ? Effect.void : refuse(`sensor ${sensor.id} is revoked; create a new one`)

    const renameSensor = (sensorId: string | undefined, name: string | undefined) =>
      Effect.gen(function* () {
        const sensor = yield* requireSensor(sensorId)
        const checked = yield* checkName("--name", name)
        yield* notRevoked(sensor)
        // Revoked between the read and the update: the same refusal.
        if (!(yield* sensors.rename(sensor.id, checked, new Date()))) {
          return yield* refuse(`sensor ${sensor.id} is revoked; create a new one`)
        }
        return { id: sensor.id, name: checked, previousName: sensor.name }
      })

    const setSensorHeartbeat = (sensorId: string | undefined, interval: string | undefined) =>
      Effect.gen(function* () {
        const sensor = yield* requireSensor(sensorId)
        const seconds = yield* checkHeartbeatInterval(interval)
        yield* notRevoked(sensor)
        yield* sensors.setHeartbeatInterval(sensor.id, seconds, new Date())
        return { id: sensor.id, heartbeatIntervalSeconds: seconds }
      })

    /**
     * D43: a new token, shown once. With a grace period the old token keeps working until it ends (as for webhook
     * secrets, D16); without one it stops at once. While the grace of an earlier rotation is still running the
     * rotation is refused (it would end that grace early, and with it the token a sensor may still be moving off)
     * unless `force`, which ends it: only the token current until this call is kept.
     */
    const rotateSensor = (sensorId: string | undefined, grace: string | undefined, force = false) =>
      Effect.gen(function* () {
        const sensor = yield* requireSensor(sensorId)
        let ms = 0
        if (grace !== undefined && grace.trim() !== "") {
          const parsed = parseShortDuration(grace.trim())
          if (parsed === undefined) return yield* refuse("--grace must be a duration such as 30m, 24h or 7d")
          ms = Duration.toMillis(parsed)
        }
        if (ms > MAX_GRACE_MS) return yield* refuse("--grace may be at most 30d")
        yield* notRevoked(sensor)
        const at = new Date()
        const secret = randomBytes(32).toString("base64url")
        const until = ms > 0 ? new Date(at.getTime() + ms) : null
        if (!(yield* sensors.rotate(sensor.id, sha256(secret), until, at, force))) {
          // Nothing changed: say why, from the row as it is now.
          const now = yield* sensors.findById(sensor.id)
          if (Option.isNone(now)) return yield* refuse(`unknown sensor: ${sensor.id}`)
          yield* notRevoked(now.value)
          const running = now.value.previousTokenExpiresAt
          return yield* refuse(
            `sensor ${sensor.id}: the token of an earlier rotation still works until ${running?.toISOString() ?? "its grace ends"}; ` +
              "rotating now would end that grace at once. Wait until then, or rotate with --force (in the console: " +
              'tick "End the earlier grace now") to end it',
          )
        }
        const running = sensor.previousTokenExpiresAt
        return {
          id: sensor.id,
          token: `${SENSOR_TOKEN.prefix}_${sensor.id}_${secret}`,
          previousTokenValidUntil: until?.toISOString() ?? null,
          /** A grace of an earlier rotation that `force` ended (for the audit row). */
          endedGrace: force && running !== null && running.getTime() > at.getTime(),
        }
      })

    /** `changed` is false when it was already revoked (nothing to record). */
    const revokeSensor = (sensorId: string | undefined) =>
      Effect.gen(function* () {
        const sensor = yield* requireSensor(sensorId)
        const changed = yield* sensors.revoke(sensor.id, new Date())
        return { id: sensor.id, revoked: true as const, changed }
      })

    /** D43: every sensor of the organization with its status now and when it was last heard from. */
    const listSensors = (orgId: string) =>
      Effect.gen(function* () {
        yield* requireOrg(orgId)
        const now = new Date()
        return (yield* sensors.listByOrg(orgId)).map((s) => describeSensor(s, now))
      })

    /** D13: an admin closes an open incident; resolvedAt is set and a `closed` transition recorded. */
    const closeIncident = (incidentId: string) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const now = new Date()
            const closed = isId("incident", incidentId) ? yield* incidents.close(incidentId, now) : Option.none()
            if (Option.isNone(closed)) return yield* refuse(`no open incident ${incidentId}`)
            const c = closed.value
            yield* transitions.insert([
              {
                orgId: c.orgId,
                incidentId: c.id,
                kind: "closed",
                fromSeverity: c.severity,
                toSeverity: c.severity,
                at: now,
              },
            ])
            return { id: c.id, status: "closed" as const, resolvedAt: c.resolvedAt.toISOString() }
          }),
        )
        .pipe(Effect.catchTag("SqlError", (e) => refuse(`database error: ${e.message}`)))

    /** After a SECRET_KEY rotation: every fingerprint key sealed under an older key is sealed under the current. */
    const resealFingerprintKeys = Effect.gen(function* () {
      let resealed = 0
      const unreadable: Array<string> = []
      for (const org of yield* orgs.list()) {
        if (sealedKeyId(org.fingerprintKey) === sealer.keyId) continue
        const key = sealer.open(org.fingerprintKey)
        if (key === undefined) unreadable.push(org.id)
        else {
          yield* orgs.setFingerprintKey(org.id, sealer.seal(key))
          resealed++
        }
      }
      return { resealed, unreadable }
    })

    return {
      resealFingerprintKeys,
      closeIncident,
      createOrg,
      setDeception,
      createKey,
      listKeys,
      revokeKey,
      createSensor,
      requireSensor,
      renameSensor,
      setSensorHeartbeat,
      rotateSensor,
      revokeSensor,
      listSensors,
      requireOrg,
    } as const
  }),
}) {}
