import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D43: the heartbeat's body is meant to be empty, and it is bounded: more than 1 KiB, declared or streamed, is 413.
 * D22: a request without a token is told the token is missing and how to send it.
 */

let server: RunningServer
let db: TestDatabase
let token: string

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  const tenant = await createTenant(db, "heartbeat-bound")
  token = (await createSensor(db, tenant.orgId, "beat-01")).token
})

afterAll(() => shutdown(server, db))

const beat = (
  body: string | ReadableStream<Uint8Array> | undefined,
  headers: Record<string, string> = { authorization: `Bearer ${token}` },
) => fetch(`${server.ingestUrl}/ingest/v1/heartbeat`, { method: "POST", headers, body })

const streamOf = (bytes: Uint8Array, chunk = 256) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += chunk) controller.enqueue(bytes.subarray(i, i + chunk))
      controller.close()
    },
  })

describe("heartbeat body bound", () => {
  test("an empty body and a small one answer 204", async () => {
    expect((await beat(undefined)).status).toBe(204)
    expect((await beat("{}")).status).toBe(204)
    expect((await beat("x".repeat(1024))).status).toBe(204)
  })

  test("a declared body over 1 KiB (a 1.2 MB one, or 1025 bytes) is 413 with a problem document", async () => {
    for (const size of [1_200_000, 1025]) {
      const res = await beat("x".repeat(size))
      expect(res.status).toBe(413)
      expect(await res.json()).toMatchObject({ status: 413, code: "payload_too_large" })
    }
  })

  test("a chunked body (no Content-Length) is counted as it is read: over 1 KiB is 413, under it 204", async () => {
    const big = await beat(streamOf(new Uint8Array(1_200_000).fill(0x78)))
    expect(big.status).toBe(413)
    expect(await big.json()).toMatchObject({ status: 413, code: "payload_too_large" })
    const small = await beat(streamOf(new TextEncoder().encode("{}")))
    expect(small.status).toBe(204)
  })
})

describe("ingest 401 wording", () => {
  test("no Authorization header: the token is missing, and the detail says how to send it", async () => {
    for (const path of ["/ingest/v1/heartbeat", "/ingest/v1/events"]) {
      const res = await fetch(`${server.ingestUrl}${path}`, { method: "POST", body: "" })
      expect(res.status).toBe(401)
      const body = (await res.json()) as { detail: string }
      expect(body.detail).toContain("missing")
      expect(body.detail).toContain("Authorization: Bearer <sensor token>")
      expect(body.detail).not.toContain("not valid")
    }
    const wrong = await fetch(`${server.ingestUrl}/ingest/v1/events`, {
      method: "POST",
      headers: { authorization: "Bearer dst_sen_00000000000000000000000000_nope" },
      body: "{}",
    })
    expect(wrong.status).toBe(401)
    expect(((await wrong.json()) as { detail: string }).detail).toContain("not valid")
  })
})
