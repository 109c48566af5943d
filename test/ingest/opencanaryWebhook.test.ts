import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { recordedRequest, sendRaw } from "../support/rawHttp.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D41 (b): OpenCanary's own WebhookHandler posts to /ingest/v1/opencanary in four forms, recorded byte for byte in
 * test/fixtures/opencanary-webhook (its default form body, {"message": …}, a JSON string, the line itself). Each is
 * understood (200, the usual JSON answer) and reads back through the API as the same SSH login attempt.
 */

const FIXTURES = join(import.meta.dir, "..", "fixtures", "opencanary-webhook")
const FORMS = ["form-default", "json-message", "json-string", "raw-line"]

let server: RunningServer
let db: TestDatabase
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  tenant = await createTenant(db, "OpenCanary webhook")
  sensor = await createSensor(db, tenant.orgId, "canary-webhook-01")
})

afterAll(() => shutdown(server, db))

const post = (body: string, contentType?: string) =>
  fetch(`${server.ingestUrl}/ingest/v1/opencanary`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${sensor.token}`,
      ...(contentType === undefined ? {} : { "content-type": contentType }),
    },
    body,
  })

describe("OpenCanary WebhookHandler", () => {
  test("each of the four recorded forms answers 200 with one accepted event; the events read back as SSH login attempts; a resend is a duplicate", async () => {
    for (const form of FORMS) {
      const response = await sendRaw(server.ingestUrl, recordedRequest(join(FIXTURES, `${form}.http`), sensor.token))
      expect({ form, status: response.status }).toEqual({ form, status: 200 })
      const body = JSON.parse(response.body)
      expect({ form, accepted: body.accepted, duplicates: body.duplicates, rejected: body.rejected }).toEqual({
        form,
        accepted: 1,
        duplicates: 0,
        rejected: 0,
      })
      expect(body.results[0]).toMatchObject({ index: 0, status: "accepted" })
    }
    const res = await get(server.url, "/v1/events?limit=100", tenant.key)
    expect(res.status).toBe(200)
    // biome-ignore lint/suspicious/noExplicitAny: events as the API answers them
    const events: Array<any> = res.body.data
    expect(events.length).toBe(4)
    for (const event of events) {
      expect(event).toMatchObject({ type: "ssh.login_attempt", sourceIp: "203.0.113.61", port: 22 })
      expect(event.attackerInput.username).toBe("admin")
    }
    // One per form (src_port 40100 + the form's position).
    expect(events.map((e) => e.sourcePort).sort()).toEqual([40100, 40101, 40102, 40103])
    // D19: the password (sent as "Sommer2026!\u00fc") is masked.
    expect(JSON.stringify(events)).not.toContain("Sommer2026")

    for (const form of FORMS) {
      const again = await sendRaw(server.ingestUrl, recordedRequest(join(FIXTURES, `${form}.http`), sensor.token))
      expect(JSON.parse(again.body)).toMatchObject({ accepted: 0, duplicates: 1 })
    }
  })

  test("a form body without a message field, or with an escape that is not UTF-8, is refused whole (400); an unparseable message is a rejected item", async () => {
    const noMessage = await post("note=hello", "application/x-www-form-urlencoded")
    expect(noMessage.status).toBe(400)
    expect(((await noMessage.json()) as { detail: string }).detail).toContain("message")
    const notUtf8 = await post("message=%7B%22a%22%3A%22%FF%22%7D", "application/x-www-form-urlencoded")
    expect(notUtf8.status).toBe(400)
    const badEscape = await post("message=%7G", "application/x-www-form-urlencoded; charset=utf-8")
    expect(badEscape.status).toBe(400)
    const notJson = await post("message=not+json", "application/x-www-form-urlencoded")
    expect(notJson.status).toBe(200)
    expect(await notJson.json()).toMatchObject({ accepted: 0, rejected: 1 })
    const messageNotJson = await post(JSON.stringify({ message: "not json" }), "application/json")
    expect(messageNotJson.status).toBe(200)
    expect(await messageNotJson.json()).toMatchObject({ accepted: 0, rejected: 1 })
  })
})
