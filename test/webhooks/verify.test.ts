import { describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import fc from "fast-check"
import { generateSigningSecret, signatureHeader } from "../../src/domain/webhookSignature.ts"
import {
  SIGNATURE_HEADER,
  type VerifyOptions,
  verifyWebhook,
  verifyWebhookOrThrow,
  WebhookVerificationError,
} from "../../src/webhooks/verify.ts"

const SECRET = "whsec_test_5Vq0m8T1yJc6bqk2mXo3u0n2aQp9rLs4dF7gH1jK2lM"
const T = 1_700_000_000
const BODY = '{"id":"evt_01","type":"incident.created","createdAt":"2023-11-14T22:13:20Z","incident":{"id":"inc_1"}}'
const at = (seconds: number): VerifyOptions => ({ now: () => seconds * 1000 })

/** Independent Stripe-style reference: HMAC-SHA256(secret utf8, `${t}.${body}`) as lowercase hex. */
const stripeStyle = (secret: string, t: number | string, body: string | Uint8Array): string =>
  createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex")

const v1 = (body: string | Uint8Array = BODY, secret = SECRET, t: number | string = T): string =>
  stripeStyle(secret, t, body)

describe("verifyWebhook accepts", () => {
  test("the header produced by sign.ts", () => {
    const header = signatureHeader([SECRET], T, BODY)
    expect(verifyWebhook(BODY, header, SECRET, at(T))).toEqual({ ok: true, timestamp: T })
    expect(verifyWebhookOrThrow(BODY, header, SECRET, at(T))).toBe(T)
  })

  test("a Stripe-style header computed independently with createHmac (the key is the whsec_ string's bytes)", () => {
    expect(verifyWebhook(BODY, `t=${T},v1=${v1()}`, SECRET, at(T))).toEqual({ ok: true, timestamp: T })
    // Not base64-decoded: a header keyed with the decoded secret does not verify.
    const decodedKey = Buffer.from(SECRET.slice("whsec_".length), "base64")
    const wrong = createHmac("sha256", decodedKey).update(`${T}.${BODY}`).digest("hex")
    expect(verifyWebhook(BODY, `t=${T},v1=${wrong}`, SECRET, at(T))).toEqual({
      ok: false,
      reason: "signature_mismatch",
    })
  })

  test("a fixed known-answer vector", () => {
    // HMAC-SHA256(key "whsec_test", "1700000000.{}"), computed once outside this code base with
    // printf '1700000000.{}' | openssl dgst -sha256 -hmac whsec_test
    const expected = "35495024f4ef3f94e5a93e22221544c4b75e9a42300cd965ab81cb85cd994e91"
    expect(signatureHeader(["whsec_test"], 1_700_000_000, "{}")).toBe(`t=1700000000,v1=${expected}`)
    expect(verifyWebhook("{}", `t=1700000000,v1=${expected}`, "whsec_test", at(T)).ok).toBe(true)
  })

  test("two v1 values during rotation, either one matching", () => {
    const old = "whsec_old_secret_value"
    const rotated = signatureHeader([SECRET, old], T, BODY)
    expect(verifyWebhook(BODY, rotated, SECRET, at(T)).ok).toBe(true)
    expect(verifyWebhook(BODY, rotated, old, at(T)).ok).toBe(true)
    expect(verifyWebhook(BODY, `t=${T},v1=${"0".repeat(64)},v1=${v1()}`, SECRET, at(T)).ok).toBe(true)
    expect(verifyWebhook(BODY, `t=${T},v1=${v1()},v1=garbage`, SECRET, at(T)).ok).toBe(true)
    expect(verifyWebhook(BODY, rotated, "whsec_third", at(T))).toEqual({ ok: false, reason: "signature_mismatch" })
  })

  test("exactly ±300 s of clock difference", () => {
    const header = signatureHeader([SECRET], T, BODY)
    expect(verifyWebhook(BODY, header, SECRET, at(T + 300)).ok).toBe(true)
    expect(verifyWebhook(BODY, header, SECRET, at(T - 300)).ok).toBe(true)
    // Whole seconds: 300.999 s later still counts as 300.
    expect(verifyWebhook(BODY, header, SECRET, { now: () => (T + 300) * 1000 + 999 }).ok).toBe(true)
  })

  test("spaces around parts, unknown parts (v0=…) and empty parts are ignored", () => {
    expect(verifyWebhook(BODY, ` t=${T} , v0=deadbeef, v1=${v1()} ,,foo=bar`, SECRET, at(T)).ok).toBe(true)
    expect(verifyWebhook(BODY, `v1=${v1()},t=${T}`, SECRET, at(T)).ok).toBe(true)
  })

  test("a duplicated header joined by a proxy with ', ' (same t) still verifies", () => {
    const header = signatureHeader([SECRET], T, BODY)
    expect(verifyWebhook(BODY, `${header}, ${header}`, SECRET, at(T)).ok).toBe(true)
  })

  test("string, Uint8Array, Buffer and ArrayBuffer bodies are equivalent", () => {
    const header = signatureHeader([SECRET], T, BODY)
    const bytes = new TextEncoder().encode(BODY)
    const padded = new Uint8Array(bytes.length + 8)
    padded.set(bytes, 4)
    for (const body of [BODY, bytes, Buffer.from(BODY), bytes.buffer, padded.subarray(4, 4 + bytes.length)]) {
      expect(verifyWebhook(body, header, SECRET, at(T)).ok).toBe(true)
    }
  })

  test("a multibyte UTF-8 body is signed over its bytes", () => {
    const body = '{"note":"naïve café — 日本語 😀","attackerInput":"\\u0000"}'
    const bytes = Buffer.from(body, "utf8")
    expect(bytes.length).toBeGreaterThan(body.length)
    const header = `t=${T},v1=${createHmac("sha256", SECRET).update(`${T}.`).update(bytes).digest("hex")}`
    expect(verifyWebhook(body, header, SECRET, at(T)).ok).toBe(true)
    expect(verifyWebhook(bytes, header, SECRET, at(T)).ok).toBe(true)
    // A Latin-1 / UTF-16 view of the same text is different bytes.
    expect(verifyWebhook(Buffer.from(body, "latin1"), header, SECRET, at(T)).ok).toBe(false)
  })

  test("the default clock is Date.now and the default tolerance 300 s", () => {
    const now = Math.floor(Date.now() / 1000)
    expect(verifyWebhook(BODY, signatureHeader([SECRET], now - 10, BODY), SECRET).ok).toBe(true)
    expect(verifyWebhook(BODY, signatureHeader([SECRET], now - 1000, BODY), SECRET).ok).toBe(false)
    expect(
      verifyWebhook(BODY, signatureHeader([SECRET], now - 1000, BODY), SECRET, { toleranceSeconds: 2000 }).ok,
    ).toBe(true)
  })
})

describe("verifyWebhook rejects", () => {
  const reject = (header: string | null | undefined, options: VerifyOptions = at(T), body: string = BODY) =>
    verifyWebhook(body, header, SECRET, options)

  test("a body tampered by one byte", () => {
    const header = signatureHeader([SECRET], T, BODY)
    const tampered = BODY.replace("created", "crEated")
    expect(reject(header, at(T), tampered)).toEqual({ ok: false, reason: "signature_mismatch" })
    expect(reject(header, at(T), `${BODY} `)).toEqual({ ok: false, reason: "signature_mismatch" })
    expect(reject(header, at(T), JSON.stringify(JSON.parse(BODY), null, 1))).toEqual({
      ok: false,
      reason: "signature_mismatch",
    })
  })

  test("a wrong secret", () => {
    const header = signatureHeader(["whsec_other"], T, BODY)
    expect(reject(header)).toEqual({ ok: false, reason: "signature_mismatch" })
  })

  test("a changed t (the timestamp is signed)", () => {
    expect(reject(`t=${T + 1},v1=${v1()}`)).toEqual({ ok: false, reason: "signature_mismatch" })
  })

  test("t more than 300 s away, in both directions", () => {
    const header = signatureHeader([SECRET], T, BODY)
    expect(reject(header, at(T + 301))).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" })
    expect(reject(header, at(T - 301))).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" })
    expect(reject(header, at(T + 86_400))).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" })
    expect(reject(header, { now: () => T * 1000, toleranceSeconds: 0 }).ok).toBe(true)
    expect(reject(header, { now: () => (T + 1) * 1000, toleranceSeconds: 0 }).ok).toBe(false)
  })

  test("a missing or empty header", () => {
    for (const header of [null, undefined, "", "   "]) {
      expect(reject(header)).toEqual({ ok: false, reason: "missing_header" })
    }
  })

  test("a missing t", () => {
    expect(reject(`v1=${v1()}`)).toEqual({ ok: false, reason: "missing_timestamp" })
    expect(reject(`T=${T},v1=${v1()}`)).toEqual({ ok: false, reason: "missing_timestamp" })
  })

  test("a t that is not an integer number of seconds", () => {
    for (const t of ["abc", "1.5", "", "-1", "+1700000000", "1e9", "0x6553f100", " ", "1700000000000", "١٧٠٠"]) {
      expect(reject(`t=${t},v1=${v1(BODY, SECRET, t)}`)).toEqual({ ok: false, reason: "invalid_timestamp" })
    }
  })

  test("a missing v1", () => {
    expect(reject(`t=${T}`)).toEqual({ ok: false, reason: "missing_signature" })
    expect(reject(`t=${T},v0=${v1()}`)).toEqual({ ok: false, reason: "missing_signature" })
    expect(reject(`t=${T},V1=${v1()}`)).toEqual({ ok: false, reason: "missing_signature" })
  })

  test("garbage and conflicting duplicated headers", () => {
    const good = signatureHeader([SECRET], T, BODY)
    expect(reject("garbage")).toEqual({ ok: false, reason: "malformed_header" })
    expect(reject(`${good}, garbage`)).toEqual({ ok: false, reason: "malformed_header" })
    expect(reject(`=x,${good}`)).toEqual({ ok: false, reason: "malformed_header" })
    expect(reject(`${good}, ${signatureHeader([SECRET], T + 1, BODY)}`)).toEqual({
      ok: false,
      reason: "malformed_header",
    })
    expect(reject("x".repeat(10_000))).toEqual({ ok: false, reason: "malformed_header" })
  })

  test("a v1 that is not 64 lowercase hex characters is a mismatch, including uppercase hex (spec: lowercase)", () => {
    const hex = v1()
    for (const candidate of [hex.toUpperCase(), hex.slice(0, 63), `${hex}0`, "", hex.replace(/^./, "g"), `${hex} x`]) {
      expect(reject(`t=${T},v1=${candidate}`)).toEqual({ ok: false, reason: "signature_mismatch" })
    }
  })

  test("verifyWebhookOrThrow throws a WebhookVerificationError carrying the reason", () => {
    let caught: unknown
    try {
      verifyWebhookOrThrow(BODY, `t=${T},v1=${"0".repeat(64)}`, SECRET, at(T))
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(WebhookVerificationError)
    expect(caught).toBeInstanceOf(Error)
    expect((caught as WebhookVerificationError).reason).toBe("signature_mismatch")
    expect((caught as WebhookVerificationError).name).toBe("WebhookVerificationError")
  })

  test("programming errors throw: empty secret, parsed-JSON body, negative tolerance", () => {
    const header = signatureHeader([SECRET], T, BODY)
    expect(() => verifyWebhook(BODY, header, "", at(T))).toThrow(TypeError)
    expect(() => verifyWebhook(JSON.parse(BODY) as string, header, SECRET, at(T))).toThrow(TypeError)
    expect(() => verifyWebhook(BODY, header, SECRET, { toleranceSeconds: -1 })).toThrow(RangeError)
  })
})

describe("properties", () => {
  const bodies = fc.oneof(fc.string({ unit: "binary" }), fc.json())
  const secrets = fc.oneof(
    fc.string({ minLength: 1, unit: "binary" }),
    fc.constant(null).map(() => generateSigningSecret()),
  )
  const times = fc.integer({ min: 0, max: 99_999_999_999 })

  test("any body, secret and time round-trips through sign.ts, and matches the Stripe-style reference", () => {
    fc.assert(
      fc.property(bodies, secrets, times, fc.integer({ min: -300, max: 300 }), (body, secret, t, skew) => {
        const header = signatureHeader([secret], t, body)
        expect(header).toBe(`t=${t},v1=${stripeStyle(secret, t, Buffer.from(body, "utf8"))}`)
        expect(verifyWebhook(body, header, secret, at(t + skew))).toEqual({ ok: true, timestamp: t })
      }),
      { numRuns: 300 },
    )
  })

  test("any single-byte mutation of the body fails", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 512 }),
        secrets,
        times,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (body, secret, t, position, delta) => {
          const header = signatureHeader([secret], t, body)
          expect(verifyWebhook(body, header, secret, at(t)).ok).toBe(true)
          const mutated = Uint8Array.from(body)
          const index = position % mutated.length
          mutated[index] = ((mutated[index] ?? 0) + delta) & 0xff
          expect(verifyWebhook(mutated, header, secret, at(t))).toEqual({ ok: false, reason: "signature_mismatch" })
        },
      ),
      { numRuns: 300 },
    )
  })

  test("inserting or deleting one byte fails", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 256 }), fc.nat(), fc.boolean(), (body, position, insert) => {
        const header = signatureHeader([SECRET], T, body)
        const index = position % body.length
        const changed = insert
          ? Uint8Array.from([...body.subarray(0, index), 0x20, ...body.subarray(index)])
          : Uint8Array.from([...body.subarray(0, index), ...body.subarray(index + 1)])
        expect(verifyWebhook(changed, header, SECRET, at(T)).ok).toBe(false)
      }),
      { numRuns: 200 },
    )
  })

  test("the header name constant", () => {
    expect(SIGNATURE_HEADER).toBe("X-Service-Signature")
  })
})
