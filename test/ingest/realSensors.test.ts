import { afterAll, beforeAll, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { deltaToNow, type Json, shiftLine } from "../support/captureTime.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * D41, D42: what a stock Cowrie and a stock OpenCanary really wrote and sent during an attack (captured on loopback,
 * test/fixtures/real/README.md says how) is replayed against the real service:
 * - Cowrie's cowrie.json lines to /ingest/v1/cowrie, OpenCanary's opencanary.log lines to /ingest/v1/opencanary;
 * - the raw requests of Cowrie's `output_splunk` to the HEC route, byte for byte;
 * - the raw requests of OpenCanary's `WebhookHandler` (all four body forms) to /ingest/v1/opencanary, byte for byte.
 * The only bytes changed on the wire are the placeholder token in `Authorization`, replaced by the test sensor's token.
 * No line may be rejected: each is accepted, merged or ignored with a reason (D42), and the accepted ones are read
 * back through the API. Every replay runs twice: as captured, and with the lines' times moved to "now" (the same
 * shift for every line of the capture), so the replay never depends on the clock of the machine it runs on (D36
 * refuses lines dated ahead of the server's clock). The attacker address in the captures is 127.0.0.1 (the
 * honeypots listened on loopback); it is kept as captured.
 */

const FIXTURES = join(import.meta.dir, "..", "fixtures", "real")
const PLACEHOLDER_TOKENS = ["00000000-0000-4000-8000-000000000001", "dst_sen_TESTSENSOR_0000000000000000000000"]

let server: RunningServer
let db: TestDatabase
let tenantCounter = 0

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

/** A fresh organization and sensor per replay, so the replays do not see each other's lines as duplicates. */
const freshSensor = async () => {
  tenantCounter += 1
  const tenant = await createTenant(db, `Real sensors ${tenantCounter}`)
  const sensor = await createSensor(db, tenant.orgId, `real-${tenantCounter}`)
  return { key: tenant.key, token: sensor.token as string }
}

const readLines = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")

const requestFiles = (dir: string) =>
  readdirSync(join(FIXTURES, dir))
    .filter((name) => name.endsWith(".http"))
    .sort()
    .map((name) => ({ name: `${dir}/${name}`, bytes: readFileSync(join(FIXTURES, dir, name)) }))

// ---------------------------------------------------------------------------------------------------------------
// Raw HTTP: the captured request bytes on a plain TCP connection, the answer parsed by hand.

interface RawRequest {
  readonly head: string
  readonly body: Buffer
}

const splitRequest = (bytes: Buffer): RawRequest => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end < 0) throw new Error("a captured request has no end of headers")
  return { head: bytes.subarray(0, end).toString("latin1"), body: bytes.subarray(end + 4) }
}

const withToken = (head: string, token: string) => {
  let out = head
  for (const placeholder of PLACEHOLDER_TOKENS) out = out.split(placeholder).join(token)
  return out
}

const withBody = (head: string, body: Buffer): Buffer =>
  Buffer.concat([
    Buffer.from(`${head.replace(/\r\nContent-Length: \d+/i, `\r\nContent-Length: ${body.length}`)}\r\n\r\n`, "latin1"),
    body,
  ])

interface RawAnswer {
  readonly status: number
  readonly text: string
}

const parseAnswer = (bytes: Buffer): RawAnswer | undefined => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end < 0) return undefined
  const head = bytes.subarray(0, end).toString("latin1")
  const status = Number(head.split(" ")[1])
  const rest = bytes.subarray(end + 4)
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)
  if (length) {
    const n = Number(length[1])
    return rest.length >= n ? { status, text: rest.subarray(0, n).toString("utf8") } : undefined
  }
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const chunks: Array<Buffer> = []
    let at = 0
    for (;;) {
      const lineEnd = rest.indexOf("\r\n", at)
      if (lineEnd < 0) return undefined
      const size = Number.parseInt(rest.subarray(at, lineEnd).toString("latin1"), 16)
      if (size === 0) return { status, text: Buffer.concat(chunks).toString("utf8") }
      if (rest.length < lineEnd + 2 + size) return undefined
      chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size))
      at = lineEnd + 2 + size + 2
    }
  }
  return undefined
}

/** Sends the bytes as they are and returns the first answer. */
const sendRaw = (bytes: Buffer): Promise<RawAnswer> => {
  const { hostname, port } = new URL(server.ingestUrl)
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0)
    let done = false
    const finish = (socket: { end: () => void } | undefined, error?: Error) => {
      if (done) return
      const parsed = parseAnswer(received)
      if (!parsed && !error) return
      done = true
      socket?.end()
      if (parsed) resolve(parsed)
      else reject(error)
    }
    Bun.connect({
      hostname,
      port: Number(port),
      socket: {
        open(socket) {
          socket.write(bytes)
        },
        data(socket, chunk) {
          received = Buffer.concat([received, Buffer.from(chunk)])
          finish(socket)
        },
        close() {
          finish(undefined, new Error(`the connection closed before a whole answer: ${received.toString("latin1")}`))
        },
        error(_socket, error) {
          finish(undefined, error)
        },
      },
    }).catch(reject)
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Outcomes

interface Outcome {
  readonly status: string
  readonly reason?: string
}

/** D42: no line is rejected; an ignored or merged line says why. */
const expectNoRejection = (what: string, results: ReadonlyArray<Outcome>) => {
  const rejected = results.flatMap((r, i) => (r.status === "rejected" ? [`${what} #${i}: ${r.reason}`] : []))
  expect(rejected).toEqual([])
  for (const r of results) {
    expect(["accepted", "merged", "ignored", "duplicate"]).toContain(r.status)
    if (r.status === "ignored" || r.status === "merged") expect(r.reason ?? "").not.toBe("")
  }
}

/** Every event the read API returns for the organization (all pages). */
const allEvents = async (key: string) => {
  const events: Array<Json> = []
  let cursor: string | null = null
  do {
    const path: string = `/v1/events?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`
    const response = await get(server.url, path, key)
    expect(response.status).toBe(200)
    events.push(...response.body.data)
    cursor = response.body.nextCursor
  } while (cursor !== null)
  return events
}

const expectReadBack = async (key: string, accepted: number, sourceIp: string) => {
  const incidents = await get(server.url, "/v1/incidents?limit=100", key)
  expect(incidents.status).toBe(200)
  expect(incidents.body.data.length).toBeGreaterThan(0)
  expect(incidents.body.data.map((i: Json) => i.sourceIp)).toContain(sourceIp)
  const events = await allEvents(key)
  expect(events.length).toBe(accepted)
  for (const event of events) expect(event.sourceIp).toBe(sourceIp)
  return { incidents: incidents.body.data as Array<Json>, events }
}

const tally = (results: ReadonlyArray<Outcome>) => {
  const counts: Record<string, number> = {}
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1
  return counts
}

// ---------------------------------------------------------------------------------------------------------------
// Cowrie: cowrie.json

const cowrieLines = readLines(join(FIXTURES, "cowrie", "cowrie.json"))
const openCanaryLines = readLines(join(FIXTURES, "opencanary", "opencanary.log"))
const hecRequests = requestFiles("cowrie/hec-requests")
const WEBHOOK_FORMS = ["webhook-form", "webhook-json", "webhook-jsonstring", "webhook-raw"] as const

test("the captures are complete: every Cowrie line was also sent over HEC, every OpenCanary line over each webhook form", () => {
  expect(cowrieLines.length).toBeGreaterThan(50)
  expect(hecRequests.length).toBe(cowrieLines.length)
  for (const form of WEBHOOK_FORMS) expect(requestFiles(`opencanary/${form}`).length * 4).toBe(openCanaryLines.length)
})

for (const shifted of [false, true]) {
  const label = shifted ? "times moved to now" : "as captured"

  test(`real Cowrie cowrie.json (every line, ${label}) to /ingest/v1/cowrie: none rejected, read back`, async () => {
    const { key, token } = await freshSensor()
    const parsed = cowrieLines.map((line) => JSON.parse(line) as Json)
    const delta = deltaToNow(parsed)
    const body = shifted
      ? parsed.map((line) => JSON.stringify(shiftLine(line, delta))).join("\n")
      : cowrieLines.join("\n")
    const response = await ingest(server.ingestUrl, "cowrie", token, `${body}\n`, true)
    expect(response.status).toBe(200)
    const results = response.body.results as Array<Outcome>
    expect(results.length).toBe(cowrieLines.length)
    expectNoRejection("cowrie.json line", results)
    const counts = tally(results)
    expect(counts.accepted ?? 0).toBeGreaterThan(0)
    const { events } = await expectReadBack(key, counts.accepted ?? 0, "127.0.0.1")
    const types = new Set(events.map((e) => e.type))
    expect(types.has("ssh.login_attempt") || [...types].some((t) => String(t).startsWith("ssh."))).toBe(true)
    expect([...types].some((t) => String(t).startsWith("telnet."))).toBe(true)
  })

  test(`real Cowrie output_splunk requests (byte for byte, ${label}) to /services/collector/event`, async () => {
    const { key, token } = await freshSensor()
    const requests = hecRequests.map((r) => ({ ...r, ...splitRequest(r.bytes) }))
    const events = requests.map((r) => (JSON.parse(r.body.toString("utf8")) as Json).event as Json)
    const delta = deltaToNow(events)
    const failures: Array<string> = []
    for (const r of requests) {
      const head = withToken(r.head, token)
      let bytes: Buffer
      if (shifted) {
        const hec = JSON.parse(r.body.toString("utf8")) as Json
        hec.event = shiftLine(hec.event as Json, delta)
        bytes = withBody(head, Buffer.from(JSON.stringify(hec), "utf8"))
      } else {
        bytes = Buffer.concat([Buffer.from(`${head}\r\n\r\n`, "latin1"), r.body])
      }
      const answer = await sendRaw(bytes)
      if (answer.status !== 200 || JSON.parse(answer.text).code !== 0)
        failures.push(`${r.name}: ${answer.status} ${answer.text}`)
    }
    expect(failures).toEqual([])
    // The same attack as cowrie.json: the same events come out of it.
    const direct = await ingest(server.ingestUrl, "cowrie", (await freshSensor()).token, cowrieLines.join("\n"), true)
    const expected = tally(direct.body.results as Array<Outcome>).accepted ?? 0
    await expectReadBack(key, expected, "127.0.0.1")
  })
}

// ---------------------------------------------------------------------------------------------------------------
// OpenCanary: opencanary.log and the four WebhookHandler forms

for (const shifted of [false, true]) {
  const label = shifted ? "times moved to now" : "as captured"

  test(`real OpenCanary opencanary.log (every line, ${label}) to /ingest/v1/opencanary: none rejected, read back`, async () => {
    const { key, token } = await freshSensor()
    const parsed = openCanaryLines.map((line) => JSON.parse(line) as Json)
    const delta = deltaToNow(parsed)
    const body = shifted
      ? parsed.map((line) => JSON.stringify(shiftLine(line, delta))).join("\n")
      : openCanaryLines.join("\n")
    const response = await ingest(server.ingestUrl, "opencanary", token, `${body}\n`, true)
    expect(response.status).toBe(200)
    const results = response.body.results as Array<Outcome>
    expect(results.length).toBe(openCanaryLines.length)
    expectNoRejection("opencanary.log line", results)
    // The boot and service messages (logtype 1001) record no attacker action: ignored, with a reason (D42).
    parsed.forEach((line, i) => {
      if (line.logtype === 1001) expect(results[i]?.status).toBe("ignored")
    })
    const counts = tally(results)
    expect(counts.accepted ?? 0).toBeGreaterThan(0)
    await expectReadBack(key, counts.accepted ?? 0, "127.0.0.1")
  })

  for (const form of WEBHOOK_FORMS) {
    test(`(b): real OpenCanary WebhookHandler requests, ${form} (byte for byte, ${label}), to /ingest/v1/opencanary`, async () => {
      const { key, token } = await freshSensor()
      const requests = requestFiles(`opencanary/${form}`).map((r) => ({ ...r, ...splitRequest(r.bytes) }))
      const lineOf = (body: Buffer): string => {
        const text = body.toString("utf8")
        if (form === "webhook-form") return new URLSearchParams(text).get("message") ?? ""
        if (form === "webhook-json") return (JSON.parse(text) as { message: string }).message
        if (form === "webhook-jsonstring") return JSON.parse(text) as string
        return text
      }
      const bodyOf = (line: string): Buffer => {
        if (form === "webhook-form") return Buffer.from(new URLSearchParams({ message: line }).toString(), "utf8")
        if (form === "webhook-json") return Buffer.from(JSON.stringify({ message: line }), "utf8")
        if (form === "webhook-jsonstring") return Buffer.from(JSON.stringify(line), "utf8")
        return Buffer.from(line, "utf8")
      }
      const lines = requests.map((r) => JSON.parse(lineOf(r.body)) as Json)
      const delta = deltaToNow(lines)
      const failures: Array<string> = []
      const outcomes: Array<Outcome> = []
      for (const [i, r] of requests.entries()) {
        const head = withToken(r.head, token)
        const bytes = shifted
          ? withBody(head, bodyOf(JSON.stringify(shiftLine(lines[i] as Json, delta))))
          : Buffer.concat([Buffer.from(`${head}\r\n\r\n`, "latin1"), r.body])
        const answer = await sendRaw(bytes)
        if (answer.status !== 200) {
          failures.push(`${r.name}: ${answer.status} ${answer.text}`)
          continue
        }
        const parsed = JSON.parse(answer.text) as { results?: Array<Outcome> }
        outcomes.push(...(parsed.results ?? []))
      }
      expect(failures).toEqual([])
      expect(outcomes.length).toBe(requests.length)
      expectNoRejection(form, outcomes)
      const accepted = tally(outcomes).accepted ?? 0
      expect(accepted).toBeGreaterThan(0)
      await expectReadBack(key, accepted, "127.0.0.1")
    })
  }
}
