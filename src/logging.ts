import { Logger } from "effect"

/** JSON lines by default (one line per log entry); LOG_FORMAT=pretty for a terminal. */
export const LoggingLive = process.env.LOG_FORMAT === "pretty" ? Logger.pretty : Logger.json

/**
 * Command-line tools (admin, demo) log to stderr, so their stdout is only their answer and `--json | jq` works even
 * when a warning is logged (say, a generated SECRET_KEY).
 */
export const CliLoggingLive = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.jsonLogger))
