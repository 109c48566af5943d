import {
  Cause,
  Clock,
  Context,
  Effect,
  type Fiber,
  FiberRef,
  HashMap,
  HashSet,
  Inspectable,
  Layer,
  Logger,
  LogLevel,
} from "effect"
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

/**
 * Writes the line `Effect.logInfo(message).pipe(Effect.annotateLogs(fields))` writes (same loggers, level check, JSON
 * shape: `fields` beside the fiber's own annotations), from inside a running fiber, without setting the annotations
 * on the fiber and restoring them afterwards: for lines written on every request (the API's access line), where that
 * showed in each request's CPU.
 */
export const logInfoLine = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  message: string,
  fields: Readonly<Record<string, unknown>>,
): void => {
  if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return
  const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
  if (HashSet.size(loggers) === 0) return
  const annotations = HashMap.mutate(fiber.getFiberRef(FiberRef.currentLogAnnotations), (map) => {
    for (const key in fields) HashMap.set(map, key, fields[key])
  })
  const context = fiber.getFiberRefs()
  const options = {
    fiberId: fiber.id(),
    logLevel: LogLevel.Info,
    message,
    cause: Cause.empty,
    context,
    spans: fiber.getFiberRef(FiberRef.currentLogSpan),
    annotations,
    date: new Date(Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()),
  }
  Inspectable.withRedactableContext(context, () => {
    for (const logger of loggers) logger.log(options)
  })
}
