import { Schema } from "effect"
import { AlertMessage } from "../../domain/alertMessage.ts"
import type { ChannelFormat, ChannelMessage, FormatContext } from "../../domain/channels/kinds.ts"
import { type ChannelKind, kindSpec } from "../../domain/channels/registry.ts"
import { SensorWebhookBody } from "../../domain/sensorHealthPayload.ts"

/**
 * The bytes a channel of this kind and format sends for a stored message (the kind's formatter, from its
 * descriptor in domain/channels): `message` is the stored body decoded, `stored` the same body as plain parsed JSON.
 */
export const renderForKind = (
  kind: ChannelKind,
  format: ChannelFormat,
  message: ChannelMessage,
  stored: unknown,
  context: FormatContext,
): string => kindSpec(kind).render(format, message, stored, context)

const decodeMessage = Schema.decodeUnknownEither(Schema.Union(AlertMessage, SensorWebhookBody))

/**
 * A stored delivery body (the native JSON the outbox wrote) rendered for a kind and format, as the sender sends it;
 * undefined when the stored text is not a message this service writes.
 */
export const renderStored = (
  kind: ChannelKind,
  format: ChannelFormat,
  storedBody: string,
  context: FormatContext,
): string | undefined => {
  let stored: unknown
  try {
    stored = JSON.parse(storedBody)
  } catch {
    return undefined
  }
  const decoded = decodeMessage(stored)
  return decoded._tag === "Left" ? undefined : renderForKind(kind, format, decoded.right, stored, context)
}
