import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { GeoFacts } from "../domain/enrichment.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** Why an address has no reverse DNS name (or that it has one), as address_enrichment.rdns_status stores it. */
export type ReverseDnsStatus = "pending" | "off" | "ok" | "none" | "unconfirmed" | "invalid" | "failed"

/** An address a process now holds for its lookups, with what of it is due. */
export interface ClaimedAddress {
  readonly address: string
  readonly rdnsStatus: ReverseDnsStatus
  /** The reverse DNS half is due: never looked up, looked up while REVERSE_DNS was off, or past its expiry. */
  readonly rdnsDue: boolean
  /** The MMDB facts were looked up in other files than the ones now configured (or never). */
  readonly geoDue: boolean
}

export interface EnrichmentWrite {
  readonly address: string
  readonly rdns?: { readonly status: ReverseDnsStatus; readonly name: string | null; readonly ttlSeconds: number }
  readonly geo?: { readonly facts: GeoFacts; readonly source: string | null }
  /** Keep holding the address (more is to be written): its AS and country are written before its reverse DNS. */
  readonly keepLease?: boolean
}

/**
 * address_enrichment (sql/0032): what the enrichment job learnt of source addresses. Public data of the address,
 * shared by every organization; no organization reads it but joined to its own incidents (IncidentsRepo). Only the
 * enrichment job writes it, never the ingest path.
 */
export class AddressEnrichmentRepo extends Effect.Service<AddressEnrichmentRepo>()("AddressEnrichmentRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** A row that needs nothing now: held by a process, or both halves fresh for the current settings. */
    const freshRow = (rdnsOn: boolean, geoSource: string | null) => sql`(
      a.lease_until > now()
      or ((not ${rdnsOn}::boolean or (a.rdns_status not in ('pending', 'off') and a.rdns_expires_at > now()))
        and a.geo_source is not distinct from ${geoSource}::text))`

    return {
      /**
       * Source addresses of incidents seen in the last `lookbackSeconds` whose enrichment is missing or stale, the most
       * recently seen first: each organization's newest incidents by its recent-first index, at most `limit`.
       */
      candidates: (rdnsOn: boolean, geoSource: string | null, lookbackSeconds: number, limit: number) =>
        sql<{ readonly address: string }>`
          select r.source_ip as address, max(r.last_seen_at) as seen from organizations o
          cross join lateral (
            select i.source_ip, i.last_seen_at from incidents i
            where i.org_id = o.id and i.last_seen_at > now() - make_interval(secs => ${lookbackSeconds})
              and not exists (
                select 1 from address_enrichment a where a.address = i.source_ip and ${freshRow(rdnsOn, geoSource)})
            order by i.last_seen_at desc, i.id desc
            limit ${limit}
          ) r
          group by r.source_ip
          order by seen desc
          limit ${limit}`.pipe(
          Effect.map((rows) => rows.map((r) => r.address)),
          dbErrors,
        ),

      /**
       * Holds the addresses for this process for `leaseSeconds` (a new row for an address never seen), unless another
       * process holds one or it became fresh meanwhile; what was held, with what of it is due.
       */
      claim: (addresses: ReadonlyArray<string>, rdnsOn: boolean, geoSource: string | null, leaseSeconds: number) =>
        addresses.length === 0
          ? Effect.succeed([] as ReadonlyArray<ClaimedAddress>)
          : sql<ClaimedAddress>`
            insert into address_enrichment as a (address, rdns_status, lease_until)
            select k.address, 'pending', now() + make_interval(secs => ${leaseSeconds})
            from jsonb_array_elements_text(${JSON.stringify(addresses)}::text::jsonb) as k(address)
            on conflict (address) do update set lease_until = excluded.lease_until
              where not ${freshRow(rdnsOn, geoSource)}
            returning a.address, a.rdns_status,
              (a.rdns_status in ('pending', 'off') or a.rdns_expires_at <= now()) as rdns_due,
              (a.geo_source is distinct from ${geoSource}::text or a.geo_looked_up_at is null) as geo_due`.pipe(
              dbErrors,
            ),

      /** Writes what was looked up (each half only when given) and lets the address go, unless told to keep it. */
      write: (w: EnrichmentWrite) => {
        const rdns = w.rdns
        const geo = w.geo
        return sql`
          update address_enrichment set
            reverse_dns = case when ${rdns !== undefined}::boolean then ${rdns?.name ?? null}::text else reverse_dns end,
            rdns_status = case when ${rdns !== undefined}::boolean then ${rdns?.status ?? "pending"}::text
              else rdns_status end,
            rdns_looked_up_at = case when ${rdns !== undefined}::boolean then now() else rdns_looked_up_at end,
            rdns_expires_at = case when ${rdns !== undefined}::boolean
              then now() + make_interval(secs => ${rdns?.ttlSeconds ?? 0}) else rdns_expires_at end,
            asn = case when ${geo !== undefined}::boolean then ${geo?.facts.asn ?? null}::bigint else asn end,
            as_organization = case when ${geo !== undefined}::boolean then ${geo?.facts.asOrganization ?? null}::text
              else as_organization end,
            country = case when ${geo !== undefined}::boolean then ${geo?.facts.country ?? null}::text else country end,
            geo_source = case when ${geo !== undefined}::boolean then ${geo?.source ?? null}::text else geo_source end,
            geo_looked_up_at = case when ${geo !== undefined}::boolean then now() else geo_looked_up_at end,
            lease_until = case when ${w.keepLease === true}::boolean then lease_until end
          where address = ${w.address}`.pipe(Effect.asVoid, dbErrors)
      },

      /** Lets an address go without writing (a lookup that was interrupted). */
      release: (address: string) =>
        sql`update address_enrichment set lease_until = null where address = ${address}`.pipe(Effect.asVoid, dbErrors),
    } as const
  }),
}) {}
