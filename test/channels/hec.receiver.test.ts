import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { HEC_SOURCETYPE_OCSF, hecEvent } from "../../src/domain/channels/hec.ts"
import { sendHttps } from "../../src/platform/outbound/send.ts"
import type { AddressPolicy } from "../../src/platform/outbound/urlRule.ts"
import { allFixtures, CONTEXT, type Fixture, hostileFixture } from "../support/channelMessages.ts"
import { type HecReceiver, startHecReceiver } from "../support/hecReceiver.ts"
import { makeTestCertificate, type TestCertificate } from "../support/tls.ts"

/**
 * D46 `splunk_hec`: hecEvent bodies POSTed by the webhook transport (send.ts, with `Authorization: Splunk <token>`)
 * to a local HTTPS receiver that applies HEC's rules and answers with HEC's codes.
 */

const LOOPBACK: AddressPolicy = { allowPrivate: ["127.0.0.0/8"] }
const TOKEN = "9a8f2c1e-4b7d-4e2a-9c3f-0d1e2f3a4b5c"

let certificate: TestCertificate
let hec: HecReceiver

beforeAll(() => {
  certificate = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
  hec = startHecReceiver(certificate, TOKEN)
})

afterAll(async () => {
  await hec?.stop()
})

/** `token` null: no Authorization header at all. */
const post = (body: string, token: string | null = TOKEN, path = "/services/collector/event") =>
  sendHttps({
    url: `${hec.url}${path}`,
    body,
    headers: token === null ? {} : { Authorization: `Splunk ${token}` },
    policy: LOOPBACK,
    ca: [certificate.caCert],
  })

const answerOf = (body: string) => JSON.parse(body) as { text: string; code: number }

describe("HEC events through send.ts to a receiver with HEC's rules", () => {
  test("every message type's hecEvent body is accepted as sent", async () => {
    for (const { message, payload } of allFixtures()) {
      const body = hecEvent(message, CONTEXT, payload)
      const result = await post(body)
      expect(result).toMatchObject({ ok: true, status: 200, error: null })
      expect(answerOf(result.responseBody)).toEqual({ text: "Success", code: 0 })
      expect(hec.accepted.at(-1)).toEqual(JSON.parse(body))
      expect(hec.requests.at(-1)?.headers.authorization).toBe(`Splunk ${TOKEN}`)
      expect(hec.requests.at(-1)?.headers["content-type"]).toBe("application/json")
    }
  })

  test("an OCSF sourcetype and hostile text are accepted on /services/collector too", async () => {
    const { message, payload } = hostileFixture() as Fixture
    const body = hecEvent(message, CONTEXT, payload, { sourcetype: HEC_SOURCETYPE_OCSF, index: "security" })
    const result = await post(body, TOKEN, "/services/collector")
    expect(result.ok).toBe(true)
    expect(hec.accepted.at(-1)).toMatchObject({
      sourcetype: "ocsf:detection_finding",
      index: "security",
      event: payload,
    })
  })

  test("a wrong token gets 403 code 4, a missing one 401 code 2, and nothing is accepted", async () => {
    const { message, payload } = allFixtures()[0] as Fixture
    const before = hec.accepted.length
    const wrong = await post(hecEvent(message, CONTEXT, payload), "not-the-token")
    expect(wrong).toMatchObject({ ok: false, status: 403, error: "HTTP 403" })
    expect(answerOf(wrong.responseBody)).toEqual({ text: "Invalid token", code: 4 })
    const missing = await post(hecEvent(message, CONTEXT, payload), null)
    expect(missing.status).toBe(401)
    expect(answerOf(missing.responseBody)).toEqual({ text: "Token is required", code: 2 })
    expect(hec.accepted.length).toBe(before)
  })

  test("the receiver enforces HEC's body rules (so the acceptance above means something)", async () => {
    const refusals: ReadonlyArray<readonly [string, number, number]> = [
      ["", 400, 5],
      ['{"time":1,"host":"h"}', 400, 12],
      ['{"event":""}', 400, 13],
      ['{"event":{}}', 400, 13],
      ['{"event":"x","time":"soon"}', 400, 6],
      ['{"event":"x","fields":{"a":{"b":"c"}}}', 400, 15],
      ["[1,2]", 400, 6],
    ]
    for (const [body, status, code] of refusals) {
      const result = await post(body)
      expect({ body, status: result.status, code: answerOf(result.responseBody).code }).toEqual({ body, status, code })
    }
    // Batch form: two events one after another are both accepted.
    const before = hec.accepted.length
    const batch = await post('{"event":"one","time":1.5} {"event":{"two":2}}')
    expect(batch.status).toBe(200)
    expect(hec.accepted.length).toBe(before + 2)
  })
})
