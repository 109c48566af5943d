import { afterAll, beforeAll, expect, test } from "bun:test"
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { deltaToNow, type Json, shiftLine } from "../support/captureTime.ts"
import { freePort } from "../support/console.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createKey, createOrg, createSensor, createUser, get } from "../support/fixtures.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * Issue "Real sensors", done when: a stock Cowrie with only its `[output_splunk]` section pointed at the service and
 * a stock OpenCanary with only a `WebhookHandler` block, attacked with real clients, produce incidents readable in
 * the API, the console and a signed webhook, with no line of the attack rejected (D41–D43).
 *
 * The whole path, once, with what those two honeypots really sent (test/fixtures/real/README.md): two sensors made
 * with the admin CLI as the guide says, a webhook channel to a local HTTPS receiver, then Cowrie's captured HEC
 * requests and OpenCanary's captured default-form WebhookHandler requests replayed (their headers and bodies as
 * captured; the placeholder token swapped for the sensor's, and every line's times moved by one shift so that the
 * attack happened a moment ago, as it would live). Each sensor's incident then arrives at the receiver as a signed
 * `incident.created`, is in `GET /v1/incidents`, and its console page shows it to a signed-in analyst.
 */

const FIXTURES = join(import.meta.dir, "..", "fixtures", "real")
const PLACEHOLDER_TOKENS = ["00000000-0000-4000-8000-000000000001", "dst_sen_TESTSENSOR_0000000000000000000000"]
const ATTACKER = "127.0.0.1"
const PASSWORD = "real sensors analyst passphrase"
const RUN = crypto.randomUUID().slice(0, 8)

let server: RunningServer
let receiver: Receiver
let caFile: string
let consoleUrl: string
let db: TestDatabase

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"] })
  caFile = join(tmpdir(), `dsvc-real-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  const port = freePort()
  consoleUrl = `http://127.0.0.1:${port}`
  server = await startServer({
    env: await testEnv({
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8,::1/128",
      WEBHOOK_CA_FILE: caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
      CONSOLE_PORT: String(port),
      APP_URL: consoleUrl,
    }),
  })
  db = testDatabase(server.env)
})

afterAll(async () => {
  await shutdown(server, db)
  receiver?.stop()
  if (caFile) rmSync(caFile, { force: true })
})

// ---------------------------------------------------------------------------------------------------------------
// The captures: each request's method, path, headers and body; every line's times moved by one shift.

interface Captured {
  readonly name: string
  readonly method: string
  readonly path: string
  readonly headers: ReadonlyArray<[string, string]>
  readonly body: Buffer
}

const captured = (dir: string): ReadonlyArray<Captured> =>
  readdirSync(join(FIXTURES, dir))
    .filter((name) => name.endsWith(".http"))
    .sort()
    .map((name) => {
      const bytes = readFileSync(join(FIXTURES, dir, name))
      const end = bytes.indexOf("\r\n\r\n")
      const [requestLine = "", ...headerLines] = bytes.subarray(0, end).toString("latin1").split("\r\n")
      const [method = "", path = ""] = requestLine.split(" ")
      const headers = headerLines.map((line): [string, string] => {
        const colon = line.indexOf(":")
        return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()]
      })
      return { name: `${dir}/${name}`, method, path, headers, body: bytes.subarray(end + 4) }
    })

/** Sends a captured request to the ingest listener with its own headers (the token swapped) and `body`. */
const replay = async (request: Captured, token: string, body: Buffer) => {
  const headers = new Headers()
  for (const [name, value] of request.headers) {
    // The connection's own headers are the client's business; the body's length is the new body's.
    if (["host", "content-length", "connection", "accept-encoding"].includes(name.toLowerCase())) continue
    let swapped = value
    for (const placeholder of PLACEHOLDER_TOKENS) swapped = swapped.split(placeholder).join(token)
    headers.set(name, swapped)
  }
  const response = await fetch(`${server.ingestUrl}${request.path}`, { method: request.method, headers, body })
  return { status: response.status, text: await response.text() }
}

// ---------------------------------------------------------------------------------------------------------------
// Console: an analyst signed in over plain HTTP, as a browser would (form cookie, CSRF token, session cookie).

const cookieOf = (response: Response, name: string) =>
  response.headers
    .getSetCookie()
    .map((c) => c.split(";")[0] ?? "")
    .find((c) => c.startsWith(`${name}=`)) ?? ""

const csrfOf = (page: string) => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? ""

const formPost = (path: string, cookie: string, fields: Record<string, string>) =>
  fetch(`${consoleUrl}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded", origin: consoleUrl },
    body: new URLSearchParams(fields),
  })

const signedInAnalyst = async (orgId: string) => {
  const email = `real.sensors.${RUN}@acme.example`
  const made = await createUser(db, orgId, email, "analyst")
  const linkPath = new URL(made.link).pathname
  const form = await fetch(`${consoleUrl}${linkPath}`)
  const set = await formPost(linkPath, cookieOf(form, "__Host-form"), {
    csrf: csrfOf(await form.text()),
    password: PASSWORD,
  })
  expect(set.status).toBe(303)
  const signIn = await fetch(`${consoleUrl}/sign-in`)
  const done = await formPost("/sign-in", cookieOf(signIn, "__Host-form"), {
    csrf: csrfOf(await signIn.text()),
    email,
    password: PASSWORD,
    next: "/",
  })
  expect(done.status).toBe(303)
  return cookieOf(done, "__Host-session")
}

// ---------------------------------------------------------------------------------------------------------------

const eventually = async (what: string, check: () => boolean, ms = 30_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(100)
  }
}

test("done when: a real Cowrie (HEC) and a real OpenCanary (WebhookHandler) attack becomes incidents in the API, the console and a signed webhook", async () => {
  // Set up as docs/connect-a-sensor.md says: an organization, a sensor per honeypot, a read key, a webhook channel
  // (made by the admin services the documented commands run, as the operator).
  const orgId = (await createOrg(db, `Real sensors end to end ${RUN}`)).id
  const cowrie = await createSensor(db, orgId, "dmz-cowrie-1", "cowrie")
  const canary = await createSensor(db, orgId, "dmz-canary-1", "opencanary")
  const key = (await createKey(db, orgId, "incidents:read,events:read")).key
  const channel = await createChannel(db, orgId, `${receiver.url}/real-sensors`, "low")

  // Cowrie's output_splunk: one HEC request per line; every answer HEC's success.
  const hec = captured("cowrie/hec-requests")
  const hecBodies = hec.map((r) => JSON.parse(r.body.toString("utf8")) as Json)
  const cowrieDelta = deltaToNow(hecBodies.map((b) => b.event as Json))
  const failures: Array<string> = []
  for (const [i, request] of hec.entries()) {
    const body = { ...hecBodies[i], event: shiftLine(hecBodies[i]?.event as Json, cowrieDelta) }
    const answer = await replay(request, cowrie.token, Buffer.from(JSON.stringify(body), "utf8"))
    if (answer.status !== 200 || JSON.parse(answer.text).code !== 0)
      failures.push(`${request.name}: ${answer.status} ${answer.text}`)
  }

  // OpenCanary's WebhookHandler in its default form: message=<the JSON line>, one request per line; none rejected.
  const webhook = captured("opencanary/webhook-form")
  const ocLines = webhook.map((r) => JSON.parse(new URLSearchParams(r.body.toString("utf8")).get("message") ?? ""))
  const ocDelta = deltaToNow(ocLines)
  for (const [i, request] of webhook.entries()) {
    const message = JSON.stringify(shiftLine(ocLines[i] as Json, ocDelta))
    const answer = await replay(request, canary.token, Buffer.from(new URLSearchParams({ message }).toString()))
    const results = answer.status === 200 ? ((JSON.parse(answer.text).results ?? []) as Array<{ status: string }>) : []
    if (answer.status !== 200 || results.some((r) => r.status === "rejected"))
      failures.push(`${request.name}: ${answer.status} ${answer.text}`)
  }
  expect(failures).toEqual([])

  // The API: an open incident per sensor, from the attacker's address.
  const incidents = (await get(server.url, "/v1/incidents?limit=100", key)).body.data as Array<Json>
  const bySensor = (id: string) => incidents.filter((i) => (i.sensor as Json).id === id)
  for (const s of [cowrie, canary]) {
    expect(bySensor(s.id)).toHaveLength(1)
    expect(bySensor(s.id)[0]).toMatchObject({ sourceIp: ATTACKER, status: "open" })
  }
  const cowrieIncident = bySensor(cowrie.id)[0] as Json
  const canaryIncident = bySensor(canary.id)[0] as Json
  expect(cowrieIncident.eventTypes).toEqual(expect.arrayContaining(["ssh.login_success", "ssh.file_upload"]))
  expect(canaryIncident.eventTypes).toEqual(expect.arrayContaining(["ssh.login_attempt", "telnet.login_attempt"]))

  // The webhook: each incident's incident.created, signed with the channel's secret (the spec's checks on the raw
  // bytes as received), naming the sensor and its profile.
  const deliveries = () => receiver.requests.filter((r) => r.path === "/real-sensors")
  const createdFor = (incidentId: unknown) =>
    deliveries().filter((r) => {
      const body = JSON.parse(r.body)
      return body.type === "incident.created" && body.incident.id === incidentId
    })
  await eventually(
    "incident.created for both incidents",
    () => createdFor(cowrieIncident.id).length > 0 && createdFor(canaryIncident.id).length > 0,
  )
  for (const [incident, s, profile] of [
    [cowrieIncident, cowrie, "cowrie"],
    [canaryIncident, canary, "opencanary"],
  ] as const) {
    const [delivery] = createdFor(incident.id)
    if (delivery === undefined) throw new Error("no delivery")
    expect(verifyWebhook(delivery.body, delivery.headers["x-service-signature"] ?? "", channel.secret).ok).toBe(true)
    expect(verifyWebhook(delivery.body, delivery.headers["x-service-signature"] ?? "", `${channel.secret}x`).ok).toBe(
      false,
    )
    const body = JSON.parse(delivery.body)
    expect(body.incident.sensor).toMatchObject({ id: s.id, profile })
    expect(body.incident.sourceIp).toBe(ATTACKER)
    expect(body.incident.events.length).toBeGreaterThan(0)
  }

  // The console: each incident's page, to a signed-in analyst, names the attacker's address and the sensor.
  const session = await signedInAnalyst(orgId)
  expect(session).not.toBe("")
  for (const [incident, name] of [
    [cowrieIncident, "dmz-cowrie-1"],
    [canaryIncident, "dmz-canary-1"],
  ] as const) {
    const page = await fetch(`${consoleUrl}/incidents/${incident.id}`, {
      headers: { cookie: session },
      redirect: "manual",
    })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain(ATTACKER)
    expect(html).toContain(name)
    expect(html).toContain(String(incident.id))
  }
  // Signed out, the same page is not shown.
  expect((await fetch(`${consoleUrl}/incidents/${cowrieIncident.id}`, { redirect: "manual" })).status).toBe(303)
})
