import ipaddr from "ipaddr.js"
import { canonicalIp, parseNetwork } from "./ip.ts"

/**
 * An organization's own networks, and whether a source address is inside one of them. A decoy touched from inside
 * is the strongest breach signal a deception product has: the machine that did it is already past the perimeter.
 * Until an admin edits the list, it is the private ranges, where almost every organization's own machines live.
 */

export interface OwnNetwork {
  /** `address/prefix`, host bits cleared (`parseNetwork`'s `cidr`). */
  readonly cidr: string
  /** The admin's name for it, e.g. "Office LAN". Service-side text, bounded, never attacker text. */
  readonly label: string
}

export type SourceScope = "internal" | "external"

export interface SourceClassification {
  readonly scope: SourceScope
  /** The most specific own network holding the address (longest prefix), null for an external source. */
  readonly network: OwnNetwork | null
}

export const DEFAULT_NETWORKS: ReadonlyArray<OwnNetwork> = [
  { cidr: "10.0.0.0/8", label: "Private network (10/8)" },
  { cidr: "172.16.0.0/12", label: "Private network (172.16/12)" },
  { cidr: "192.168.0.0/16", label: "Private network (192.168/16)" },
  { cidr: "fc00::/7", label: "Unique local IPv6 (fc00::/7)" },
]

/** Bounds of the list an admin keeps: enough for any site plan, small enough to check on every new incident. */
export const NETWORKS_MAX = 500
export const NETWORK_LABEL_MAX = 100

const EXTERNAL: SourceClassification = { scope: "external", network: null }

interface Parsed {
  readonly network: OwnNetwork
  readonly range: [ipaddr.IPv4 | ipaddr.IPv6, number]
  readonly version: 4 | 6
}

const parsedCache = new WeakMap<ReadonlyArray<OwnNetwork>, ReadonlyArray<Parsed>>()

const parsedOf = (networks: ReadonlyArray<OwnNetwork>): ReadonlyArray<Parsed> => {
  let parsed = parsedCache.get(networks)
  if (parsed === undefined) {
    parsed = networks.flatMap((network): Array<Parsed> => {
      const n = parseNetwork(network.cidr)
      if (n === undefined) return []
      return [{ network, range: [ipaddr.parse(n.address), n.prefix], version: n.version }]
    })
    parsedCache.set(networks, parsed)
  }
  return parsed
}

/**
 * Internal when the address lies in one of `networks`; the most specific one (longest prefix, then the first
 * listed) names it, so `10.20.0.0/16 Office LAN` wins over the `10.0.0.0/8` it sits in. Every spelling of an
 * address (IPv4-mapped or IPv4-compatible IPv6 included) is judged as its one canonical form.
 */
export const classifySource = (sourceIp: string, networks: ReadonlyArray<OwnNetwork>): SourceClassification => {
  const canonical = canonicalIp(sourceIp)
  if (canonical === undefined) return EXTERNAL
  const address = ipaddr.parse(canonical)
  const version = address.kind() === "ipv4" ? 4 : 6
  let best: Parsed | undefined
  for (const candidate of parsedOf(networks)) {
    if (candidate.version !== version) continue
    if (!address.match(candidate.range as never)) continue
    if (best === undefined || candidate.range[1] > best.range[1]) best = candidate
  }
  return best === undefined ? EXTERNAL : { scope: "internal", network: best.network }
}

export type NetworkListProblem = { readonly line: number; readonly reason: string }

/**
 * An admin's list as typed, one `cidr label` a line (`#` starts a comment): the networks, or the first line that
 * cannot be read. A network given twice keeps its first label.
 */
export const parseNetworkList = (
  text: string,
): { readonly networks: ReadonlyArray<OwnNetwork> } | { readonly problem: NetworkListProblem } => {
  const networks: Array<OwnNetwork> = []
  const seen = new Set<string>()
  const lines = text.split(/\r?\n/)
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/#.*$/, "").trim()
    if (line === "") continue
    const space = line.search(/\s/)
    const cidrText = space < 0 ? line : line.slice(0, space)
    const label = space < 0 ? "" : line.slice(space).trim()
    const problem = networkProblem(cidrText, label)
    if (problem !== undefined) return { problem: { line: i + 1, reason: problem } }
    const cidr = parseNetwork(cidrText)?.cidr ?? cidrText
    if (seen.has(cidr)) continue
    seen.add(cidr)
    networks.push({ cidr, label: label === "" ? cidr : label })
    if (networks.length > NETWORKS_MAX)
      return { problem: { line: i + 1, reason: `more than ${NETWORKS_MAX} networks` } }
  }
  return { networks }
}

/** Why one network cannot be kept, or undefined. */
export const networkProblem = (cidrText: string, label: string): string | undefined => {
  const network = parseNetwork(cidrText)
  if (network === undefined)
    return `${JSON.stringify(cidrText.slice(0, 60))} is not an address or a network (e.g. 10.20.0.0/16)`
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  if (/[\u0000-\u001f\u007f-\u009f]/.test(label)) return "a label cannot hold control characters"
  if ([...label].length > NETWORK_LABEL_MAX) return `a label has at most ${NETWORK_LABEL_MAX} characters`
  return undefined
}

/** The list as an admin reads and edits it: one `cidr label` a line. */
export const formatNetworkList = (networks: ReadonlyArray<OwnNetwork>): string =>
  networks.map((n) => (n.label === n.cidr ? n.cidr : `${n.cidr} ${n.label}`)).join("\n")
