import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { OrgId, UserId } from "../domain/ids.ts"
import type { ConsoleRole } from "../domain/signInProvider.ts"
import { dbErrors } from "../platform/db/errors.ts"

/** An organization's OpenID Connect provider as stored (the client secret sealed). */
export interface SignInProviderRow {
  readonly orgId: OrgId
  readonly issuer: string
  readonly clientId: string
  readonly clientSecretSealed: string
  readonly allowedDomains: ReadonlyArray<string>
  readonly roleClaim: string | null
  readonly defaultRole: ConsoleRole | null
  readonly passwordAllowed: boolean
  readonly createdAt: Date
  readonly updatedAt: Date
}

interface StoredRow extends Omit<SignInProviderRow, "allowedDomains"> {
  readonly allowedDomains: string
}

const domainsOf = (text: string): ReadonlyArray<string> => {
  try {
    const parsed: unknown = JSON.parse(text)
    return Array.isArray(parsed) ? parsed.filter((d): d is string => typeof d === "string") : []
  } catch {
    return []
  }
}

const fromStored = (row: StoredRow): SignInProviderRow => ({ ...row, allowedDomains: domainsOf(row.allowedDomains) })

/** A sign-in started at the provider and not back yet. */
export interface ProviderRequestRow {
  readonly orgId: OrgId
  readonly verifierSealed: string
  readonly nonce: string
}

/**
 * Organizations' OpenID Connect providers, their allowed domains (one organization per domain, kept by the
 * database), sign-ins in flight at a provider (spent once) and the provider identities of console users.
 */
export class SignInProvidersRepo extends Effect.Service<SignInProvidersRepo>()("SignInProvidersRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`org_id, issuer, client_id, client_secret_sealed, allowed_domains::text as allowed_domains,
      role_claim, default_role, password_allowed, created_at, updated_at`

    return {
      forOrg: (orgId: OrgId) =>
        sql<StoredRow>`select ${columns} from sign_in_providers where org_id = ${orgId}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromStored)),
          dbErrors,
        ),
      /** The provider that admits email addresses of `domain`. */
      forDomain: (domain: string) =>
        sql<StoredRow>`select ${columns} from sign_in_providers
          where org_id = (select org_id from sign_in_provider_domains where domain = ${domain})`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromStored)),
          dbErrors,
        ),
      /** The organization whose provider admits one of `domains` already, other than `orgId`. */
      domainTakenElsewhere: (orgId: OrgId, domains: ReadonlyArray<string>) =>
        sql<{ domain: string }>`select domain from sign_in_provider_domains
          where org_id <> ${orgId} and domain in ${sql.in(domains as Array<string>)} limit 1`.pipe(
          Effect.map((rows) => rows[0]?.domain),
          dbErrors,
        ),
      /** Creates or replaces the organization's provider and its domains (in the caller's transaction). */
      upsert: (row: Omit<SignInProviderRow, "createdAt" | "updatedAt">, at: Date) =>
        Effect.gen(function* () {
          yield* sql`insert into sign_in_providers (org_id, issuer, client_id, client_secret_sealed, allowed_domains,
              role_claim, default_role, password_allowed, created_at, updated_at)
            values (${row.orgId}, ${row.issuer}, ${row.clientId}, ${row.clientSecretSealed},
              ${JSON.stringify(row.allowedDomains)}::text::jsonb, ${row.roleClaim}, ${row.defaultRole},
              ${row.passwordAllowed}, ${at}, ${at})
            on conflict (org_id) do update set issuer = excluded.issuer, client_id = excluded.client_id,
              client_secret_sealed = excluded.client_secret_sealed, allowed_domains = excluded.allowed_domains,
              role_claim = excluded.role_claim, default_role = excluded.default_role,
              password_allowed = excluded.password_allowed, updated_at = excluded.updated_at`
          yield* sql`delete from sign_in_provider_domains where org_id = ${row.orgId}`
          for (const domain of row.allowedDomains) {
            yield* sql`insert into sign_in_provider_domains (domain, org_id) values (${domain}, ${row.orgId})`
          }
        }).pipe(dbErrors),
      setPasswordAllowed: (orgId: OrgId, allowed: boolean, at: Date) =>
        sql`update sign_in_providers set password_allowed = ${allowed}, updated_at = ${at}
          where org_id = ${orgId} returning org_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          dbErrors,
        ),
      remove: (orgId: OrgId) =>
        sql`delete from sign_in_providers where org_id = ${orgId} returning org_id`.pipe(
          Effect.map((rows) => rows.length === 1),
          dbErrors,
        ),
      /** Every sealed client secret, for a reseal after a SECRET_KEY rotation. */
      sealedSecrets: () =>
        sql<{ orgId: OrgId; clientSecretSealed: string }>`
          select org_id, client_secret_sealed from sign_in_providers order by org_id for update`.pipe(dbErrors),
      setSealedSecret: (orgId: OrgId, sealed: string) =>
        sql`update sign_in_providers set client_secret_sealed = ${sealed} where org_id = ${orgId}`.pipe(
          Effect.asVoid,
          dbErrors,
        ),

      insertRequest: (row: {
        stateHash: Uint8Array
        orgId: OrgId
        verifierSealed: string
        nonce: string
        at: Date
        expiresAt: Date
      }) =>
        Effect.zipRight(
          sql`delete from sign_in_provider_requests where expires_at < ${row.at}`,
          sql`insert into sign_in_provider_requests (state_hash, org_id, verifier_sealed, nonce, created_at, expires_at)
            values (${row.stateHash}, ${row.orgId}, ${row.verifierSealed}, ${row.nonce}, ${row.at},
              ${row.expiresAt})`,
        ).pipe(Effect.asVoid, dbErrors),
      /** How many sign-ins of the organization are at its provider now (at most `cap` are counted). */
      requestsInFlight: (orgId: OrgId, at: Date, cap: number) =>
        sql<{ n: number }>`select count(*)::int as n from (select 1 from sign_in_provider_requests
          where org_id = ${orgId} and expires_at > ${at} limit ${cap}) as live`.pipe(
          Effect.map((rows) => rows[0]?.n ?? 0),
          dbErrors,
        ),
      /** Spends the request of a state: found once, never again (a replayed callback finds nothing). */
      takeRequest: (stateHash: Uint8Array, at: Date) =>
        sql<ProviderRequestRow>`delete from sign_in_provider_requests where state_hash = ${stateHash}
          returning org_id, verifier_sealed, nonce, expires_at > ${at} as live`.pipe(
          Effect.map((rows) => {
            const row = rows[0] as (ProviderRequestRow & { live: boolean }) | undefined
            return row === undefined || !row.live ? Option.none<ProviderRequestRow>() : Option.some(row)
          }),
          dbErrors,
        ),

      userOfIdentity: (issuer: string, subject: string) =>
        sql<{ userId: UserId }>`select user_id from console_user_identities
          where issuer = ${issuer} and subject = ${subject}`.pipe(
          Effect.map((rows) => Option.fromNullable(rows[0]?.userId)),
          dbErrors,
        ),
      linkIdentity: (row: { issuer: string; subject: string; userId: UserId; at: Date }) =>
        sql`insert into console_user_identities (issuer, subject, user_id, created_at, last_used_at)
          values (${row.issuer}, ${row.subject}, ${row.userId}, ${row.at}, ${row.at})
          on conflict (issuer, subject) do update set last_used_at = excluded.last_used_at`.pipe(
          Effect.asVoid,
          dbErrors,
        ),
      /** Whether the user has signed in through a provider (and so may have no password). */
      identitiesOf: (userId: UserId) =>
        sql<{ issuer: string; lastUsedAt: Date }>`select issuer, last_used_at from console_user_identities
          where user_id = ${userId} order by last_used_at desc`.pipe(dbErrors),
    }
  }),
}) {}
