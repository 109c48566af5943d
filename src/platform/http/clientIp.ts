import ipaddr from "ipaddr.js"
import { canonicalIp } from "../../domain/ip.ts"

/**
 * The client (whose address is rate-limited) is the socket peer, unless the peer is a proxy named in TRUST_PROXY; then
 * X-Forwarded-For is read from the right, skipping trusted proxies, and the first untrusted address is the client. A
 * forged left-most entry is never believed, and without TRUST_PROXY the header is ignored entirely.
 */
export type Cidr = readonly [ipaddr.IPv4 | ipaddr.IPv6, number]

export const parseTrustProxy = (
  text: string | undefined,
): { ok: true; cidrs: ReadonlyArray<Cidr> } | { ok: false; reason: string } => {
  const cidrs: Array<Cidr> = []
  for (const part of (text ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")) {
    try {
      cidrs.push(
        part.includes("/")
          ? ipaddr.parseCIDR(part)
          : ((a) => [a, a.kind() === "ipv4" ? 32 : 128] as const)(ipaddr.parse(part)),
      )
    } catch {
      return { ok: false, reason: `${part} is not an IP address or CIDR` }
    }
  }
  return { ok: true, cidrs }
}

export const trusted = (address: string, cidrs: ReadonlyArray<Cidr>): boolean => {
  try {
    let parsed = ipaddr.parse(address)
    if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      parsed = (parsed as ipaddr.IPv6).toIPv4Address()
    }
    return cidrs.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match([range, bits] as never))
  } catch {
    return false
  }
}

export const clientIp = (
  peer: string | undefined,
  forwardedFor: string | undefined,
  cidrs: ReadonlyArray<Cidr>,
): string => {
  const socket = (peer && canonicalIp(peer)) || peer || "unknown"
  if (cidrs.length === 0 || !trusted(socket, cidrs) || !forwardedFor) return socket
  const hops = forwardedFor
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = canonicalIp(hops[i] as string)
    if (hop === undefined) return socket // a malformed hop: believe nothing further left
    if (!trusted(hop, cidrs)) return hop
  }
  return socket
}
