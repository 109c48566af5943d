import { Effect, Layer, Logger } from "effect"
import { loggingConfig } from "./config.ts"

/**
 * JSON lines by default (one line per log entry); LOG_FORMAT=pretty for a terminal; LOG_LEVEL (default Info:
 * trace, debug, info, warn or warning, error, fatal, none; any case). Both are read in src/platform/config.ts
 * (`loggingConfig`); a bad value stops start-up naming the variable.
 */
export const LoggingLive = Layer.unwrapEffect(
  Effect.map(loggingConfig, ({ format, level }) =>
    Layer.merge(format === "pretty" ? Logger.pretty : Logger.json, Logger.minimumLogLevel(level)),
  ),
)

/**
 * Command-line tools (admin, demo) log to stderr, so their stdout is only their answer and `--json | jq` works even
 * when a warning is logged (say, a generated SECRET_KEY).
 */
export const CliLoggingLive = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.jsonLogger))
