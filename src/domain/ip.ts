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
