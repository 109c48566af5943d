import { parseArgs } from "node:util"
import { BunContext } from "@effect/platform-bun"
import { SqlClient } from "@effect/sql"
import { Cause, ConfigError, Data, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import { type ChannelCredential, defaultSettleSeconds, MAX_SETTLE_SECONDS } from "../domain/channels/kinds.ts"
import { CHANNEL_KIND_SPECS, CHANNEL_KINDS, kindSpec } from "../domain/channels/registry.ts"
import { AppConfig, AppConfigLive, formatConfigError } from "../platform/config.ts"
import { DatabaseLive } from "../platform/db/client.ts"
import { migrate } from "../platform/db/migrate.ts"
import { existingKeysLayer, Keys } from "../platform/keys.ts"
import { CliLoggingLive } from "../platform/logging.ts"
import { ChannelSender } from "../platform/outbound/ChannelSender.ts"
import { databaseSettings, databaseUnreachableLine } from "../platform/startupFailure.ts"
import { ReposLive } from "../repos/layers.ts"
import { ApiKeyAdmin } from "./ApiKeyAdmin.ts"
import { asOperator } from "./actor.ts"
import { Backup } from "./Backup.ts"
import { ChannelAdmin, settleWording } from "./ChannelAdmin.ts"
import { auditing } from "./common.ts"
import { cliWords } from "./cli/words.ts"
import { isAdminError } from "./errors.ts"
import { IgnoreAdmin } from "./IgnoreAdmin.ts"
import { IncidentAdmin } from "./IncidentAdmin.ts"
import { JudgementAdmin } from "./JudgementAdmin.ts"
import { AdminServicesLive } from "./layer.ts"
import { OrgAdmin } from "./OrgAdmin.ts"
import { SensorAdmin } from "./SensorAdmin.ts"
import { plainIngestWarning, SENSOR_PROFILES, setupSnippets } from "./sensorSetup.ts"
import { UserAdmin } from "./UserAdmin.ts"

/** A refusal of the CLI itself, worded like the services' (errors.ts): one line. */
class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}
const invalid = (message: string) => new UsageError({ message })

/** What --settle is, from the kinds' descriptors: which kinds settle and their default. */
const SETTLE_USAGE = (() => {
  const people = CHANNEL_KIND_SPECS.filter((spec) => spec.settle.readers === "people")
  const defaults = [...new Set(people.map((spec) => defaultSettleSeconds(spec.settle)))]
  return (
    `${people.map((spec) => spec.name).join(", ")} only: seconds an incident's first message waits so that ` +
    `changes within them make one message (default ${defaults.join(" or ")}, 0 to ${MAX_SETTLE_SECONDS}, 0: off)`
  )
})()

const USAGE = `usage: bun run admin <command> [options] [--json]

  help                                      show this text (also --help, -h)
  migrate                                   apply pending SQL migrations
  org create --name <name> [--allow-duplicate-name]
                                            create an organization (Deception on); a name another
                                            organization has is refused unless --allow-duplicate-name
  org deception <org-id> on|off             switch the Deception feature
  org retention <org-id> <days|default>     keep its events this many days; default: RETENTION_DAYS
  org list
  key create --org <org-id> --name <name> --scopes incidents:read,events:read [--expires <RFC 3339>]
                                            create an API key; the key is printed only here
  key list --org <org-id>                   list keys (never the key value)
  key revoke <key-id>                       revoke a key; effective on the next request
  sensor create --org <org-id> --name <name> [--profile <profile>] [--heartbeat-interval 60s|5m|…|off]
                                            create a sensor; its ingest token is printed only here,
                                            with ready-to-paste configuration (OpenCanary, Cowrie, HEC
                                            shippers, heartbeat); a name another sensor of the
                                            organization has is refused
  sensor profiles                           the profiles a sensor may have, with what each is
  sensor list --org <org-id>                sensors with status (alive, silent, unknown, revoked) and last contact
  sensor rename <sensor-id> --name <name>
  sensor heartbeat <sensor-id> <interval|off>
                                            the heartbeat it promises; three missed make it silent
  sensor rotate <sensor-id> [--grace 24h] [--force]
                                            new token, printed only here with its configuration; the old
                                            one works during the grace;
                                            refused while an earlier grace runs, unless --force (which ends it)
  sensor revoke <sensor-id>                 refuse its token from the next request on (401)
  incident close <incident-id> --reason <reason> [--note <text>]
                                            close an open incident (resolvedAt is set); <reason> is
                                            resolved, false_positive, authorized_test or other
      or: incident close --org <org-id> [--sensor <sensor-id>] [--source <ip>] [--older-than 7d|<date>]
          --reason <reason> [--note <text>] [--dry-run]
                                            close every open incident the filter matches (at most
                                            10000 at once); --dry-run only counts them
  incident note <incident-id> --note <text> add a note to an incident
  ignore add --org <org-id> --source <ip|cidr> [--sensor <sensor-id>] [--port <port>] [--type <event type>]
      [--note <text>] [--expires 7d|<RFC 3339>]
                                            ignore matching events from now on: stored and marked, but
                                            no incident, no webhook, not in the API, feeds or MCP
  ignore list --org <org-id>                the rules, with hits, last hit and expiry; rules that match the
                                            same events are marked
  ignore remove <rule-id>                   stop ignoring from now on (events already ignored stay so)
  network list --org <org-id>               the organization's own networks (a source inside one is internal:
                                            its incidents are at least high); the private ranges until set
  network set --org <org-id> --networks <file|->
                                            replace the list with the file's lines, one "<cidr> <label>" each
                                            (- reads standard input); its incidents are judged again at once
  network reset --org <org-id>              back to the default private ranges; incidents judged again
  bait add --org <org-id> --username <name> --password <password|-> [--label <where it is planted>]
                                            register a planted credential: a login with it makes a critical
                                            incident; only the password's keyed fingerprint is stored
                                            (- reads it from standard input, out of shell history and ps)
  bait list --org <org-id>                  the registered bait credentials (never a password)
  bait remove <bait-id>                     stop recognising it
  channel create --org <org-id> [--kind ${CHANNEL_KINDS.join("|")}] [--format native|ocsf]
      --url <https://…|syslog+tls://host[:6514]|-> [--token <HEC token>|-]
      [--min-severity low|medium|high|critical] [--sensor-health] [--settle <seconds>]
                                            create a channel (default: webhook, native); a webhook's signing
                                            secret is printed only here; a Slack or Teams URL and a HEC token
                                            are credentials, stored sealed and not shown again: --url - or
                                            --token - reads it from standard input (one line), out of shell
                                            history and ps; --format ocsf: webhook, syslog, splunk_hec only;
                                            --sensor-health: also sensor.silent / sensor.recovered (native);
                                            --settle: ${SETTLE_USAGE}
  channel list --org <org-id>               channels with kind and format (never a secret, a token or the
                                            path of a Slack or Teams URL)
  channel rotate <channel-id> [--grace 24h] [--url <new URL>|-] [--token <new HEC token>|-]
                                            webhook: new signing secret, printed only here; the old one also
                                            signs during the grace; slack, teams: the new --url, splunk_hec:
                                            the new --token, at once (- reads it from standard input);
                                            syslog has nothing to rotate
  channel update <channel-id> --settle <seconds>
                                            change the channel's settle window (0 to ${MAX_SETTLE_SECONDS}; 0: off)
  channel disable|enable <channel-id>
  channel sensor-health <channel-id> on|off sensor.silent / sensor.recovered alerts for this channel
  channel test <channel-id>                 send a test message now; prints the receiver's status and time
  channel deliveries <channel-id> [--status pending|failed|succeeded|dead]
                                            the delivery log (attempts, status codes, errors, times)
  channel redeliver <delivery-id>           queue a delivery again now (e.g. a dead one)
                                            webhook … is another name of this group: the same commands
  user create --org <org-id> --email <email> --role admin|analyst
                                            create a console user; prints a one-time link (24 h) to set a password
  user list --org <org-id>                  console users (never a password)
  user disable <user-id>                    disable a user; their sessions end
  user reset <user-id>                      new set-password link; all their sessions end
  user unlock <email>                       forget the failed sign-ins of this email (its sign-in lock)
  backup <file>                             write a consistent backup of the whole database to a new <file>
                                            (gzip'd JSON lines, mode 0600, with a MAC under SECRET_KEY) while
                                            the service runs; it holds sealed secrets and hashes (the MAC is
                                            not encryption): keep SECRET_KEY apart from it
  restore <file>                            check the backup's MAC, then load it into an empty database (a
                                            fresh DATA_DIR or a new database) of the same migration level, in
                                            one transaction; needs the backup's SECRET_KEY (or its secret.key
                                            in DATA_DIR), and the server starts with it
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
      kind: { type: "string" },
      format: { type: "string" },
      url: { type: "string" },
      token: { type: "string" },
      "min-severity": { type: "string" },
      "sensor-health": { type: "boolean" },
      settle: { type: "string" },
      grace: { type: "string" },
      force: { type: "boolean" },
      status: { type: "string" },
      email: { type: "string" },
      role: { type: "string" },
      "allow-duplicate-name": { type: "boolean" },
      reason: { type: "string" },
      note: { type: "string" },
      sensor: { type: "string" },
      source: { type: "string" },
      "older-than": { type: "string" },
      "dry-run": { type: "boolean" },
      port: { type: "string" },
      type: { type: "string" },
      networks: { type: "string" },
      username: { type: "string" },
      password: { type: "string" },
      label: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  })

const print = (json: boolean, value: unknown, human: () => string) =>
  Effect.sync(() => console.log(json ? JSON.stringify(value) : human()))

/**
 * D43: the ready-to-paste configuration for a token just issued (create, rotate), as the console shows it: this
 * service's ingest address, the sensor's profile's snippet first. `human` is the text form, each snippet under its
 * title and where it goes, with the plain-HTTP warning when there is one.
 */
const sensorSetup = (sensorId: string, token: string) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sensor = yield* (yield* SensorAdmin).find(sensorId)
    const snippets = setupSnippets({ ingestUrl: config.ingestUrl, token, profile: sensor.profile })
    const warning = plainIngestWarning(config.appUrl, config.ingestUrl)
    const human = [
      "Paste one of these into the sensor's configuration. They hold the token: like it, they are shown only now.",
      ...(warning === undefined ? [] : [`Warning: ${warning}`]),
      ...snippets.map((s) => `--- ${s.title}\n${s.where}\n\n${s.text}`),
      "docs/connect-a-sensor.md says how to check that the sensor reports.",
    ].join("\n\n")
    return { ingestUrl: config.ingestUrl, snippets, human }
  })

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

/**
 * The usage lines of one command group (`org`, `key`, …): a command's line and the indented lines after it. Every
 * group of USAGE is a command group; `bun run admin <group>` alone prints its lines.
 */
const groupUsage = (group: string) => {
  const lines: Array<string> = []
  let current: string | undefined
  for (const line of USAGE.split("\n").slice(2)) {
    const command = /^ {2}([a-z]+)\b/.exec(line)
    if (command) current = command[1]
    else if (line.trim() === "") current = undefined
    if (current === group && line.trim() !== "") lines.push(line)
  }
  return lines
}
/** Older names of a group, which work exactly as the group does: a webhook is one kind of channel (D46). */
const ALIASES: Readonly<Record<string, string>> = { webhook: "channel" }
const GROUPS = [
  ...new Set(USAGE.split("\n").flatMap((line) => /^ {2}([a-z]+) [a-z]/.exec(line)?.[1] ?? [])),
  ...Object.keys(ALIASES),
]
/** A group's usage lines under the name it was called by (an alias lists its group's commands under its own name). */
const usageOf = (name: string) => {
  const group = ALIASES[name] ?? name
  return groupUsage(group).map((line) =>
    line.startsWith(`  ${group} `) ? `  ${name}${line.slice(group.length + 2)}` : line,
  )
}

/**
 * `--url -` / `--token -`: the value is one line of standard input, trimmed, so a Slack or Teams URL or a HEC token
 * is in neither the shell's history nor `ps`. A terminal is asked for it on stderr (stdout stays the result).
 */
const STDIN = "-"
const readStdinLine = (flag: string) =>
  Effect.gen(function* () {
    if (process.stdin.isTTY) process.stderr.write(`${flag}: `)
    const line = yield* Effect.promise(async () => {
      const decoder = new TextDecoder()
      const reader = Bun.stdin.stream().getReader()
      let text = ""
      try {
        while (!text.includes("\n")) {
          const { done, value } = await reader.read()
          if (done) break
          text += decoder.decode(value, { stream: true })
        }
      } finally {
        // Whatever follows the first line is not read: the value is that one line.
        await reader.cancel().catch(() => undefined)
      }
      return (text.split("\n")[0] ?? "").trim()
    })
    if (line === "") return yield* invalid(`${flag} -: nothing on standard input (it is read as one line)`)
    return line
  })

/** A flag's value, or for `-` the line read from standard input. At most one flag of a command reads it. */
const credential = (value: string | undefined, flag: string) =>
  value === STDIN ? readStdinLine(flag) : Effect.succeed(value)
const oneFromStdin = (values: { readonly url?: string | undefined; readonly token?: string | undefined }) =>
  values.url === STDIN && values.token === STDIN
    ? Effect.fail(invalid("only one of --url and --token can be read from standard input (-)"))
    : Effect.void

/** How messages name what a kind keeps sealed that the admin gave: "HEC token", "URL"; undefined for none. */
const sealedName = (credential: ChannelCredential): string | undefined =>
  credential.type === "sealedToken" ? credential.label : credential.type === "sealedUrl" ? "URL" : undefined

/** The largest network list `network set` reads: far above 500 networks with their labels. */
const NETWORKS_MAX_BYTES = 1024 * 1024

/** A stream's text, or undefined as soon as it passes `max` bytes (nothing more is read: a file may be /dev/zero). */
const readBounded = async (stream: ReadableStream<Uint8Array>, max: number): Promise<string | undefined> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of stream) {
    size += chunk.byteLength
    if (size > max) return undefined
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

/** The one message of a missing flag or argument, the services' own (`--org is required`). */
const requireFlag = (value: string | undefined, flag: string) =>
  value === undefined || value === "" ? Effect.fail(invalid(`${flag} is required`)) : Effect.succeed(value)

const run = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { values, positionals } = yield* Effect.try({
      try: () => parse(argv),
      catch: (e) => new UsageError({ message: `${(e as Error).message} (bun run admin help lists the commands)` }),
    })
    const json = values.json === true
    const [named, command, ...rest] = positionals
    if (values.help || named === undefined || named === "help") return yield* Effect.sync(() => console.log(USAGE))
    if (GROUPS.includes(named) && command === undefined) {
      return yield* Effect.sync(() =>
        console.log(`usage: bun run admin ${named} <command> [options] [--json]\n\n${usageOf(named).join("\n")}`),
      )
    }
    const group = ALIASES[named] ?? named
    yield* migrate
    if (group === "migrate") return yield* print(json, { migrated: true }, () => "migrations are up to date")
    const orgs = yield* OrgAdmin
    const keys = yield* ApiKeyAdmin
    const sensors = yield* SensorAdmin
    const channels = yield* ChannelAdmin
    const users = yield* UserAdmin
    const ignores = yield* IgnoreAdmin
    const judgement = yield* JudgementAdmin
    // `backup <file>` and `restore <file>` are commands of their own, not groups: their argument is a file.
    const whole = group === "backup" || group === "restore"
    if (whole && rest.length > 0)
      return yield* invalid(`${group} takes one <file>, got: ${[command, ...rest].join(" ")}`)
    switch (whole ? group : `${group} ${command ?? ""}`) {
      case "org create": {
        const org = yield* orgs.create(values.name, { allowDuplicate: values["allow-duplicate-name"] === true })
        return yield* print(json, org, () => `organization ${org.id} created (Deception on)`)
      }
      case "org deception": {
        const result = yield* orgs.setDeception(
          yield* requireFlag(rest[0], "<org-id>"),
          yield* requireFlag(rest[1], "on|off"),
        )
        return yield* print(json, result, () => `Deception ${result.deception} for ${result.id}`)
      }
      case "org retention": {
        const result = yield* orgs.setRetention(
          yield* requireFlag(rest[0], "<org-id>"),
          yield* requireFlag(rest[1], "<days|default>"),
        )
        return yield* print(
          json,
          result,
          () =>
            `${result.id} keeps its events ${result.retentionDays === null ? "for RETENTION_DAYS (the default)" : `${result.retentionDays} days`}`,
        )
      }
      case "org list": {
        const rows = yield* orgs.list()
        return yield* print(json, rows, () => table(rows))
      }
      case "key create": {
        const key = yield* keys.create(yield* requireFlag(values.org, "--org"), {
          name: values.name,
          scopes: values.scopes,
          expires: values.expires,
        })
        return yield* print(json, key, () => `key ${key.id} created. Store it now; it is not shown again:\n${key.key}`)
      }
      case "key list": {
        const rows = yield* keys.list(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () => table(rows))
      }
      case "key revoke": {
        const result = yield* keys.revoke(yield* requireFlag(rest[0], "<key-id>"))
        return yield* print(json, result, () => `key ${result.id} revoked`)
      }
      case "sensor create": {
        const sensor = yield* sensors.create(yield* requireFlag(values.org, "--org"), {
          name: values.name,
          profile: values.profile,
          heartbeatInterval: values["heartbeat-interval"],
        })
        const setup = yield* sensorSetup(sensor.id, sensor.token)
        return yield* print(
          json,
          { id: sensor.id, token: sensor.token, ingestUrl: setup.ingestUrl, setup: setup.snippets },
          () =>
            `sensor ${sensor.id} created. Its ingest token, shown only now:\n${sensor.token}\n` +
            `It reports to ${setup.ingestUrl}.\n\n${setup.human}`,
        )
      }
      case "sensor profiles": {
        const rows = SENSOR_PROFILES.map((p) => ({ id: p.id, description: p.description }))
        return yield* print(json, rows, () => rows.map((r) => `${r.id.padEnd(22)} ${r.description}`).join("\n"))
      }
      case "sensor list": {
        const rows = yield* sensors.list(yield* requireFlag(values.org, "--org"))
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
        const done = yield* sensors.rename(yield* requireFlag(rest[0], "<sensor-id>"), values.name)
        return yield* print(json, { id: done.id, name: done.name }, () => `sensor ${done.id} renamed to ${done.name}`)
      }
      case "sensor heartbeat": {
        const done = yield* sensors.setHeartbeat(
          yield* requireFlag(rest[0], "<sensor-id>"),
          yield* requireFlag(rest[1], "<interval|off>"),
        )
        return yield* print(json, done, () =>
          done.heartbeatIntervalSeconds === null
            ? `sensor ${done.id}: no heartbeat expected`
            : `sensor ${done.id}: a heartbeat every ${done.heartbeatIntervalSeconds}s; silent after three missed`,
        )
      }
      case "sensor rotate": {
        const rotated = yield* sensors.rotate(
          yield* requireFlag(rest[0], "<sensor-id>"),
          values.grace,
          values.force === true,
        )
        const setup = yield* sensorSetup(rotated.id, rotated.token)
        return yield* print(
          json,
          { ...rotated, ingestUrl: setup.ingestUrl, setup: setup.snippets },
          () =>
            `new ingest token of ${rotated.id}, shown only now:\n${rotated.token}` +
            (rotated.previousTokenValidUntil
              ? `\nthe old token also works until ${rotated.previousTokenValidUntil}`
              : "\nthe old token no longer works") +
            `\n\nReplace the old token in the sensor's configuration:\n\n${setup.human}`,
        )
      }
      case "sensor revoke": {
        const done = yield* sensors.revoke(yield* requireFlag(rest[0], "<sensor-id>"))
        return yield* print(json, { id: done.id, revoked: true }, () =>
          done.changed
            ? `sensor ${done.id} revoked; its token is refused from now on`
            : `sensor ${done.id} was already revoked`,
        )
      }
      case "incident close": {
        const incidentAdmin = yield* IncidentAdmin
        const filter = { sensor: values.sensor, source: values.source, olderThan: values["older-than"] }
        const filterFlags = [
          values.org !== undefined && "--org",
          filter.sensor !== undefined && "--sensor",
          filter.source !== undefined && "--source",
          filter.olderThan !== undefined && "--older-than",
          values["dry-run"] === true && "--dry-run",
        ].filter((f): f is string => typeof f === "string")
        if (rest[0] !== undefined && filterFlags.length > 0) {
          // An id closes that one incident: a filter beside it would be silently dropped, so the two are refused.
          return yield* invalid(
            `an <incident-id> closes that one incident: ${filterFlags.join(", ")} cannot go with it (a bulk close is --org and a filter, without an id)`,
          )
        }
        if (rest[0] === undefined && (values.org !== undefined || Object.values(filter).some((v) => v !== undefined))) {
          const orgId = yield* requireFlag(values.org, "--org")
          if (values["dry-run"] === true) {
            const preview = yield* incidentAdmin.previewBulk(orgId, filter)
            return yield* print(
              json,
              { matching: preview.matching, wouldClose: preview.wouldClose },
              () => `${preview.matching} open incident(s) match; a close would close ${preview.wouldClose}`,
            )
          }
          yield* requireFlag(values.reason, "--reason")
          const result = yield* incidentAdmin.closeBulk(orgId, filter, { reason: values.reason, note: values.note })
          // Without a previewed count the close never stops for a changed count.
          if (result._tag !== "Closed") return yield* invalid("the matching incidents changed: run it again")
          const { _tag, ...done } = result
          return yield* print(
            json,
            done,
            () =>
              `${done.closed} incident(s) closed (${done.reason})` +
              (done.remaining > 0 ? `; ${done.remaining} still match: run it again` : ""),
          )
        }
        const incidentId = yield* requireFlag(rest[0], "<incident-id>")
        yield* requireFlag(values.reason, "--reason")
        const result = yield* incidentAdmin.close(incidentId, { reason: values.reason, note: values.note })
        return yield* print(
          json,
          result,
          () => `incident ${result.id} closed at ${result.resolvedAt} (${result.reason})`,
        )
      }
      case "incident note": {
        const incidentId = yield* requireFlag(rest[0], "<incident-id>")
        const added = yield* (yield* IncidentAdmin).addNote(incidentId, yield* requireFlag(values.note, "--note"))
        return yield* print(json, added, () => `note ${added.id} added to ${added.incidentId}`)
      }
      case "user create": {
        const created = yield* users.create({
          orgId: yield* requireFlag(values.org, "--org"),
          email: yield* requireFlag(values.email, "--email"),
          role: yield* requireFlag(values.role, "--role"),
        })
        return yield* print(
          json,
          created,
          () =>
            `user ${created.id} (${created.email}, ${created.role}) created. One-time link to set a password, valid until ${created.linkExpiresAt}:\n${created.link}`,
        )
      }
      case "user list": {
        const rows = yield* users.list(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () => table(rows))
      }
      case "user disable": {
        const result = yield* users.disable(yield* requireFlag(rest[0], "<user-id>"))
        return yield* print(json, result, () => `user ${result.id} disabled; their sessions ended`)
      }
      case "user reset": {
        const reset = yield* users.reset(yield* requireFlag(rest[0], "<user-id>"))
        return yield* print(
          json,
          reset,
          () =>
            `sessions of ${reset.email} ended. One-time link to set a new password, valid until ${reset.linkExpiresAt}:\n${reset.link}`,
        )
      }
      case "user unlock": {
        const unlocked = yield* users.unlock(yield* requireFlag(rest[0], "<email>"))
        return yield* print(
          json,
          unlocked,
          () => `${unlocked.email}: ${unlocked.cleared} failed sign-in(s) forgotten; every address may sign in again`,
        )
      }
      case "backup": {
        const done = yield* (yield* Backup).backup(yield* requireFlag(command, "<file>"))
        return yield* print(json, done, () => {
          const rows = Object.values(done.tables).reduce((a, b) => a + b, 0)
          return `backup written to ${done.file}: ${rows} rows of ${Object.keys(done.tables).length} tables, ${done.bytes} bytes in ${done.durationMs} ms (migration ${done.migration}, key id ${done.keyId})`
        })
      }
      case "restore": {
        const done = yield* (yield* Backup).restore(yield* requireFlag(command, "<file>"))
        return yield* print(
          json,
          done,
          () =>
            `restored ${done.rows} rows of ${Object.keys(done.tables).length} tables from ${done.file} in ${done.durationMs} ms (migration ${done.migration}; its MAC checked); start the server with the same key`,
        )
      }
      case "secrets reseal": {
        const sql = yield* SqlClient.SqlClient
        const { audited } = yield* auditing
        // Audited like every command: one row, committed with the resealed secrets.
        const { orgKeys, channelSecrets } = yield* sql.withTransaction(
          Effect.gen(function* () {
            const orgKeys = yield* orgs.resealFingerprintKeys()
            const channelSecrets = yield* channels.resealSecrets()
            const unreadable = orgKeys.unreadable.length + channelSecrets.unreadable.length
            yield* audited(
              null,
              "secrets.reseal",
              null,
              `${orgKeys.resealed} fingerprint key(s) and ${channelSecrets.resealed} channel secret(s) resealed` +
                (unreadable > 0 ? `; ${unreadable} could not be opened` : ""),
            )
            return { orgKeys, channelSecrets }
          }),
        )
        const result = { fingerprintKeys: orgKeys, channelSecrets }
        const unreadable = [...orgKeys.unreadable, ...channelSecrets.unreadable]
        yield* print(
          json,
          result,
          () =>
            `resealed ${orgKeys.resealed} organization fingerprint key(s) and ${channelSecrets.resealed} channel secret(s)` +
            (unreadable.length > 0
              ? `\ncannot open (set SECRET_KEY_PREVIOUS to their key): ${unreadable.join(", ")}`
              : ""),
        )
        if (unreadable.length > 0) return yield* invalid("some secrets could not be opened")
        return
      }
      case "ignore add": {
        const rule = yield* ignores.add(yield* requireFlag(values.org, "--org"), {
          source: yield* requireFlag(values.source, "--source"),
          sensor: values.sensor,
          port: values.port,
          type: values.type,
          note: values.note,
          expires: values.expires,
        })
        return yield* print(
          json,
          rule,
          () =>
            `ignore rule ${rule.id} added: events from ${rule.source}` +
            (rule.sensorId ? ` on ${rule.sensorId}` : "") +
            (rule.port !== null ? ` to port ${rule.port}` : "") +
            (rule.eventType ? ` of type ${rule.eventType}` : "") +
            ` are ignored from now on${rule.expiresAt ? ` until ${rule.expiresAt}` : ""}` +
            (rule.sameAs.length > 0 ? `\nnote: ${rule.sameAs.join(", ")} already match the same events` : ""),
        )
      }
      case "ignore list": {
        const rows = yield* ignores.list(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () =>
          table(
            rows.map((r) => ({
              id: r.id,
              source: r.source,
              sensor: r.sensorId ?? "any",
              port: r.port ?? "any",
              type: r.eventType ?? "any",
              hits: r.hitCount,
              lastHit: r.lastHitAt ?? "never",
              expires: r.expiresAt === null ? "never" : `${r.expiresAt}${r.expired ? " (expired)" : ""}`,
              createdBy: r.createdBy,
              note: JSON.stringify(r.note),
              ...(r.sameAs.length > 0 ? { duplicateOf: r.sameAs } : {}),
            })),
          ),
        )
      }
      case "network list": {
        const view = yield* judgement.networks(yield* requireFlag(values.org, "--org"))
        return yield* print(json, view, () =>
          [
            view.custom ? "the organization's networks:" : "the default private ranges (no list was set):",
            ...view.networks.map((n) => `  ${n.cidr.padEnd(20)} ${n.label}`),
          ].join("\n"),
        )
      }
      case "network set":
      case "network reset": {
        const orgId = yield* requireFlag(values.org, "--org")
        let text: string | null = null
        if (command === "set") {
          const from = yield* requireFlag(values.networks, "--networks")
          const read = yield* Effect.tryPromise({
            try: () => readBounded(from === STDIN ? Bun.stdin.stream() : Bun.file(from).stream(), NETWORKS_MAX_BYTES),
            catch: () => invalid(`--networks: cannot read ${from === STDIN ? "standard input" : from}`),
          })
          if (read === undefined) return yield* invalid("--networks: the list is larger than 1 MiB")
          text = read
        }
        const done = yield* judgement.setNetworks(orgId, text)
        return yield* print(
          json,
          { networks: done.networks, custom: done.custom, rejudged: done.rejudged },
          () =>
            `${done.networks.length} networks${done.custom ? "" : " (the default private ranges)"}; ` +
            `${done.rejudged} incidents judged again`,
        )
      }
      case "bait add": {
        const orgId = yield* requireFlag(values.org, "--org")
        yield* requireFlag(values.password, "--password")
        const added = yield* judgement.baitAdd(orgId, {
          username: values.username,
          password: yield* credential(values.password, "--password"),
          label: values.label,
        })
        return yield* print(
          json,
          added,
          () => `bait credential ${added.id} registered for username ${JSON.stringify(added.username)}`,
        )
      }
      case "bait list": {
        const rows = yield* judgement.baitList(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () =>
          table(
            rows.map((r) => ({ id: r.id, username: JSON.stringify(r.username), label: r.label, created: r.createdAt })),
          ),
        )
      }
      case "bait remove": {
        const done = yield* judgement.baitRemove(yield* requireFlag(rest[0], "<bait-id>"))
        return yield* print(json, done, () => `bait credential ${done.id} removed`)
      }
      case "ignore remove": {
        const done = yield* ignores.remove(yield* requireFlag(rest[0], "<rule-id>"))
        return yield* print(
          json,
          done,
          () => `ignore rule ${done.id} removed; later events are no longer ignored by it`,
        )
      }
      case "channel create": {
        const orgId = yield* requireFlag(values.org, "--org")
        yield* requireFlag(values.url, "--url")
        yield* oneFromStdin(values)
        const created = yield* channels.create(orgId, {
          kind: values.kind,
          format: values.format,
          url: yield* credential(values.url, "--url"),
          // Read only for a kind that takes a token: any other refuses --token before a terminal is asked for it.
          token:
            kindSpec(values.kind ?? "webhook")?.credential.type === "sealedToken"
              ? yield* credential(values.token, "--token")
              : values.token,
          minSeverity: values["min-severity"],
          sensorHealth: values["sensor-health"] === true,
          settle: values.settle,
        })
        const result = {
          id: created.id,
          kind: created.kind,
          format: values.format ?? "native",
          settleSeconds: created.settleSeconds,
          secret: created.secret,
        }
        const sealed = sealedName(kindSpec(created.kind).credential)
        const settle = created.settleSeconds > 0 ? ` (${settleWording(created.settleSeconds)})` : ""
        return yield* print(json, result, () =>
          created.secret !== undefined
            ? `${created.kind} channel ${created.id} created${settle}. Its signing secret, shown only now:\n${created.secret}`
            : `${created.kind} channel ${created.id} created${settle}` +
              (sealed === undefined ? "" : `; its ${sealed} is stored sealed and not shown again`),
        )
      }
      case "channel list": {
        const rows = yield* channels.list(yield* requireFlag(values.org, "--org"))
        return yield* print(json, rows, () => table(rows))
      }
      case "channel rotate": {
        const channel = yield* channels.find(yield* requireFlag(rest[0], "<channel-id>"))
        // The flags a kind's credential takes; any other is refused rather than silently dropped.
        const kindCredential = kindSpec(channel.kind).credential
        const type = kindCredential.type
        if (type === "signingSecret" && (values.url !== undefined || values.token !== undefined)) {
          return yield* invalid(
            `a ${channel.kind} channel gets a new signing secret: --url and --token are for other kinds`,
          )
        }
        if (type === "sealedToken" && values.url !== undefined) {
          return yield* invalid(`a ${channel.kind} channel takes a new ${kindCredential.flag} (its URL stays)`)
        }
        if (type === "sealedUrl" && values.token !== undefined) {
          return yield* invalid(`a ${channel.kind} channel takes a new --url, not --token`)
        }
        yield* oneFromStdin(values)
        // Standard input is not read for a rotation the service refuses anyway (no credential given by the admin, or
        // --grace beside a new value).
        const replacement =
          type === "signingSecret" || type === "none" || values.grace !== undefined
            ? undefined
            : type === "sealedToken"
              ? yield* credential(values.token, kindCredential.flag)
              : yield* credential(values.url, "--url")
        const rotated = yield* channels.rotate(channel.id, values.grace, replacement)
        return yield* print(
          json,
          { kind: channel.kind, secret: rotated.secret, previousSecretValidUntil: rotated.previousSecretValidUntil },
          () =>
            rotated.secret === undefined
              ? `${channel.kind} channel ${rotated.id}: the new ${sealedName(kindCredential)} is stored sealed and used from now on`
              : `new signing secret of ${rotated.id}, shown only now:\n${rotated.secret}` +
                (rotated.previousSecretValidUntil
                  ? `\nthe old secret also signs until ${rotated.previousSecretValidUntil}`
                  : ""),
        )
      }
      case "channel update": {
        const channelId = yield* requireFlag(rest[0], "<channel-id>")
        const result = yield* channels.setSettle(channelId, yield* requireFlag(values.settle, "--settle"))
        return yield* print(
          json,
          result,
          () =>
            `channel ${result.id}: ${result.settleSeconds === 0 ? "settle window off: every change is sent at once" : `an incident's first message waits ${result.settleSeconds} s`}`,
        )
      }
      case "channel disable":
      case "channel enable": {
        const result = yield* channels.setEnabled(yield* requireFlag(rest[0], "<channel-id>"), command === "enable")
        return yield* print(json, result, () => `channel ${result.id} ${result.enabled ? "enabled" : "disabled"}`)
      }
      case "channel sensor-health": {
        const channelId = yield* requireFlag(rest[0], "<channel-id>")
        const state = yield* requireFlag(rest[1], "on|off")
        if (state !== "on" && state !== "off") return yield* invalid(`${named} sensor-health needs on or off`)
        const result = yield* channels.setSensorHealth(channelId, state === "on")
        return yield* print(
          json,
          result,
          () => `channel ${result.id}: sensor-health alerts ${result.sensorHealth ? "on" : "off"}`,
        )
      }
      case "channel test": {
        const result = yield* channels.test(yield* requireFlag(rest[0], "<channel-id>"))
        yield* print(
          json,
          result,
          () =>
            `${result.ok ? "delivered" : "failed"}: ${result.status === null ? "no HTTP status" : `HTTP ${result.status}`} in ${result.durationMs} ms` +
            (result.error ? ` (${result.error})` : "") +
            ` [delivery ${result.deliveryId}]`,
        )
        if (!result.ok) return yield* invalid("the test delivery failed")
        return
      }
      case "channel deliveries": {
        const rows = yield* channels.deliveries(yield* requireFlag(rest[0], "<channel-id>"), values.status)
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
      case "channel redeliver": {
        const result = yield* channels.redeliver(yield* requireFlag(rest[0], "<delivery-id>"))
        return yield* print(json, result, () => `delivery ${result.id} queued again`)
      }
      default: {
        const known = GROUPS.includes(named)
        return yield* new UsageError({
          message: `unknown command: ${positionals.join(" ")} (${known ? `bun run admin ${named}` : "bun run admin help"} lists the commands)`,
        })
      }
    }
  }).pipe(asOperator)

/**
 * `restore` needs the backed-up service's key (to check the backup's MAC and open its sealed secrets): without
 * SECRET_KEY it takes an existing DATA_DIR/secret.key, and never generates one as other commands do on a first start.
 */
const RESTORE_KEY_MISSING =
  "restore needs the SECRET_KEY of the service that wrote the backup: set SECRET_KEY to that key (or put that " +
  "service's secret.key into DATA_DIR); nothing was restored"

/** Whether the command line is a restore (not its help), decided before the CLI's layers are built. */
const isRestore = (argv: ReadonlyArray<string>) => {
  try {
    const { values, positionals } = parse(argv)
    return positionals[0] === "restore" && values.help !== true
  } catch {
    return false
  }
}

/** The CLI's own wiring: the admin services on one database client (a short-lived process, one connection). */
const cliLive = (argv: ReadonlyArray<string>) =>
  AdminServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(ReposLive, ChannelSender.Default)),
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(isRestore(argv) ? existingKeysLayer(RESTORE_KEY_MISSING) : Keys.Default),
    Layer.provideMerge(AppConfigLive),
  )

if (import.meta.main) {
  const argv = process.argv.slice(2)
  const program = run(argv).pipe(
    Effect.provide(cliLive(argv)),
    Effect.provide(BunContext.layer),
    Effect.provide(CliLoggingLive),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.scoped,
  )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    const error = Option.getOrUndefined(failure)
    // One line for every refusal: the services' (errors.ts) and the CLI's own.
    if (isAdminError(error)) console.error(`error: ${cliWords(error)}`)
    else if (error instanceof UsageError) console.error(`error: ${error.message}`)
    else if (ConfigError.isConfigError(error)) console.error(formatConfigError(error))
    else {
      // A database that cannot be started or reached: the server's own line (no stack).
      const unreachable = databaseUnreachableLine(error, Effect.runSync(databaseSettings))
      if (unreachable !== undefined) console.error(unreachable)
      else if (error !== undefined && typeof error === "object" && "_tag" in error && error._tag === "SqlError") {
        // The driver's own message ("relation … does not exist", "connection terminated") says what went wrong.
        const cause = (error as { cause?: unknown }).cause
        console.error(`database error: ${cause instanceof Error ? cause.message : String(cause)}`)
      } else console.error(`error: ${Cause.pretty(exit.cause)}`)
    }
    process.exit(1)
  }
  process.exit(0)
}
