import { Config, ConfigError, Effect, Either, Layer, Logger, LogLevel } from "effect"

/**
 * JSON lines by default (one line per log entry); LOG_FORMAT=pretty for a terminal; LOG_LEVEL (default Info:
 * trace, debug, info, warn or warning, error, fatal, none; any case). A bad value stops start-up naming the variable.
 */
const LEVELS: Record<string, LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
}

export const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const format = yield* Config.literal("json", "pretty")("LOG_FORMAT").pipe(Config.withDefault("json" as const))
    const level = yield* Config.string("LOG_LEVEL").pipe(
      Config.withDefault("info"),
      Config.mapOrFail((text) => {
        const level = LEVELS[text.trim().toLowerCase()]
        return level === undefined
          ? Either.left(
              ConfigError.InvalidData(["LOG_LEVEL"], `Expected one of ${Object.keys(LEVELS).join(", ")}; got ${text}`),
            )
          : Either.right(level)
      }),
    )
    return Layer.merge(format === "pretty" ? Logger.pretty : Logger.json, Logger.minimumLogLevel(level))
  }),
)

/**
 * Command-line tools (admin, demo) log to stderr, so their stdout is only their answer and `--json | jq` works even
 * when a warning is logged (say, a generated SECRET_KEY).
 */
export const CliLoggingLive = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.jsonLogger))
