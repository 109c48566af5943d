import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option } from "effect"
import { sha256 } from "../domain/crypto.ts"
import { isId, type OrgId } from "../domain/ids.ts"
import { issueToken, SENSOR_TOKEN } from "../domain/secretToken.ts"
import { statusOf } from "../domain/sensorStatus.ts"
import { parseShortDuration } from "../platform/config.ts"
import { type SensorRow, SensorsRepo } from "../repos/SensorsRepo.ts"
import { requireAdmin, requireScope } from "./actor.ts"
import { auditing, checkName, sameName } from "./common.ts"
import { Conflict, invalid, malformed, notFound } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"
import { DEFAULT_PROFILE, findProfile, profileIds } from "./sensorSetup.ts"

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

/** One of the documented profiles (src/admin/sensorSetup.ts); anything else is refused with the list. */
const checkProfile = (profile: string | undefined) => {
  const chosen = (profile ?? DEFAULT_PROFILE).trim()
  return findProfile(chosen) === undefined
    ? Effect.fail(
        malformed("profile", `must be one of ${profileIds().join(", ")} (got ${JSON.stringify(chosen.slice(0, 40))})`),
      )
    : Effect.succeed(chosen)
}

/** `30s`…`7d` as whole seconds; `off` (or `none`, or an empty form field): no heartbeat expected, never `silent`. */
const checkHeartbeatInterval = (text: string | undefined) => {
  if (text === undefined || ["", "off", "none"].includes(text.trim())) return Effect.succeed(null)
  const parsed = parseShortDuration(text.trim())
  const seconds = parsed === undefined ? Number.NaN : Duration.toMillis(parsed) / 1000
  if (!Number.isInteger(seconds) || seconds < MIN_HEARTBEAT_SECONDS || seconds > MAX_HEARTBEAT_SECONDS) {
    return Effect.fail(
      malformed("heartbeatInterval", "must be a duration from 30s to 7d (such as 60s, 5m or 1h), or off"),
    )
  }
  return Effect.succeed(seconds)
}

const revokedRefusal = (id: string) =>
  invalid({ field: "sensor", reason: "state", detail: `sensor ${id} is revoked; create a new one` })
const notRevoked = (sensor: SensorRow) =>
  sensor.revokedAt === null ? Effect.void : Effect.fail(revokedRefusal(sensor.id))

/**
 * Decoy sensors: their ingest token is returned once (create, rotate) and never audited; every change is
 * audited in its transaction. Within an organization no two sensors in service share a name (ignoring case): the
 * console and the incidents name a sensor, and two alike could not be told apart. A revoked sensor's name is free.
 */
export class SensorAdmin extends Effect.Service<SensorAdmin>()("SensorAdmin", {
  effect: Effect.gen(function* () {
    const sensors = yield* SensorsRepo
    const orgAdmin = yield* OrgAdmin
    const sql = yield* SqlClient.SqlClient
    const { audited, lockNames } = yield* auditing

    /** Refused when another sensor in service in the organization has this name. Call within a transaction. */
    const nameFree = (orgId: OrgId, name: string, self?: string) =>
      Effect.gen(function* () {
        yield* lockNames(`sensors:${orgId}`)
        const taken = (yield* sensors.listByOrg(orgId)).find(
          (s) => s.id !== self && s.revokedAt === null && sameName(s.name, name),
        )
        if (taken !== undefined) {
          return yield* new Conflict({
            field: "name",
            reason: "taken",
            within: "organization",
            name: taken.name,
            takenBy: taken.id,
          })
        }
      })

    const create = Effect.fn("SensorAdmin.create")(function* (
      org: string,
      input: {
        readonly name: string | undefined
        readonly profile: string | undefined
        readonly heartbeatInterval?: string | undefined
      },
      options: { readonly allowDuplicateName?: boolean } = {},
    ) {
      yield* requireAdmin
      const orgId = (yield* orgAdmin.require(org)).id
      const name = yield* checkName("name", input.name)
      const profile = yield* checkProfile(input.profile)
      const heartbeatIntervalSeconds = yield* checkHeartbeatInterval(input.heartbeatInterval)
      if (options.allowDuplicateName !== true) yield* nameFree(orgId, name)
      const issued = issueToken(SENSOR_TOKEN)
      yield* sensors.create({
        id: issued.id,
        orgId,
        name,
        profile,
        tokenHash: issued.secretHash,
        heartbeatIntervalSeconds,
      })
      yield* audited(orgId, "sensor.create", issued.id, `${name} (${profile})`)
      return { id: issued.id, token: issued.token }
    }, sql.withTransaction)

    /** Every sensor of the organization with its status now and when it was last heard from. */
    const list = Effect.fn("SensorAdmin.list")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      const now = new Date()
      return (yield* sensors.listByOrg(orgId)).map((s) => describeSensor(s, now))
    })

    /** Another organization's sensor is the same "unknown" as a sensor that does not exist. */
    const find = Effect.fn("SensorAdmin.find")(function* (sensorId: string) {
      const found = isId("sensor", sensorId) ? yield* sensors.findById(sensorId) : Option.none()
      if (Option.isNone(found)) return yield* notFound("sensor", sensorId)
      yield* requireScope(found.value.orgId, "sensor", sensorId)
      return found.value
    })

    const rename = Effect.fn("SensorAdmin.rename")(function* (sensorId: string, name: string | undefined) {
      yield* requireAdmin
      const sensor = yield* find(sensorId)
      const checked = yield* checkName("name", name)
      yield* notRevoked(sensor)
      yield* nameFree(sensor.orgId, checked, sensor.id)
      // Revoked between the read and the update: the same refusal.
      if (!(yield* sensors.rename(sensor.id, checked, new Date()))) return yield* revokedRefusal(sensor.id)
      yield* audited(sensor.orgId, "sensor.rename", sensor.id, `${sensor.name} → ${checked}`)
      return { id: sensor.id, name: checked, previousName: sensor.name }
    }, sql.withTransaction)

    const setHeartbeat = Effect.fn("SensorAdmin.setHeartbeat")(function* (
      sensorId: string,
      interval: string | undefined,
    ) {
      yield* requireAdmin
      const sensor = yield* find(sensorId)
      const seconds = yield* checkHeartbeatInterval(interval)
      yield* notRevoked(sensor)
      yield* sensors.setHeartbeatInterval(sensor.id, seconds, new Date())
      yield* audited(sensor.orgId, "sensor.heartbeat", sensor.id, seconds === null ? "off" : `every ${seconds}s`)
      return { id: sensor.id, heartbeatIntervalSeconds: seconds }
    }, sql.withTransaction)

    /**
     * A new token, shown once. With a grace period the old token keeps working until it ends (as for webhook
     * secrets); without one it stops at once. While the grace of an earlier rotation is still running the
     * rotation is refused (it would end that grace early, and with it the token a sensor may still be moving off)
     * unless `force`, which ends it: only the token current until this call is kept. The audit row says the grace.
     */
    const rotate = Effect.fn("SensorAdmin.rotate")(function* (
      sensorId: string,
      grace: string | undefined,
      force = false,
    ) {
      yield* requireAdmin
      const sensor = yield* find(sensorId)
      let ms = 0
      if (grace !== undefined && grace.trim() !== "") {
        const parsed = parseShortDuration(grace.trim())
        if (parsed === undefined) return yield* malformed("grace", "must be a duration such as 30m, 24h or 7d")
        ms = Duration.toMillis(parsed)
      }
      if (ms > MAX_GRACE_MS) return yield* malformed("grace", "may be at most 30d")
      yield* notRevoked(sensor)
      const at = new Date()
      const secret = randomBytes(32).toString("base64url")
      const until = ms > 0 ? new Date(at.getTime() + ms) : null
      if (!(yield* sensors.rotate(sensor.id, sha256(secret), until, at, force))) {
        // Nothing changed: say why, from the row as it is now.
        const now = yield* sensors.findById(sensor.id)
        if (Option.isNone(now)) return yield* notFound("sensor", sensor.id)
        yield* notRevoked(now.value)
        const running = now.value.previousTokenExpiresAt
        return yield* invalid({
          field: "force",
          reason: "state",
          detail:
            `sensor ${sensor.id}: the token of an earlier rotation still works until ${running?.toISOString() ?? "its grace ends"}; ` +
            "rotating now would end that grace at once. Wait until then, or rotate with --force (in the console: " +
            'tick "End the earlier grace now") to end it',
        })
      }
      const running = sensor.previousTokenExpiresAt
      const endedGrace = force && running !== null && running.getTime() > at.getTime()
      const previousTokenValidUntil = until?.toISOString() ?? null
      yield* audited(
        sensor.orgId,
        "sensor.rotate",
        sensor.id,
        `${previousTokenValidUntil ? `grace until ${previousTokenValidUntil}` : "no grace"}${endedGrace ? "; the earlier grace ended" : ""}`,
      )
      return {
        id: sensor.id,
        token: `${SENSOR_TOKEN.prefix}_${sensor.id}_${secret}`,
        previousTokenValidUntil,
        /** A grace of an earlier rotation that `force` ended. */
        endedGrace,
      }
    }, sql.withTransaction)

    /** Immediately 401 on every ingest route (no cache). `changed` is false (and nothing is audited) when it was. */
    const revoke = Effect.fn("SensorAdmin.revoke")(function* (sensorId: string) {
      yield* requireAdmin
      const sensor = yield* find(sensorId)
      const changed = yield* sensors.revoke(sensor.id, new Date())
      if (changed) yield* audited(sensor.orgId, "sensor.revoke", sensor.id, sensor.name)
      return { id: sensor.id, revoked: true as const, changed }
    }, sql.withTransaction)

    return { create, list, find, rename, setHeartbeat, rotate, revoke } as const
  }),
}) {}
