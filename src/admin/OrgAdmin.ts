import { randomBytes } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isId } from "../domain/ids.ts"
import { sealedKeyId } from "../domain/sealing.ts"
import { TLP_LEVELS, type TlpLevel } from "../domain/stix.ts"
import { Keys } from "../platform/keys.ts"
import { ApiKeysRepo } from "../repos/ApiKeysRepo.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { AdminActor, requireAdmin, requireScope } from "./actor.ts"
import { auditing, checkName, sameName } from "./common.ts"
import { Conflict, Forbidden, invalid, malformed, notFound } from "./errors.ts"

const operatorOnly = Effect.flatMap(AdminActor, (actor) =>
  actor._tag === "Operator" ? Effect.void : Effect.fail(new Forbidden({ reason: "operatorOnly" })),
)

/** Organizations: created by the operator; the Deception switch (403 when off); their fingerprint keys. */
export class OrgAdmin extends Effect.Service<OrgAdmin>()("OrgAdmin", {
  effect: Effect.gen(function* () {
    const orgs = yield* OrgsRepo
    const keys = yield* ApiKeysRepo
    const sql = yield* SqlClient.SqlClient
    const { audited, lockNames } = yield* auditing
    const { sealer } = yield* Keys

    /** The organization, if the actor may act on it; otherwise (or unknown) NotFound. */
    const require = Effect.fn("OrgAdmin.require")(function* (orgId: string) {
      const org = isId("organization", orgId) ? yield* orgs.findById(orgId) : Option.none()
      if (Option.isNone(org)) return yield* notFound("organization", orgId)
      yield* requireScope(org.value.id, "organization", orgId)
      return org.value
    })

    /**
     * A new organization (Deception on). A name an organization already has (ignoring case) is refused unless
     * `allowDuplicate`: two organizations named alike are told apart only by id.
     */
    const create = Effect.fn("OrgAdmin.create")(function* (
      name: string | undefined,
      options: { readonly allowDuplicate?: boolean } = {},
    ) {
      yield* operatorOnly
      const checked = yield* checkName("name", name)
      yield* lockNames("organizations")
      const taken = (yield* orgs.list()).find((o) => sameName(o.name, checked))
      if (taken !== undefined && options.allowDuplicate !== true) {
        return yield* new Conflict({
          field: "name",
          reason: "taken",
          within: "organizations",
          name: taken.name,
          takenBy: taken.id,
        })
      }
      // The per-organization fingerprint key (no cross-org correlation of captures), sealed under SECRET_KEY.
      const org = yield* orgs.create({ name: checked, fingerprintKey: sealer.seal(randomBytes(32)) })
      yield* audited(org.id, "org.create", org.id, checked)
      return { id: org.id }
    }, sql.withTransaction)

    const list = Effect.fn("OrgAdmin.list")(function* () {
      const actor = yield* AdminActor
      const rows = yield* orgs.list()
      return rows
        .filter((o) => actor._tag === "Operator" || o.id === actor.orgId)
        .map((o) => ({ id: o.id, name: o.name, deception: o.deceptionEnabled }))
    })

    /** Announced to every server's key cache before it returns (OrgsRepo.setDeception). */
    const setDeception = Effect.fn("OrgAdmin.setDeception")(function* (org: string, state: string | undefined) {
      yield* requireAdmin
      if (state !== "on" && state !== "off")
        return yield* invalid({ field: "deception", reason: "malformed", rule: "must be on or off" })
      const orgId = (yield* require(org)).id
      // The transaction commits (and so notifies) inside `announced`, which then waits for every cache's ack: a
      // wait inside the transaction could never be answered, since a NOTIFY is only sent at commit.
      const actor = yield* AdminActor
      yield* keys.announced((ack) =>
        sql.withTransaction(
          Effect.zipLeft(
            orgs.setDeceptionNotifying(orgId, state === "on", ack),
            audited(orgId, "org.deception", orgId, state).pipe(Effect.provideService(AdminActor, actor)),
          ),
        ),
      )
      return { id: orgId, deception: state }
    })

    /**
     * How many days the organization's events are kept; blank or "default" for RETENTION_DAYS. Audited with the
     * value before and after.
     */
    const setRetention = Effect.fn("OrgAdmin.setRetention")(function* (orgText: string, days: string | undefined) {
      yield* requireAdmin
      const text = (days ?? "").trim()
      const value = text === "" || text.toLowerCase() === "default" ? null : /^\d{1,6}$/.test(text) ? Number(text) : -1
      if (value !== null && (value < 1 || value > 100_000)) {
        return yield* malformed(
          "retention",
          "must be a whole number of days from 1 to 100000, or blank for the default",
        )
      }
      const org = yield* require(orgText)
      const orgId = org.id
      yield* orgs.setRetentionDays(orgId, value)
      yield* audited(orgId, "org.retention", orgId, `${org.retentionDays ?? "default"} -> ${value ?? "default"}`)
      return { id: orgId, retentionDays: value }
    }, sql.withTransaction)

    /**
     * The TLP 2.0 level of the organization's STIX objects (its TAXII collection): one of TLP_LEVELS, given in any
     * case, with or without a "TLP:" prefix. Audited with the level before and after.
     */
    const setTlp = Effect.fn("OrgAdmin.setTlp")(function* (orgText: string, level: string | undefined) {
      yield* requireAdmin
      const text = (level ?? "").trim().toLowerCase().replace(/^tlp:/, "")
      const tlp = TLP_LEVELS.find((l) => l === text)
      if (tlp === undefined) {
        return yield* invalid({
          reason: "malformed",
          detail: `The TLP level must be one of ${TLP_LEVELS.join(", ")}.`,
        })
      }
      const org = yield* require(orgText)
      yield* orgs.setTlp(org.id, tlp)
      yield* audited(org.id, "organization.tlp", org.id, `${org.tlp} -> ${tlp}`)
      return { id: org.id, tlp: tlp satisfies TlpLevel }
    }, sql.withTransaction)

    /** After a SECRET_KEY rotation: every fingerprint key sealed under an older key is sealed under the current. */
    const resealFingerprintKeys = Effect.fn("OrgAdmin.resealFingerprintKeys")(function* () {
      yield* operatorOnly
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

    return { require, create, list, setDeception, setRetention, setTlp, resealFingerprintKeys } as const
  }),
}) {}
