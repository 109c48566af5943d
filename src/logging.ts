import { Logger } from "effect"

/** JSON lines by default (one line per log entry); LOG_FORMAT=pretty for a terminal. */
export const LoggingLive = process.env.LOG_FORMAT === "pretty" ? Logger.pretty : Logger.json
