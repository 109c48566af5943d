import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { DEFAULT_NETWORKS, type OwnNetwork } from "../domain/networks.ts"
import { dbErrors } from "../platform/db/errors.ts"

const isOwnNetwork = (v: unknown): v is OwnNetwork =>
  typeof v === "object" &&
  v !== null &&
  typeof (v as { cidr?: unknown }).cidr === "string" &&
  typeof (v as { label?: unknown }).label === "string"

/**
 * What an organization's stored list means (`networks::text`, parsed here so both drivers read it alike): the default
 * private ranges until an admin chose.
 */
export const networksOf = (
  text: string | null,
): { readonly networks: ReadonlyArray<OwnNetwork>; readonly custom: boolean } => {
  let stored: unknown = null
  try {
    stored = text === null ? null : JSON.parse(text)
  } catch {}
  return Array.isArray(stored)
    ? { networks: stored.filter(isOwnNetwork), custom: true }
    : { networks: DEFAULT_NETWORKS, custom: false }
}

/** An organization's own networks (organizations.networks: null until an admin edits the list). */
export class NetworksRepo extends Effect.Service<NetworksRepo>()("NetworksRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return {
      /**
       * The list, read under a share lock when `forShare`: ingestion classifying new incidents holds it until its
       * commit, so an admin's change (which takes the row for update, then re-judges) never misses them.
       */
      get: (orgId: OrgId, forShare = false) =>
        Effect.map(
          forShare
            ? sql<{ networks: string | null }>`
                select networks::text as networks from organizations where id = ${orgId} for share`
            : sql<{
                networks: string | null
              }>`select networks::text as networks from organizations where id = ${orgId}`,
          (rows) => networksOf(rows[0]?.networks ?? null),
        ).pipe(dbErrors),
      /** Sets the list (null: back to the default), holding the row until the caller's transaction ends. */
      set: (orgId: OrgId, networks: ReadonlyArray<OwnNetwork> | null) =>
        Effect.map(
          sql<{ id: string }>`
            update organizations set networks = ${networks === null ? null : JSON.stringify(networks)}::text::jsonb
            where id = ${orgId} returning id`,
          (rows) => rows.length > 0,
        ).pipe(dbErrors),
      lock: (orgId: OrgId) =>
        sql`select id from organizations where id = ${orgId} for update`.pipe(Effect.asVoid, dbErrors),
    } as const
  }),
}) {}
