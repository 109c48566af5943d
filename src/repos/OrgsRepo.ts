import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { newId, type OrgId, StoredId } from "../domain/ids.ts"
import { DEFAULT_TLP, TLP_LEVELS, type TlpLevel } from "../domain/stix.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { KEY_CHANGES_CHANNEL } from "./ApiKeysRepo.ts"

export const OrgRow = Schema.Struct({
  id: StoredId.OrgId,
  name: Schema.String,
  deceptionEnabled: Schema.Boolean,
  fingerprintKey: Schema.String,
  createdAt: Schema.DateFromSelf,
  /** The organization's own event retention in days; null: RETENTION_DAYS. */
  retentionDays: Schema.NullOr(Schema.Number),
  /** The TLP 2.0 marking of the organization's STIX objects (its TAXII collection). */
  tlp: Schema.Literal(...TLP_LEVELS),
})
export type OrgRow = typeof OrgRow.Type

/** Organizations and their Deception feature flag. */
export class OrgsRepo extends Effect.Service<OrgsRepo>()("OrgsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findById = SqlSchema.findOne({
      Request: Schema.String,
      Result: OrgRow,
      execute: (id) => sql`select * from organizations where id = ${id}`,
    })

    return {
      /** `fingerprintKey` is the encrypted per-organization fingerprint key (no cross-org correlation). */
      create: Effect.fn("OrgsRepo.create")(function* (input: {
        readonly name: string
        readonly fingerprintKey: string
      }) {
        const row = {
          id: newId("organization"),
          ...input,
          deceptionEnabled: true,
          createdAt: new Date(),
          retentionDays: null,
          tlp: DEFAULT_TLP,
        }
        yield* sql`insert into organizations ${sql.insert(row)}`
        return row satisfies OrgRow
      }, dbErrors),
      findById: (id: OrgId) => findById(id).pipe(dbErrors),
      list: () =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: OrgRow,
          execute: () => sql`select * from organizations order by id`,
        })(undefined).pipe(dbErrors),
      /** Re-sealed fingerprint key (admin `secrets reseal` after a SECRET_KEY rotation). */
      setFingerprintKey: (id: OrgId, fingerprintKey: string) =>
        sql`update organizations set fingerprint_key = ${fingerprintKey} where id = ${id}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** The organization's event retention in days, or null for RETENTION_DAYS. */
      setRetentionDays: (id: OrgId, days: number | null) =>
        sql`update organizations set retention_days = ${days} where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      /** The TLP 2.0 marking of the organization's STIX objects. */
      setTlp: (id: OrgId, tlp: TlpLevel) =>
        sql`update organizations set tlp = ${tlp} where id = ${id}`.pipe(Effect.asVoid, dbErrors),
      /**
       * The Deception flag (403 when off), with a NOTIFY in the same statement (so in the same transaction), for a
       * caller that runs it in its own transaction (with its audit row) under ApiKeysRepo.announced: the caches are
       * told on commit, and `announced` returns once every one has dropped the organization's keys. False when no such
       * organization.
       */
      setDeceptionNotifying: (id: OrgId, enabled: boolean, ack: string) =>
        sql`
          with changed as (update organizations set deception_enabled = ${enabled} where id = ${id} returning id)
          select id, pg_notify(${KEY_CHANGES_CHANNEL}, 'org:' || id || ${ack}) from changed`.pipe(
          Effect.map((rows) => rows.length > 0),
          dbErrors,
        ),
    } as const
  }),
}) {}
