/**
 * examples/receiver.ts over real HTTP: each test starts the receiver on a free port and POSTs to it with fetch,
 * signing with the service's own signer (src/domain/webhookSignature.ts), as the service would.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { join } from "node:path"
import {
  type IncidentWebhook,
  MAX_BODY_BYTES,
  type Receiver,
  type ReceiverOptions,
  startReceiver,
} from "../../examples/receiver.ts"
import { generateSigningSecret, signatureHeader } from "../../src/domain/webhookSignature.ts"
import { makeTestCertificate } from "../support/tls.ts"

const SECRET = generateSigningSecret()

const nowSeconds = (): number => Math.floor(Date.now() / 1000)

let sequence = 0
const newEventId = (): string => `whe_01JTEST${String(++sequence).padStart(8, "0")}${process.pid}`

/** A body in the service's shape (compact JSON, spec key order). */
const eventBody = (
  id = newEventId(),
  type = "incident.created",
  narrative = "Three passwords tried for root.",
): string =>
  JSON.stringify({
    id,
    type,
    createdAt: "2026-11-21T15:57:42.053Z",
    incident: {
      id: "inc_01JTESTINCIDENT000000000000",
      title: "SSH brute force on web-01 from 203.0.113.7",
      severity: "high",
      narrative,
      recommendedAction: "Block 203.0.113.7.",
      sensor: { id: "sen_01JTESTSENSOR00000000000000", name: "web-01", profile: "linux-server" },
      sourceIp: "203.0.113.7",
      eventCount: 3,
      firstSeenAt: "2026-11-21T15:56:42Z",
      lastSeenAt: "2026-11-21T15:57:42Z",
      url: "https://decoy.example/incidents/inc_01JTESTINCIDENT000000000000",
      techniques: [{ id: "T1110.001", name: "Brute Force: Password Guessing", tactics: ["credential-access"] }],
      events: [],
    },
  })

/** The headers the service sends (spec "Webhook delivery"). */
const deliveryHeaders = (
  body: string,
  { secrets = [SECRET], t = nowSeconds(), attempt = 1 }: { secrets?: string[]; t?: number; attempt?: number } = {},
): Record<string, string> => ({
  "Content-Type": "application/json",
  "X-Service-Signature": signatureHeader(secrets, t, body),
  "X-Service-Webhook-Id": (JSON.parse(body) as { id: string }).id,
  "X-Service-Delivery-Attempt": String(attempt),
  "User-Agent": "DecoyIncidentService-Webhooks/1.0",
})

interface Started {
  readonly receiver: Receiver
  /** The bodies onIncident was called with, in order. */
  readonly calls: IncidentWebhook[]
}

const running: Receiver[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((receiver) => receiver.stop()))
})

const start = (options: Partial<ReceiverOptions> = {}): Started => {
  const calls: IncidentWebhook[] = []
  const receiver = startReceiver({
    secret: SECRET,
    port: 0,
    hostname: "127.0.0.1",
    onIncident: (event) => {
      calls.push(event)
    },
    ...options,
  })
  running.push(receiver)
  return { receiver, calls }
}

const post = (receiver: Receiver, body: string | Uint8Array, headers: Record<string, string>): Promise<Response> =>
  fetch(receiver.url, { method: "POST", body, headers })

describe("a signed delivery", () => {
  test("is answered 202 and handed to onIncident once, parsed", async () => {
    const { receiver, calls } = start()
    const body = eventBody()
    const response = await post(receiver, body, deliveryHeaders(body))
    expect(response.status).toBe(202)
    await receiver.idle()
    expect(calls).toEqual([JSON.parse(body)])
    expect(receiver.stats).toMatchObject({ accepted: 1, processed: 1, rejected: 0, duplicates: 0 })
  })

  test("a retry of the same id (new timestamp and signature) gets 2xx but is not processed again", async () => {
    const { receiver, calls } = start()
    const body = eventBody()
    const first = deliveryHeaders(body, { t: nowSeconds() - 60, attempt: 1 })
    const retry = deliveryHeaders(body, { t: nowSeconds(), attempt: 2 })
    expect(retry["X-Service-Signature"]).not.toBe(first["X-Service-Signature"])

    expect((await post(receiver, body, first)).status).toBe(202)
    const again = await post(receiver, body, retry)
    expect(again.ok).toBe(true)
    await receiver.idle()
    expect(calls).toHaveLength(1)
    expect(receiver.stats).toMatchObject({ accepted: 1, duplicates: 1, processed: 1 })
  })

  test("a body of exactly 1 MiB is accepted; one byte more is refused with 413", async () => {
    const { receiver, calls } = start()
    const base = eventBody(newEventId(), "incident.created", "")
    const exact = eventBody(newEventId(), "incident.created", "x".repeat(MAX_BODY_BYTES - base.length))
    expect(Buffer.byteLength(exact)).toBe(MAX_BODY_BYTES)
    expect((await post(receiver, exact, deliveryHeaders(exact))).status).toBe(202)

    const tooLarge = eventBody(newEventId(), "incident.created", "x".repeat(MAX_BODY_BYTES - base.length + 1))
    expect((await post(receiver, tooLarge, deliveryHeaders(tooLarge))).status).toBe(413)
    await receiver.idle()
    expect(calls).toHaveLength(1)
  })

  test("an event type the receiver does not know is acknowledged (so not retried) and not processed", async () => {
    const { receiver, calls } = start()
    const body = eventBody(newEventId(), "incident.archived")
    expect((await post(receiver, body, deliveryHeaders(body))).status).toBe(202)
    await receiver.idle()
    expect(calls).toEqual([])
    expect(receiver.stats.ignored).toBe(1)
  })

  const sensorBody = (id: string, type: string): string =>
    JSON.stringify({
      id,
      type,
      createdAt: "2026-11-21T16:03:12.418Z",
      sensor: { id: "sen_01JTESTSENSOR00000000000000", name: "web-01", profile: "opencanary", lastSeenAt: null },
    })

  test("sensor.silent and sensor.recovered (a sensor, no incident) go to onSensorHealth, not onIncident", async () => {
    const health: unknown[] = []
    const { receiver, calls } = start({ onSensorHealth: (event) => void health.push(event) })
    const bodies = [sensorBody(newEventId(), "sensor.silent"), sensorBody(newEventId(), "sensor.recovered")]
    for (const body of bodies) expect((await post(receiver, body, deliveryHeaders(body))).status).toBe(202)
    await receiver.idle()
    expect(health).toEqual(bodies.map((body) => JSON.parse(body)))
    expect(calls).toEqual([])
  })

  test("without onSensorHealth, a sensor-health alert is acknowledged (so not retried) and dropped", async () => {
    const { receiver, calls } = start()
    const body = sensorBody(newEventId(), "sensor.silent")
    expect((await post(receiver, body, deliveryHeaders(body))).status).toBe(202)
    await receiver.idle()
    expect(calls).toEqual([])
    expect(receiver.stats.ignored).toBe(1)
  })
})

describe("refused with 400, onIncident not called", () => {
  const body = eventBody()
  const hex = (t: string, text = body, secret = SECRET): string =>
    createHmac("sha256", secret).update(`${t}.`).update(text).digest("hex")

  const cases: ReadonlyArray<readonly [string, () => { body: string; headers: Record<string, string> }, string]> = [
    [
      "a tampered body",
      () => ({ body: body.replace('"severity":"high"', '"severity":"low"'), headers: deliveryHeaders(body) }),
      "signature_mismatch",
    ],
    [
      "a signature made with another secret",
      () => ({ body, headers: deliveryHeaders(body, { secrets: [generateSigningSecret()] }) }),
      "signature_mismatch",
    ],
    [
      "a timestamp 301 s old",
      () => ({ body, headers: deliveryHeaders(body, { t: nowSeconds() - 301 }) }),
      "timestamp_out_of_tolerance",
    ],
    [
      // 302, not 301: the receiver's clock may tick one second between signing and checking.
      "a timestamp 302 s ahead",
      () => ({ body, headers: deliveryHeaders(body, { t: nowSeconds() + 302 }) }),
      "timestamp_out_of_tolerance",
    ],
    [
      "no X-Service-Signature header",
      () => {
        const { "X-Service-Signature": _, ...headers } = deliveryHeaders(body)
        return { body, headers }
      },
      "missing_header",
    ],
    [
      "a header without t",
      () => ({ body, headers: { ...deliveryHeaders(body), "X-Service-Signature": `v1=${hex(String(nowSeconds()))}` } }),
      "missing_timestamp",
    ],
    [
      "a header without v1",
      () => ({ body, headers: { ...deliveryHeaders(body), "X-Service-Signature": `t=${nowSeconds()}` } }),
      "missing_signature",
    ],
    [
      "a non-integer t (signed as such)",
      () => {
        const t = `${nowSeconds()}.5`
        return { body, headers: { ...deliveryHeaders(body), "X-Service-Signature": `t=${t},v1=${hex(t)}` } }
      },
      "invalid_timestamp",
    ],
  ]

  for (const [name, request, reason] of cases) {
    test(name, async () => {
      const { receiver, calls } = start()
      const { body: sent, headers } = request()
      const response = await post(receiver, sent, headers)
      expect(response.status).toBe(400)
      expect(await response.text()).toBe(`invalid signature: ${reason}\n`)
      await receiver.idle()
      expect(calls).toEqual([])
      expect(receiver.stats).toMatchObject({ rejected: 1, accepted: 0 })
    })
  }

  test("a refused request does not mark its id as seen: the genuine delivery is still processed", async () => {
    const { receiver, calls } = start()
    const genuine = eventBody()
    const forged = genuine.replace('"severity":"high"', '"severity":"critical"')
    expect((await post(receiver, forged, deliveryHeaders(genuine))).status).toBe(400)
    expect((await post(receiver, genuine, deliveryHeaders(genuine))).status).toBe(202)
    await receiver.idle()
    expect(calls).toEqual([JSON.parse(genuine)])
  })

  test("a correctly signed body that is not an event", async () => {
    const { receiver, calls } = start()
    for (const text of ["not json", "[]", '{"type":"incident.created","incident":{}}']) {
      const response = await post(receiver, text, {
        "X-Service-Signature": signatureHeader([SECRET], nowSeconds(), text),
      })
      expect(response.status).toBe(400)
      expect(await response.text()).toBe("invalid body\n")
    }
    expect(calls).toEqual([])
  })
})

describe("secret rotation (two v1 values: the new secret first, the old one second)", () => {
  const OLD = generateSigningSecret()
  const NEW = generateSigningSecret()

  for (const [name, known] of [
    ["a receiver that knows only the old secret", [OLD]],
    ["a receiver that knows only the new secret", [NEW]],
    ["a receiver configured with both", [NEW, OLD]],
  ] as const) {
    test(`accepted by ${name}`, async () => {
      const { receiver, calls } = start({ secret: known })
      const body = eventBody()
      const headers = deliveryHeaders(body, { secrets: [NEW, OLD] })
      expect(headers["X-Service-Signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/)
      expect((await post(receiver, body, headers)).status).toBe(202)
      await receiver.idle()
      expect(calls).toHaveLength(1)
    })
  }

  test("refused by a receiver that knows neither", async () => {
    const { receiver, calls } = start({ secret: generateSigningSecret() })
    const body = eventBody()
    expect((await post(receiver, body, deliveryHeaders(body, { secrets: [NEW, OLD] }))).status).toBe(400)
    expect(calls).toEqual([])
  })
})

describe("processing happens after the answer", () => {
  test("a slow onIncident (2 s) does not delay the 2xx", async () => {
    const finished: string[] = []
    const { receiver } = start({
      onIncident: async (event) => {
        await Bun.sleep(2000)
        finished.push(event.id)
      },
    })
    const first = eventBody()
    const second = eventBody()
    const started = performance.now()
    expect((await post(receiver, first, deliveryHeaders(first))).status).toBe(202)
    expect((await post(receiver, second, deliveryHeaders(second))).status).toBe(202) // queued behind the first
    const elapsed = performance.now() - started
    expect(elapsed).toBeLessThan(500)
    expect(finished).toEqual([])
    await receiver.idle()
    expect(finished).toHaveLength(2)
  })

  test("a failing onIncident is reported, and a redelivery of that id is processed again", async () => {
    const errors: unknown[] = []
    let attempts = 0
    const { receiver } = start({
      onIncident: () => {
        attempts++
        if (attempts === 1) throw new Error("database down")
      },
      onError: (error) => errors.push(error),
    })
    const body = eventBody()
    expect((await post(receiver, body, deliveryHeaders(body))).status).toBe(202)
    await receiver.idle()
    expect(errors).toHaveLength(1)
    expect(receiver.stats).toMatchObject({ accepted: 1, failed: 1, processed: 0 })

    expect((await post(receiver, body, deliveryHeaders(body, { attempt: 2 }))).status).toBe(202)
    await receiver.idle()
    expect(attempts).toBe(2)
    expect(receiver.stats).toMatchObject({ accepted: 2, failed: 1, processed: 1 })
  })
})

describe("other requests", () => {
  test("GET is answered 405 with Allow: POST", async () => {
    const { receiver, calls } = start()
    const response = await fetch(receiver.url)
    expect(response.status).toBe(405)
    expect(response.headers.get("allow")).toBe("POST")
    expect(calls).toEqual([])
  })

  test("an empty secret is refused at start", () => {
    expect(() => startReceiver({ secret: "", onIncident: () => {} })).toThrow(TypeError)
    expect(() => startReceiver({ secret: [], onIncident: () => {} })).toThrow(TypeError)
  })
})

test("serves HTTPS with the given certificate", async () => {
  const certs = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
  const { receiver, calls } = start({ tls: { cert: certs.cert, key: certs.key } })
  expect(receiver.url).toStartWith("https://")
  const body = eventBody()
  const response = await fetch(receiver.url, {
    method: "POST",
    body,
    headers: deliveryHeaders(body),
    tls: { ca: certs.caCert },
  })
  expect(response.status).toBe(202)
  await receiver.idle()
  expect(calls).toHaveLength(1)
})

describe("run directly (import.meta.main)", () => {
  const script = join(import.meta.dir, "../../examples/receiver.ts")

  test("refuses to start without WEBHOOK_SECRET", async () => {
    const child = Bun.spawn(["bun", script], {
      env: { ...process.env, WEBHOOK_SECRET: "", PORT: "0" },
      stdout: "pipe",
      stderr: "pipe",
    })
    expect(await child.exited).toBe(1)
    expect(await new Response(child.stderr).text()).toContain("WEBHOOK_SECRET is required")
  })

  test("logs one line per incident and stops cleanly on SIGTERM", async () => {
    const child = Bun.spawn(["bun", script], {
      env: { ...process.env, WEBHOOK_SECRET: SECRET, PORT: "0" },
      stdout: "pipe",
      stderr: "inherit",
    })
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader()
      let output = ""
      const waitFor = async (pattern: RegExp): Promise<RegExpMatchArray> => {
        for (;;) {
          const match = output.match(pattern)
          if (match) return match
          const { value, done } = await reader.read()
          if (done) throw new Error(`the receiver exited; output so far:\n${output}`)
          output += value
        }
      }
      const port = (await waitFor(/Receiving webhooks on https?:\/\/[^:]+:(\d+)\//))[1]
      const id = newEventId()
      const body = eventBody(id)
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        body,
        headers: deliveryHeaders(body),
      })
      expect(response.status).toBe(202)
      await waitFor(new RegExp(`incident\\.created ${id} high SSH brute force on web-01 from 203\\.0\\.113\\.7\\n`))
      child.kill("SIGTERM")
      expect(await child.exited).toBe(0)
    } finally {
      child.kill()
    }
  })
})
