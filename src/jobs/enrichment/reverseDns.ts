import { isIP } from "node:net"
import { Duration, Effect } from "effect"
import { reverseDnsName } from "../../domain/enrichment.ts"
import type { DnsServer } from "../../platform/config.ts"
import type { ReverseDnsStatus } from "../../repos/AddressEnrichmentRepo.ts"
import { ask, reverseName, sameAddress } from "./dns.ts"

/** PTR names of one address that are tried for forward confirmation, at most. */
const NAMES_TRIED = 4

export interface ReverseDnsOutcome {
  readonly status: Exclude<ReverseDnsStatus, "pending" | "off">
  /** The forward-confirmed name, cleaned (reverseDnsName); null unless `ok`. */
  readonly name: string | null
}

/**
 * The reverse DNS name of an address, forward-confirmed: the PTR names of the address, each (at most NAMES_TRIED)
 * asked for its A (IPv4) or AAAA (IPv6) records, the first whose records include the address kept. Whoever controls
 * the address's reverse zone writes its PTR records, so an unconfirmed name (a claim to be `mail.example.com`) is
 * never shown. The whole lookup, PTR and forward questions together, ends within `timeout`, else `failed`.
 *
 * - `ok`: a confirmed name; `none`: no PTR record; `unconfirmed`: names, none confirmed; `invalid`: the answer could
 *   not be decoded or held no usable name (longer than a DNS name can be, nothing left once cleaned);
 * - `failed`: no answer in time, or a server failure (retried sooner than the others).
 */
export const lookUpReverseDns = (
  servers: ReadonlyArray<DnsServer>,
  address: string,
  timeout: Duration.Duration,
): Effect.Effect<ReverseDnsOutcome> => {
  const budget = Duration.toMillis(timeout)
  // Each try of one question waits its share of the budget, so a second server still gets a turn.
  const wait = Math.max(100, Math.floor(budget / Math.max(1, servers.length)))
  const failed: ReverseDnsOutcome = { status: "failed", name: null }
  return Effect.gen(function* () {
    const ptr = yield* ask(servers, reverseName(address), "PTR", wait)
    if (ptr._tag === "Failed") return failed
    if (ptr._tag === "Malformed") return { status: "invalid", name: null } as const
    if (ptr._tag === "NoData") return { status: "none", name: null } as const
    const names = ptr.data.slice(0, NAMES_TRIED).flatMap((raw) => {
      const name = reverseDnsName(raw)
      return name === undefined ? [] : [{ raw, name }]
    })
    if (names.length === 0) return { status: "invalid", name: null } as const
    let anyFailed = false
    for (const { raw, name } of names) {
      // The name as the PTR record has it (the question must be the one the record names), its address family's type.
      const forward = yield* ask(servers, raw, isIP(address) === 6 ? "AAAA" : "A", wait)
      if (forward._tag === "Failed") anyFailed = true
      if (forward._tag === "Answers" && forward.data.some((a) => sameAddress(a, address))) {
        return { status: "ok", name } as const
      }
    }
    return anyFailed ? failed : ({ status: "unconfirmed", name: null } as const)
  }).pipe(Effect.timeoutTo({ duration: timeout, onTimeout: () => failed, onSuccess: (outcome) => outcome }))
}

/** How long each outcome is kept before the address is looked up again. */
export const REVERSE_DNS_TTL_SECONDS: Record<ReverseDnsOutcome["status"], number> = {
  ok: 24 * 3600,
  none: 24 * 3600,
  unconfirmed: 24 * 3600,
  invalid: 24 * 3600,
  failed: 3600,
}
