import { randomInt } from "node:crypto"
import dgram from "node:dgram"
import { readFileSync } from "node:fs"
import { isIP } from "node:net"
import packet from "dns-packet"
import { Effect } from "effect"
import ipaddr from "ipaddr.js"
import type { DnsServer } from "../../platform/config.ts"

/**
 * A small DNS client over UDP (dns-packet encodes and decodes): one question to one resolver at a time, each answer
 * checked against the question it answers. Written here rather than node:dns because Bun's resolver keeps its own
 * cache of answers (a changed PTR record was not seen again), takes no per-query time-out we could rely on, and
 * rewrites names before we see them; the enrichment job needs the answer as sent, its own time-outs and its own
 * cache (address_enrichment).
 *
 * An answer is accepted only from the server asked (address and port), with the query's random id and the same
 * question; anything else on the socket is ignored, so a spoofed datagram must guess a 16-bit id and a random port.
 */

export type QueryType = "PTR" | "A" | "AAAA"

/** What one question got: records of the type asked (their data as text), or why none. */
export type QueryOutcome =
  | { readonly _tag: "Answers"; readonly data: ReadonlyArray<string> }
  | { readonly _tag: "NoData" }
  /** The answer could not be decoded: a name longer than DNS allows, a bad label, a truncated packet. */
  | { readonly _tag: "Malformed" }
  | { readonly _tag: "Failed"; readonly reason: string }

/** The system's resolvers: the nameserver lines of /etc/resolv.conf (port 53), as the C library reads them. */
export const systemDnsServers = (path = "/etc/resolv.conf"): ReadonlyArray<DnsServer> => {
  try {
    return readFileSync(path, "utf8")
      .split("\n")
      .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1]?.replace(/%.*$/, ""))
      .filter((host): host is string => host !== undefined && isIP(host) !== 0)
      .map((host) => ({ host, port: 53 }))
  } catch {
    return []
  }
}

const canonical = (address: string): string => {
  try {
    const parsed = ipaddr.process(address)
    return parsed.toNormalizedString()
  } catch {
    return address
  }
}

/** The name a PTR question asks for an address: `4.3.2.1.in-addr.arpa`, or the nibbles under `ip6.arpa`. */
export const reverseName = (address: string): string => {
  const parsed = ipaddr.process(address)
  if (parsed.kind() === "ipv4") return `${parsed.toByteArray().reverse().join(".")}.in-addr.arpa`
  const nibbles = parsed
    .toByteArray()
    .flatMap((byte) => [byte >> 4, byte & 0xf])
    .map((n) => n.toString(16))
  return `${nibbles.reverse().join(".")}.ip6.arpa`
}

const sameName = (a: string, b: string): boolean =>
  a.replace(/\.$/, "").toLowerCase() === b.replace(/\.$/, "").toLowerCase()

/** One question to one server, answered within `waitMs` or Failed; the socket is closed however it ends. */
const askOnce = (server: DnsServer, name: string, type: QueryType, waitMs: number): Effect.Effect<QueryOutcome> =>
  Effect.async<QueryOutcome>((resume) => {
    const socket = dgram.createSocket(isIP(server.host) === 6 ? "udp6" : "udp4")
    const id = randomInt(0, 65536)
    const from = canonical(server.host)
    let done = false
    const finish = (outcome: QueryOutcome) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.close()
      resume(Effect.succeed(outcome))
    }
    const timer = setTimeout(() => finish({ _tag: "Failed", reason: "timeout" }), waitMs)
    socket.on("error", (error) => finish({ _tag: "Failed", reason: (error as NodeJS.ErrnoException).code ?? "error" }))
    socket.on("message", (message, remote) => {
      // Not from the server asked, or not the answer to this query: ignored (the time-out still runs).
      if (canonical(remote.address) !== from || remote.port !== server.port) return
      if (message.length < 12 || message.readUInt16BE(0) !== id) return
      let answer: ReturnType<typeof packet.decode>
      try {
        answer = packet.decode(message)
      } catch {
        return finish({ _tag: "Malformed" })
      }
      const question = answer.questions?.[0]
      if (
        answer.type !== "response" ||
        question === undefined ||
        question.type !== type ||
        !sameName(question.name, name)
      )
        return
      if ((answer.flags ?? 0) & packet.TRUNCATED_RESPONSE) return finish({ _tag: "Malformed" })
      // RCODE, the flags' low four bits: 0 no error, 3 no such name.
      const rcode = (answer.flags ?? 0) & 0xf
      if (rcode === 3) return finish({ _tag: "NoData" })
      if (rcode !== 0) return finish({ _tag: "Failed", reason: `rcode ${rcode}` })
      // A recursive resolver follows CNAMEs (RFC 2317 delegations use them): records of the type asked count, whatever
      // name they are under.
      const data = (answer.answers ?? []).flatMap((record) =>
        record.type === type && typeof record.data === "string" ? [record.data] : [],
      )
      finish(data.length === 0 ? { _tag: "NoData" } : { _tag: "Answers", data })
    })
    let query: Buffer
    try {
      query = packet.encode({
        type: "query",
        id,
        flags: packet.RECURSION_DESIRED,
        questions: [{ type, name, class: "IN" }],
      })
    } catch {
      finish({ _tag: "Malformed" })
      return Effect.void
    }
    socket.send(query, server.port, server.host, (error) => {
      if (error) finish({ _tag: "Failed", reason: (error as NodeJS.ErrnoException).code ?? "send" })
    })
    return Effect.sync(() => finish({ _tag: "Failed", reason: "interrupted" }))
  })

/**
 * One question, asked of each server in turn until one answers (a server that times out or fails passes it to the
 * next; an answer, even "no such name", is final). Each try waits at most `waitMs`; the caller bounds the whole.
 */
export const ask = (
  servers: ReadonlyArray<DnsServer>,
  name: string,
  type: QueryType,
  waitMs: number,
): Effect.Effect<QueryOutcome> =>
  Effect.gen(function* () {
    let last: QueryOutcome = { _tag: "Failed", reason: "no DNS server" }
    for (const server of servers) {
      last = yield* askOnce(server, name, type, waitMs)
      if (last._tag !== "Failed") return last
    }
    return last
  })

/** Whether two addresses are the same (any form: `::ffff:192.0.2.1` is `192.0.2.1`). */
export const sameAddress = (a: string, b: string): boolean => canonical(a) === canonical(b)
