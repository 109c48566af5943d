import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { asOperator } from "../../src/admin/actor.ts"
import { ChannelAdmin } from "../../src/admin/ChannelAdmin.ts"
import { splunkHecKind } from "../../src/domain/channels/hec.ts"
import { webhookKind } from "../../src/domain/channels/webhook.ts"
import { generateSigningSecret, signatureHeader, standardSignatureHeader } from "../../src/domain/webhookSignature.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createChannelOf, createOrg, createSensor, rotateChannel } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * The Standard Webhooks headers beside our own signature: every webhook delivery, test send and redelivery carries
 * `webhook-id`, `webhook-timestamp` and `webhook-signature`, and the official verifiers accept them with the secret
 * exactly as it was shown, passed as a raw key: the `standardwebhooks` npm package and the reference Python library
 * (test/fixtures/standard-webhooks, run with Debian's python3). The real server delivers to a real local HTTPS
 * receiver; nothing is mocked.
 */

const PYTHON_LIBRARY = join(import.meta.dir, "..", "fixtures", "standard-webhooks")
const STANDARD = ["webhook-id", "webhook-timestamp", "webhook-signature"] as const

/** The npm verifier, with the secret as the console showed it, passed as the raw key. */
const npmVerifies = (secret: string, body: string, headers: Record<string, string>): boolean => {
  try {
    new Webhook(secret, { format: "raw" }).verify(body, headers, { jsonParse: false })
    return true
  } catch {
    return false
  }
}

const PYTHON_VERIFY = `
import json, os, sys
from standardwebhooks import Webhook, WebhookVerificationError
body = sys.stdin.buffer.read()
try:
    Webhook(os.environ["SECRET"].encode("utf-8")).verify(body, json.loads(os.environ["HEADERS"]), json_parse=False)
    print("verified")
except WebhookVerificationError as error:
    print("refused: " + str(error))
`

/** The reference Python library's verdict on a received request: "verified" or "refused: <why>". */
const pythonVerdict = async (secret: string, body: string, headers: Record<string, string>): Promise<string> => {
  const child = Bun.spawn(["python3", "-c", PYTHON_VERIFY], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin",
      PYTHONPATH: PYTHON_LIBRARY,
      // The copied library stays as published: no bytecode cache written beside it.
      PYTHONDONTWRITEBYTECODE: "1",
      SECRET: secret,
      HEADERS: JSON.stringify(headers),
    },
    stdin: Buffer.from(body, "utf8"),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (code !== 0) throw new Error(`python3 failed (${code}): ${err}`)
  return out.trim()
}

/** Our signature and the standard one agree: same id as X-Service-Webhook-Id, same seconds as `t=`. */
const expectStandardBeside = (request: ReceivedRequest | undefined) => {
  const headers = request?.headers ?? {}
  for (const name of STANDARD) expect(headers[name]).toBeTruthy()
  expect(headers["webhook-id"]).toBe(headers["x-service-webhook-id"] ?? "")
  expect(`t=${headers["webhook-timestamp"]}`).toBe(headers["x-service-signature"]?.split(",")[0] ?? "")
  expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)?$/)
  return headers
}

describe("standardSignatureHeader", () => {
  const body = '{"type":"incident.created","data":{"title":"SSH brute force – café ✓"}}'
  const at = new Date("2026-11-29T05:00:00.000Z")
  const t = Math.floor(at.getTime() / 1000)

  test("is what the official library signs with the shown secret as a raw key, one per secret, current first", () => {
    const current = generateSigningSecret()
    const previous = generateSigningSecret()
    const expected = (secret: string) => new Webhook(secret, { format: "raw" }).sign("dlv_1", at, body)
    expect(standardSignatureHeader([current], "dlv_1", t, body)).toBe(expected(current))
    expect(standardSignatureHeader([current, previous], "dlv_1", t, body)).toBe(
      `${expected(current)} ${expected(previous)}`,
    )
    expect(standardSignatureHeader([current, current], "dlv_1", t, Buffer.from(body))).toBe(expected(current))
  })

  test("the webhook kind's headers keep X-Service-Signature exactly and add the three standard ones", () => {
    const secrets = [generateSigningSecret(), generateSigningSecret()]
    if (webhookKind.credential.type !== "signingSecret") throw new Error("the webhook kind signs")
    const headers = webhookKind.credential.headers({ secrets, at, body, deliveryId: "dlv_9", attempt: 3 })
    expect(headers).toEqual({
      "X-Service-Signature": signatureHeader(secrets, t, body),
      "X-Service-Webhook-Id": "dlv_9",
      "X-Service-Delivery-Attempt": "3",
      "webhook-id": "dlv_9",
      "webhook-timestamp": String(t),
      "webhook-signature": standardSignatureHeader(secrets, "dlv_9", t, body),
    })
  })

  test("refuses what no receiver could verify: no secret, a bad timestamp, an empty or spaced id", () => {
    const secret = generateSigningSecret()
    expect(() => standardSignatureHeader([], "dlv_1", t, body)).toThrow()
    expect(() => standardSignatureHeader([secret], "dlv_1", -1, body)).toThrow()
    expect(() => standardSignatureHeader([secret], "", t, body)).toThrow()
    expect(() => standardSignatureHeader([secret], "dlv 1", t, body)).toThrow()
    expect(() => standardSignatureHeader([secret], "x".repeat(257), t, body)).toThrow()
  })

  test("the Splunk HEC kind's headers carry only its token, no standard headers", () => {
    if (splunkHecKind.credential.type !== "sealedToken") throw new Error("HEC sends a token")
    const headers = splunkHecKind.credential.headers("0b9d2c5e-5c1a-4f0e-9a3b-7d1e2f3a4b5c")
    for (const name of Object.keys(headers)) expect(name.toLowerCase()).not.toStartWith("webhook-")
  })
})

describe("deliveries verified by the Standard Webhooks libraries", () => {
  let receiver: Receiver
  let server: RunningServer
  let db: TestDatabase

  beforeAll(async () => {
    const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"] })
    const caFile = join(tmpdir(), `dsvc-sw-ca-${process.pid}-${Date.now()}.pem`)
    writeFileSync(caFile, certs.caCert)
    receiver = await startReceiver(certs)
    server = await startServer({
      env: await testEnv({
        WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8,::1/128",
        WEBHOOK_CA_FILE: caFile,
        WEBHOOK_RETRY_SCHEDULE: "300ms,300ms,300ms",
        WEBHOOK_POLL_INTERVAL: "200 millis",
      }),
    })
    db = testDatabase(server.env)
  })
  afterAll(async () => {
    await db?.close()
    await shutdown(server)
    receiver?.stop()
  })

  const eventually = async (what: string, check: () => boolean, ms = 20_000) => {
    const deadline = Date.now() + ms
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await Bun.sleep(50)
    }
  }
  const at = (path: string) => receiver.requests.filter((r) => r.path === path)

  const tenant = async () => {
    const org = await createOrg(db, `Standard ${crypto.randomUUID().slice(0, 8)}`)
    const sensor = await createSensor(db, org.id, "web-01")
    return { orgId: org.id, token: sensor.token }
  }
  const attack = async (token: string, sourceIp: string) => {
    const res = await ingest(server.ingestUrl, "events", token, [nativeEvent({ sourceIp })])
    expect(res.status).toBe(200)
  }

  test("an incident delivery verifies with the npm package and the Python library; a changed body is refused; retries keep the id", async () => {
    const t = await tenant()
    const ch = await createChannel(db, t.orgId, `${receiver.url}/sw/retry`)
    receiver.setStatus("/sw/retry", 503)
    await attack(t.token, "203.0.113.41")
    await eventually("a first, failed attempt", () => at("/sw/retry").length >= 1)
    receiver.setStatus("/sw/retry", 202)
    await eventually("the retry", () => at("/sw/retry").length >= 2)

    const [first, second] = at("/sw/retry")
    expect(second?.headers["x-service-delivery-attempt"]).toBe("2")
    expect(second?.headers["webhook-id"]).toBe(first?.headers["webhook-id"] ?? "")
    for (const request of [first, second]) {
      const headers = expectStandardBeside(request)
      const body = request?.body ?? ""
      expect(npmVerifies(ch.secret, body, headers)).toBe(true)
      expect(await pythonVerdict(ch.secret, body, headers)).toBe("verified")
      expect(verifyWebhook(body, headers["x-service-signature"] ?? "", ch.secret).ok).toBe(true)

      const tampered = body.replace("203.0.113.41", "203.0.113.42")
      expect(tampered).not.toBe(body)
      expect(npmVerifies(ch.secret, tampered, headers)).toBe(false)
      expect(await pythonVerdict(ch.secret, tampered, headers)).toBe("refused: No matching signature found")
      // Another channel's secret does not verify either.
      expect(npmVerifies(generateSigningSecret(), body, headers)).toBe(false)
    }
  })

  test("a test send and its redelivery carry the standard headers with the delivery's id, and verify", async () => {
    const t = await tenant()
    const ch = await createChannel(db, t.orgId, `${receiver.url}/sw/test`)
    const sent = await db.run(asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.test(ch.id))))
    expect(sent.ok).toBe(true)
    await db.run(asOperator(Effect.flatMap(ChannelAdmin, (channels) => channels.redeliver(sent.deliveryId))))
    await eventually("the redelivery", () => at("/sw/test").length === 2)

    for (const request of at("/sw/test")) {
      const headers = expectStandardBeside(request)
      expect(headers["webhook-id"]).toBe(sent.deliveryId)
      expect(npmVerifies(ch.secret, request.body, headers)).toBe(true)
      expect(await pythonVerdict(ch.secret, request.body, headers)).toBe("verified")
    }
    expect(at("/sw/test").map((r) => r.headers["x-service-delivery-attempt"])).toEqual(["1", "2"])
  })

  test("during a rotation's grace webhook-signature carries both signatures: the new and the old secret verify", async () => {
    const t = await tenant()
    const ch = await createChannel(db, t.orgId, `${receiver.url}/sw/rotate`)
    const rotated = await rotateChannel(db, ch.id, "1h")
    await attack(t.token, "203.0.113.43")
    await eventually("the delivery", () => at("/sw/rotate").length === 1)
    const request = at("/sw/rotate")[0]
    const headers = expectStandardBeside(request)
    const body = request?.body ?? ""
    expect(headers["webhook-signature"]?.split(" ")).toHaveLength(2)
    expect(headers["x-service-signature"]?.match(/v1=/g)).toHaveLength(2)
    for (const secret of [rotated.secret, ch.secret]) {
      expect(npmVerifies(secret, body, headers)).toBe(true)
      expect(await pythonVerdict(secret, body, headers)).toBe("verified")
      expect(npmVerifies(secret, `${body} `, headers)).toBe(false)
      expect(await pythonVerdict(secret, `${body} `, headers)).toStartWith("refused")
    }

    // Without a grace period only the new secret signs, in both schemes.
    const again = await rotateChannel(db, ch.id)
    await attack(t.token, "203.0.113.44")
    await eventually("the second delivery", () => at("/sw/rotate").length === 2)
    const next = at("/sw/rotate")[1]
    const nextHeaders = expectStandardBeside(next)
    expect(nextHeaders["webhook-signature"]?.split(" ")).toHaveLength(1)
    expect(npmVerifies(again.secret, next?.body ?? "", nextHeaders)).toBe(true)
    expect(npmVerifies(rotated.secret, next?.body ?? "", nextHeaders)).toBe(false)
    expect(await pythonVerdict(rotated.secret, next?.body ?? "", nextHeaders)).toBe(
      "refused: No matching signature found",
    )
  })

  test("Slack and Teams messages carry no standard webhook headers", async () => {
    const t = await tenant()
    const slack = `/sw/slack/T000/B000/XXXX`
    const teams = `/sw/teams/workflows/abc`
    await createChannelOf(db, t.orgId, { kind: "slack", settle: "0", url: `${receiver.url}${slack}` })
    await createChannelOf(db, t.orgId, { kind: "teams", settle: "0", url: `${receiver.url}${teams}` })
    await attack(t.token, "203.0.113.45")
    await eventually("both messages", () => at(slack).length === 1 && at(teams).length === 1)
    for (const request of [...at(slack), ...at(teams)]) {
      for (const name of Object.keys(request.headers)) expect(name).not.toStartWith("webhook-")
      expect(request.headers["x-service-signature"]).toBeUndefined()
    }
  })
})
