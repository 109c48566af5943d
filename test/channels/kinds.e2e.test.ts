import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SYSLOG_SD_ID } from "../../src/domain/channels/syslog.ts"
import { verifyWebhook } from "../../src/webhooks/verify.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { closeIncident, createChannelOf, createOrg, createSensor } from "../support/fixtures.ts"
import { type HecReceiver, startHecReceiver } from "../support/hecReceiver.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type Rsyslog, startRsyslog } from "../support/rsyslog.ts"
import { adaptiveCardErrors, ocsfErrors } from "../support/schemas.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D46/D47 end to end: the real server's outbox and dispatcher send one attack to a channel of every kind, each to a
 * real peer on loopback: Slack, Teams and webhooks to a local HTTPS receiver, Splunk HEC to a receiver with HEC's
 * rules and token check, syslog to Debian's rsyslog over TLS (RFC 5425), which parses every message as RFC 5424.
 * Test servers may send to 127.0.0.1 only because WEBHOOK_ALLOW_PRIVATE says so; the test CA is trusted through
 * WEBHOOK_CA_FILE and SYSLOG_CA_FILE.
 */

const HEC_TOKEN = "6f1f0c1e-4b3a-4a51-9a38-0d1c2b3a4e5f"
/** Attacker text built to break every markup: mentions, links, markdown, a code span's end, a line break. */
const HOSTILE_USER = "<!channel> @here *bold* `x` [click](http://evil.example/a) <http://evil.example|ok>\nroot"

let receiver: Receiver
let hec: HecReceiver
let rsyslog: Rsyslog
let server: RunningServer
let caFile: string
let db: TestDatabase

beforeAll(async () => {
  const certificate = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  caFile = join(tmpdir(), `dsvc-channels-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certificate.caCert)
  receiver = await startReceiver(certificate)
  hec = startHecReceiver(certificate, HEC_TOKEN)
  rsyslog = await startRsyslog({ certificate })
  server = await startServer({
    env: await testEnv({
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      WEBHOOK_CA_FILE: caFile,
      SYSLOG_CA_FILE: caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
  db = testDatabase(server.env)
})
afterAll(async () => {
  await shutdown(server, db)
  receiver?.stop()
  hec?.stop()
  await rsyslog?.stop()
})

const eventually = async (what: string, check: () => boolean, ms = 20_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(50)
  }
}

const at = (path: string) => receiver.requests.filter((r) => r.path === path)

/** `channel create --org <org-id>` with these flags, run by the admin service as the operator. */
const create = (orgId: string, input: Parameters<typeof createChannelOf>[2]) => createChannelOf(db, orgId, input)

describe("one attack through every channel kind to real receivers", () => {
  test("created goes to every kind in its own shape; the close goes only to OCSF channels; Send test reaches each", async () => {
    const org = await createOrg(db, `Channels e2e ${crypto.randomUUID().slice(0, 8)}`)
    // `sensor create` without --profile: a generic sensor.
    const sensor = await createSensor(db, org.id, "web-01", "generic")
    const webhook = await create(org.id, { url: `${receiver.url}/native` })
    const ocsfHook = await create(org.id, { format: "ocsf", url: `${receiver.url}/ocsf` })
    // Without their settle window (settle.e2e.test.ts has it), so the chat kinds' messages come as the others' do.
    const slack = await create(org.id, { kind: "slack", settle: "0", url: `${receiver.url}/slack/T000/B000/XXXX` })
    const teams = await create(org.id, { kind: "teams", settle: "0", url: `${receiver.url}/teams/workflows/abc` })
    const syslog = await create(org.id, { kind: "syslog", url: `syslog+tls://127.0.0.1:${rsyslog.port}` })
    const splunk = await create(org.id, { kind: "splunk_hec", format: "ocsf", url: hec.url, token: HEC_TOKEN })
    expect(webhook.secret).toBeString()
    expect(ocsfHook.secret).toBeString()
    for (const c of [slack, teams, syslog, splunk]) expect(c.secret).toBeUndefined()

    const sent = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({
        sourceIp: "203.0.113.77",
        type: "ssh.login_attempt",
        severity: "medium",
        attackerInput: { username: HOSTILE_USER, password: "hunter2" },
      }),
    ])
    expect(sent.status).toBe(200)
    const incidentId = sent.body.results[0].incidentId as string

    await eventually(
      "incident.created at every receiver",
      () =>
        at("/native").length === 1 &&
        at("/ocsf").length === 1 &&
        at("/slack/T000/B000/XXXX").length === 1 &&
        at("/teams/workflows/abc").length === 1 &&
        hec.accepted.length === 1 &&
        rsyslog.messages().length === 1,
    )

    // The native webhook is unchanged; the OCSF one is a Detection Finding, signed by the same code.
    const native = at("/native")[0]
    expect(
      verifyWebhook(native?.body ?? "", native?.headers["x-service-signature"] ?? "", webhook.secret ?? "").ok,
    ).toBe(true)
    expect(JSON.parse(native?.body ?? "{}").type).toBe("incident.created")
    const ocsf = at("/ocsf")[0]
    expect(verifyWebhook(ocsf?.body ?? "", ocsf?.headers["x-service-signature"] ?? "", ocsfHook.secret ?? "").ok).toBe(
      true,
    )
    const finding = JSON.parse(ocsf?.body ?? "{}")
    expect(ocsfErrors(finding)).toBe("")
    expect(finding).toMatchObject({ class_uid: 2004, activity_id: 1, finding_info: { uid: incidentId } })

    // Slack: Block Kit JSON whose every text escapes the markup; the only link is the console's.
    const slackBody = at("/slack/T000/B000/XXXX")[0]?.body ?? ""
    const slackMessage = JSON.parse(slackBody)
    expect(slackMessage.blocks.length).toBeGreaterThan(0)
    expect(slackBody).not.toContain("<!channel>")
    expect(slackBody).not.toContain("<http")
    // Attacker text is a code span, defanged and without a live "@", so no client can make it a link or a mention.
    expect(slackBody).not.toContain("evil.example")
    expect(slackBody).toContain("evil[.]example")
    expect(slackBody).not.toContain("@here")
    expect(slackBody).toContain(`/incidents/${incidentId}`)

    // Teams: a valid Adaptive Card 1.5 in the Workflows envelope; the attacker's link is not a link.
    const teamsMessage = JSON.parse(at("/teams/workflows/abc")[0]?.body ?? "{}")
    expect(teamsMessage.type).toBe("message")
    const card = teamsMessage.attachments[0].content
    expect(adaptiveCardErrors(card)).toBe("")
    expect(JSON.stringify(card)).not.toContain("http://evil.example")

    // Splunk HEC: the token was checked by the receiver; the event is the OCSF finding.
    const hecRequest = hec.requests[0]
    expect(hecRequest?.headers.authorization).toBe(`Splunk ${HEC_TOKEN}`)
    expect(hec.accepted[0]).toMatchObject({
      sourcetype: "ocsf:detection_finding",
      event: { class_uid: 2004, activity_id: 1 },
    })
    expect(ocsfErrors(hec.accepted[0]?.event)).toBe("")

    // Syslog: rsyslog parsed it as RFC 5424, structured data and all; the attacker's line break is data.
    const parsed = rsyslog.messages()[0]
    expect(parsed?.["protocol-version"]).toBe("1")
    expect(parsed?.msgid).toBe("incident.created")
    expect(parsed?.["app-name"]).toBe("decoy-incident-service")
    const sd =
      parsed?.["$!"]?.["rfc5424-sd"]?.[SYSLOG_SD_ID.toLowerCase()] ?? parsed?.["$!"]?.["rfc5424-sd"]?.[SYSLOG_SD_ID]
    expect(sd?.incidentid ?? sd?.incidentId).toBe(incidentId)
    const syslogJson = JSON.parse((parsed?.msg ?? "").replace(/^\uFEFF/, ""))
    // The native body, value for value (the stored attacker text as the webhook carries it).
    expect(syslogJson.incident).toEqual(JSON.parse(native?.body ?? "{}").incident)
    expect(syslogJson.incident.events[0].attackerInput.username).toContain("<!channel> @here")

    // A close: OCSF channels get the Close activity; the others hear nothing (the spec announces no close).
    await closeIncident(db, incidentId, "false_positive")
    await eventually(
      "incident.closed on the OCSF channels",
      () => at("/ocsf").length === 2 && hec.accepted.length === 2,
    )
    const closeFinding = JSON.parse(at("/ocsf")[1]?.body ?? "{}")
    expect(ocsfErrors(closeFinding)).toBe("")
    expect(closeFinding).toMatchObject({ activity_id: 3, finding_info: { uid: incidentId } })
    expect(hec.accepted[1]).toMatchObject({ event: { activity_id: 3 } })
    await Bun.sleep(1000)
    expect(at("/native")).toHaveLength(1)
    expect(at("/slack/T000/B000/XXXX")).toHaveLength(1)
    expect(at("/teams/workflows/abc")).toHaveLength(1)
    expect(rsyslog.messages()).toHaveLength(1)

    // Send test on each channel arrives as webhook.test.
    for (const c of [webhook, ocsfHook, slack, teams, syslog, splunk]) {
      const result = await admin(server.env, ["channel", "test", c.id])
      expect([c.kind, result.code, result.stderr]).toEqual([c.kind, 0, ""])
    }
    expect(at("/native")).toHaveLength(2)
    expect(at("/ocsf")).toHaveLength(3)
    expect(at("/slack/T000/B000/XXXX")).toHaveLength(2)
    expect(at("/teams/workflows/abc")).toHaveLength(2)
    expect(hec.accepted).toHaveLength(3)
    await eventually("the syslog test message", () => rsyslog.messages().length === 2)
    expect(rsyslog.messages()[1]?.msgid).toBe("webhook.test")
  })

  test("a receiver that refuses (a wrong HEC token) is a failed attempt in the delivery log, retried like any", async () => {
    const org = await createOrg(db, `Channels wrong token ${crypto.randomUUID().slice(0, 8)}`)
    const wrong = await create(org.id, { kind: "splunk_hec", url: hec.url, token: "not-the-token" })
    const result = await admin(server.env, ["channel", "test", wrong.id])
    expect(result.code).toBe(1)
    const log = await adminJson(server.env, ["channel", "deliveries", wrong.id])
    expect(log[0]).toMatchObject({ type: "webhook.test", status: "dead", lastStatus: 403 })
    expect(JSON.stringify(log)).not.toContain("not-the-token")
  })
})
