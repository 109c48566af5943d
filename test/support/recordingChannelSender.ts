import { Clock, Effect, Layer } from "effect"
import { ChannelSender, type SendRequest, type SentAttempt } from "../../src/platform/outbound/ChannelSender.ts"
import type { SendResult } from "../../src/platform/outbound/send.ts"

/**
 * A sender that sends nothing: it records each request with the (Test)Clock's time and answers with `answer`. The
 * dispatcher's timing (the retry schedule, leases) then runs on Effect's TestClock instead of real waiting.
 */
export const recordingChannelSender = (answer: (request: SendRequest, index: number) => SendResult) => {
  const sent: Array<{ readonly request: SendRequest; readonly at: number }> = []
  const layer = Layer.succeed(
    ChannelSender,
    ChannelSender.make({
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
