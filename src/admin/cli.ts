import { parseArgs } from "node:util"
import { BunContext } from "@effect/platform-bun"
import { Cause, ConfigError, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import { AppConfig, AppConfigLive, formatConfigError } from "../platform/config.ts"
import { DatabaseLive } from "../platform/db/client.ts"
import { migrate } from "../platform/db/migrate.ts"
import { CliLoggingLive } from "../platform/logging.ts"
import { WebhookSender } from "../platform/outbound/WebhookSender.ts"
import { ReposLive } from "../repos/layers.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { AccountError, Accounts, CLI_ACTOR } from "./Accounts.ts"
import { AdminActions } from "./AdminActions.ts"
import { AdminServicesLive } from "./layer.ts"
import { AdminError, AdminOperations } from "./operations.ts"
import { SENSOR_PROFILES } from "./sensorSetup.ts"
import { WebhookAdmin } from "./webhookOperations.ts"

const USAGE = `usage: bun run admin <command> [options] [--json]

  help                                      show this text (also --help, -h)
  migrate                                   apply pending SQL migrations
  org create --name <name>                  create an organization (Deception on)
  org deception <org-id> on|off             switch the Deception feature
  org list
  key create --org <org-id> --name <name> --scopes incidents:read,events:read [--expires <RFC 3339>]
                                            create an API key; the key is printed only here
  key list --org <org-id>                   list keys (never the key value)
  key revoke <key-id>                       revoke a key; effective on the next request
  sensor create --org <org-id> --name <name> [--profile <profile>] [--heartbeat-interval 60s|5m|…|off]
                                            create a sensor; its ingest token is printed only here
  sensor profiles                           the profiles a sensor may have, with what each is
  sensor list --org <org-id>                sensors with status (alive, silent, unknown, revoked) and last contact
  sensor rename <sensor-id> --name <name>
  sensor heartbeat <sensor-id> <interval|off>
                                            the heartbeat it promises; three missed make it silent
  sensor rotate <sensor-id> [--grace 24h] [--force]
                                            new token, printed only here; the old one works during the grace;
                                            refused while an earlier grace runs, unless --force (which ends it)
  sensor revoke <sensor-id>                 refuse its token from the next request on (401)
  incident close <incident-id>              close an open incident (resolvedAt is set)
  webhook create --org <org-id> --url https://… [--min-severity low|medium|high|critical] [--sensor-health]
                                            create a channel; its signing secret is printed only here;
                                            --sensor-health: it also gets sensor.silent / sensor.recovered
  webhook list --org <org-id>               list channels (never the secret)
  webhook rotate <channel-id> [--grace 24h] new signing secret; the old one also signs during the grace
  webhook disable|enable <channel-id>
  webhook sensor-health <channel-id> on|off sensor.silent / sensor.recovered alerts for this channel
  webhook test <channel-id>                 send webhook.test now; prints the receiver's status and time
  webhook deliveries <channel-id> [--status pending|failed|succeeded|dead]
                                            the delivery log (attempts, status codes, errors, times)
  webhook redeliver <delivery-id>           queue a delivery again now (e.g. a dead one)
  user create --org <org-id> --email <email> --role admin|analyst
                                            create a console user; prints a one-time link (24 h) to set a password
  user list --org <org-id>                  console users (never a password)
  user disable <user-id>                    disable a user; their sessions end
  user reset <user-id>                      new set-password link; all their sessions end
  user unlock <email>                       forget the failed sign-ins of this email (its sign-in lock)
  secrets reseal                            after a SECRET_KEY rotation (old key in SECRET_KEY_PREVIOUS):
                                            seal every stored secret under the current SECRET_KEY
`

/** Parsed once; unknown flags are an error rather than silently ignored. */
const parse = (argv: ReadonlyArray<string>) =>
  parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: "boolean" },
      name: { type: "string" },
      org: { type: "string" },
      scopes: { type: "string" },
      expires: { type: "string" },
      profile: { type: "string" },
      "heartbeat-interval": { type: "string" },
      url: { type: "string" },
      "min-severity": { type: "string" },
      "sensor-health": { type: "boolean" },
      grace: { type: "string" },
      force: { type: "boolean" },
      status: { type: "string" },
      email: { type: "string" },
      role: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  })

const print = (json: boolean, value: unknown, human: () => string) =>
  Effect.sync(() => console.log(json ? JSON.stringify(value) : human()))

const table = (rows: ReadonlyArray<Record<string, unknown>>) =>
  rows.length === 0
    ? "(none)"
    : rows
        .map((r) =>
          Object.entries(r)
            .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : String(v)}`)
            .join("  "),
        )
        .join("\n")

const requireFlag = (value: string | undefined, flag: string) =>
  value === undefined
    ? Effect.fail(new AdminError({ message: `${flag} is required\n\n${USAGE}` }))
    : Effect.succeed(value)

const run = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Effect.try({
      try: () => parse(argv),
      catch: (e) => new AdminError({ message: `${(e as Error).message}\n\n${USAGE}` }),
    })
    const json = values.json === true
    const [group, command, ...rest] = positionals
    if (values.help || group === undefined || group === "help") return yield* Effect.sync(() => console.log(USAGE))
    yield* migrate
    if (group === "migrate") return yield* print(json, { migrated: true }, () => "migrations are up to date")
    const admin = yield* AdminOperations
    switch (`${group} ${command ?? ""}`) {
      case "org create": {
        // D31: every CLI change is audited, through the same actions as the console.
        const org = yield* (yield* AdminActions).createOrg(values.name, CLI_ACTOR)
        return yield* print(json, org, () => `organization ${org.id} created (Deception on)`)
      }
      case "org deception": {
        const result = yield* (yield* AdminActions).setDeception(
          yield* requireFlag(rest[0], "<org-id>"),
          rest[1],
          CLI_ACTOR,
        )
        return yield* print(json, result, () => `Deception ${result.deception} for ${result.id}`)
      }
      case "org list": {
        const orgs = yield* (yield* OrgsRepo).list()
        const rows = orgs.map((o) => ({ id: o.id, name: o.name, deception: o.deceptionEnabled }))
        return yield* print(json, rows, () => table(rows))
      }
      case "key create": {
        // D31: through the audited actions, as the console's Settings → API and export.
        const key = yield* (yield* AdminActions).createKey(
          yield* requireFlag(values.org, "--org"),
          { name: values.name, scopes: values.scopes, expires: values.expires },
          CLI_ACTOR,
        )
        return yield* print(json, key, () => `key ${key.id} created. Store it now; it is not shown again:\n${key.key}`)
      }
      case "key list": {
        const keys = yield* admin.listKeys(yield* requireFlag(values.org, "--org"))
        return yield* print(json, keys, () => table(keys))
      }
      case "key revoke": {
        const result = yield* (yield* AdminActions).revokeKey(
          undefined,
          yield* requireFlag(rest[0], "<key-id>"),
          CLI_ACTOR,
        )
        return yield* print(json, result, () => `key ${result.id} revoked`)
      }
      case "sensor create": {
        const sensor = yield* (yield* AdminActions).createSensor(
          yield* requireFlag(values.org, "--org"),
          { name: values.name, profile: values.profile, heartbeatInterval: values["heartbeat-interval"] },
          CLI_ACTOR,
        )
        const config = yield* AppConfig
        return yield* print(
          json,
          sensor,
          () =>
            `sensor ${sensor.id} created. Its ingest token, shown only now:\n${sensor.token}\n` +
            `It reports to ${config.ingestUrl} (docs/connect-a-sensor.md has the configuration for OpenCanary, Cowrie and HEC shippers; Settings → Sensors in the console shows it filled in).`,
        )
      }
      case "sensor profiles": {
        const rows = SENSOR_PROFILES.map((p) => ({ id: p.id, description: p.description }))
        return yield* print(json, rows, () => rows.map((r) => `${r.id.padEnd(22)} ${r.description}`).join("\n"))
      }
      case "sensor list": {
        const rows = yield* (yield* AdminActions).listSensors(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () =>
          table(
            rows.map((r) => ({
              id: r.id,
              name: r.name,
              profile: r.profile,
              status: r.status,
              lastSeen: r.lastSeenAt ?? "never",
              heartbeat: r.heartbeatIntervalSeconds === null ? "off" : `${r.heartbeatIntervalSeconds}s`,
              ...(r.previousTokenValidUntil ? { previousTokenUntil: r.previousTokenValidUntil } : {}),
            })),
          ),
        )
      }
      case "sensor rename": {
        const done = yield* (yield* AdminActions).renameSensor(
          undefined,
          yield* requireFlag(rest[0], "<sensor-id>"),
          values.name,
          CLI_ACTOR,
        )
        return yield* print(json, { id: done.id, name: done.name }, () => `sensor ${done.id} renamed to ${done.name}`)
      }
      case "sensor heartbeat": {
        const done = yield* (yield* AdminActions).setSensorHeartbeat(
          undefined,
          yield* requireFlag(rest[0], "<sensor-id>"),
          yield* requireFlag(rest[1], "<interval|off>"),
          CLI_ACTOR,
        )
        return yield* print(json, done, () =>
          done.heartbeatIntervalSeconds === null
            ? `sensor ${done.id}: no heartbeat expected`
            : `sensor ${done.id}: a heartbeat every ${done.heartbeatIntervalSeconds}s; silent after three missed`,
        )
      }
      case "sensor rotate": {
        const rotated = yield* (yield* AdminActions).rotateSensor(
          undefined,
          yield* requireFlag(rest[0], "<sensor-id>"),
          values.grace,
          CLI_ACTOR,
          values.force === true,
        )
        return yield* print(
          json,
          rotated,
          () =>
            `new ingest token of ${rotated.id}, shown only now:\n${rotated.token}` +
            (rotated.previousTokenValidUntil
              ? `\nthe old token also works until ${rotated.previousTokenValidUntil}`
              : "\nthe old token no longer works"),
        )
      }
      case "sensor revoke": {
        const done = yield* (yield* AdminActions).revokeSensor(
          undefined,
          yield* requireFlag(rest[0], "<sensor-id>"),
          CLI_ACTOR,
        )
        return yield* print(json, { id: done.id, revoked: true }, () =>
          done.changed
            ? `sensor ${done.id} revoked; its token is refused from now on`
            : `sensor ${done.id} was already revoked`,
        )
      }
      case "incident close": {
        const result = yield* (yield* AdminActions).closeIncident(
          undefined,
          yield* requireFlag(rest[0], "<incident-id>"),
          CLI_ACTOR,
        )
        return yield* print(json, result, () => `incident ${result.id} closed at ${result.resolvedAt}`)
      }
      case "user create": {
        const created = yield* (yield* Accounts).createUser(
          {
            orgId: yield* requireFlag(values.org, "--org"),
            email: yield* requireFlag(values.email, "--email"),
            role: yield* requireFlag(values.role, "--role"),
          },
          CLI_ACTOR,
        )
        return yield* print(
          json,
          created,
          () =>
            `user ${created.id} (${created.email}, ${created.role}) created. One-time link to set a password, valid until ${created.linkExpiresAt}:\n${created.link}`,
        )
      }
      case "user list": {
        const orgId = yield* requireFlag(values.org, "--org")
        yield* admin.requireOrg(orgId)
        const rows = yield* (yield* Accounts).listUsers(orgId)
        return yield* print(json, rows, () => table(rows))
      }
      case "user disable": {
        const result = yield* (yield* Accounts).disableUser(
          undefined,
          yield* requireFlag(rest[0], "<user-id>"),
          CLI_ACTOR,
        )
        return yield* print(json, result, () => `user ${result.id} disabled; their sessions ended`)
      }
      case "user reset": {
        const reset = yield* (yield* Accounts).resetUser(undefined, yield* requireFlag(rest[0], "<user-id>"), CLI_ACTOR)
        return yield* print(
          json,
          reset,
          () =>
            `sessions of ${reset.email} ended. One-time link to set a new password, valid until ${reset.linkExpiresAt}:\n${reset.link}`,
        )
      }
      case "user unlock": {
        const unlocked = yield* (yield* Accounts).unlockUser(yield* requireFlag(rest[0], "<email>"), CLI_ACTOR)
        return yield* print(
          json,
          unlocked,
          () => `${unlocked.email}: ${unlocked.cleared} failed sign-in(s) forgotten; every address may sign in again`,
        )
      }
      case "secrets reseal": {
        const orgKeys = yield* admin.resealFingerprintKeys
        const channels = yield* (yield* WebhookAdmin).resealChannelSecrets
        const result = { fingerprintKeys: orgKeys, channelSecrets: channels }
        yield* print(
          json,
          result,
          () =>
            `resealed ${orgKeys.resealed} organization fingerprint key(s) and ${channels.resealed} channel secret(s)` +
            (orgKeys.unreadable.length + channels.unreadable.length > 0
              ? `\ncannot open (set SECRET_KEY_PREVIOUS to their key): ${[...orgKeys.unreadable, ...channels.unreadable].join(", ")}`
              : ""),
        )
        if (orgKeys.unreadable.length + channels.unreadable.length > 0) {
          return yield* Effect.fail(new AdminError({ message: "some secrets could not be opened" }))
        }
        return
      }
      case "webhook create": {
        const created = yield* (yield* AdminActions).createChannel(
          yield* requireFlag(values.org, "--org"),
          { url: values.url, minSeverity: values["min-severity"], sensorHealth: values["sensor-health"] === true },
          CLI_ACTOR,
        )
        return yield* print(
          json,
          created,
          () => `webhook channel ${created.id} created. Its signing secret, shown only now:\n${created.secret}`,
        )
      }
      case "webhook list": {
        const rows = yield* (yield* WebhookAdmin).list(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () => table(rows))
      }
      case "webhook rotate": {
        const rotated = yield* (yield* AdminActions).rotateChannel(undefined, rest[0] ?? "", values.grace, CLI_ACTOR)
        return yield* print(
          json,
          { secret: rotated.secret, previousSecretValidUntil: rotated.previousSecretValidUntil },
          () =>
            `new signing secret of ${rotated.id}, shown only now:\n${rotated.secret}` +
            (rotated.previousSecretValidUntil
              ? `\nthe old secret also signs until ${rotated.previousSecretValidUntil}`
              : ""),
        )
      }
      case "webhook disable":
      case "webhook enable": {
        const result = yield* (yield* AdminActions).setChannelEnabled(
          undefined,
          rest[0] ?? "",
          command === "enable",
          CLI_ACTOR,
        )
        return yield* print(
          json,
          result,
          () => `webhook channel ${result.id} ${result.enabled ? "enabled" : "disabled"}`,
        )
      }
      case "webhook sensor-health": {
        const state = rest[1]
        if (state !== "on" && state !== "off") {
          return yield* Effect.fail(new AdminError({ message: `webhook sensor-health needs on or off\n\n${USAGE}` }))
        }
        const result = yield* (yield* AdminActions).setChannelSensorHealth(
          undefined,
          rest[0] ?? "",
          state === "on",
          CLI_ACTOR,
        )
        return yield* print(
          json,
          result,
          () => `webhook channel ${result.id}: sensor-health alerts ${result.sensorHealth ? "on" : "off"}`,
        )
      }
      case "webhook test": {
        const result = yield* (yield* AdminActions).testChannel(undefined, rest[0] ?? "", CLI_ACTOR)
        yield* print(
          json,
          result,
          () =>
            `${result.ok ? "delivered" : "failed"}: ${result.status === null ? "no HTTP status" : `HTTP ${result.status}`} in ${result.durationMs} ms` +
            (result.error ? ` (${result.error})` : "") +
            ` [delivery ${result.deliveryId}]`,
        )
        if (!result.ok) return yield* Effect.fail(new AdminError({ message: "the test delivery failed" }))
        return
      }
      case "webhook deliveries": {
        const rows = yield* (yield* WebhookAdmin).deliveries(rest[0], values.status)
        return yield* print(json, rows, () =>
          rows.length === 0
            ? "(none)"
            : rows
                .map(
                  (r) =>
                    `${r.id}  ${r.type}  ${r.status}  attempts=${r.attempts}  created=${r.createdAt}` +
                    (r.nextAttemptAt ? `  next=${r.nextAttemptAt}` : "") +
                    r.log
                      .map(
                        (a) =>
                          `\n    #${a.attempt} ${a.at} ${a.durationMs} ms ${a.status ?? "-"}${a.error ? ` ${a.error}` : ""}`,
                      )
                      .join(""),
                )
                .join("\n"),
        )
      }
      case "webhook redeliver": {
        const result = yield* (yield* AdminActions).redeliver(undefined, rest[0] ?? "", CLI_ACTOR)
        return yield* print(json, result, () => `delivery ${result.id} queued again`)
      }
      default:
        return yield* Effect.fail(new AdminError({ message: `unknown command: ${positionals.join(" ")}\n\n${USAGE}` }))
    }
  })

/** The CLI's own wiring: the admin services on one database client (a short-lived process, one connection). */
const CliLive = AdminServicesLive.pipe(
  Layer.provideMerge(Layer.mergeAll(ReposLive, WebhookSender.Default)),
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(AppConfigLive),
)

if (import.meta.main) {
  const program = run(process.argv.slice(2)).pipe(
    Effect.provide(CliLive),
    Effect.provide(BunContext.layer),
    Effect.provide(CliLoggingLive),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.scoped,
  )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    const error = Option.getOrUndefined(failure)
    if (error instanceof AdminError || error instanceof AccountError) console.error(`error: ${error.message}`)
    else if (ConfigError.isConfigError(error)) console.error(formatConfigError(error))
    else if (error !== undefined && typeof error === "object" && "_tag" in error && error._tag === "SqlError") {
      // The driver's own message ("relation … does not exist", "connection terminated") says what went wrong.
      const cause = (error as { cause?: unknown }).cause
      console.error(`database error: ${cause instanceof Error ? cause.message : String(cause)}`)
    } else console.error(`error: ${Cause.pretty(exit.cause)}`)
    process.exit(1)
  }
  process.exit(0)
}
