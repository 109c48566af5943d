import { afterAll, beforeAll, expect, test } from "bun:test"
import { readFileSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import type { FormatContext } from "../../src/domain/channels/kinds.ts"
import { SYSLOG_SD_ID, syslogMessage } from "../../src/domain/channels/syslog.ts"
import { PRODUCT } from "../../src/domain/product.ts"
import { sendSyslog } from "../../src/platform/outbound/syslogSend.ts"
import { allFixtures, type Fixture } from "../support/channelMessages.ts"
import { admin } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { closeIncident, createChannelOf, createOrg, createSensor } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type ParsedSyslog, type Rsyslog, readJsonLines, startRsyslog } from "../support/rsyslog.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate, type TestCertificate } from "../support/tls.ts"

/**
 * The rsyslog rule docs/channels/syslog.md gives for routing the service's messages, taken from the page as written
 * and run in Debian's rsyslog: every message the service's syslog channel sends (through the real server's
 * dispatcher, `channel test`, and every message type through the sender) must be routed by it, and a message of
 * another program or facility must not. The page once named APP-NAME `Decoy-Incident-Service`; the service sends
 * `decoy-incident-service`, and rsyslog's `==` tells the two apart, so that rule routed nothing.
 */

const PAGE = join(import.meta.dir, "..", "..", "docs", "channels", "syslog.md")
const LOOPBACK = { allowPrivate: ["127.0.0.0/8"] }

/** The page's routing rule: the one inline `if … then …` of its rsyslog section, without the `…` action. */
const documentedRule = (): string => {
  const text = readFileSync(PAGE, "utf8")
  const section = text.slice(text.indexOf("## rsyslog"), text.indexOf("## syslog-ng"))
  const rules = [...section.matchAll(/`(if [^`]+? then) …`/g)].map((m) => m[1] as string)
  if (rules.length !== 1) throw new Error(`expected one rsyslog routing rule in ${PAGE}, found ${rules.length}`)
  return rules[0] as string
}

let certificate: TestCertificate
let caFile: string
let rsyslog: Rsyslog
let server: RunningServer
let db: TestDatabase
/** What the documented rule routed, as rsyslog parsed it, once it has `count` messages (or 5 s have passed). */
const routed = async (count: number): Promise<ReadonlyArray<ParsedSyslog>> => {
  const until = performance.now() + 5000
  for (;;) {
    const lines = readJsonLines(join(rsyslog.dir, "routed.jsonl"))
    if (lines.length >= count || performance.now() > until) return lines
    await Bun.sleep(25)
  }
}

beforeAll(async () => {
  certificate = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  caFile = join(tmpdir(), `dsvc-syslog-rule-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certificate.caCert)
  const rule = documentedRule()
  rsyslog = await startRsyslog({
    certificate,
    // The page's rule with an action of the test's own in place of its `…`.
    rules: (dir) =>
      `${rule} {\n  action(type="omfile" file="${dir}/routed.jsonl" template="jsonLine" flushOnTXEnd="on" asyncWriting="off")\n}`,
  })
  server = await startServer({
    env: await testEnv({
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
      SYSLOG_CA_FILE: caFile,
      WEBHOOK_POLL_INTERVAL: "200 millis",
    }),
  })
  db = testDatabase(server.env)
}, 120_000)

afterAll(async () => {
  await shutdown(server, db)
  await rsyslog?.stop()
})

const sdOf = (message: ParsedSyslog): Readonly<Record<string, string>> =>
  message["$!"]?.["rfc5424-sd"]?.[SYSLOG_SD_ID] ?? {}

/** Waits until rsyslog has written `count` messages in all (every message, routed or not). */
const received = async (count: number, what: string): Promise<ReadonlyArray<ParsedSyslog>> => {
  const all = await rsyslog.waitFor(count, 20_000)
  if (all.length < count) throw new Error(`rsyslog has ${all.length} of ${count} messages (${what}): ${rsyslog.log()}`)
  return all
}

test("the page names the APP-NAME the service sends, and its rule is a real rsyslog filter on it", () => {
  const rule = documentedRule()
  expect(rule).toContain(`$app-name == "${PRODUCT.id}"`)
  expect(readFileSync(PAGE, "utf8")).toContain(`| APP-NAME | \`${PRODUCT.id}\``)
})

test("the rsyslog rule of docs/channels/syslog.md, as written, routes what the running service's syslog channels send", async () => {
  // Made by the admin services as the operator; `sensor create` without --profile makes a generic sensor.
  const org = await createOrg(db, `Syslog rule ${crypto.randomUUID().slice(0, 8)}`)
  const sensor = await createSensor(db, org.id, "web-01", "generic")
  const url = `syslog+tls://127.0.0.1:${rsyslog.port}`
  const create = (format: string) => createChannelOf(db, org.id, { kind: "syslog", format, url })
  const native = await create("native")
  const ocsf = await create("ocsf")

  // An attack: incident.created to both channels, from the server's dispatcher.
  const sent = await ingest(server.ingestUrl, "events", sensor.token, [
    nativeEvent({ sourceIp: "203.0.113.78", type: "ssh.login_attempt", severity: "high" }),
  ])
  expect(sent.status).toBe(200)
  await received(2, "incident.created on both channels")
  // Its close (to the OCSF channel), and Send test on each.
  await closeIncident(db, sent.body.results[0].incidentId)
  await received(3, "incident.closed")
  for (const channel of [native, ocsf]) {
    const result = await admin(server.env, ["channel", "test", channel.id])
    expect([result.code, result.stderr]).toEqual([0, ""])
  }
  const all = await received(5, "webhook.test on both channels")

  expect(all.map((m) => m.msgid).sort()).toEqual([
    "incident.closed",
    "incident.created",
    "incident.created",
    "webhook.test",
    "webhook.test",
  ])
  // Every one of them went through the documented rule's action too.
  const ids = (messages: ReadonlyArray<ParsedSyslog>) => messages.map((m) => sdOf(m).messageId).sort()
  expect(ids(await routed(all.length))).toEqual(ids(all))
  expect(ids(all).every((id) => id?.startsWith("whd_"))).toBe(true)
})

test("the rule routes every message type the sender renders, and nothing of another program or facility", async () => {
  // The context the service's sender renders with (ChannelSender): the product's own id and this host's name.
  const context: FormatContext = {
    appUrl: "https://decoy.example.com",
    product: { name: PRODUCT.name, vendor: PRODUCT.vendor, version: PRODUCT.version, id: PRODUCT.id },
    hostname: hostname(),
  }
  const before = rsyslog.messages().length
  const routedBefore = (await routed(0)).length
  const send = (message: string) =>
    sendSyslog({
      destination: `syslog+tls://127.0.0.1:${rsyslog.port}`,
      message,
      policy: LOOPBACK,
      ca: certificate.caCert,
    })
  const fixtures = allFixtures()
  for (const fixture of fixtures) {
    expect(await send(syslogMessage(fixture.message, context, fixture.payload))).toMatchObject({ ok: true })
  }
  // The same message from another program, and from the service's APP-NAME on another facility (local1: PRI 8 higher).
  const first = fixtures[0] as Fixture
  const sample = syslogMessage(first.message, context, first.payload)
  const [head = "", time = "", host = "", , ...rest] = sample.split(" ")
  const otherProgram = [head, time, host, "other-program", ...rest].join(" ")
  const otherFacility = sample.replace(/^<(\d+)>/, (_m, p: string) => `<${Number(p) + 8}>`)
  for (const message of [otherProgram, otherFacility]) expect(await send(message)).toMatchObject({ ok: true })

  const all = (await received(before + fixtures.length + 2, "every type and the two others")).slice(before)
  expect(all.map((m) => [m["app-name"], m.syslogfacility])).toEqual([
    ...fixtures.map(() => [PRODUCT.id, "16"]),
    ["other-program", "16"],
    [PRODUCT.id, "17"],
  ])
  const routedNow = (await routed(routedBefore + fixtures.length)).filter((m) => all.some((a) => a.rawmsg === m.rawmsg))
  expect(routedNow.map((m) => m.msgid)).toEqual(fixtures.map((f) => f.message.type))
})
