import { describe, expect, test } from "bun:test"
import { HEC_SOURCETYPE_OCSF, hecEvent } from "../../../src/domain/channels/hec.ts"
import { allFixtures, CONTEXT, hostileFixture, incidentFixture } from "../../support/channelMessages.ts"

/** D46 HEC formatter: the body of POST /services/collector/event follows HEC's event protocol. */

/** HEC's body rules, as the receiver of test/support/hecReceiver.ts enforces them. */
const checkHecRules = (body: Record<string, unknown>): void => {
  expect("event" in body).toBe(true)
  expect(body.event).not.toBeNull()
  expect(body.event).not.toBe("")
  expect(body.event).not.toEqual({})
  if ("time" in body) expect(typeof body.time).toBe("number")
  for (const key of ["host", "source", "sourcetype", "index"]) {
    if (key in body) expect(typeof body[key]).toBe("string")
  }
  if ("fields" in body) {
    for (const value of Object.values(body.fields as Record<string, unknown>)) {
      // Flat: a string, or an array of strings.
      expect(typeof value === "string" || (Array.isArray(value) && value.every((v) => typeof v === "string"))).toBe(
        true,
      )
    }
  }
}

describe("hecEvent", () => {
  test("every message type is one HEC event with the payload as `event`", () => {
    for (const { message, payload } of allFixtures()) {
      const body = JSON.parse(hecEvent(message, CONTEXT, payload))
      checkHecRules(body)
      expect(body.event).toEqual(payload)
      expect(body.time).toBe(1795276662.053)
      expect(body.host).toBe(CONTEXT.hostname)
      expect(body.source).toBe("decoy-incident-service")
      expect(body.sourcetype).toBe("decoy:incident")
      expect("index" in body).toBe(false)
      expect(body.fields.messageId).toBe(message.id)
      expect(body.fields.type).toBe(message.type)
    }
  })

  test("index, source and sourcetype are parameters (OCSF uses ocsf:detection_finding)", () => {
    const { message } = incidentFixture("incident.created")
    const finding = { class_uid: 2004, activity_id: 1 }
    const body = JSON.parse(
      hecEvent(message, CONTEXT, finding, { index: "security", source: "decoy", sourcetype: HEC_SOURCETYPE_OCSF }),
    )
    checkHecRules(body)
    expect(body).toMatchObject({ index: "security", source: "decoy", sourcetype: "ocsf:detection_finding" })
    expect(body.event).toEqual(finding)
    expect(body.fields).toEqual({
      messageId: message.id,
      type: "incident.created",
      incidentId: message.incident.id,
      severity: "high",
      sensorId: message.incident.sensor.id,
    })
  })

  test("an empty payload is never sent as an empty event", () => {
    const { message } = incidentFixture("incident.created")
    for (const empty of [undefined, null, "", {}, []]) {
      const body = JSON.parse(hecEvent(message, CONTEXT, empty))
      checkHecRules(body)
      expect(body.event).toEqual({ id: message.id, type: message.type, createdAt: "2026-11-21T15:57:42.053Z" })
    }
  })

  test("an invalid createdAt leaves `time` out (HEC then stamps the arrival) rather than sending null", () => {
    const { message, payload } = incidentFixture("incident.created")
    const body = JSON.parse(hecEvent({ ...message, createdAt: new Date(Number.NaN) }, CONTEXT, payload))
    checkHecRules(body)
    expect("time" in body).toBe(false)
  })

  test("an empty hostname leaves `host` out; hostile text is JSON data", () => {
    const { message, payload } = hostileFixture()
    const body = JSON.parse(hecEvent(message, { ...CONTEXT, hostname: "" }, payload))
    checkHecRules(body)
    expect("host" in body).toBe(false)
    expect(body.event).toEqual(payload)
  })
})
