import ipaddr from "ipaddr.js"

/**
 * The one textual form of an IP address, used both when storing `sourceIp` and when filtering on it, so
 * `2001:DB8::0:1` and `2001:db8::1`, or `::ffff:192.0.2.1`, `::c000:201` and `192.0.2.1`, cannot miss each other.
 * Strict: only dotted-quad IPv4 (no octal/hex/short forms, also inside IPv6) and standard IPv6 text; undefined
 * otherwise.
 *
 * The rule for IPv4 inside IPv6, decided on the address's 128 bits, never on how it was written:
 * - IPv4-mapped, `::ffff:0:0/96` (`::ffff:192.0.2.5`, `::ffff:c000:205`, `0:0:0:0:0:ffff:…`): the IPv4 address.
 * - IPv4-compatible, `::/96` (`::192.0.2.5`, `::c000:205`; deprecated by RFC 4291 but still written by some
 *   stacks): the IPv4 address, except `::` and `::1`, which are the IPv6 unspecified and loopback addresses (RFC 4291
 *   2.5.2, 2.5.3), not 0.0.0.0 and 0.0.0.1, however they are written (`::0.0.0.1` is `::1`).
 * - Any other IPv6 address: its RFC 5952 form (lowercase, no leading zeros, the longest zero run as `::`).
 */
export const canonicalIp = (text: string): string | undefined => {
  if (text.length > 45) return undefined
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text).toString()
  if (!text.includes(":") || text.includes("%")) return undefined
  const v6 = parseV6(text)
  if (v6 === undefined) return undefined
  const [a, b, c, d, e, f, g = 0, h = 0] = v6.parts
  const ipv4Inside =
    a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && (f === 0xffff || (f === 0 && (g !== 0 || h > 1)))
  return ipv4Inside ? `${g >> 8}.${g & 0xff}.${h >> 8}.${h & 0xff}` : v6.toRFC5952String()
}

/**
 * An IPv6 text, with a dotted IPv4 tail read as two hexadecimal words first: ipaddr.js reads `::a.b.c.d` as
 * `::ffff:a.b.c.d` (another address) and accepts octal and hexadecimal parts in the tail (`::ffff:010.0.0.1`).
 */
const parseV6 = (text: string): ipaddr.IPv6 | undefined => {
  let hex = text
  if (text.includes(".")) {
    const colon = text.lastIndexOf(":")
    const tail = text.slice(colon + 1)
    if (!ipaddr.IPv4.isValidFourPartDecimal(tail)) return undefined
    const [o1, o2, o3, o4] = ipaddr.IPv4.parse(tail).octets
    hex = `${text.slice(0, colon + 1)}${(((o1 ?? 0) << 8) | (o2 ?? 0)).toString(16)}:${(((o3 ?? 0) << 8) | (o4 ?? 0)).toString(16)}`
  }
  return ipaddr.IPv6.isValid(hex) ? ipaddr.IPv6.parse(hex) : undefined
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
