import { Clock, Duration, Effect, Layer } from "effect"
import { signatureHeader } from "../../domain/webhookSignature.ts"
import { AppConfig } from "../config.ts"
import { Keys } from "../keys.ts"
import { sendWebhook, type WebhookSendResult } from "./send.ts"
import { systemLookup } from "./urlRule.ts"

export const USER_AGENT = "DecoyIncidentService-Webhooks/1.0"

/** The sealed secrets of a channel (D16). */
export interface SealedSecrets {
  readonly secretEnc: string
  readonly previousSecretEnc: string | null
  readonly previousSecretExpiresAt: Date | null
}

export interface SentAttempt {
  readonly startedAt: Date
  readonly result: WebhookSendResult
}

/**
 * Signs and sends one webhook request (D15–D18): the secrets are opened here and nowhere else, the signature is
 * made at send time over the stored body's exact bytes, and the send goes through the URL rule and the pinned,
 * checked address (send.ts). Used by the dispatcher and by `admin webhook test`, so both send the same way.
 */
export class WebhookSender extends Effect.Service<WebhookSender>()("WebhookSender", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const { sealer } = yield* Keys
    const settings = config.webhooks
    const decoder = new TextDecoder()

    /** The secret, then the previous one while its rotation grace lasts (D16: the new one first). */
    const secretsOf = (channel: SealedSecrets, now: Date): ReadonlyArray<string> | undefined => {
      const current = sealer.open(channel.secretEnc)
      if (current === undefined) return undefined
      const secrets = [decoder.decode(current)]
      if (
        channel.previousSecretEnc !== null &&
        channel.previousSecretExpiresAt !== null &&
        channel.previousSecretExpiresAt > now
      ) {
        const previous = sealer.open(channel.previousSecretEnc)
        if (previous !== undefined) secrets.push(decoder.decode(previous))
      }
      return secrets
    }

    const send = (input: {
      readonly url: string
      readonly body: string
      readonly deliveryId: string
      readonly attempt: number
      readonly channel: SealedSecrets
    }) =>
      Effect.gen(function* () {
        const startedAt = new Date(yield* Clock.currentTimeMillis)
        const secrets = secretsOf(input.channel, startedAt)
        if (secrets === undefined) {
          // SECRET_KEY changed without re-encrypting: never send unsigned; the attempt fails and is retried.
          const result: WebhookSendResult = {
            ok: false,
            status: null,
            durationMs: 0,
            responseBody: "",
            responseTruncated: false,
            error: "the channel's signing secret cannot be opened with the current SECRET_KEY",
            address: null,
          }
          return { startedAt, result } satisfies SentAttempt
        }
        const t = Math.floor(startedAt.getTime() / 1000)
        const result = yield* Effect.promise(() =>
          sendWebhook({
            url: input.url,
            body: input.body,
            headers: {
              "X-Service-Signature": signatureHeader(secrets, t, input.body),
              "X-Service-Webhook-Id": input.deliveryId,
              "X-Service-Delivery-Attempt": String(input.attempt),
              "User-Agent": USER_AGENT,
            },
            policy: { allowPrivate: settings.allowPrivate },
            lookup: systemLookup,
            ca: settings.extraCa,
            timeoutMs: Duration.toMillis(settings.timeout),
          }),
        )
        return { startedAt, result } satisfies SentAttempt
      })

    return { send, secretsOf } as const
  }),
}) {}

/** What the dispatcher asks a sender to send. */
export type SendRequest = Parameters<WebhookSender["send"]>[0]

/**
 * A sender that sends nothing: it records each request with the (Test)Clock's time and answers with `answer`. The
 * dispatcher's timing (the retry schedule, leases) then runs on Effect's TestClock instead of real waiting.
 */
export const recordingWebhookSender = (answer: (request: SendRequest, index: number) => WebhookSendResult) => {
  const sent: Array<{ readonly request: SendRequest; readonly at: number }> = []
  const layer = Layer.succeed(
    WebhookSender,
    WebhookSender.make({
      send: (request) =>
        Effect.map(Clock.currentTimeMillis, (at) => {
          sent.push({ request, at })
          return { startedAt: new Date(at), result: answer(request, sent.length - 1) } satisfies SentAttempt
        }),
      secretsOf: () => [],
    }),
  )
  return { layer, sent } as const
}
