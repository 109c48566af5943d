import { sanitizeText, truncateCodePoints } from "./sanitize.ts"

/**
 * Enrichment of an incident's source address: its reverse DNS name and, from MMDB files, its autonomous system and
 * country. Pure: how the enrichment job's raw answers become the stored facts, and what an incident shows.
 *
 * Both kinds of text are written by whoever holds the address, so both are attacker text: the PTR record by the
 * owner of the reverse zone, the AS organization by the holder's registry record. They are cleaned here as
 * attackerInput strings are (control, format and invisible characters removed) and bounded, and every face shows
 * them as untrusted data (escaped, in code, fenced) exactly like attackerInput.
 */

/** A DNS name is at most 253 characters written out; a longer PTR answer is dropped, never cut. */
export const REVERSE_DNS_MAX = 253
/** The longest AS organization kept, in code points (cut with "…"). */
export const AS_ORGANIZATION_MAX = 256
/** The highest autonomous system number (32 bits). */
export const ASN_MAX = 4_294_967_295

/** What an incident shows of its source address; null where nothing is known (yet). */
export interface SourceFacts {
  /** Inside one of the organization's own networks, or not (judged by ingestion, not enrichment). */
  readonly scope: "internal" | "external"
  readonly network: { readonly cidr: string; readonly label: string } | null
  readonly reverseDns: string | null
  readonly asn: number | null
  readonly asOrganization: string | null
  readonly country: string | null
}

export const UNKNOWN_SOURCE: SourceFacts = {
  scope: "external",
  network: null,
  reverseDns: null,
  asn: null,
  asOrganization: null,
  country: null,
}

/**
 * A PTR answer as the name to store and show: control, format and invisible characters removed, the root's trailing
 * dot dropped; undefined when nothing is left or it is longer than a DNS name can be (the answer is dropped).
 */
export const reverseDnsName = (raw: string): string | undefined => {
  const name = sanitizeText(raw).trim().replace(/\.$/, "")
  if (name === "" || name.length > REVERSE_DNS_MAX) return undefined
  return name
}

/** The facts an MMDB lookup gives, each null when the file does not have it. */
export interface GeoFacts {
  readonly asn: number | null
  readonly asOrganization: string | null
  readonly country: string | null
}

export const NO_GEO: GeoFacts = { asn: null, asOrganization: null, country: null }

const member = (record: unknown, key: string): unknown =>
  typeof record === "object" && record !== null && !Array.isArray(record)
    ? (record as Record<string, unknown>)[key]
    : undefined

const asnOf = (value: unknown): number | null => {
  const n =
    typeof value === "number"
      ? value
      : typeof value === "string" && /^(?:AS)?\d{1,10}$/i.test(value.trim())
        ? Number(value.trim().replace(/^AS/i, ""))
        : Number.NaN
  return Number.isInteger(n) && n >= 0 && n <= ASN_MAX ? n : null
}

const organizationOf = (value: unknown): string | null => {
  if (typeof value !== "string") return null
  const text = sanitizeText(value).trim()
  return text === "" ? null : truncateCodePoints(text, AS_ORGANIZATION_MAX)
}

const countryOf = (value: unknown): string | null => {
  if (typeof value !== "string") return null
  const code = value.trim().toUpperCase()
  return /^[A-Z]{2}$/.test(code) ? code : null
}

/**
 * The facts of one MMDB record, in any of the common layouts: MaxMind GeoLite2/GeoIP2 and DB-IP
 * (`autonomous_system_number`, `autonomous_system_organization`, `country.iso_code`, else
 * `registered_country.iso_code`), IPinfo (`asn` as "AS15169", `as_name`, `country_code`, or `country` when it is a
 * two-letter code) and ip-location-db (`country_code`).
 */
export const geoFactsOf = (record: unknown): GeoFacts => ({
  asn: asnOf(member(record, "autonomous_system_number")) ?? asnOf(member(record, "asn")),
  asOrganization:
    organizationOf(member(record, "autonomous_system_organization")) ?? organizationOf(member(record, "as_name")),
  country:
    countryOf(member(member(record, "country"), "iso_code")) ??
    countryOf(member(record, "country_code")) ??
    countryOf(member(record, "country")) ??
    countryOf(member(member(record, "registered_country"), "iso_code")),
})

/** Facts from several files, the first that has each fact winning (the AS from the ASN file first, and so on). */
export const mergeGeoFacts = (asnFirst: ReadonlyArray<GeoFacts>, countryFirst: ReadonlyArray<GeoFacts>): GeoFacts => {
  const asFacts = asnFirst.find((f) => f.asn !== null)
  return {
    asn: asFacts?.asn ?? null,
    // The organization belongs with its number: never one file's number beside another's name.
    asOrganization: asFacts?.asOrganization ?? null,
    country: countryFirst.find((f) => f.country !== null)?.country ?? null,
  }
}

/** The enrichment columns an incident row carries when it was read with them (absent on a row ingestion built). */
export interface SourceColumns {
  readonly sourceScope?: "internal" | "external" | undefined
  readonly sourceNetwork?: { readonly cidr: string; readonly label: string } | null | undefined
  readonly sourceReverseDns?: string | null | undefined
  readonly sourceAsn?: number | null | undefined
  readonly sourceAsOrganization?: string | null | undefined
  readonly sourceCountry?: string | null | undefined
}

const storedText = (s: string | null | undefined): string | null => {
  if (s === null || s === undefined) return null
  const clean = sanitizeText(s)
  return clean === "" ? null : clean
}

/**
 * An incident's `source` from its row: what was stored, cleaned once more as every stored attacker text is read
 * (a row written by hand or by an older version cannot put a control character in front of a reader).
 */
export const sourceFactsOf = (row: SourceColumns): SourceFacts =>
  row.sourceReverseDns == null &&
  row.sourceAsn == null &&
  row.sourceAsOrganization == null &&
  row.sourceCountry == null &&
  row.sourceScope !== "internal"
    ? UNKNOWN_SOURCE
    : {
        scope: row.sourceScope === "internal" ? "internal" : "external",
        network: row.sourceScope === "internal" ? (row.sourceNetwork ?? null) : null,
        reverseDns: storedText(row.sourceReverseDns),
        asn: typeof row.sourceAsn === "number" && Number.isInteger(row.sourceAsn) ? row.sourceAsn : null,
        asOrganization: storedText(row.sourceAsOrganization),
        country: countryOf(row.sourceCountry),
      }
