/**
 * The rules of signing in through an organization's OpenID Connect provider that need no I/O: which email domains
 * it may admit, and which console role a provider's claims give.
 */

export type ConsoleRole = "admin" | "analyst" | "viewer"

/** The most domains one organization's provider admits. */
export const MAX_ALLOWED_DOMAINS = 20
/** The longest role claim name (a path like `realm_access.roles`). */
export const MAX_ROLE_CLAIM = 100
const ROLE_CLAIM = /^[A-Za-z0-9_:/.-]{1,100}$/
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/** Least to most: a claim naming several roles gives the highest. */
const RANK: Readonly<Record<ConsoleRole, number>> = { viewer: 0, analyst: 1, admin: 2 }

/** A domain name as an admin types it, lower case and without a trailing dot; undefined when it is not one. */
export const normalizeDomain = (text: string): string | undefined => {
  const domain = text.trim().toLowerCase().replace(/\.$/, "")
  if (domain.length === 0 || domain.length > 253) return undefined
  const labels = domain.split(".")
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return undefined
  // The last label of a domain name is never all digits: that is an address.
  if (/^[0-9]+$/.test(labels.at(-1) ?? "")) return undefined
  return domain
}

/**
 * The allowed domains from a list as typed (commas, spaces or new lines between them): the domains, or the first
 * entry that is not a domain name. Duplicates count once.
 */
export const parseDomains = (
  text: string,
): { readonly ok: true; readonly domains: ReadonlyArray<string> } | { readonly ok: false; readonly rule: string } => {
  const entries = text.split(/[\s,]+/).filter((entry) => entry !== "")
  if (entries.length === 0) return { ok: false, rule: "must name at least one email domain, like example.com" }
  const domains: Array<string> = []
  for (const entry of entries) {
    const domain = normalizeDomain(entry)
    if (domain === undefined) {
      return { ok: false, rule: `must be domain names like example.com (not "${entry.slice(0, 60)}")` }
    }
    if (!domains.includes(domain)) domains.push(domain)
  }
  if (domains.length > MAX_ALLOWED_DOMAINS)
    return { ok: false, rule: `may name at most ${MAX_ALLOWED_DOMAINS} domains` }
  return { ok: true, domains }
}

/** The domain of an email address (after its last @), lower case; "" when there is none. */
export const emailDomain = (email: string): string => {
  const at = email.lastIndexOf("@")
  return at < 0 ? "" : (normalizeDomain(email.slice(at + 1)) ?? "")
}

export const isRoleClaimName = (name: string): boolean => ROLE_CLAIM.test(name)

/** A claim's value by name: the name as one key first (`https://example.com/roles`), then as a dotted path. */
const claimValue = (claims: Readonly<Record<string, unknown>>, name: string): unknown => {
  if (Object.hasOwn(claims, name)) return claims[name]
  let at: unknown = claims
  for (const part of name.split(".")) {
    if (typeof at !== "object" || at === null || Array.isArray(at) || !Object.hasOwn(at, part)) return undefined
    at = (at as Record<string, unknown>)[part]
  }
  return at
}

/**
 * The console role the claim gives: the highest of `admin`, `analyst` and `viewer` (any case) that the role claim
 * holds, as a string or in an array of strings; undefined when it names none.
 */
export const claimedRole = (
  claims: Readonly<Record<string, unknown>>,
  roleClaim: string | null,
): ConsoleRole | undefined => {
  if (roleClaim !== null) {
    const value = claimValue(claims, roleClaim)
    const values = (Array.isArray(value) ? value : [value]).slice(0, 200)
    let best: ConsoleRole | undefined
    for (const item of values) {
      if (typeof item !== "string") continue
      const role = item.trim().toLowerCase()
      if (role === "admin" || role === "analyst" || role === "viewer") {
        if (best === undefined || RANK[role] > RANK[best]) best = role
      }
    }
    return best
  }
  return undefined
}

/**
 * The role of a sign-in: the claim's (it decides at every sign-in), otherwise the default role, which only a user
 * created by this sign-in gets (an existing user keeps the role an administrator gave); undefined when neither gives
 * one (the sign-in is refused).
 */
export const roleFromClaims = (
  claims: Readonly<Record<string, unknown>>,
  roleClaim: string | null,
  defaultRole: ConsoleRole | null,
): { readonly role: ConsoleRole; readonly fromClaim: boolean } | undefined => {
  const claimed = claimedRole(claims, roleClaim)
  if (claimed !== undefined) return { role: claimed, fromClaim: true }
  return defaultRole === null ? undefined : { role: defaultRole, fromClaim: false }
}
