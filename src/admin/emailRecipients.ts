import { randomBytes } from "node:crypto"
import { Clock, Duration, Effect, Option, Redacted } from "effect"
import { EMAIL_CONFIRMATION_VALID_MS, MAX_EMAIL_RECIPIENTS } from "../domain/channels/email.ts"
import { confirmationEmail } from "../domain/channels/emailText.ts"
import { sha256 } from "../domain/crypto.ts"
import type { ChannelId, OrgId } from "../domain/ids.ts"
import { AppConfig } from "../platform/config.ts"
import { MAX_ADDRESS_LENGTH, normalizeAddress, sendMail } from "../platform/outbound/mailSend.ts"
import { EmailRecipientsRepo } from "../repos/EmailRecipientsRepo.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { invalid, malformed, missing } from "./errors.ts"

/** The path of a confirmation link on APP_URL; the token follows it. */
export const CONFIRM_PATH = "/email/confirm/"

/** A confirmation link's token as it is stored: its SHA-256, never the token. */
export const confirmationHash = (token: string): Uint8Array => sha256(token)

/**
 * How long a waiting recipient is not mailed again: a new link at most every 10 minutes, so repeated invitations
 * cannot flood anyone's mailbox.
 */
export const INVITE_QUIET_MS = 10 * 60 * 1000

/**
 * What happened to one recipient asked for: mailed a link, already confirmed, mailed a link less than 10 minutes ago
 * (not mailed again), or the link could not be mailed.
 */
export interface InviteOutcome {
  readonly address: string
  readonly state: "invited" | "confirmed" | "recent"
  /** For an invited one: whether the confirmation mail was accepted by the SMTP server, and why not. */
  readonly mailed: boolean
  readonly error: string | null
}

/**
 * Recipients as given (a list, or text split at commas, semicolons, spaces and line ends): each an address the service
 * accepts, without repeats, 1 to MAX_EMAIL_RECIPIENTS of them.
 */
export const parseRecipients = (given: string | ReadonlyArray<string> | undefined) =>
  Effect.gen(function* () {
    const parts = (typeof given === "string" ? [given] : (given ?? []))
      .flatMap((text) => text.split(/[\s,;]+/))
      .filter((part) => part !== "")
    if (parts.length === 0) return yield* missing("recipients")
    const addresses: Array<string> = []
    for (const part of parts) {
      const address = normalizeAddress(part)
      if (address === undefined) {
        const shown = part.length > 60 ? `${part.slice(0, 60)}…` : part
        return yield* malformed(
          "recipients",
          `must hold email addresses such as soc@example.com, at most ${MAX_ADDRESS_LENGTH} characters each (${JSON.stringify(shown)} is not one)`,
        )
      }
      if (!addresses.includes(address)) addresses.push(address)
    }
    if (addresses.length > MAX_EMAIL_RECIPIENTS) {
      return yield* malformed("recipients", `may hold at most ${MAX_EMAIL_RECIPIENTS} addresses per channel`)
    }
    return addresses
  })

/**
 * Inviting recipients of an email channel: a link token per address (32 random bytes; its hash stored), the row, then
 * the confirmation mail, sent outside any transaction (a slow mail server must not hold one open) through the same
 * SMTP server as the alerts. Nobody is mailed anything but this one message until they confirm.
 */
export const emailInvitations = Effect.gen(function* () {
  const repo = yield* EmailRecipientsRepo
  const orgs = yield* OrgsRepo
  const config = yield* AppConfig
  const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

  /** Email is available only with SMTP_URL and SMTP_FROM set by the operator. */
  const requireEmail = Option.isSome(config.email)
    ? Effect.void
    : Effect.fail(
        invalid({
          field: "kind",
          reason: "notApplicable",
          rule: "email needs the server's SMTP_URL and SMTP_FROM, which are not set: ask the operator",
        }),
      )

  const mailLink = (input: { orgId: OrgId; channelId: ChannelId; address: string; token: string; expiresAt: Date }) =>
    Effect.gen(function* () {
      if (Option.isNone(config.email)) return { mailed: false, error: "email is not set up on this server" }
      const email = config.email.value
      const organization = Option.match(yield* orgs.findById(input.orgId), {
        onNone: () => input.orgId as string,
        onSome: (org) => org.name,
      })
      const content = confirmationEmail({
        organization,
        channelId: input.channelId,
        address: input.address,
        link: `${config.appUrl}${CONFIRM_PATH}${input.token}`,
        expiresAt: input.expiresAt,
        appUrl: config.appUrl,
      })
      const result = yield* Effect.promise(() =>
        sendMail(
          {
            server: Redacted.value(email.server),
            from: email.from,
            ca: email.ca,
            timeoutMs: Duration.toMillis(config.webhooks.timeout),
          },
          { to: [input.address], ...content },
        ),
      )
      return { mailed: result.ok, error: result.error }
    })

  /** Invites these addresses to the channel (new, or waiting ones given a fresh link); mails the links. */
  const invite = (channel: { readonly id: ChannelId; readonly orgId: OrgId }, addresses: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const outcomes: Array<InviteOutcome> = []
      for (const address of addresses) {
        const token = randomBytes(32).toString("base64url")
        const at = yield* now
        const expiresAt = new Date(at.getTime() + EMAIL_CONFIRMATION_VALID_MS)
        const state = yield* repo.invite({
          channelId: channel.id,
          orgId: channel.orgId,
          address,
          tokenHash: confirmationHash(token),
          expiresAt,
          now: at,
          quietMs: INVITE_QUIET_MS,
        })
        if (state !== "invited") {
          outcomes.push({ address, state, mailed: false, error: null })
          continue
        }
        const sent = yield* mailLink({ orgId: channel.orgId, channelId: channel.id, address, token, expiresAt })
        outcomes.push({ address, state, ...sent })
      }
      return outcomes
    })

  return { requireEmail, invite } as const
})
