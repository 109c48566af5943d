import { Effect, Option, Redacted } from "effect"
import { databaseTarget, settingsConfig } from "./config.ts"
import { EmbeddedDatabaseError } from "./db/embedded.ts"

/**
 * Start-up failures the operator can fix (the embedded database refused to start, DATABASE_URL unreachable): one line
 * on stderr saying what failed and what to do, exit 1, instead of an empty log message and a stack trace. Configuration
 * errors and a port in use have their own lines (config.ts formatConfigError, portInUse.ts).
 */

/** At most this many characters of a driver's or the database's own message. */
const MAX_DETAIL = 300

const oneLine = (text: string) => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > MAX_DETAIL ? `${flat.slice(0, MAX_DETAIL)}…` : flat
}

/** A value that must never be printed (DATABASE_URL's password) left out of a message that might quote it. */
const withoutSecret = (text: string, secret: string | undefined) =>
  secret === undefined || secret === "" ? text : text.split(secret).join("<redacted>")

const causeMessage = (error: unknown): string | undefined => {
  const cause = (error as { cause?: unknown }).cause
  if (cause instanceof Error) return cause.message
  return typeof cause === "string" ? cause : undefined
}

export interface DatabaseSettings {
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
}

/** The one line for a start-up failure, or undefined when it is none of the known ones (it then goes on as it was). */
export const startupFailureLine = (error: unknown, settings: DatabaseSettings | undefined): string | undefined => {
  if (error instanceof EmbeddedDatabaseError) {
    return `cannot start the embedded database: ${oneLine(error.message)} (or set DATABASE_URL to use a PostgreSQL server of your own; README "Storage")`
  }
  const tag = (error as { _tag?: unknown } | null)?._tag
  if (tag !== "SqlError" || !(error instanceof Error)) return undefined
  const url = settings === undefined ? undefined : Option.getOrUndefined(settings.databaseUrl)
  let password: string | undefined
  if (url !== undefined) {
    try {
      password = decodeURIComponent(new URL(Redacted.value(url)).password)
    } catch {
      password = undefined
    }
  }
  const detail = withoutSecret(
    oneLine([error.message, causeMessage(error)].filter((part) => part !== undefined && part !== "").join(": ")),
    password,
  )
  if (/failed to connect/i.test(error.message)) {
    return url === undefined
      ? `cannot connect to the embedded database (DATA_DIR ${settings?.dataDir ?? "unknown"}): ${detail}; restart the service, or set DATABASE_URL to use a PostgreSQL server of your own`
      : `cannot connect to the database at ${databaseTarget(Redacted.value(url))} (DATABASE_URL): ${detail}; check that PostgreSQL runs there and accepts this user, password and database, or correct DATABASE_URL`
  }
  return `database error at start-up: ${detail}; check the database (DATABASE_URL, or the embedded one in DATA_DIR) and start again`
}

/** For Effect.catchAll at the very top of main: a known start-up failure prints its one line and exits 1. */
export const exitOnStartupFailure = <E>(error: E): Effect.Effect<never, E> =>
  Effect.flatMap(Effect.option(settingsConfig), (settings) => {
    const line = startupFailureLine(
      error,
      Option.getOrUndefined(
        Option.map(settings, (s) => ({ databaseUrl: s.databaseUrl, dataDir: s.dataDir }) satisfies DatabaseSettings),
      ),
    )
    if (line === undefined) return Effect.fail(error)
    return Effect.sync(() => {
      console.error(line)
      process.exit(1)
    })
  })
