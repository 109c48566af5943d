import { hostname } from "node:os"
import { Clock, Duration, Effect, Option, Redacted, Schema } from "effect"
import type { ChannelFormat, FormatContext } from "../../domain/channels/kinds.ts"
import { type ChannelKind, kindSpec } from "../../domain/channels/registry.ts"
import { PRODUCT } from "../../domain/product.ts"
import { AppConfig } from "../config.ts"
import { Keys } from "../keys.ts"
import { renderStored } from "./channelKinds.ts"
import { sendMail } from "./mailSend.ts"
import { noAnswer, type SendResult, sendHttps } from "./send.ts"
import { sendSyslog } from "./syslogSend.ts"
import { systemLookup } from "./urlRule.ts"

// Every kind sends with it; the header value is part of what receivers see, so it keeps its name.
export const USER_AGENT = "DecoyIncidentService-Webhooks/1.0"

/** What sending needs from a channel: its kind, format and sealed secrets. */
export interface SendableChannel {
  readonly kind: ChannelKind
  readonly format: ChannelFormat
  /** Null for a kind without a credential (syslog). */
  readonly secretEnc: string | null
  readonly previousSecretEnc: string | null
  readonly previousSecretExpiresAt: Date | null
  /** An email channel's confirmed recipients (absent or empty: nobody to mail). */
  readonly recipients?: ReadonlyArray<string>
  /** The channel and its organization's name, which an email's footer names (absent for the other kinds). */
  readonly mailedFor?: { readonly id: string; readonly organization: string } | null | undefined
}

/** The sealed secrets of a channel (sealed because the service must use them again). */
export type SealedSecrets = Pick<SendableChannel, "secretEnc" | "previousSecretEnc" | "previousSecretExpiresAt">

export interface SentAttempt {
  readonly startedAt: Date
  readonly result: SendResult
}

const failure = (error: string): SendResult => noAnswer(0, error, null)

/** What an email kind renders: the JSON of its subject and two parts. */
const decodeEmail = Schema.decodeEither(
  Schema.parseJson(Schema.Struct({ subject: Schema.String, text: Schema.String, html: Schema.String })),
)

/**
 * Sends one delivery on its channel, as the kind's descriptor (domain/channels) says: its
 * formatter (pure: the stored native message in, the receiver's bytes out), its credential and its transport (an
 * HTTPS POST through the URL rule and the pinned, checked address, or RFC 5425 syslog over TLS). Secrets are opened
 * here and nowhere else; a signature is made at send time over the exact bytes sent. Used by the dispatcher and by
 * the Send test action, so both send the same way.
 */
export class ChannelSender extends Effect.Service<ChannelSender>()("ChannelSender", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const { sealer } = yield* Keys
    const settings = config.webhooks
    const decoder = new TextDecoder()
    const context: FormatContext = {
      appUrl: config.appUrl,
      product: { name: PRODUCT.name, vendor: PRODUCT.vendor, version: PRODUCT.version, id: PRODUCT.id },
      hostname: hostname(),
    }
    const timeoutMs = Duration.toMillis(settings.timeout)

    const open = (sealed: string | null): string | undefined => {
      if (sealed === null) return undefined
      const plain = sealer.open(sealed)
      return plain === undefined ? undefined : decoder.decode(plain)
    }

    /** The secret, then the previous one while its rotation grace lasts (new first, so receivers can switch). */
    const secretsOf = (channel: SealedSecrets, now: Date): ReadonlyArray<string> | undefined => {
      const current = open(channel.secretEnc)
      if (current === undefined) return undefined
      const secrets = [current]
      if (channel.previousSecretExpiresAt !== null && channel.previousSecretExpiresAt > now) {
        const previous = open(channel.previousSecretEnc)
        if (previous !== undefined) secrets.push(previous)
      }
      return secrets
    }

    const post = (url: string, body: string, headers: Record<string, string>) =>
      sendHttps({
        url,
        body,
        headers: { "User-Agent": USER_AGENT, ...headers },
        policy: { allowPrivate: settings.allowPrivate },
        lookup: systemLookup,
        ca: settings.extraCa,
        timeoutMs,
      })

    const deliver = async (
      input: { readonly url: string; readonly body: string; readonly deliveryId: string; readonly attempt: number },
      channel: SendableChannel,
      startedAt: Date,
    ): Promise<SendResult> => {
      const spec = kindSpec(channel.kind)
      // A kind sends the stored bytes as they are in the format it says (a native webhook); otherwise it renders them.
      let rendered = input.body
      if (spec.sendsStored !== channel.format) {
        const out = renderStored(channel.kind, channel.format, input.body, {
          ...context,
          channel: channel.mailedFor ?? undefined,
        })
        if (out === undefined) return failure("the stored message cannot be read")
        rendered = out
      }
      if (spec.transport === "smtp") {
        if (Option.isNone(config.email)) return failure("email is not set up on this server (SMTP_URL and SMTP_FROM)")
        const recipients = channel.recipients ?? []
        if (recipients.length === 0) return failure("no confirmed recipient: nobody has confirmed their address yet")
        const content = decodeEmail(rendered)
        if (content._tag === "Left") return failure("the rendered email cannot be read")
        const email = config.email.value
        return sendMail(
          { server: Redacted.value(email.server), from: email.from, ca: email.ca, timeoutMs },
          { to: recipients, ...content.right },
        )
      }
      if (spec.transport === "syslog-tls") {
        return sendSyslog({
          destination: input.url,
          message: rendered,
          policy: { allowPrivate: settings.allowPrivate },
          lookup: systemLookup,
          ca: settings.syslogCa,
          timeoutMs,
        })
      }
      const unreadable = "the channel's secret cannot be opened with the current SECRET_KEY"
      const credential = spec.credential
      switch (credential.type) {
        case "signingSecret": {
          // SECRET_KEY changed without re-encrypting: never send unsigned; the attempt fails and is retried.
          const secrets = secretsOf(channel, startedAt)
          if (secrets === undefined) return failure(unreadable)
          const { deliveryId, attempt } = input
          return post(
            input.url,
            rendered,
            credential.headers({ secrets, at: startedAt, body: rendered, deliveryId, attempt }),
          )
        }
        case "sealedUrl": {
          // The whole URL is the credential: sealed, opened only to send.
          const url = open(channel.secretEnc)
          return url === undefined ? failure(unreadable) : post(url, rendered, {})
        }
        case "sealedToken": {
          const token = open(channel.secretEnc)
          return token === undefined ? failure(unreadable) : post(input.url, rendered, credential.headers(token))
        }
        case "none":
          return post(input.url, rendered, {})
      }
    }

    const send = Effect.fn("ChannelSender.send")(function* (input: {
      readonly url: string
      readonly body: string
      readonly deliveryId: string
      readonly attempt: number
      readonly channel: SendableChannel
    }) {
      const startedAt = new Date(yield* Clock.currentTimeMillis)
      const result = yield* Effect.promise(() => deliver(input, input.channel, startedAt))
      return { startedAt, result } satisfies SentAttempt
    })

    return { send, secretsOf } as const
  }),
}) {}

/** What the dispatcher asks a sender to send. */
export type SendRequest = Parameters<ChannelSender["send"]>[0]
