import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Data, Effect, Option } from "effect"
import { parseTimestamp } from "../api/params.ts"
import { AppConfig, sealerOf } from "../config.ts"
import { isId } from "../domain/ids.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { API_KEY_TOKEN, issueToken, SENSOR_TOKEN } from "../domain/secretToken.ts"
import { ApiKeysRepo, SCOPES, type Scope } from "../repos/ApiKeysRepo.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { SensorsRepo } from "../repos/SensorsRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"

/** A refused admin command: the message is shown to the operator as is. */
export class AdminError extends Data.TaggedError("AdminError")<{
  readonly message: string
  /** No such id in the caller's organization: the console answers its 404 page (D30), the CLI the message. */
  readonly kind?: "unknown"
}> {}

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

    const createSensor = (input: {
      readonly orgId: string
      readonly name: string | undefined
      readonly profile: string | undefined
    }) =>
      Effect.gen(function* () {
        yield* requireOrg(input.orgId)
        const name = yield* checkName("--name", input.name)
        const profile = yield* checkName("--profile", input.profile ?? "default")
        const issued = issueToken(SENSOR_TOKEN)
        yield* sensors.create({ id: issued.id, orgId: input.orgId, name, profile, tokenHash: issued.secretHash })
        return { id: issued.id, token: issued.token }
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
      requireOrg,
    } as const
  }),
}) {}
