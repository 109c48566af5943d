import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isId } from "../domain/ids.ts"
import { ApiKeysRepo } from "../repos/ApiKeysRepo.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { WebhooksRepo } from "../repos/WebhooksRepo.ts"
import type { Actor } from "./Accounts.ts"
import { AdminError, AdminOperations } from "./operations.ts"
import { WebhookAdmin } from "./webhookOperations.ts"

/**
 * D31: never a secret in the audit log. Incoming-webhook URLs often carry a token in their path or query (and
 * D18 refuses credentials in the authority), so only scheme://host[:port] is recorded, beside the channel id.
 */
export const originOf = (url: string | undefined): string => {
  try {
    return new URL(url ?? "").origin
  } catch {
    return "(invalid URL)"
  }
}
/** D30: an id that is unknown, or another organization's: the same answer. */
const unknown = (message: string) => Effect.fail(new AdminError({ message, kind: "unknown" }))

/**
 * The administrative changes as both faces make them (ARCHITECTURE "two faces of one set of admin services"): the
 * console's Settings pages and the admin CLI. Each one is scoped to an organization (another organization's id is
 * "unknown", D30) and writes its audit row (D31) in the same transaction as the change. Secrets are returned once
 * and never audited.
 */
export class AdminActions extends Effect.Service<AdminActions>()("AdminActions", {
  effect: Effect.gen(function* () {
    const admin = yield* AdminOperations
    const webhooks = yield* WebhookAdmin
    const keys = yield* ApiKeysRepo
    const channels = yield* WebhooksRepo
    const audit = yield* AuditRepo
    const sql = yield* SqlClient.SqlClient

    const record = (orgId: string, actor: Actor, action: string, target: string | null, detail: string | null) =>
      audit.record({ orgId, actor: actor.id, action, target, ip: actor.ip, detail })

    /**
     * The organization a row belongs to, checked against the caller's: the console always passes its user's
     * organization; the CLI passes none (an operator may act on any organization) and gets the row's own.
     */
    const ownerOf = (table: "api_keys" | "incidents", id: string, orgId: string | undefined) =>
      Effect.gen(function* () {
        const rows = yield* sql<{ orgId: string }>`select org_id from ${sql(table)} where id = ${id}`
        const owner = rows[0]?.orgId
        return owner !== undefined && (orgId === undefined || owner === orgId) ? owner : undefined
      })

    const requireKey = (orgId: string | undefined, keyId: string) =>
      Effect.gen(function* () {
        const owner = isId("apiKey", keyId) ? yield* ownerOf("api_keys", keyId, orgId) : undefined
        const found = owner === undefined ? undefined : (yield* keys.listByOrg(owner)).find((k) => k.id === keyId)
        if (owner === undefined || found === undefined) return yield* unknown(`unknown key: ${keyId}`)
        return { ...found, orgId: owner }
      })

    /** D30: another organization's sensor is the same "unknown" as a sensor that does not exist. */
    const requireSensor = (orgId: string | undefined, sensorId: string) =>
      Effect.gen(function* () {
        const sensor = yield* admin.requireSensor(sensorId)
        if (orgId !== undefined && sensor.orgId !== orgId) return yield* unknown(`unknown sensor: ${sensorId}`)
        return sensor
      })

    const requireChannel = (orgId: string | undefined, channelId: string) =>
      Effect.gen(function* () {
        const found = isId("webhookChannel", channelId) ? yield* channels.findChannel(channelId) : Option.none()
        if (Option.isNone(found) || (orgId !== undefined && found.value.orgId !== orgId)) {
          return yield* unknown(`unknown webhook channel: ${channelId}`)
        }
        return found.value
      })

    return {
      createKey: (
        orgId: string,
        input: { name: string | undefined; scopes: string | undefined; expires: string | undefined },
        actor: Actor,
      ) =>
        sql.withTransaction(
          Effect.tap(admin.createKey({ orgId, ...input }), (key) =>
            record(orgId, actor, "key.create", key.id, `${input.name ?? ""} [${input.scopes ?? ""}]`),
          ),
        ),
      listKeys: (orgId: string) => admin.listKeys(orgId),
      /**
       * Revoked, announced to every server's key cache (NOTIFY) and audited in one transaction, so the
       * announcement cannot be lost once the revocation is committed; after the commit the command waits for the
       * caches' acknowledgements (ApiKeysRepo.announced). Revoking a key that is already revoked records nothing
       * (one `key.revoke` per key) but announces it again: re-running the command repairs a lost announcement.
       */
      revokeKey: (orgId: string | undefined, keyId: string, actor: Actor) =>
        Effect.gen(function* () {
          const key = yield* requireKey(orgId, keyId)
          yield* keys.announced((ack) =>
            sql.withTransaction(
              Effect.gen(function* () {
                const done = yield* keys.revokeNotifying(key.id, ack, new Date())
                if (Option.isSome(done) && !done.value.alreadyRevoked) {
                  yield* record(key.orgId, actor, "key.revoke", key.id, key.name)
                }
                return Option.isSome(done)
              }),
            ),
          )
          return { id: key.id, revoked: true }
        }),

      // --- Organizations (D24), audited under the organization they concern (D31) ---------------------------------
      createOrg: (name: string | undefined, actor: Actor) =>
        sql.withTransaction(
          Effect.tap(admin.createOrg(name), (org) => record(org.id, actor, "org.create", org.id, name?.trim() ?? null)),
        ),
      setDeception: (orgId: string, state: string | undefined, actor: Actor) =>
        sql.withTransaction(
          Effect.tap(admin.setDeception(orgId, state), (done) =>
            record(done.id, actor, "org.deception", done.id, done.deception),
          ),
        ),

      // --- Sensors (D43) ----------------------------------------------------------------------------------------------
      createSensor: (
        orgId: string,
        input: { name: string | undefined; profile: string | undefined; heartbeatInterval: string | undefined },
        actor: Actor,
      ) =>
        sql.withTransaction(
          Effect.tap(admin.createSensor({ orgId, ...input }), (sensor) =>
            Effect.flatMap(admin.requireSensor(sensor.id), (row) =>
              record(orgId, actor, "sensor.create", sensor.id, `${row.name} (${row.profile})`),
            ),
          ),
        ),
      listSensors: (orgId: string) => admin.listSensors(orgId),
      findSensor: (orgId: string | undefined, sensorId: string) => requireSensor(orgId, sensorId),
      renameSensor: (orgId: string | undefined, sensorId: string, name: string | undefined, actor: Actor) =>
        Effect.flatMap(requireSensor(orgId, sensorId), (sensor) =>
          sql.withTransaction(
            Effect.tap(admin.renameSensor(sensor.id, name), (done) =>
              record(sensor.orgId, actor, "sensor.rename", sensor.id, `${done.previousName} → ${done.name}`),
            ),
          ),
        ),
      setSensorHeartbeat: (orgId: string | undefined, sensorId: string, interval: string | undefined, actor: Actor) =>
        Effect.flatMap(requireSensor(orgId, sensorId), (sensor) =>
          sql.withTransaction(
            Effect.tap(admin.setSensorHeartbeat(sensor.id, interval), (done) =>
              record(
                sensor.orgId,
                actor,
                "sensor.heartbeat",
                sensor.id,
                done.heartbeatIntervalSeconds === null ? "off" : `every ${done.heartbeatIntervalSeconds}s`,
              ),
            ),
          ),
        ),
      /**
       * The new token is returned once and never audited; the grace is. Refused while an earlier rotation's grace
       * runs, unless `force` (then the audit row says that grace ended).
       */
      rotateSensor: (
        orgId: string | undefined,
        sensorId: string,
        grace: string | undefined,
        actor: Actor,
        force = false,
      ) =>
        Effect.flatMap(requireSensor(orgId, sensorId), (sensor) =>
          sql.withTransaction(
            Effect.tap(admin.rotateSensor(sensor.id, grace, force), (done) =>
              record(
                sensor.orgId,
                actor,
                "sensor.rotate",
                sensor.id,
                `${done.previousTokenValidUntil ? `grace until ${done.previousTokenValidUntil}` : "no grace"}${
                  done.endedGrace ? "; the earlier grace ended" : ""
                }`,
              ),
            ),
          ),
        ),
      /** Immediately 401 on every ingest route (no cache). A second revoke records nothing. */
      revokeSensor: (orgId: string | undefined, sensorId: string, actor: Actor) =>
        Effect.flatMap(requireSensor(orgId, sensorId), (sensor) =>
          sql.withTransaction(
            Effect.tap(admin.revokeSensor(sensor.id), (done) =>
              done.changed ? record(sensor.orgId, actor, "sensor.revoke", sensor.id, sensor.name) : Effect.void,
            ),
          ),
        ),

      createChannel: (
        orgId: string,
        input: { url: string | undefined; minSeverity: string | undefined; sensorHealth?: boolean | undefined },
        actor: Actor,
      ) =>
        sql.withTransaction(
          Effect.tap(webhooks.create({ orgId, ...input }), (created) =>
            record(
              orgId,
              actor,
              "webhook.create",
              created.id,
              `${originOf(input.url)} (min ${input.minSeverity ?? "low"}${input.sensorHealth === true ? ", sensor health" : ""})`,
            ),
          ),
        ),
      listChannels: (orgId: string) => webhooks.list(orgId),
      rotateChannel: (orgId: string | undefined, channelId: string, grace: string | undefined, actor: Actor) =>
        Effect.flatMap(requireChannel(orgId, channelId), (channel) =>
          sql.withTransaction(
            Effect.tap(webhooks.rotate(channelId, grace), () =>
              record(channel.orgId, actor, "webhook.rotate", channelId, grace ? `grace ${grace}` : null),
            ),
          ),
        ),
      setChannelEnabled: (orgId: string | undefined, channelId: string, enabled: boolean, actor: Actor) =>
        Effect.flatMap(requireChannel(orgId, channelId), (channel) =>
          sql.withTransaction(
            Effect.tap(webhooks.setEnabled(channelId, enabled), () =>
              record(channel.orgId, actor, enabled ? "webhook.enable" : "webhook.disable", channelId, null),
            ),
          ),
        ),
      /** D43: sensor-health alerts on or off for a channel, audited (`webhook.sensor_health`, detail on/off). */
      setChannelSensorHealth: (orgId: string | undefined, channelId: string, on: boolean, actor: Actor) =>
        Effect.flatMap(requireChannel(orgId, channelId), (channel) =>
          sql.withTransaction(
            Effect.tap(webhooks.setSensorHealth(channelId, on), () =>
              record(channel.orgId, actor, "webhook.sensor_health", channelId, on ? "on" : "off"),
            ),
          ),
        ),
      /** The test is sent outside any transaction (a slow receiver must not hold one open); then audited. */
      testChannel: (orgId: string | undefined, channelId: string, actor: Actor) =>
        Effect.gen(function* () {
          const channel = yield* requireChannel(orgId, channelId)
          const result = yield* webhooks.test(channelId)
          yield* record(
            channel.orgId,
            actor,
            "webhook.test",
            channelId,
            `${result.ok ? "delivered" : "failed"}${result.status === null ? "" : ` HTTP ${result.status}`}`,
          )
          return result
        }),
      deliveries: (orgId: string | undefined, channelId: string, status: string | undefined) =>
        Effect.zipRight(requireChannel(orgId, channelId), webhooks.deliveries(channelId, status)),
      redeliver: (orgId: string | undefined, deliveryId: string, actor: Actor) =>
        Effect.gen(function* () {
          const found = isId("webhookDelivery", deliveryId) ? yield* channels.findDelivery(deliveryId) : Option.none()
          if (Option.isNone(found) || (orgId !== undefined && found.value.orgId !== orgId)) {
            return yield* unknown(`unknown delivery: ${deliveryId}`)
          }
          return yield* sql.withTransaction(
            Effect.tap(webhooks.redeliver(deliveryId), () =>
              record(found.value.orgId, actor, "webhook.redeliver", deliveryId, found.value.channelId),
            ),
          )
        }),
      closeIncident: (orgId: string | undefined, incidentId: string, actor: Actor) =>
        Effect.gen(function* () {
          const owner = isId("incident", incidentId) ? yield* ownerOf("incidents", incidentId, orgId) : undefined
          if (owner === undefined) return yield* unknown(`no open incident ${incidentId}`)
          return yield* sql.withTransaction(
            Effect.tap(admin.closeIncident(incidentId), () => record(owner, actor, "incident.close", incidentId, null)),
          )
        }),
    } as const
  }),
}) {}
