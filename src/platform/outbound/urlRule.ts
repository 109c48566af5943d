/**
 * The webhook URL rule (spec "Webhook signature" 6), so a channel cannot turn the service against its own network:
 * `https://` only, no credentials, and every address the host resolves to must be public unicast. Pure parts only; DNS
 * resolution is injected so callers (channel creation and every delivery) can check the addresses and then connect to
 * exactly the address that was checked.
 *
 * Usage: `checkWebhookUrl(raw)` (syntax and host-name rules), then `resolveAndCheck(result.host, systemLookup,
 * policy)` (addresses), or both at once with `checkAndResolveWebhookUrl`.
 */
import { lookup as dnsLookup } from "node:dns/promises"
import ipaddr from "ipaddr.js"

type IPv4 = ipaddr.IPv4
type IPv6 = ipaddr.IPv6

export type UrlRuleResult =
  | {
      readonly ok: true
      readonly url: URL
      /** The host to resolve and connect to: ASCII, an internationalized name in its `xn--` form. */
      readonly host: string
      /** The host as the URL was written with it (`ξ.example` stays `ξ.example`), for messages only. */
      readonly given: string
      readonly port: number
    }
  | { readonly ok: false; readonly reason: string }

export interface AddressPolicy {
  /** CIDRs from `WEBHOOK_ALLOW_PRIVATE` (test-only), e.g. `["127.0.0.0/8", "::1/128"]`. Default `[]`. */
  readonly allowPrivate: ReadonlyArray<string>
}

export type AddressCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string }

export type ResolveResult =
  | { readonly ok: true; readonly addresses: ReadonlyArray<string> }
  | { readonly ok: false; readonly reason: string }

export const MAX_WEBHOOK_URL_LENGTH = 2048

const NO_POLICY: AddressPolicy = { allowPrivate: [] }

// ---------------------------------------------------------------------------------------------------------------------
// Strict IP text parsing
// ---------------------------------------------------------------------------------------------------------------------

/** Only dotted-quad decimal IPv4 and plain IPv6 text (an embedded IPv4 tail must be dotted-quad too); no zone ids. */
const parseStrictIp = (text: string): IPv4 | IPv6 | undefined => {
  if (text.length === 0 || text.length > 45) return undefined
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text)
  if (!text.includes(":") || !/^[0-9A-Fa-f:.]+$/.test(text)) return undefined
  if (text.includes(".") && !ipaddr.IPv4.isValidFourPartDecimal(text.slice(text.lastIndexOf(":") + 1))) return undefined
  return ipaddr.IPv6.isValid(text) ? ipaddr.IPv6.parse(text) : undefined
}

const cidrV4 = (text: string): readonly [IPv4, number] => ipaddr.IPv4.parseCIDR(text)
const cidrV6 = (text: string): readonly [IPv6, number] => ipaddr.IPv6.parseCIDR(text)

const inV4 = (address: IPv4, cidr: readonly [IPv4, number]): boolean => address.match(cidr[0], cidr[1])
const inV6 = (address: IPv6, cidr: readonly [IPv6, number]): boolean => address.match(cidr[0], cidr[1])

/** Parses one allow-list entry strictly: `a.b.c.d/n`, `v6/n`, or a bare address (taken as /32 or /128). */
const parseCidrEntry = (entry: string): readonly [IPv4 | IPv6, number] | undefined => {
  const slash = entry.indexOf("/")
  const addressText = slash === -1 ? entry : entry.slice(0, slash)
  const address = parseStrictIp(addressText)
  if (address === undefined) return undefined
  const max = address.kind() === "ipv4" ? 32 : 128
  if (slash === -1) return [address, max]
  const lengthText = entry.slice(slash + 1)
  if (!/^[0-9]{1,3}$/.test(lengthText)) return undefined
  const length = Number(lengthText)
  return length <= max ? [address, length] : undefined
}

const networkText = (address: IPv4 | IPv6, length: number): string =>
  address.kind() === "ipv4"
    ? `${ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${length}`).toString()}/${length}`
    : `${ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${length}`).toString()}/${length}`

/**
 * Parses `WEBHOOK_ALLOW_PRIVATE`: CIDRs separated by commas and/or whitespace; undefined or blank is the empty list.
 * Each entry must be a strict CIDR (`127.0.0.0/8`, `::1/128`); a bare address counts as a single-address CIDR.
 * Returned CIDRs are normalized to their network address (`127.0.0.1/8` becomes `127.0.0.0/8`).
 */
export const parseAllowPrivate = (
  text: string | undefined,
): { readonly ok: true; readonly cidrs: ReadonlyArray<string> } | { readonly ok: false; readonly reason: string } => {
  if (text === undefined) return { ok: true, cidrs: [] }
  const cidrs: Array<string> = []
  for (const entry of text.split(/[\s,]+/)) {
    if (entry === "") continue
    const parsed = parseCidrEntry(entry)
    if (parsed === undefined) {
      return {
        ok: false,
        reason: `entry "${entry.slice(0, 64)}" is not a CIDR (expected e.g. 127.0.0.0/8 or ::1/128)`,
      }
    }
    const normalized = networkText(parsed[0], parsed[1])
    if (!cidrs.includes(normalized)) cidrs.push(normalized)
  }
  return { ok: true, cidrs }
}

const isAllowed = (address: IPv4 | IPv6, policy: AddressPolicy): boolean => {
  for (const entry of policy.allowPrivate) {
    // Entries are validated by parseAllowPrivate; an invalid one is ignored (which only makes the rule stricter).
    const cidr = parseCidrEntry(entry.trim())
    if (cidr !== undefined && cidr[0].kind() === address.kind() && address.match(cidr[0], cidr[1])) return true
  }
  return false
}

// ---------------------------------------------------------------------------------------------------------------------
// Address classification: undefined means public unicast, otherwise a description ("a private address")
// ---------------------------------------------------------------------------------------------------------------------

const V4_METADATA = new Set(["169.254.169.254", "100.100.100.200", "192.0.0.192"])
const V6_METADATA = new Set(["fd00:ec2::254"])

const V4_RULES: ReadonlyArray<readonly [readonly [IPv4, number], string]> = [
  [cidrV4("0.0.0.0/32"), "the unspecified address"],
  [cidrV4("0.0.0.0/8"), 'a "this network" address (0.0.0.0/8)'],
  [cidrV4("127.0.0.0/8"), "a loopback address"],
  [cidrV4("10.0.0.0/8"), "a private address"],
  [cidrV4("172.16.0.0/12"), "a private address"],
  [cidrV4("192.168.0.0/16"), "a private address"],
  [cidrV4("100.64.0.0/10"), "a carrier-grade NAT (shared) address"],
  [cidrV4("169.254.0.0/16"), "a link-local address"],
  [cidrV4("224.0.0.0/4"), "a multicast address"],
  [cidrV4("255.255.255.255/32"), "the broadcast address"],
  [cidrV4("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"],
  [cidrV4("192.0.0.0/24"), "an IETF protocol assignment address (192.0.0.0/24)"],
  [cidrV4("192.0.2.0/24"), "a documentation address"],
  [cidrV4("198.51.100.0/24"), "a documentation address"],
  [cidrV4("203.0.113.0/24"), "a documentation address"],
  [cidrV4("198.18.0.0/15"), "a benchmarking address"],
  [cidrV4("192.88.99.0/24"), "a deprecated 6to4 relay anycast address"],
]

const classifyV4 = (address: IPv4, policy: AddressPolicy): string | undefined => {
  // Metadata addresses are refused even when an allowPrivate CIDR covers them.
  if (V4_METADATA.has(address.toString())) return "a cloud metadata address"
  if (isAllowed(address, policy)) return undefined
  for (const [cidr, description] of V4_RULES) if (inV4(address, cidr)) return description
  const range = address.range()
  return range === "unicast" ? undefined : `an address in a special-purpose range (${range})`
}

const V6_UNSPECIFIED = cidrV6("::/128")
const V6_LOOPBACK = cidrV6("::1/128")
const V6_MAPPED = cidrV6("::ffff:0:0/96")
const V6_TRANSLATED = cidrV6("::ffff:0:0:0/96")
const V6_NAT64 = cidrV6("64:ff9b::/96")
const V6_NAT64_LOCAL = cidrV6("64:ff9b:1::/48")
const V6_COMPATIBLE = cidrV6("::/96")
const V6_6TO4 = cidrV6("2002::/16")
const V6_TEREDO = cidrV6("2001::/32")
const V6_GLOBAL_UNICAST = cidrV6("2000::/3")

const V6_RULES: ReadonlyArray<readonly [readonly [IPv6, number], string]> = [
  [cidrV6("::/8"), "a reserved address (::/8)"],
  [cidrV6("100::/64"), "a discard-only address (100::/64)"],
  [cidrV6("fc00::/7"), "a unique local (private) address"],
  [cidrV6("fe80::/10"), "a link-local address"],
  [cidrV6("fec0::/10"), "a deprecated site-local address"],
  [cidrV6("ff00::/8"), "a multicast address"],
  [cidrV6("2001:db8::/32"), "a documentation address"],
  [cidrV6("3fff::/20"), "a documentation address"],
  [cidrV6("2001:2::/48"), "a benchmarking address"],
]

const v4FromParts = (high: number, low: number): IPv4 =>
  new ipaddr.IPv4([(high >> 8) & 0xff, high & 0xff, (low >> 8) & 0xff, low & 0xff])

/** Describes the embedded IPv4 verdict, or undefined when the embedded address is public (or allowed). */
const embedded = (form: string, v4: IPv4, policy: AddressPolicy): string | undefined => {
  const description = classifyV4(v4, policy)
  return description === undefined ? undefined : `${form} ${v4.toString()}, which is ${description}`
}

const classifyV6 = (address: IPv6, policy: AddressPolicy): string | undefined => {
  if (V6_METADATA.has(address.toString())) return "a cloud metadata address"
  if (isAllowed(address, policy)) return undefined
  if (inV6(address, V6_UNSPECIFIED)) return "the unspecified address"
  if (inV6(address, V6_LOOPBACK)) return "a loopback address"
  const p = address.parts
  const tail = (): IPv4 => v4FromParts(p[6] ?? 0, p[7] ?? 0)
  if (inV6(address, V6_MAPPED)) return embedded("an IPv4-mapped form of", tail(), policy)
  if (inV6(address, V6_TRANSLATED)) return embedded("an IPv4-translated form of", tail(), policy)
  if (inV6(address, V6_NAT64)) return embedded("a NAT64 form of", tail(), policy)
  if (inV6(address, V6_NAT64_LOCAL)) return "a local-use NAT64 address (64:ff9b:1::/48)"
  if (inV6(address, V6_COMPATIBLE)) return embedded("an IPv4-compatible form of", tail(), policy)
  if (inV6(address, V6_6TO4)) return embedded("a 6to4 form of", v4FromParts(p[1] ?? 0, p[2] ?? 0), policy)
  if (inV6(address, V6_TEREDO)) {
    // Teredo carries the server address in bits 32-63 and the client address, inverted, in bits 96-127.
    const server = embedded("a Teredo address with server", v4FromParts(p[2] ?? 0, p[3] ?? 0), policy)
    if (server !== undefined) return server
    return embedded("a Teredo address with client", v4FromParts(~(p[6] ?? 0) & 0xffff, ~(p[7] ?? 0) & 0xffff), policy)
  }
  for (const [cidr, description] of V6_RULES) if (inV6(address, cidr)) return description
  if (!inV6(address, V6_GLOBAL_UNICAST)) return "not a global unicast address (outside 2000::/3)"
  const range = address.range()
  return range === "unicast" ? undefined : `an address in a special-purpose range (${range})`
}

/**
 * Whether one resolved address may receive webhooks: only public unicast passes, unless the address lies in one
 * of `policy.allowPrivate` (test-only; cloud metadata addresses stay refused even then). Embedded IPv4 (mapped, translated, NAT64, IPv4-compatible, 6to4, Teredo) is
 * extracted and checked as IPv4. `address` must be strict IP text (dotted-quad IPv4 or IPv6, no zone id).
 */
export const isPublicAddress = (address: string, policy: AddressPolicy = NO_POLICY): AddressCheck => {
  const shown = address.slice(0, 64)
  if (address.includes("%")) return { ok: false, reason: `${shown} is a scoped (zone-indexed) address` }
  const parsed = parseStrictIp(address)
  if (parsed === undefined) return { ok: false, reason: `${shown} is not a valid IP address` }
  const description = parsed instanceof ipaddr.IPv4 ? classifyV4(parsed, policy) : classifyV6(parsed, policy)
  if (description === undefined) return { ok: true }
  // A receiver on this machine or network is what a first local test uses: say how to allow it (test-only).
  const hint = description.endsWith("a loopback address") ? LOCAL_TESTING_HINT : ""
  return { ok: false, reason: `${address} is ${description}${hint}` }
}

const LOCAL_TESTING_HINT =
  " (for local testing only, the server and admin tool can allow it with WEBHOOK_ALLOW_PRIVATE, e.g. WEBHOOK_ALLOW_PRIVATE=127.0.0.0/8)"

// ---------------------------------------------------------------------------------------------------------------------
// URL syntax and host names
// ---------------------------------------------------------------------------------------------------------------------

const refuse = (reason: string): { readonly ok: false; readonly reason: string } => ({ ok: false, reason })

/** Why a host name is refused, if it is; `name` is checked (its ASCII form), `shown` is what the message names. */
const isRefusedName = (name: string, shown: string): string | undefined => {
  if (name === "localhost" || name.endsWith(".localhost")) return `${shown} is a local host name`
  if (name === "metadata.google.internal") return `${shown} is a cloud metadata host name`
  if (name.endsWith(".internal")) return `${shown} is an internal host name (.internal)`
  if (name.endsWith(".local")) return `${shown} is a multicast DNS host name (.local)`
  if (name === "home.arpa" || name.endsWith(".home.arpa")) return `${shown} is a home network host name (.home.arpa)`
  if (!name.includes(".")) return `${shown} is not a fully qualified domain name`
  return undefined
}

/**
 * Syntax and host-name rules of a webhook URL (no DNS): `https://` only, no user name or password, no fragment (it is
 * never sent), a host and a port 1-65535, at most 2048 characters, no spaces or control characters. IPv4 literals must
 * be written in dotted-decimal form (decimal `2130706433`, hex `0x7f000001`, octal `0177.0.0.1`, short `127.1`,
 * percent-encoded and full-width forms are refused, even though WHATWG URL parsing would normalize them). Refuses
 * `localhost`, `*.localhost`, `*.local`, `*.internal`, `*.home.arpa` and single-label names.
 *
 * An internationalized name is checked and resolved in its ASCII (`xn--`) form, the URL parser's `hostname`, but a
 * refusal names the host as it was written (`ξ.local`, not `xn--zxa.local`): the operator reads the URL they typed.
 *
 * Does NOT check addresses: pass `host` (and `given`, for the messages) to {@link resolveAndCheck} (which checks IP
 * literals directly).
 */
export const checkWebhookUrl = (raw: string): UrlRuleResult => {
  if (raw.length === 0) return refuse("the webhook URL is empty")
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) {
    return refuse(`the webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`)
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u0020\u007f]/.test(raw)) return refuse("the webhook URL must not contain spaces or control characters")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return refuse("the webhook URL is not a valid absolute URL")
  }
  if (url.protocol === "http:") return refuse("http:// is not allowed; webhook URLs must use https://")
  if (url.protocol !== "https:") return refuse(`${url.protocol}// is not allowed; webhook URLs must use https://`)
  // WHATWG also accepts "https:host", "https:/host" and backslashes; require the plain form so the host is unambiguous.
  if (!/^https:\/\//i.test(raw)) return refuse("the webhook URL must start with https:// followed by the host")

  const authorityEnd = raw.slice(8).search(/[/?#\\]/)
  const authority = authorityEnd === -1 ? raw.slice(8) : raw.slice(8, 8 + authorityEnd)
  if (url.username !== "" || url.password !== "" || authority.includes("@")) {
    return refuse("credentials (user:password@) in the webhook URL are not allowed")
  }
  if (raw.includes("#")) return refuse("a fragment (#...) is not allowed in a webhook URL; it is never sent")

  const hostname = url.hostname
  if (hostname === "") return refuse("the webhook URL has no host")
  const port = url.port === "" ? 443 : Number(url.port)
  if (!Number.isInteger(port) || port < 1 || port > 65535) return refuse(`port ${url.port} is not allowed (1-65535)`)

  if (hostname.startsWith("[")) {
    const host = hostname.slice(1, -1)
    if (parseStrictIp(host) === undefined) return refuse(`${hostname} is not a valid IPv6 address`)
    return { ok: true, url, host, given: host, port }
  }

  // The host as written: the authority without its port (the parser has refused anything else in it by now).
  const given = authority.startsWith("[") ? authority : (authority.split(":")[0] ?? "")
  const rawHost = given.toLowerCase()
  if (ipaddr.IPv4.isValidFourPartDecimal(hostname)) {
    if (rawHost !== hostname) {
      return refuse(
        `${rawHost.slice(0, 64)} is not a dotted-decimal IPv4 address; numeric, hex, octal and shortened forms are refused`,
      )
    }
    return { ok: true, url, host: hostname, given: hostname, port }
  }
  const name = hostname.endsWith(".") ? hostname.slice(0, -1) : hostname
  const nameProblem = isRefusedName(name, given)
  if (nameProblem !== undefined) return refuse(nameProblem)
  return { ok: true, url, host: hostname, given, port }
}

// ---------------------------------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------------------------------

/**
 * Checks the addresses of a host (as returned by {@link checkWebhookUrl}, brackets optional). An IP literal is checked
 * directly without lookup. Otherwise every address returned by `lookup` (A and AAAA) must pass
 * {@link isPublicAddress}: one refused address refuses the URL. No address, or a failed lookup, refuses it too.
 * On success `addresses` holds the checked addresses (deduplicated, lookup order); connect to one of those.
 * Time-outs are the caller's business (wrap the lookup). `given` is the host as written (checkWebhookUrl's `given`),
 * which a refusal of a name names; without it, the message names `host`.
 */
export const resolveAndCheck = async (
  host: string,
  lookup: (host: string) => Promise<ReadonlyArray<string>>,
  policy: AddressPolicy = NO_POLICY,
  given?: string,
): Promise<ResolveResult> => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  const shown = given ?? bare
  if (bare === "") return refuse("the webhook URL has no host")
  const literal = parseStrictIp(bare)
  if (literal !== undefined) {
    const check = isPublicAddress(bare, policy)
    return check.ok ? { ok: true, addresses: [literal.toString()] } : check
  }
  if (bare.includes(":") || ipaddr.isValid(bare)) {
    return refuse(`${bare.slice(0, 64)} is not a dotted-decimal IPv4 or a valid IPv6 address`)
  }

  let found: ReadonlyArray<string>
  try {
    found = await lookup(bare)
  } catch (error) {
    const code =
      typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
        ? ` (${error.code})`
        : ""
    return refuse(`${shown} does not resolve${code}`)
  }
  const addresses = [...new Set(found)]
  if (addresses.length === 0) return refuse(`${shown} does not resolve to any address`)
  const checked: Array<string> = []
  for (const address of addresses) {
    const check = isPublicAddress(address, policy)
    if (!check.ok) return refuse(`${shown} resolves to a refused address: ${check.reason}`)
    const parsed = parseStrictIp(address)
    if (parsed !== undefined) checked.push(parsed.toString())
  }
  return { ok: true, addresses: [...new Set(checked)] }
}

/** The system resolver (getaddrinfo): every A and AAAA address, in the resolver's order. */
export const systemLookup = async (host: string): Promise<ReadonlyArray<string>> => {
  const results = await dnsLookup(host, { all: true, verbatim: true })
  return results.map((result) => result.address)
}

/** {@link checkWebhookUrl} then {@link resolveAndCheck}: what channel creation and every delivery need. */
export const checkAndResolveWebhookUrl = async (
  raw: string,
  lookup: (host: string) => Promise<ReadonlyArray<string>>,
  policy: AddressPolicy = NO_POLICY,
): Promise<
  | {
      readonly ok: true
      readonly url: URL
      readonly host: string
      readonly port: number
      readonly addresses: ReadonlyArray<string>
    }
  | { readonly ok: false; readonly reason: string }
> => {
  const syntax = checkWebhookUrl(raw)
  if (!syntax.ok) return syntax
  const resolved = await resolveAndCheck(syntax.host, lookup, policy, syntax.given)
  if (!resolved.ok) return resolved
  return { ok: true, url: syntax.url, host: syntax.host, port: syntax.port, addresses: resolved.addresses }
}
