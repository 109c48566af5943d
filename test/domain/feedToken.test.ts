import { describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { decodeFeedToken, encodeFeedToken, FEED_START } from "../../src/domain/feedToken.ts"

const key = new Uint8Array(32).fill(7)
const otherKey = new Uint8Array(32).fill(8)
const position = { xid: "18446744073709551615", seq: "9223372036854775807", fromMs: 1_700_000_000_000 }

describe("feed tokens", () => {
  test("round-trip, including the largest xid8 and bigint", () => {
    const token = encodeFeedToken(key, "events/changes", "org_A", position)
    expect(decodeFeedToken(key, "events/changes", "org_A", token)).toEqual({ ok: true, position })
    const start = encodeFeedToken(key, "incidents/changes", "org_A", FEED_START)
    expect(decodeFeedToken(key, "incidents/changes", "org_A", start)).toEqual({ ok: true, position: FEED_START })
  })

  test("bound to its endpoint and organization; another key, a changed byte or signature, junk: refused", () => {
    const token = encodeFeedToken(key, "events/changes", "org_A", position)
    expect(decodeFeedToken(key, "incidents/changes", "org_A", token)).toEqual({ ok: false, problem: "mismatch" })
    expect(decodeFeedToken(key, "events/changes", "org_B", token)).toEqual({ ok: false, problem: "mismatch" })
    expect(decodeFeedToken(otherKey, "events/changes", "org_A", token).ok).toBe(false)
    const [body = "", mac = ""] = token.split(".")
    for (let i = 0; i < body.length; i++) {
      const flipped = body.slice(0, i) + (body[i] === "A" ? "B" : "A") + body.slice(i + 1)
      expect(decodeFeedToken(key, "events/changes", "org_A", `${flipped}.${mac}`).ok).toBe(false)
    }
    const otherMac = mac.slice(0, -1) + (mac.endsWith("A") ? "B" : "A")
    expect(decodeFeedToken(key, "events/changes", "org_A", `${body}.${otherMac}`).ok).toBe(false)
    for (const junk of ["", ".", "abc", `${body}.`, `${"a".repeat(600)}.${mac}`, `${body}.${mac}.x`]) {
      expect(decodeFeedToken(key, "events/changes", "org_A", junk).ok).toBe(false)
    }
  })

  test("a signed body with out-of-range or non-decimal positions is still refused", () => {
    const forge = (payload: unknown) => {
      // Signed with the right key: only the shape check can refuse it.
      const real = encodeFeedToken(key, "events/changes", "org_A", FEED_START)
      const digest = JSON.parse(Buffer.from(real.split(".")[0] ?? "", "base64url").toString())[4]
      const body = Buffer.from(JSON.stringify((payload as Array<unknown>).concat([digest]))).toString("base64url")
      const mac = createHmac("sha256", key).update(body).digest().subarray(0, 16).toString("base64url")
      return `${body}.${mac}`
    }
    expect(decodeFeedToken(key, "events/changes", "org_A", forge([1, "1", "2", null])).ok).toBe(true)
    for (const bad of [
      [1, "18446744073709551616", "1", null],
      [1, "1", "9223372036854775808", null],
      [1, "01", "1", null],
      [1, "-1", "1", null],
      [1, 1, "1", null],
      [1, "1", "1", 1.5],
      [2, "1", "1", null],
    ]) {
      expect({ bad, ok: decodeFeedToken(key, "events/changes", "org_A", forge(bad)).ok }).toEqual({ bad, ok: false })
    }
  })
})
