import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isId, type OrgId } from "../domain/ids.ts"
import { SCOPES, type Scope } from "../domain/scopes.ts"
import { API_KEY_TOKEN, issueToken } from "../domain/secretToken.ts"
import { parseTimestamp } from "../domain/time.ts"
import { ApiKeysRepo } from "../repos/ApiKeysRepo.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { requireAdmin, requireScope } from "./actor.ts"
import { auditing, checkName } from "./common.ts"
import { invalid, malformed, missing, notFound } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"

/**
 * API keys: created with their scopes, the key shown once (the return value, never audited nor stored: only
 * its hash), listed without it, revoked by an administrator of their organization or the operator.
 */
export class ApiKeyAdmin extends Effect.Service<ApiKeyAdmin>()("ApiKeyAdmin", {
  effect: Effect.gen(function* () {
    const keys = yield* ApiKeysRepo
    const orgAdmin = yield* OrgAdmin
    const audit = yield* AuditRepo
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing

    const create = Effect.fn("ApiKeyAdmin.create")(function* (
      org: string,
      input: {
        readonly name: string | undefined
        readonly scopes: string | undefined
        readonly expires: string | undefined
      },
    ) {
      yield* requireAdmin
      const orgId = (yield* orgAdmin.require(org)).id
      const name = yield* checkName("name", input.name)
      const scopes = [
        ...new Set(
          (input.scopes ?? "")
            .split(",")
            .map((s) => s.trim())
            .filter((s) => s !== ""),
        ),
      ]
      if (scopes.length === 0) return yield* missing("scopes")
      const unknown = scopes.filter((s) => !(SCOPES as ReadonlyArray<string>).includes(s))
      if (unknown.length > 0) {
        return yield* invalid({
          field: "scopes",
          reason: "unknown",
          detail: `unknown scope ${unknown.join(", ")}; allowed scopes: ${SCOPES.join(", ")}`,
        })
      }
      let expiresAt: Date | null = null
      if (input.expires !== undefined) {
        const parsed = parseTimestamp(input.expires)
        if (parsed === undefined) return yield* malformed("expires", "must be an RFC 3339 timestamp with a time zone")
        if (parsed.getTime() <= Date.now()) return yield* malformed("expires", "must be in the future")
        expiresAt = parsed
      }
      const issued = issueToken(API_KEY_TOKEN)
      yield* keys.create({
        id: issued.id,
        orgId,
        name,
        scopes: scopes as Array<Scope>,
        secretHash: issued.secretHash,
        expiresAt,
      })
      yield* audited(orgId, "key.create", issued.id, `${input.name ?? ""} [${input.scopes ?? ""}]`)
      return { id: issued.id, key: issued.token }
    }, sql.withTransaction)

    const list = Effect.fn("ApiKeyAdmin.list")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
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

    /** The key, if the actor may see it (another organization's key is unknown, so none is revealed to exist). */
    const find = Effect.fn("ApiKeyAdmin.find")(function* (keyId: string) {
      // The foreign key guarantees the kind of id.
      const rows = isId("apiKey", keyId)
        ? yield* sql<{ orgId: OrgId }>`select org_id from api_keys where id = ${keyId}`
        : []
      const owner = rows[0]?.orgId
      if (owner === undefined) return yield* notFound("key", keyId)
      yield* requireScope(owner, "key", keyId)
      const found = (yield* keys.listByOrg(owner)).find((k) => k.id === keyId)
      if (found === undefined) return yield* notFound("key", keyId)
      return { ...found, orgId: owner }
    })

    /**
     * Revoked, announced to every server's key cache (NOTIFY) and audited in one transaction, so the announcement
     * cannot be lost once the revocation is committed; after the commit it waits for the caches' acknowledgements
     * (ApiKeysRepo.announced). Revoking a key that is already revoked records nothing (one `key.revoke` per key) but
     * announces it again: running it again repairs a lost announcement.
     */
    const revoke = Effect.fn("ApiKeyAdmin.revoke")(function* (keyId: string) {
      const actor = yield* requireAdmin
      const key = yield* find(keyId)
      yield* keys.announced((ack) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const done = yield* keys.revokeNotifying(key.id, ack, new Date())
            if (Option.isSome(done) && !done.value.alreadyRevoked) {
              yield* audit.record({
                orgId: key.orgId,
                actor: actor.id,
                action: "key.revoke",
                target: key.id,
                ip: actor.ip,
                detail: key.name,
              })
            }
            return Option.isSome(done)
          }),
        ),
      )
      return { id: key.id, revoked: true }
    })

    return { create, list, find, revoke } as const
  }),
}) {}
