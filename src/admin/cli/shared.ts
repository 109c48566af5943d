import { Args, Options } from "@effect/cli"
import { Data, Effect, Layer, Option } from "effect"
import { AppConfigLive } from "../../platform/config.ts"
import { DatabaseLive } from "../../platform/db/client.ts"
import { migrate } from "../../platform/db/migrate.ts"
import { existingKeysLayer, Keys } from "../../platform/keys.ts"
import { ChannelSender } from "../../platform/outbound/ChannelSender.ts"
import { ReposLive } from "../../repos/layers.ts"
import { type AdminActor, asOperator } from "../actor.ts"
import { AdminServicesLive } from "../layer.ts"

/** A refusal of the CLI itself (its own flags and arguments), printed as one line like the services' refusals. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}
export const usage = (message: string) => new UsageError({ message })

/** Every command's `--json`: the result as one JSON value on stdout instead of text. */
export const json = Options.boolean("json").pipe(Options.withDescription("print the result as one JSON value"))

/** A flag every run of the command needs: @effect/cli refuses its absence (`--org is required`). */
export const flag = (name: string, placeholder: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(placeholder), Options.withDescription(description))

/** A flag that may be left out (undefined then), or whose absence the command or its service words itself. */
export const optionalFlag = (name: string, placeholder: string, description: string) =>
  flag(name, placeholder, description).pipe(Options.optional, Options.map(Option.getOrUndefined))

export const switchFlag = (name: string, description: string) =>
  Options.boolean(name).pipe(Options.withDescription(description))

/**
 * An argument in place (`<sensor-id>`). Declared optional so that the command says what is missing in the order it
 * always has (the id before any flag) with the same words as a missing flag: `<sensor-id> is required`.
 */
export const argument = (name: string, description: string) =>
  Args.text({ name }).pipe(Args.withDescription(description), Args.optional, Args.map(Option.getOrUndefined))

/** The value of a flag or argument that must be there and not empty; `name` is how the refusal names it. */
export const required = (value: string | undefined, name: string) =>
  value === undefined || value === "" ? Effect.fail(usage(`${name} is required`)) : Effect.succeed(value)

export const print = (json: boolean, value: unknown, human: () => string) =>
  Effect.sync(() => console.log(json ? JSON.stringify(value) : human()))

export const table = (rows: ReadonlyArray<Record<string, unknown>>) =>
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
 * `restore` needs the backed-up service's key (to check the backup's MAC and open its sealed secrets): without
 * SECRET_KEY it takes an existing DATA_DIR/secret.key, and never generates one as other commands do on a first start.
 */
const RESTORE_KEY_MISSING =
  "restore needs the SECRET_KEY of the service that wrote the backup: set SECRET_KEY to that key (or put that " +
  "service's secret.key into DATA_DIR); nothing was restored"

/** The CLI's own wiring: the admin services on one database client (a short-lived process, one connection). */
const cliLive = (keys: "generated" | "existing") =>
  AdminServicesLive.pipe(
    Layer.provideMerge(Layer.mergeAll(ReposLive, ChannelSender.Default)),
    Layer.provideMerge(DatabaseLive),
    Layer.provideMerge(keys === "existing" ? existingKeysLayer(RESTORE_KEY_MISSING) : Keys.Default),
    Layer.provideMerge(AppConfigLive),
  )
type CliServices = Layer.Layer.Success<ReturnType<typeof cliLive>>

/**
 * A command's work as the operator, after the pending migrations, on the services built for it alone: help and a
 * refused command line start no database. `keys: "existing"` is restore's (it never generates a SECRET_KEY).
 */
export const asAdmin = <A, E, R extends CliServices | AdminActor>(
  effect: Effect.Effect<A, E, R>,
  keys: "generated" | "existing" = "generated",
) => migrate.pipe(Effect.zipRight(asOperator(effect)), Effect.provide(cliLive(keys)))

/**
 * `--url -`, `--token -`, `--password -`: the value is one line of standard input, trimmed, so a secret is in neither
 * the shell's history nor `ps`. A terminal is asked for it on stderr (stdout stays the result).
 */
export const STDIN = "-"
const readStdinLine = (flagName: string) =>
  Effect.gen(function* () {
    if (process.stdin.isTTY) process.stderr.write(`${flagName}: `)
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
    if (line === "") return yield* usage(`${flagName} -: nothing on standard input (it is read as one line)`)
    return line
  })

/** A flag's value, or for `-` the line read from standard input. At most one flag of a command reads it. */
export const credential = (value: string | undefined, flagName: string) =>
  value === STDIN ? readStdinLine(flagName) : Effect.succeed(value)
