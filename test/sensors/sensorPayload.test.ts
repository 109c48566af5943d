import { describe, expect, test } from "bun:test"
import { Schema } from "effect"
import {
  SensorWebhookBody,
  sensorWebhookTypeOf,
  serializeSensorWebhookBody,
} from "../../src/domain/sensorHealthPayload.ts"

/** D43: which health moves are announced, and the exact body of a sensor-health webhook. */

describe("sensor webhook bodies", () => {
  test("a move to silent is sensor.silent, from silent to alive sensor.recovered, a first contact nothing", () => {
    expect(sensorWebhookTypeOf("alive", "silent")).toBe("sensor.silent")
    expect(sensorWebhookTypeOf("unknown", "silent")).toBe("sensor.silent")
    expect(sensorWebhookTypeOf("silent", "alive")).toBe("sensor.recovered")
    expect(sensorWebhookTypeOf("unknown", "alive")).toBeUndefined()
    expect(sensorWebhookTypeOf("alive", "alive")).toBeUndefined()
    expect(sensorWebhookTypeOf("silent", "silent")).toBeUndefined()
  })

  test("{id, type, createdAt, sensor: {id, name, profile, lastSeenAt}}, lastSeenAt in whole seconds or null", () => {
    const text = serializeSensorWebhookBody({
      id: "whd_01JD2RB7C1M4D8Q2V6X0Z3B5N7",
      type: "sensor.silent",
      createdAt: new Date("2026-11-21T16:03:12.418Z"),
      sensor: {
        id: "sen_01JD2Q5F8T6R4E2W0Q8S6D4F2G",
        name: "web-01",
        profile: "opencanary",
        lastSeenAt: new Date("2026-11-21T15:59:40.123Z"),
      },
    })
    expect(text).toBe(
      '{"id":"whd_01JD2RB7C1M4D8Q2V6X0Z3B5N7","type":"sensor.silent","createdAt":"2026-11-21T16:03:12.418Z",' +
        '"sensor":{"id":"sen_01JD2Q5F8T6R4E2W0Q8S6D4F2G","name":"web-01","profile":"opencanary",' +
        '"lastSeenAt":"2026-11-21T15:59:40Z"}}',
    )
    const never = JSON.parse(
      serializeSensorWebhookBody({
        id: "whd_x",
        type: "sensor.recovered",
        createdAt: new Date(0),
        sensor: { id: "sen_x", name: "n", profile: "generic", lastSeenAt: null },
      }),
    )
    expect(never.sensor.lastSeenAt).toBeNull()
    expect(Schema.decodeUnknownEither(SensorWebhookBody)(never)._tag).toBe("Right")
  })

  test("a stored name longer than any name the service accepts is still bounded in the body", () => {
    const body = JSON.parse(
      serializeSensorWebhookBody({
        id: "whd_x",
        type: "sensor.silent",
        createdAt: new Date(0),
        sensor: { id: "sen_x", name: "é".repeat(10_000), profile: "p".repeat(10_000), lastSeenAt: null },
      }),
    )
    expect([...body.sensor.name].length).toBeLessThanOrEqual(256)
    expect([...body.sensor.profile].length).toBeLessThanOrEqual(256)
  })
})
