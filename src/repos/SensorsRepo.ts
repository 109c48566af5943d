import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { dbErrors } from "./errors.ts"

export const SensorRow = Schema.Struct({
  id: Schema.String,
  orgId: Schema.String,
  name: Schema.String,
  profile: Schema.String,
  createdAt: Schema.DateFromSelf,
  revokedAt: Schema.NullOr(Schema.DateFromSelf),
})
export type SensorRow = typeof SensorRow.Type

export const SensorCredentialRow = Schema.Struct({ ...SensorRow.fields, tokenHash: Schema.Uint8ArrayFromSelf })

/** Decoy sensors. Their ingest token is stored as a SHA-256 hash only (D22). */
export class SensorsRepo extends Effect.Service<SensorsRepo>()("SensorsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const findCredential = SqlSchema.findOne({
      Request: Schema.String,
      Result: SensorCredentialRow,
      execute: (id) => sql`select * from sensors where id = ${id}`,
    })
    const listByOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: SensorRow,
      execute: (orgId) =>
        sql`select id, org_id, name, profile, created_at, revoked_at from sensors where org_id = ${orgId} order by id`,
    })
    return {
      create: (row: {
        readonly id: string
        readonly orgId: string
        readonly name: string
        readonly profile: string
        readonly tokenHash: Uint8Array
      }) => sql`insert into sensors ${sql.insert({ ...row, createdAt: new Date() })}`.pipe(Effect.asVoid, dbErrors),
      findCredential: (id: string) => findCredential(id).pipe(dbErrors),
      listByOrg: (orgId: string) => listByOrg(orgId).pipe(dbErrors),
    } as const
  }),
}) {}
