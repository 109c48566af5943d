import { Effect } from "effect"
import { isId } from "../domain/ids.ts"
import { ApiKeysRepo } from "../repos/ApiKeysRepo.ts"
import { ApiKeyAdmin } from "./ApiKeyAdmin.ts"
import { asOperator } from "./actor.ts"
import { ChannelAdmin } from "./ChannelAdmin.ts"
import { NotFound } from "./errors.ts"
import { IncidentAdmin } from "./IncidentAdmin.ts"
import { OrgAdmin } from "./OrgAdmin.ts"
import { SensorAdmin } from "./SensorAdmin.ts"
import { UserAdmin } from "./UserAdmin.ts"

/**
 * Deprecated: the admin services' earlier shapes, kept only for callers outside the admin CLI and the console that
 * have not moved to the per-resource services yet (test fixtures of other faces). Every method acts as the
 * operator (any organization) through the per-resource services; the `orgId`/`actor` arguments of the old shapes
 * are ignored. New code uses OrgAdmin, ApiKeyAdmin, SensorAdmin, ChannelAdmin, IncidentAdmin and UserAdmin with an
 * AdminActor in context. Delete this module once nothing imports it.
 */

/** The operator, as the old `actor` argument named it. */
export const CLI_ACTOR = { id: "cli", ip: null } as const
type IgnoredActor = unknown

export class AdminOperations extends Effect.Service<AdminOperations>()("AdminOperations", {
  effect: Effect.gen(function* () {
    const orgs = yield* OrgAdmin
    const keys = yield* ApiKeyAdmin
    const keysRepo = yield* ApiKeysRepo
    const sensors = yield* SensorAdmin
    const incidents = yield* IncidentAdmin
    return {
      // Fixtures name many organizations alike ("Acme"): the old shape never refused a duplicate.
      createOrg: (name: string | undefined) => asOperator(orgs.create(name, { allowDuplicate: true })),
      requireOrg: (orgId: string) => asOperator(orgs.require(orgId)),
      setDeception: (orgId: string, state: string | undefined) => asOperator(orgs.setDeception(orgId, state)),
      createKey: (input: {
        orgId: string
        name: string | undefined
        scopes: string | undefined
        expires: string | undefined
      }) => asOperator(keys.create(input.orgId, input)),
      /** The old shape: revoked without waiting for the key caches' acknowledgements, not audited. */
      revokeKey: (keyId: string) =>
        Effect.gen(function* () {
          const done = isId("apiKey", keyId) ? yield* keysRepo.revoke(keyId) : false
          if (!done) return yield* new NotFound({ message: `unknown key: ${keyId}` })
          return { id: keyId, revoked: true }
        }),
      createSensor: (input: {
        orgId: string
        name: string | undefined
        profile: string | undefined
        heartbeatInterval?: string | undefined
      }) => asOperator(sensors.create(input.orgId, input, { allowDuplicateName: true })),
      closeIncident: (incidentId: string) => asOperator(incidents.close(incidentId)),
    } as const
  }),
}) {}

export class AdminActions extends Effect.Service<AdminActions>()("AdminActions", {
  effect: Effect.gen(function* () {
    const orgs = yield* OrgAdmin
    const keys = yield* ApiKeyAdmin
    const sensors = yield* SensorAdmin
    const channels = yield* ChannelAdmin
    return {
      createOrg: (name: string | undefined, _actor: IgnoredActor) =>
        asOperator(orgs.create(name, { allowDuplicate: true })),
      revokeKey: (_orgId: string | undefined, keyId: string, _actor: IgnoredActor) => asOperator(keys.revoke(keyId)),
      createSensor: (
        orgId: string,
        input: { name: string | undefined; profile: string | undefined; heartbeatInterval: string | undefined },
        _actor: IgnoredActor,
      ) => asOperator(sensors.create(orgId, input, { allowDuplicateName: true })),
      rotateSensor: (
        _orgId: string | undefined,
        sensorId: string,
        grace: string | undefined,
        _actor: IgnoredActor,
        force = false,
      ) => asOperator(sensors.rotate(sensorId, grace, force)),
      createChannel: (
        orgId: string,
        input: { url: string | undefined; minSeverity: string | undefined; sensorHealth?: boolean | undefined },
        _actor: IgnoredActor,
      ) => asOperator(channels.create(orgId, input)),
      setChannelEnabled: (_orgId: string | undefined, channelId: string, enabled: boolean, _actor: IgnoredActor) =>
        asOperator(channels.setEnabled(channelId, enabled)),
    } as const
  }),
}) {}

export class WebhookAdmin extends Effect.Service<WebhookAdmin>()("WebhookAdmin", {
  effect: Effect.map(ChannelAdmin, (channels) => ({
    create: (input: {
      orgId: string
      url: string | undefined
      minSeverity: string | undefined
      sensorHealth?: boolean | undefined
    }) => asOperator(channels.create(input.orgId, input)),
  })),
}) {}

export class Accounts extends Effect.Service<Accounts>()("Accounts", {
  effect: Effect.map(UserAdmin, (users) => ({
    createUser: (input: { orgId: string; email: string; role: string }, _actor: IgnoredActor) =>
      asOperator(users.create(input)),
  })),
}) {}
