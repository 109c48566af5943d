import { Command } from "@effect/cli"
import { Effect } from "effect"
import { AppConfig } from "../../platform/config.ts"
import { SensorAdmin } from "../SensorAdmin.ts"
import { plainIngestWarning, SENSOR_PROFILES, setupSnippets } from "../sensorSetup.ts"
import { argument, asAdmin, flag, json, optionalFlag, print, required, switchFlag, table } from "./shared.ts"

/**
 * The ready-to-paste configuration for a token just issued (create, rotate), as the console shows it: this service's
 * ingest address, the sensor's profile's snippet first. `human` is the text form, each snippet under its title and
 * where it goes, with the plain-HTTP warning when there is one.
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

const org = flag("org", "<org-id>", "the organization")
const sensorId = argument("sensor-id", "the sensor")

const create = Command.make(
  "create",
  {
    org,
    name: flag("name", "<name>", "a name no other sensor of the organization has"),
    profile: optionalFlag("profile", "<profile>", "what the sensor is (bun run admin sensor profiles lists them)"),
    heartbeatInterval: optionalFlag(
      "heartbeat-interval",
      "60s|5m|…|off",
      "the heartbeat it promises; three missed make it silent",
    ),
    json,
  },
  ({ org, name, profile, heartbeatInterval, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const sensor = yield* (yield* SensorAdmin).create(yield* required(org, "--org"), {
          name,
          profile,
          heartbeatInterval,
        })
        const setup = yield* sensorSetup(sensor.id, sensor.token)
        return yield* print(
          json,
          { id: sensor.id, token: sensor.token, ingestUrl: setup.ingestUrl, setup: setup.snippets },
          () =>
            `sensor ${sensor.id} created. Its ingest token, shown only now:\n${sensor.token}\n` +
            `It reports to ${setup.ingestUrl}.\n\n${setup.human}`,
        )
      }),
    ),
).pipe(
  Command.withDescription(
    "create a sensor; its ingest token is printed only here, with ready-to-paste configuration (OpenCanary, " +
      "Cowrie, HEC shippers, heartbeat); a name another sensor of the organization has is refused",
  ),
)

const profiles = Command.make("profiles", { json }, ({ json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = SENSOR_PROFILES.map((p) => ({ id: p.id, description: p.description }))
      return yield* print(json, rows, () => rows.map((r) => `${r.id.padEnd(22)} ${r.description}`).join("\n"))
    }),
  ),
).pipe(Command.withDescription("the profiles a sensor may have, with what each is"))

const list = Command.make("list", { org, json }, ({ org, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const rows = yield* (yield* SensorAdmin).list(yield* required(org, "--org"))
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
    }),
  ),
).pipe(Command.withDescription("sensors with status (alive, silent, unknown, revoked) and last contact"))

const rename = Command.make(
  "rename",
  // --name is the service's to require, after the sensor's id.
  { sensorId, name: optionalFlag("name", "<name>", "the new name"), json },
  ({ sensorId, name, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const done = yield* (yield* SensorAdmin).rename(yield* required(sensorId, "<sensor-id>"), name)
        return yield* print(json, { id: done.id, name: done.name }, () => `sensor ${done.id} renamed to ${done.name}`)
      }),
    ),
).pipe(Command.withDescription("rename a sensor"))

const heartbeat = Command.make(
  "heartbeat",
  { sensorId, interval: argument("interval|off", "60s, 5m, … or off"), json },
  ({ sensorId, interval, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const done = yield* (yield* SensorAdmin).setHeartbeat(
          yield* required(sensorId, "<sensor-id>"),
          yield* required(interval, "<interval|off>"),
        )
        return yield* print(json, done, () =>
          done.heartbeatIntervalSeconds === null
            ? `sensor ${done.id}: no heartbeat expected`
            : `sensor ${done.id}: a heartbeat every ${done.heartbeatIntervalSeconds}s; silent after three missed`,
        )
      }),
    ),
).pipe(Command.withDescription("the heartbeat it promises; three missed make it silent"))

const rotate = Command.make(
  "rotate",
  {
    sensorId,
    grace: optionalFlag("grace", "24h", "how long the old token still works (default: not at all)"),
    force: switchFlag("force", "end an earlier rotation's grace that still runs"),
    json,
  },
  ({ sensorId, grace, force, json }) =>
    asAdmin(
      Effect.gen(function* () {
        const rotated = yield* (yield* SensorAdmin).rotate(yield* required(sensorId, "<sensor-id>"), grace, force)
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
      }),
    ),
).pipe(
  Command.withDescription(
    "new token, printed only here with its configuration; the old one works during the grace; refused while an " +
      "earlier grace runs, unless --force (which ends it)",
  ),
)

const revoke = Command.make("revoke", { sensorId, json }, ({ sensorId, json }) =>
  asAdmin(
    Effect.gen(function* () {
      const done = yield* (yield* SensorAdmin).revoke(yield* required(sensorId, "<sensor-id>"))
      return yield* print(json, { id: done.id, revoked: true }, () =>
        done.changed
          ? `sensor ${done.id} revoked; its token is refused from now on`
          : `sensor ${done.id} was already revoked`,
      )
    }),
  ),
).pipe(Command.withDescription("refuse its token from the next request on (401)"))

export const sensor = Command.make("sensor").pipe(
  Command.withDescription("sensors"),
  Command.withSubcommands([create, profiles, list, rename, heartbeat, rotate, revoke]),
)
