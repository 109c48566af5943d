import { CliConfig, Command, CommandDescriptor, ValidationError } from "@effect/cli"
import { BunContext } from "@effect/platform-bun"
import { Cause, ConfigError, type Console, Effect, Exit, HashMap, HashSet, Logger, LogLevel, Option } from "effect"
import { PRODUCT } from "../domain/product.ts"
import { formatConfigError } from "../platform/config.ts"
import { CliLoggingLive } from "../platform/logging.ts"
import { databaseSettings, databaseUnreachableLine } from "../platform/startupFailure.ts"
import { audit } from "./cli/audit.ts"
import { backup, restore } from "./cli/backup.ts"
import { bait } from "./cli/bait.ts"
import { channel, webhook } from "./cli/channel.ts"
import { commandLineWords, withoutColours } from "./cli/commandLine.ts"
import { ignore } from "./cli/ignore.ts"
import { incident } from "./cli/incident.ts"
import { key } from "./cli/key.ts"
import { migrate } from "./cli/migrate.ts"
import { network } from "./cli/network.ts"
import { org } from "./cli/org.ts"
import { secrets } from "./cli/secrets.ts"
import { sensor } from "./cli/sensor.ts"
import { UsageError } from "./cli/shared.ts"
import { signIn } from "./cli/signIn.ts"
import { user } from "./cli/user.ts"
import { cliWords } from "./cli/words.ts"
import { isAdminError } from "./errors.ts"

/**
 * `bun run admin`: the operator's commands, one module per command group under cli/, each command declared with
 * its flags and arguments for @effect/cli, which parses the command line and writes the help.
 */
const COMMANDS = [
  migrate,
  org,
  key,
  sensor,
  incident,
  ignore,
  network,
  bait,
  channel,
  webhook,
  user,
  signIn,
  audit,
  backup,
  restore,
  secrets,
] as const
const admin = Command.make("admin").pipe(
  Command.withDescription("operate the service: organizations, keys, sensors, alert channels, users, backups"),
  Command.withSubcommands(COMMANDS),
)

/**
 * The command groups, the commands that have commands of their own (one without any is its own only subcommand): a
 * group's name alone lists its commands.
 */
const GROUP_NAMES = COMMANDS.flatMap(({ descriptor }: { readonly descriptor: CommandDescriptor.Command<unknown> }) => {
  const [name] = HashSet.values(CommandDescriptor.getNames(descriptor))
  return name !== undefined && !HashMap.has(CommandDescriptor.getSubcommands(descriptor), name) ? [name] : []
})

/**
 * The command line as @effect/cli reads it. The help is asked for by `--help` on any command, and as before by
 * `help`, by nothing at all and, for a group's commands, by the group's name alone (`bun run admin org`).
 */
const asRead = (argv: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (argv.length === 0) return ["--help"]
  if (argv[0] === "help") return [...argv.slice(1), "--help"]
  if (argv.length === 1 && GROUP_NAMES.includes(argv[0] ?? "")) return [...argv, "--help"]
  return argv
}

/**
 * @effect/cli prints a refused command line's explanation itself, over several lines: here the entry point prints
 * one line instead (below), so its `Console.error` is silenced; the loggers write through `unsafe`, which stays.
 * The help loses its colours when stdout is not a terminal (a pipe, a file, a test).
 */
const withCliConsole = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.console, (base) =>
    Effect.withConsole(effect, {
      ...base,
      error: () => Effect.void,
      log: (...args: ReadonlyArray<unknown>) =>
        process.stdout.isTTY
          ? base.log(...args)
          : base.log(...args.map((a) => (typeof a === "string" ? withoutColours(a) : a))),
    } satisfies Console.Console),
  )

/** One line for a refusal: the command line's, the services' (errors.ts), the CLI's own, the configuration's. */
const failureLine = (cause: Cause.Cause<unknown>, argv: ReadonlyArray<string>) => {
  const error = Option.getOrUndefined(Cause.failureOption(cause))
  if (ValidationError.isValidationError(error)) {
    const firstFlag = argv.findIndex((word) => word.startsWith("-"))
    return `error: ${commandLineWords(error, firstFlag === -1 ? argv : argv.slice(0, firstFlag), GROUP_NAMES)}`
  }
  if (isAdminError(error)) return `error: ${cliWords(error)}`
  if (error instanceof UsageError) return `error: ${error.message}`
  if (ConfigError.isConfigError(error)) return formatConfigError(error)
  // A database that cannot be started or reached: the server's own line (no stack).
  const unreachable = databaseUnreachableLine(error, Effect.runSync(databaseSettings))
  if (unreachable !== undefined) return unreachable
  if (typeof error === "object" && error !== null && "_tag" in error && error._tag === "SqlError") {
    // The driver's own message ("relation … does not exist", "connection terminated") says what went wrong.
    const driver = (error as { cause?: unknown }).cause
    return `database error: ${driver instanceof Error ? driver.message : String(driver)}`
  }
  return `error: ${Cause.pretty(cause)}`
}

if (import.meta.main) {
  const argv = process.argv.slice(2)
  const run = Command.run(admin, { name: "bun run admin", version: PRODUCT.version })
  const program = withCliConsole(run(["bun", "admin", ...asRead(argv)])).pipe(
    Effect.provide(CliConfig.layer({ showBuiltIns: false })),
    Effect.provide(BunContext.layer),
    Effect.provide(CliLoggingLive),
    Logger.withMinimumLogLevel(LogLevel.Warning),
    Effect.scoped,
  )
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isFailure(exit)) {
    console.error(failureLine(exit.cause, argv))
    process.exit(1)
  }
  process.exit(0)
}
