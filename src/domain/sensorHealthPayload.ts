import { Schema } from "effect"
import { Timestamp, TimestampSeconds } from "./models.ts"
import { truncateCodePoints } from "./sanitize.ts"

/**
 * Sensor-health webhooks (a silent decoy is a blind spot, so its silence is an alert): `sensor.silent` (a sensor that
 * expects a heartbeat missed three) and `sensor.recovered` (it was heard from again). The envelope is the incident
 * webhooks' (a delivery-stable `id`, `type`, `createdAt`), with `sensor` where they have `incident`. Pure: built once
 * when the delivery is queued; every attempt sends and signs these exact bytes.
 */

export const SENSOR_WEBHOOK_TYPES = ["sensor.silent", "sensor.recovered"] as const
export type SensorWebhookType = (typeof SENSOR_WEBHOOK_TYPES)[number]

/** Names and profiles are bounded where they are set; the body bounds them again, whatever is stored. */
const MAX_TEXT = 256

export const WebhookSensor = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  profile: Schema.String,
  /** The last contact (any ingest request, a heartbeat), in whole seconds as the incident's; null: never. */
  lastSeenAt: Schema.NullOr(TimestampSeconds),
}).annotations({ identifier: "WebhookSensor" })
export type WebhookSensor = typeof WebhookSensor.Type

/** `{id, type, createdAt, sensor}`. */
export const SensorWebhookBody = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal(...SENSOR_WEBHOOK_TYPES),
  createdAt: Timestamp,
  sensor: WebhookSensor,
}).annotations({ identifier: "SensorWebhookBody" })
export type SensorWebhookBody = typeof SensorWebhookBody.Type

const encode = Schema.encodeSync(SensorWebhookBody)

/** The announcement a move of the announced health makes, if any (first contact of a new sensor makes none). */
export const sensorWebhookTypeOf = (
  from: "unknown" | "alive" | "silent",
  to: "alive" | "silent",
): SensorWebhookType | undefined =>
  to === "silent"
    ? from === "silent"
      ? undefined
      : "sensor.silent"
    : from === "silent"
      ? "sensor.recovered"
      : undefined

/** The exact bytes sent and signed: compact JSON, keys in this order. */
export const serializeSensorWebhookBody = (input: {
  readonly id: string
  readonly type: SensorWebhookType
  readonly createdAt: Date
  readonly sensor: {
    readonly id: string
    readonly name: string
    readonly profile: string
    readonly lastSeenAt: Date | null
  }
}): string =>
  JSON.stringify(
    encode({
      id: input.id,
      type: input.type,
      createdAt: input.createdAt,
      sensor: {
        id: truncateCodePoints(input.sensor.id, MAX_TEXT),
        name: truncateCodePoints(input.sensor.name, MAX_TEXT),
        profile: truncateCodePoints(input.sensor.profile, MAX_TEXT),
        lastSeenAt: input.sensor.lastSeenAt,
      },
    }),
  )
