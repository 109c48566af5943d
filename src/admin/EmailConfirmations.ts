import { Clock, Effect } from "effect"
import type { OrgId } from "../domain/ids.ts"
import { AuditRepo } from "../repos/AuditRepo.ts"
import { EmailRecipientsRepo } from "../repos/EmailRecipientsRepo.ts"
import { confirmationHash } from "./emailRecipients.ts"

/** The longest token a confirmation link carries (32 bytes in base64url is 43 characters). */
const MAX_TOKEN_LENGTH = 64

/**
 * A recipient confirming the link mailed to them: nobody signs in for it, the link's token is the proof. The page
 * (GET) shows what is being confirmed and a button; the confirmation is the POST, so a mail scanner that fetches every
 * link confirms nothing. Unknown, used and expired links are one answer. The confirmation is audited as done by the
 * recipient (`actor` "recipient", the address in `detail`).
 */
export class EmailConfirmations extends Effect.Service<EmailConfirmations>()("EmailConfirmations", {
  effect: Effect.gen(function* () {
    const repo = yield* EmailRecipientsRepo
    const audit = yield* AuditRepo
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const plausible = (token: string) =>
      token.length >= 20 && token.length <= MAX_TOKEN_LENGTH && /^[A-Za-z0-9_-]+$/.test(token)

    /** What a live link is for, or undefined. */
    const pending = Effect.fn("EmailConfirmations.pending")(function* (token: string) {
      if (!plausible(token)) return undefined
      return yield* repo.pending(confirmationHash(token), yield* now)
    })

    /** Confirms a live link once; what it confirmed, or undefined (unknown, used or expired). */
    const confirm = Effect.fn("EmailConfirmations.confirm")(function* (token: string, ip: string | null) {
      if (!plausible(token)) return undefined
      const done = yield* repo.confirm(confirmationHash(token), yield* now)
      if (done === undefined) return undefined
      yield* audit.record({
        orgId: done.orgId as OrgId,
        actor: "recipient",
        action: "email.confirm",
        target: done.channelId,
        ip,
        detail: done.address,
      })
      return done
    })

    return { pending, confirm } as const
  }),
}) {}
