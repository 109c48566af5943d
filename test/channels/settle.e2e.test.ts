import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { admin } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannelOf, createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { cleanup, type RunningServerProcess, startServerProcess, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * Human channels settle, end to end: the real server's ingest face, outbox and dispatcher, a local HTTPS receiver
 * standing in for Slack, Teams and a webhook receiver (its certificate made at test time, trusted through
 * WEBHOOK_CA_FILE; 127.0.0.1 allowed by WEBHOOK_ALLOW_PRIVATE). One attack goes created low → escalated medium →
 * escalated high within a second, so well within the window (a few seconds here instead of the default 30).
 */

/** The window of the settling channels, in seconds: longer than the attack takes, short enough for a test. */
const WINDOW = 4

let receiver: Receiver
let env: Record<string, string>
let server: RunningServerProcess
let db: TestDatabase

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  const caFile = join(tmpdir(), `dsvc-settle-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  env = await testEnv({
    WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
    WEBHOOK_CA_FILE: caFile,
    WEBHOOK_POLL_INTERVAL: "200 millis",
    // A delivery a killed server had claimed is sent by the next one soon after.
    WEBHOOK_LEASE: "2 seconds",
  })
  server = await startServerProcess({ env })
  db = testDatabase(env)
})

afterAll(async () => {
  await db?.close()
  await server?.stop()
  if (server) cleanup(server)
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
const bodies = (path: string) => at(path).map((r) => JSON.parse(r.body))

interface Tenant {
  readonly orgId: string
  readonly token: string
  /** A path of its own on the receiver for each channel. */
  readonly path: (name: string) => string
}

const tenant = async (): Promise<Tenant> => {
  const run = crypto.randomUUID().slice(0, 8)
  // Made by the admin services as the operator; `sensor create` without --profile makes a generic sensor.
  const org = await createOrg(db, `Settle ${run}`)
  const sensor = await createSensor(db, org.id, "web-01", "generic")
  return { orgId: org.id, token: sensor.token, path: (name) => `/${run}/${name}` }
}

/** `channel create --org … --kind … --url …` with --settle and --min-severity as given, through the admin service. */
const channel = (
  t: Tenant,
  kind: string,
  name: string,
  options: { readonly settle?: string; readonly minSeverity?: string } = {},
) => createChannelOf(db, t.orgId, { kind, url: `${receiver.url}${t.path(name)}`, ...options })

/** One event of this severity from `ip` (one ingest request, so one transition when the severity rises). */
const hit = async (t: Tenant, ip: string, severity: string) => {
  const sent = await ingest(server.ingestUrl, "events", t.token, [
    nativeEvent({ sourceIp: ip, type: "ssh.login_attempt", severity }),
  ])
  expect(sent.status).toBe(200)
  return sent.body.results[0].incidentId as string
}

/** created low → escalated medium → escalated high, back to back; when it started and ended. */
const attack = async (t: Tenant, ip: string) => {
  const started = Date.now()
  const incidentId = await hit(t, ip, "low")
  await hit(t, ip, "medium")
  await hit(t, ip, "high")
  const ended = Date.now()
  // The premise of what follows: the whole attack fell inside the window.
  expect(ended - started).toBeLessThan(WINDOW * 1000)
  return { incidentId, started, ended }
}

/** A Slack message's notification text ("New incident (high): …") and its events field. */
const slackText = (body: { text: string }) => body.text
const slackEvents = (body: { blocks: ReadonlyArray<{ fields?: ReadonlyArray<{ text: string }> }> }) =>
  body.blocks.flatMap((b) => b.fields ?? []).find((f) => f.text.startsWith("*Events*"))?.text

const deliveriesOf = (channelId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ type: string; body: string; createdAt: Date; nextAttemptAt: Date; status: string }>`
        select type, body, created_at, next_attempt_at, status from webhook_deliveries
        where channel_id = ${channelId} order by created_at, id`,
    ),
  )

describe("human channels settle, machine channels keep every transition", () => {
  test("an attack that escalates twice within the window is one Slack and one Teams message with the final state, and three webhook deliveries", async () => {
    const t = await tenant()
    const slack = await channel(t, "slack", "slack", { settle: String(WINDOW) })
    const teams = await channel(t, "teams", "teams", { settle: String(WINDOW) })
    const webhook = await channel(t, "webhook", "hook")
    expect([slack.settleSeconds, teams.settleSeconds, webhook.settleSeconds]).toEqual([WINDOW, WINDOW, 0])

    const { incidentId, started } = await attack(t, "203.0.113.31")

    // The webhook receiver gets every transition as it happens: a channel sends several at once, so they may
    // arrive in any order; the outbox holds them in the order they happened.
    await eventually("three webhook deliveries", () => at(t.path("hook")).length === 3)
    const transitions = [
      ["incident.created", "low"],
      ["incident.escalated", "medium"],
      ["incident.escalated", "high"],
    ]
    const arrived = bodies(t.path("hook")).map((b) => [b.type, b.incident.severity])
    expect([...arrived].sort()).toEqual([...transitions].sort())
    const queued = (await deliveriesOf(webhook.id)).map((d) => JSON.parse(d.body))
    expect(queued.map((b) => [b.type, b.incident.severity])).toEqual(transitions)
    expect(at(t.path("slack"))).toHaveLength(0)

    // While the window lasts, the held message is one row whose body already carries the newest state.
    const held = await deliveriesOf(slack.id)
    expect(held.map((d) => [d.type, d.status])).toEqual([["incident.created", "pending"]])
    expect(held[0]?.nextAttemptAt.getTime()).toBe((held[0]?.createdAt.getTime() ?? 0) + WINDOW * 1000)
    expect(JSON.parse(held[0]?.body ?? "{}").incident).toMatchObject({
      id: incidentId,
      severity: "high",
      eventCount: 3,
    })

    await eventually("the Slack and Teams messages", () => at(t.path("slack")).length + at(t.path("teams")).length >= 2)
    // Nothing was sent before the window ended, and nothing more comes after it.
    for (const request of [...at(t.path("slack")), ...at(t.path("teams"))]) {
      expect(request.at).toBeGreaterThanOrEqual(started + WINDOW * 1000)
    }
    await Bun.sleep(1500)
    expect(at(t.path("slack"))).toHaveLength(1)
    expect(at(t.path("teams"))).toHaveLength(1)
    expect(at(t.path("hook"))).toHaveLength(3)

    // One message, announcing a new incident (its readers never heard of it) in its final severity and counts.
    const message = bodies(t.path("slack"))[0]
    expect(slackText(message)).toStartWith("New incident (high): ")
    expect(slackEvents(message)).toBe("*Events*\n3")
    expect(JSON.stringify(message)).toContain(`/incidents/${incidentId}`)
    expect(at(t.path("teams"))[0]?.body).toContain("New incident (high)")
    expect((await deliveriesOf(slack.id)).map((d) => [d.type, d.status])).toEqual([["incident.created", "succeeded"]])
  }, 60_000)

  test("with its window at 0 a Slack channel gets every transition at once, as a webhook does", async () => {
    const t = await tenant()
    const slack = await channel(t, "slack", "slack-off", { settle: "0" })
    expect(slack.settleSeconds).toBe(0)
    const { started } = await attack(t, "203.0.113.32")
    await eventually("three Slack messages", () => at(t.path("slack-off")).length === 3)
    // Up to four sends of a channel run at once, so they may arrive in any order.
    const leads = bodies(t.path("slack-off")).map((b) => slackText(b).split(": ")[0])
    expect(leads.sort()).toEqual(["Incident escalated (high)", "Incident escalated (medium)", "New incident (low)"])
    // None waited for a window.
    for (const request of at(t.path("slack-off"))) expect(request.at - started).toBeLessThan(WINDOW * 1000)
  }, 60_000)

  test("a channel whose minimum only a later state meets gets one message, held by its window, with the state at its end", async () => {
    const t = await tenant()
    const medium = await channel(t, "slack", "from-medium", { settle: String(WINDOW), minSeverity: "medium" })
    const high = await channel(t, "slack", "from-high", { settle: String(WINDOW), minSeverity: "high" })
    const critical = await channel(t, "slack", "from-critical", { settle: String(WINDOW), minSeverity: "critical" })
    const { started } = await attack(t, "203.0.113.33")
    await eventually("both messages", () => at(t.path("from-medium")).length + at(t.path("from-high")).length >= 2)
    await Bun.sleep(1500)
    // The medium channel's first message was the escalation to medium; it went out with the later high state.
    expect(bodies(t.path("from-medium")).map(slackText)).toEqual([
      expect.stringMatching(/^Incident escalated \(high\)/),
    ])
    expect(bodies(t.path("from-high")).map(slackText)).toEqual([expect.stringMatching(/^Incident escalated \(high\)/)])
    for (const request of [...at(t.path("from-medium")), ...at(t.path("from-high"))]) {
      expect(request.at - started).toBeGreaterThanOrEqual(WINDOW * 1000)
    }
    expect(at(t.path("from-critical"))).toHaveLength(0)
    expect(await deliveriesOf(critical.id)).toHaveLength(0)
    expect((await deliveriesOf(medium.id)).map((d) => d.type)).toEqual(["incident.escalated"])
    expect((await deliveriesOf(high.id)).map((d) => d.type)).toEqual(["incident.escalated"])
  }, 60_000)

  test("a transition after the first message went out is a new message, sent at once", async () => {
    const t = await tenant()
    const slack = await channel(t, "slack", "later", { settle: String(WINDOW) })
    const ip = "203.0.113.34"
    await hit(t, ip, "low")
    await eventually("the first message", () => at(t.path("later")).length === 1)
    expect(slackText(bodies(t.path("later"))[0])).toStartWith("New incident (low): ")

    const escalated = Date.now()
    await hit(t, ip, "high")
    await eventually("the escalation's message", () => at(t.path("later")).length === 2)
    // Sent as soon as the dispatcher sees it, not after another window.
    expect((at(t.path("later"))[1]?.at ?? 0) - escalated).toBeLessThan(WINDOW * 1000)
    expect(slackText(bodies(t.path("later"))[1])).toStartWith("Incident escalated (high): ")
    expect((await deliveriesOf(slack.id)).map((d) => [d.type, d.status])).toEqual([
      ["incident.created", "succeeded"],
      ["incident.escalated", "succeeded"],
    ])
  }, 60_000)

  test("an escalation while the first message is being sent is a message of its own, not lost in a rewrite of the one in flight", async () => {
    const t = await tenant()
    const slack = await channel(t, "slack", "in-flight", { settle: "1" })
    const ip = "203.0.113.37"
    // The receiver holds its answer: the first message stays claimed, and not yet attempted, meanwhile.
    receiver.setDelay(3000)
    try {
      await hit(t, ip, "low")
      await eventually("the first message on the wire", () => at(t.path("in-flight")).length === 1)
      const [claimed] = await deliveriesOf(slack.id)
      expect(claimed?.status).toBe("pending")
      await hit(t, ip, "high")
      await eventually("the escalation's own message", () => at(t.path("in-flight")).length === 2)
    } finally {
      receiver.setDelay(0)
    }
    expect(bodies(t.path("in-flight")).map((b) => slackText(b).split(": ")[0])).toEqual([
      "New incident (low)",
      "Incident escalated (high)",
    ])
    const rows = await deliveriesOf(slack.id)
    expect(rows.map((d) => [d.type, JSON.parse(d.body).incident.severity])).toEqual([
      ["incident.created", "low"],
      ["incident.escalated", "high"],
    ])
  }, 60_000)

  test("shortening a channel's window sends the first message it holds sooner; 0 sends it now", async () => {
    const t = await tenant()
    const slack = await channel(t, "slack", "long", { settle: "3600" })
    await hit(t, "203.0.113.35", "medium")
    const [held] = await deliveriesOf(slack.id)
    expect(held?.nextAttemptAt.getTime()).toBe((held?.createdAt.getTime() ?? 0) + 3_600_000)
    await Bun.sleep(500)
    expect(at(t.path("long"))).toHaveLength(0)

    const updated = await admin(env, ["channel", "update", slack.id, "--settle", "0"])
    expect(updated).toEqual({
      code: 0,
      stdout: `channel ${slack.id}: settle window off: every change is sent at once`,
      stderr: "",
    })
    await eventually("the released message", () => at(t.path("long")).length === 1, 10_000)
    expect(slackText(bodies(t.path("long"))[0])).toStartWith("New incident (medium): ")
  }, 60_000)

  test("the held message commits with its transitions: a server killed within the window sends it after a restart, with the final state, once", async () => {
    const t = await tenant()
    const slack = await channel(t, "slack", "crash", { settle: String(WINDOW) })
    await channel(t, "webhook", "crash-hook")
    const { incidentId, started } = await attack(t, "203.0.113.36")
    await server.stop("SIGKILL")
    // Killed before the window ended, so the message could not have gone out.
    expect(Date.now()).toBeLessThan(started + WINDOW * 1000)
    expect(at(t.path("crash"))).toHaveLength(0)

    server = await startServerProcess({ env })
    await eventually("the Slack message after the restart", () => at(t.path("crash")).length === 1)
    await eventually("each webhook transition after the restart", () => {
      const types = new Set(bodies(t.path("crash-hook")).map((b) => `${b.type} ${b.incident.severity}`))
      return types.size === 3
    })
    await Bun.sleep(1500)
    expect(at(t.path("crash"))).toHaveLength(1)
    const message = bodies(t.path("crash"))[0]
    expect(slackText(message)).toStartWith("New incident (high): ")
    expect(JSON.stringify(message)).toContain(`/incidents/${incidentId}`)
    expect((await deliveriesOf(slack.id)).map((d) => [d.type, d.status])).toEqual([["incident.created", "succeeded"]])
  }, 90_000)
})
