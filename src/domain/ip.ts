import ipaddr from "ipaddr.js"

/**
 * The one textual form of an IP address, used both when storing `sourceIp` and when filtering on it, so
 * `2001:DB8::0:1`, `2001:db8::1` and `::ffff:192.0.2.1` vs `192.0.2.1` cannot miss each other.
 * Strict: only dotted-quad IPv4 (no octal/hex/short forms) and standard IPv6 text; undefined otherwise.
 */
export const canonicalIp = (text: string): string | undefined => {
  if (text.length > 45) return undefined
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text).toString()
  if (!text.includes(":") || !ipaddr.IPv6.isValid(text) || text.includes("%")) return undefined
  const v6 = ipaddr.IPv6.parse(text)
  // ipaddr.js writes the RFC 5952 form (lowercase, longest zero run compressed).
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address().toString() : v6.toString()
}

/**
 * An address or a network, from the one place that reads them (ignore rules, the Events page's source filter): an
 * IPv4 or IPv6 address (canonical text, `prefix` 32 or 128), or `address/prefix` with its host bits cleared
 * (`192.0.2.7/24` is `192.0.2.0/24`); an IPv4-mapped IPv6 address is the IPv4 one. A full-length prefix is the
 * address itself. Surrounding whitespace is ignored; anything else unreadable is undefined.
 */
export interface Network {
  /** The address (a network's first address) as canonicalIp writes it. */
  readonly address: string
  readonly prefix: number
  readonly version: 4 | 6
  /** `address/prefix`, as PostgreSQL's cidr reads it. */
  readonly cidr: string
  /** One address: the prefix is 32 (IPv4) or 128 (IPv6). */
  readonly single: boolean
}

export const parseNetwork = (text: string): Network | undefined => {
  const trimmed = text.trim()
  const slash = trimmed.indexOf("/")
  const ip = canonicalIp(slash < 0 ? trimmed : trimmed.slice(0, slash))
  if (ip === undefined) return undefined
  const version = ip.includes(":") ? 6 : 4
  const full = version === 6 ? 128 : 32
  let prefix = full
  if (slash >= 0) {
    const prefixText = trimmed.slice(slash + 1)
    if (!/^\d{1,3}$/.test(prefixText)) return undefined
    prefix = Number(prefixText)
    if (prefix > full) return undefined
  }
  const address =
    prefix === full
      ? ip
      : version === 6
        ? ipaddr.IPv6.networkAddressFromCIDR(`${ip}/${prefix}`).toString()
        : ipaddr.IPv4.networkAddressFromCIDR(`${ip}/${prefix}`).toString()
  return { address, prefix, version, cidr: `${address}/${prefix}`, single: prefix === full }
}
