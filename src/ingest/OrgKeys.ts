import { Effect, Option } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { Keys } from "../platform/keys.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { lineIdKey } from "./formats/native.ts"

/**
 * An organization's ingestion keys, unsealed once per process and organization: the fingerprint key (password
 * fingerprints) and the key of honeypot line ids derived from it (`lineIdKey`). The organization's sealed key
 * never changes (a SECRET_KEY rotation reseals the same bytes), so the cache needs no invalidation.
 */
export class OrgKeys extends Effect.Service<OrgKeys>()("OrgKeys", {
  effect: Effect.gen(function* () {
    const orgs = yield* OrgsRepo
    const { sealer } = yield* Keys
    const fingerprintKeys = new Map<string, Uint8Array>()
    const lineIdKeys = new Map<string, Uint8Array>()

    const fingerprintKey = Effect.fn("OrgKeys.fingerprintKey")(function* (orgId: OrgId) {
      const cached = fingerprintKeys.get(orgId)
      if (cached) return cached
      const org = yield* orgs.findById(orgId)
      const key = Option.isSome(org) ? sealer.open(org.value.fingerprintKey) : undefined
      if (key === undefined) return yield* Effect.dieMessage(`fingerprint key of ${orgId} cannot be opened`)
      fingerprintKeys.set(orgId, key)
      return key
    })

    const lineIdKeyOf = Effect.fn("OrgKeys.lineIdKey")(function* (orgId: OrgId) {
      const cached = lineIdKeys.get(orgId)
      if (cached) return cached
      const key = lineIdKey(yield* fingerprintKey(orgId))
      lineIdKeys.set(orgId, key)
      return key
    })

    return { fingerprintKey, lineIdKey: lineIdKeyOf } as const
  }),
}) {}
