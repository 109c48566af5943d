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

const isSqlError = (error: unknown): error is Error =>
  error instanceof Error && (error as { _tag?: unknown })._tag === "SqlError"

/** A SqlError's message and its driver's, on one line, without DATABASE_URL's password. */
const sqlDetail = (error: Error, url: Redacted.Redacted<string> | undefined) => {
  let password: string | undefined
  if (url !== undefined) {
    try {
      password = decodeURIComponent(new URL(Redacted.value(url)).password)
    } catch {
      password = undefined
    }
  }
  return withoutSecret(
    oneLine([error.message, causeMessage(error)].filter((part) => part !== undefined && part !== "").join(": ")),
    password,
  )
}

/**
 * The one line for a database that cannot be started or reached (the embedded one refused to start, a connection
 * failed), or undefined for any other failure. The server and the admin tool both print it.
 */
export const databaseUnreachableLine = (error: unknown, settings: DatabaseSettings | undefined): string | undefined => {
  if (error instanceof EmbeddedDatabaseError) {
    return `cannot start the embedded database: ${oneLine(error.message)} (or set DATABASE_URL to use a PostgreSQL server of your own; README "Storage")`
  }
  if (!isSqlError(error) || !/failed to connect/i.test(error.message)) return undefined
  const url = settings === undefined ? undefined : Option.getOrUndefined(settings.databaseUrl)
  const detail = sqlDetail(error, url)
  return url === undefined
    ? `cannot connect to the embedded database (DATA_DIR ${settings?.dataDir ?? "unknown"}): ${detail}; restart the service, or set DATABASE_URL to use a PostgreSQL server of your own`
    : `cannot connect to the database at ${databaseTarget(Redacted.value(url))} (DATABASE_URL): ${detail}; check that PostgreSQL runs there and accepts this user, password and database, or correct DATABASE_URL`
}

/** The one line for a start-up failure, or undefined when it is none of the known ones (it then goes on as it was). */
export const startupFailureLine = (error: unknown, settings: DatabaseSettings | undefined): string | undefined => {
  const unreachable = databaseUnreachableLine(error, settings)
  if (unreachable !== undefined || !isSqlError(error)) return unreachable
  const url = settings === undefined ? undefined : Option.getOrUndefined(settings.databaseUrl)
  return `database error at start-up: ${sqlDetail(error, url)}; check the database (DATABASE_URL, or the embedded one in DATA_DIR) and start again`
}

/** The database settings for these lines, read from the environment; undefined when they do not parse. */
export const databaseSettings: Effect.Effect<DatabaseSettings | undefined> = Effect.map(
  Effect.option(settingsConfig),
  (settings) =>
    Option.getOrUndefined(
      Option.map(settings, (s) => ({ databaseUrl: s.databaseUrl, dataDir: s.dataDir }) satisfies DatabaseSettings),
    ),
)

/** For Effect.catchAll at the very top of main: a known start-up failure prints its one line and exits 1. */
export const exitOnStartupFailure = <E>(error: E): Effect.Effect<never, E> =>
  Effect.flatMap(databaseSettings, (settings) => {
    const line = startupFailureLine(error, settings)
    if (line === undefined) return Effect.fail(error)
    return Effect.sync(() => {
      console.error(line)
      process.exit(1)
    })
  })
