import { accessSync, constants, readFileSync, statSync } from "node:fs"
import { isIP } from "node:net"
import { resolve } from "node:path"
import { Config, ConfigError, Context, Duration, Effect, Either, Layer, LogLevel, Option, Redacted } from "effect"
import { formerEmbeddedDatabase } from "./db/embedded.ts"
import { type Cidr, parseTrustProxy } from "./http/clientIp.ts"
import { type MailFrom, parseMailFrom, parseSmtpUrl, type SmtpServer } from "./outbound/mailSend.ts"
import { parseAllowPrivate } from "./outbound/urlRule.ts"
import { DEFAULT_LIMIT, DEFAULT_WINDOW_MS } from "./ratelimit/core.ts"

/**
 * Every environment variable of the service is defined here and read through Effect `Config` (docs/configuration.md
 * lists them): the settings (`settingsConfig`, `AppConfig`), the rate limits (`rateLimitConfig`,
 * also used by `RateLimiter.layerFromEnv`) and the logging (`loggingConfig`, used by `LoggingLive`). No other module
 * reads the environment.
 *
 * A bad value fails start-up with a ConfigError whose path is the variable's name and whose message says what is
 * allowed ("must be …", followed by the value given, unless it is a secret); `formatConfigError` turns it into the
 * one line the server and the admin tool print.
 */
export interface Settings {
  readonly host: string
  readonly port: number
  readonly ingestPort: number
  /** Operations listener (/healthz, /readyz, /metrics); never the public port. */
  readonly opsPort: number
  /** The web console's own listener (no API key opens it, no console cookie opens the API). */
  readonly consolePort: number
  /** CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE (PEM): the console serves HTTPS itself. */
  readonly consoleTls: Option.Option<{ readonly cert: string; readonly key: string }>
  /** Unset: the embedded PostgreSQL server in dataDir/pg (src/platform/db/embedded.ts). */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly baseUrl: string
  readonly appUrl: string
  /**
   * The ingest listener's public address, as sensors reach it (INGEST_URL); filled into the set-up snippets
   * shown with a new sensor token. Unset: APP_URL's host name on INGEST_PORT, over plain http.
   */
  readonly ingestUrl: string
  /**
   * SECRET_KEY as given; none in embedded mode means the key file in DATA_DIR (platform/keys.ts reads or creates it,
   * and derives every key from it).
   */
  readonly secretKey: Option.Option<Redacted.Redacted<Uint8Array>>
  /** Master keys being rotated out: sealed secrets still open under them until `admin secrets reseal`. */
  readonly secretKeyPrevious: ReadonlyArray<Redacted.Redacted<Uint8Array>>
  /** A closed incident resolved at most this long ago re-opens on new activity. */
  readonly reopenWindow: Duration.Duration
  /** An open incident without a new event for this long (counted from arrival) is closed. */
  readonly idleClose: Duration.Duration
  /** How often the idle-close sweep runs. */
  readonly idleCloseEvery: Duration.Duration
  /** How often the silent-detection sweep compares each sensor's last contact with its heartbeat interval. */
  readonly sensorSweepEvery: Duration.Duration
  /** An event whose time is further ahead of the server's clock than this is rejected, so the sensor learns it. */
  readonly maxClockSkew: Duration.Duration
  /** Proxies whose X-Forwarded-For is believed (CIDRs); empty: the socket peer is the client. */
  readonly trustProxy: ReadonlyArray<Cidr>
  /** REDIS_URL (shared counts across replicas), RATE_LIMIT (120) and RATE_LIMIT_WINDOW (60 s). */
  readonly rateLimit: RateLimitSettings
  readonly webhooks: WebhookSettings
  /** How long the server waits at start-up for a PostgreSQL still starting (DATABASE_STARTUP_WAIT). */
  readonly databaseStartupWait: Duration.Duration
  /** Connections of each listener's database pool (DATABASE_POOL_API, _INGEST, _CONSOLE). */
  readonly databasePools: { readonly api: number; readonly ingest: number; readonly console: number }
  /** The PostgreSQL client under the SQL statements (DATABASE_DRIVER): Bun's built-in one, or the `pg` driver. */
  readonly databaseDriver: DatabaseDriver
  /** Request bodies the ingest listener works on at once, in bytes (INGEST_INFLIGHT_MIB); more wait their turn. */
  readonly ingestInflightBytes: number
  /** The largest MCP tool result's text, in characters (MCP_MAX_RESULT_CHARS). */
  readonly mcpMaxResultChars: number
  /** Events stored longer ago than this many days are deleted (RETENTION_DAYS; an organization may override). */
  readonly retentionDays: number
  /** Change-feed rows older than this many days are deleted (FEED_RETENTION_DAYS). */
  readonly feedRetentionDays: number
  /** Enrichment of source addresses, off the ingest path (src/jobs/enrichment/). */
  readonly enrichment: EnrichmentSettings
  /** SMTP_URL, SMTP_FROM and SMTP_CA_FILE: where email alerts are submitted; none means no email channels. */
  readonly email: Option.Option<EmailSettings>
}

/** The operator's one SMTP submission server (always over TLS) and the sender address of every email. */
export interface EmailSettings {
  /** Its credentials are in it: never logged or shown. */
  readonly server: Redacted.Redacted<SmtpServer>
  readonly from: MailFrom
  /** Extra CA certificates (PEM) trusted for it besides the system roots. */
  readonly ca: ReadonlyArray<string>
}

/** A DNS server the reverse lookups ask: an address and a UDP port. */
export interface DnsServer {
  readonly host: string
  readonly port: number
}

/** Enrichment of incidents' source addresses (docs/configuration.md "Enrichment"). */
export interface EnrichmentSettings {
  /** REVERSE_DNS: look PTR names up (forward-confirmed). Off by default: the address's owner sees the query. */
  readonly reverseDns: boolean
  /** DNS_SERVERS: the resolvers asked; empty means the system's (nameserver lines of /etc/resolv.conf). */
  readonly dnsServers: ReadonlyArray<DnsServer>
  /** REVERSE_DNS_TIMEOUT: the budget of one address's lookups (PTR and forward confirmation). */
  readonly reverseDnsTimeout: Duration.Duration
  /** MMDB_ASN_FILE and MMDB_COUNTRY_FILE: MaxMind DB files (either may hold both facts); none means no lookups. */
  readonly mmdbAsnFile: Option.Option<string>
  readonly mmdbCountryFile: Option.Option<string>
}

export type DatabaseDriver = "bun" | "pg"

/** Webhook delivery. Defaults are the design's; tests shorten the schedule and the lease. */
export interface WebhookSettings {
  /** Test-only: CIDRs a receiver may resolve to although they are not public. Empty by default. */
  readonly allowPrivate: ReadonlyArray<string>
  /** WEBHOOK_CA_FILE: extra CA certificates (PEM) trusted besides the system roots, e.g. a private PKI. */
  readonly extraCa: ReadonlyArray<string>
  /** SYSLOG_CA_FILE: the same for syslog channels' TLS servers, which often have a private CA. */
  readonly syslogCa: ReadonlyArray<string>
  /** SMTP_CA_FILE: the same for the SMTP server of email alerts. */
  readonly smtpCa: ReadonlyArray<string>
  /** Back-off after each failed attempt; after the last one the delivery is dead. */
  readonly retrySchedule: ReadonlyArray<Duration.Duration>
  /** Sends in flight per process, and per channel. */
  readonly concurrency: number
  readonly channelConcurrency: number
  /** How long a claimed delivery stays ours; a crashed process's deliveries are claimable again after it. */
  readonly lease: Duration.Duration
  /** The dispatcher looks for due deliveries at least this often (NOTIFY wakes it sooner). */
  readonly pollInterval: Duration.Duration
  /** The whole send (connect, TLS, request, response) must finish within this, or it failed. */
  readonly timeout: Duration.Duration
}

export class AppConfig extends Context.Tag("AppConfig")<AppConfig, Settings>() {}

// --- How a variable is read -------------------------------------------------------------------------------------------

/** A value as an error message shows it: JSON-quoted, at most 80 characters. Never used for secrets. */
const shown = (raw: string) => JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw)

/** Parses a variable's text with `parse`, whose Left is the message after the name ("must be …"). */
const parsedBy = <A>(parse: (raw: string) => Either.Either<A, string>) =>
  Config.mapOrFail((raw: string) => Either.mapLeft(parse(raw), (m) => ConfigError.InvalidData([], m)))

/**
 * A variable read as text and parsed by `parse`. The error's path is the variable's name (Effect prefixes it, the
 * config being `Config.string(name)`). Every helper starts from `Config.<constructor>(name)` itself, which is how
 * test/deploy/files.test.ts finds the variables the code reads.
 */
const envVar = <A>(name: string, parse: (raw: string) => Either.Either<A, string>) =>
  Config.string(name).pipe(parsedBy(parse))

/** As `envVar`, for a secret: the value is Redacted, and `parse` must never put it in its message. */
const secretVar = <A>(name: string, parse: (raw: string) => Either.Either<A, string>) =>
  Config.redacted(name).pipe(
    // A Redacted config is not a nested one: Effect does not prefix the path, so the name is given here.
    Config.mapOrFail((value) =>
      Either.mapLeft(parse(Redacted.value(value)), (m) => ConfigError.InvalidData([name], m)),
    ),
  )

/** A parser from a partial function: undefined means "must be <expected> (got "<value>")". */
const expecting =
  <A>(expected: string, parse: (raw: string) => A | undefined) =>
  (raw: string): Either.Either<A, string> => {
    const value = parse(raw)
    return value === undefined ? Either.left(`must be ${expected} (got ${shown(raw)})`) : Either.right(value)
  }

/** An integer in [min, max], read as Effect's `Config.integer` reads one (`Number(text)`). */
/** Decimal digits only: `Number` would also read "" and "  " as 0, "0x50" as 80 and "8e3" as 8000. */
const integerIn = (min: number, max: number) => (raw: string) => {
  const text = raw.trim()
  if (!/^\d{1,16}$/.test(text)) return undefined
  const n = Number(text)
  return n >= min && n <= max ? n : undefined
}

/** A duration as Effect's `Config.duration` reads one: `30 seconds`, `5 minutes`, `250 millis`, `7 days`. */
const durationText = (raw: string) => Option.getOrUndefined(Duration.decodeUnknown(raw))
const DURATION = 'a duration such as "30 seconds", "5 minutes" or "7 days"'
const POSITIVE_INTEGER = "an integer of at least 1"
const PORT = "an integer from 0 to 65535, 0 for any free port"

/** A TCP port; 0 asks the system for a free one (tests use that). */
const portVar = (name: string, fallback: number) =>
  Config.string(name).pipe(parsedBy(expecting(PORT, integerIn(0, 65535))), Config.withDefault(fallback))

const positiveInt = (name: string, fallback: number) =>
  Config.string(name).pipe(
    parsedBy(expecting(POSITIVE_INTEGER, integerIn(1, Number.POSITIVE_INFINITY))),
    Config.withDefault(fallback),
  )

/** A number of days, 1 to 100,000 (about 270 years: "keep"); 0 is refused. */
export const RETENTION_DAYS_ALLOWED = "a whole number of days from 1 to 100000"
const daysVar = (name: string, fallback: number) =>
  Config.string(name).pipe(
    parsedBy(expecting(RETENTION_DAYS_ALLOWED, integerIn(1, 100_000))),
    Config.withDefault(fallback),
  )

const durationVar = (name: string, fallback: Duration.Duration) =>
  Config.string(name).pipe(parsedBy(expecting(DURATION, durationText)), Config.withDefault(fallback))

/** An http(s) URL without a trailing slash, so `${appUrl}/incidents/<id>` is always well-formed. */
const parseHttpUrl = (raw: string): Either.Either<string, string> => {
  const expected = "an absolute http(s) URL without query, fragment or credentials, e.g. https://api.example.com"
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return Either.left(`must be ${expected} (got ${shown(raw)})`)
  }
  // A URL with credentials is not echoed: its password would be in the log.
  if (url.username || url.password) return Either.left(`must be ${expected} (got a URL with credentials)`)
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search || url.hash) {
    return Either.left(`must be ${expected} (got ${shown(raw)})`)
  }
  return Either.right(url.toString().replace(/\/+$/, ""))
}

/**
 * The connections of each listener's own database pool (the read API; the ingest listener and its workers), so a
 * flood on one cannot starve the other.
 */
export const databasePoolConfig = Config.all({
  api: positiveInt("DATABASE_POOL_API", 10),
  ingest: positiveInt("DATABASE_POOL_INGEST", 10),
  console: positiveInt("DATABASE_POOL_CONSOLE", 5),
})

/** `250ms`, `5s`, `2m`, `1h`, `1d` (the compact form the retry schedule is written in). */
export const parseShortDuration = (text: string): Duration.Duration | undefined => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text)
  if (!match) return undefined
  const value = Number(match[1])
  const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as "ms" | "s" | "m" | "h" | "d"]
  return Duration.millis(value * unitMs)
}

/** SECRET_KEY: at least 32 bytes, given as 64+ hex characters or base64/base64url of 32+ bytes. */
export const decodeSecretKey = (raw: string): Uint8Array | undefined => {
  const text = raw.trim()
  if (/^[0-9a-fA-F]{64,}$/.test(text) && text.length % 2 === 0) return new Uint8Array(Buffer.from(text, "hex"))
  if (/^[A-Za-z0-9+/_-]+=*$/.test(text)) {
    const bytes = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    if (bytes.length >= 32) return new Uint8Array(bytes)
  }
  return undefined
}

/** 5s,30s,2m,10m,30m,1h,3h,6h,12h,24h, then dead-lettered. */
const DEFAULT_RETRY_SCHEDULE: ReadonlyArray<Duration.Duration> = [
  Duration.seconds(5),
  Duration.seconds(30),
  Duration.minutes(2),
  Duration.minutes(10),
  Duration.minutes(30),
  Duration.hours(1),
  Duration.hours(3),
  Duration.hours(6),
  Duration.hours(12),
  Duration.hours(24),
]

export const SECRET_KEY_FORMAT =
  "at least 32 bytes written as hex (64+ characters) or base64, e.g. `openssl rand -hex 32`"

interface PostgresTarget {
  /** A host name or address, or a Unix socket directory (starts with "/"). */
  readonly host: string
  readonly port: string
  readonly database: string
}

/**
 * A DATABASE_URL read as the pg driver's parser (pg-connection-string) reads it, or why the driver could not connect
 * with it: a postgres:// or postgresql:// URL with a host, the host given in the authority or by `?host=` (a Unix
 * socket directory: `postgres:///db?host=/run/postgresql`, `postgres://user@/db?host=…`,
 * `postgres://%2Frun%2Fpostgresql/db`). The reason never contains the URL (it may hold a password).
 */
const parsePostgresUrl = (text: string): Either.Either<PostgresTarget, string> => {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(text)?.[1]?.toLowerCase()
  if (scheme === undefined) return Either.left("got something that is not a URL")
  if (scheme !== "postgres" && scheme !== "postgresql") return Either.left("got a URL of another scheme")
  if (!/^[a-z]+:\/\//i.test(text)) return Either.left("got a URL without // before its host")
  // As pg-connection-string: spaces and stray `%` are encoded first; a URL with credentials and no host is read with
  // a placeholder host (the host then comes from `?host=`).
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(text) ? encodeURI(text).replace(/%25(\d\d)/g, "%$1") : text
  let url: URL
  let placeholderHost = false
  try {
    url = new URL(encoded)
  } catch {
    try {
      url = new URL(encoded.replace("@/", "@___DUMMY___/"))
      placeholderHost = true
    } catch {
      return Either.left(
        "got a URL that cannot be parsed, e.g. a port out of range or a character that must be percent-encoded",
      )
    }
  }
  try {
    const host = url.searchParams.get("host") || (placeholderHost ? "" : decodeURIComponent(url.hostname))
    if (host === "") return Either.left("got a URL without a host; for a Unix socket add ?host=<socket directory>")
    return Either.right({
      host,
      port: url.searchParams.get("port") || url.port || "5432",
      database: decodeURIComponent(url.pathname.slice(1)),
    })
  } catch {
    return Either.left("got a URL whose host or database cannot be decoded")
  }
}

/** Why a non-empty DATABASE_URL is not one the pg driver can connect with, or undefined if it is. */
const databaseUrlProblem = (text: string): string | undefined =>
  Either.match(parsePostgresUrl(text), { onLeft: (problem) => problem, onRight: () => undefined })

/** Where a DATABASE_URL points, for the start-up log line (never the user or password). */
export const databaseTarget = (url: string): string =>
  Either.match(parsePostgresUrl(url), {
    onLeft: () => "postgresql",
    onRight: ({ host, port, database }) =>
      host.startsWith("/")
        ? `postgresql, database ${database || "(the user's)"} on the socket ${host}/.s.PGSQL.${port}`
        : `postgresql://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}/${database}`,
  })

// --- Rate limits -----------------------------------------------------------------------------------------------------

/**
 * Settings read by `RateLimiter.layerFromEnv` and part of `Settings`:
 * - `REDIS_URL` (secret, optional; blank = unset): share counts between replicas through Redis; otherwise in memory.
 * - `RATE_LIMIT` (integer >= 1, default 120) and `RATE_LIMIT_WINDOW` (duration, default "60 seconds"), for tests.
 */
export const rateLimitConfig = Config.all({
  redisUrl: Config.redacted("REDIS_URL").pipe(
    Config.option,
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== "")),
  ),
  limit: positiveInt("RATE_LIMIT", DEFAULT_LIMIT),
  window: envVar(
    "RATE_LIMIT_WINDOW",
    expecting(`${DURATION}, of at least 1 millisecond`, (raw) => {
      const d = durationText(raw)
      return d !== undefined && Duration.isFinite(d) && Duration.toMillis(d) >= 1 ? d : undefined
    }),
  ).pipe(Config.withDefault(Duration.millis(DEFAULT_WINDOW_MS))),
})

export type RateLimitSettings = Config.Config.Success<typeof rateLimitConfig>

// --- AI agents (MCP) -------------------------------------------------------------------------------------------------

/** MCP_MAX_RESULT_CHARS: the text of one MCP tool result stays under this many characters (default 100,000). */
export const mcpMaxResultCharsConfig = positiveInt("MCP_MAX_RESULT_CHARS", 100_000)

/** A variable that must be set, with what it is for when it is not. */
const required = <A>(name: string, what: string, config: Config.Config<A>) =>
  config.pipe(
    Config.option,
    Config.mapOrFail((value) =>
      Option.match(value, {
        onNone: () => Either.left(ConfigError.MissingData([name], `is required: ${what}`)),
        onSome: Either.right,
      }),
    ),
  )

/** `bun run mcp` (the stdio MCP door, a client of a running API): its three variables. */
export const mcpStdioConfig = Config.all({
  apiKey: required(
    "API_KEY",
    "an API key of the read API (dsk_<key id>_<secret>)",
    secretVar("API_KEY", (raw) =>
      raw.trim() === "" ? Either.left("is required") : Either.right(Redacted.make(raw.trim())),
    ),
  ),
  baseUrl: required(
    "BASE_URL",
    "the read API's address, e.g. https://api.example.com",
    envVar("BASE_URL", parseHttpUrl),
  ),
  maxChars: mcpMaxResultCharsConfig,
})

// --- Logging --------------------------------------------------------------------------------------------------------

/** LOG_LEVEL's names (any case, surrounding spaces ignored). */
const LOG_LEVELS: Readonly<Record<string, LogLevel.LogLevel>> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
}

/** Read by `LoggingLive`: LOG_FORMAT (`json`, default, or `pretty`) and LOG_LEVEL (default `info`). */
export const loggingConfig = Config.all({
  format: envVar(
    "LOG_FORMAT",
    expecting('"json" or "pretty"', (raw) => (raw === "json" || raw === "pretty" ? raw : undefined)),
  ).pipe(Config.withDefault("json" as const)),
  level: envVar(
    "LOG_LEVEL",
    expecting(`one of ${Object.keys(LOG_LEVELS).join(", ")}`, (raw) => LOG_LEVELS[raw.trim().toLowerCase()]),
  ).pipe(Config.withDefault(LogLevel.Info)),
})

// --- The settings ---------------------------------------------------------------------------------------------------

/** A PEM file of CA certificates trusted besides the system roots (a private PKI); empty when unset. */
const caFileVar = (name: string) =>
  envVar(name, (path) => {
    if (path.trim() === "") return Either.right([] as ReadonlyArray<string>)
    try {
      const pem = readFileSync(path, "utf8")
      if (!pem.includes("-----BEGIN CERTIFICATE-----")) throw new Error("no certificate")
      return Either.right([pem] as ReadonlyArray<string>)
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? "no PEM certificate in it"
      return Either.left(`must be a readable PEM file of CA certificates (got ${shown(path)}: ${why})`)
    }
  }).pipe(Config.withDefault([] as ReadonlyArray<string>))

/** `on` or `off` (any case). */
const parseOnOff = expecting('"on" or "off"', (raw) => {
  const text = raw.trim().toLowerCase()
  return text === "on" ? true : text === "off" ? false : undefined
})
const onOffVar = (name: string, fallback: boolean) => envVar(name, parseOnOff).pipe(Config.withDefault(fallback))

/** One DNS server: an IP address, optionally with a port (`192.0.2.53`, `127.0.0.1:5353`, `[2001:db8::53]:53`). */
export const parseDnsServer = (text: string): DnsServer | undefined => {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text)
  const v4 = /^([\d.]+)(?::(\d{1,5}))?$/.exec(text)
  const [host, port] = bracketed ? [bracketed[1], bracketed[2]] : v4 ? [v4[1], v4[2]] : [text, undefined]
  if (host === undefined || isIP(host) === 0) return undefined
  const n = port === undefined ? 53 : Number(port)
  return n >= 1 && n <= 65535 ? { host, port: n } : undefined
}

const DNS_SERVERS_ALLOWED =
  "a comma-separated list of IP addresses, each optionally with a port (192.0.2.53, 127.0.0.1:5353, [2001:db8::53]:53)"

/** A MaxMind DB file the service can read (its format is checked when the enrichment job opens it), or why not. */
const mmdbFileVar = (name: string) =>
  envVar(name, (path) => {
    if (path.trim() === "") return Either.right(Option.none<string>())
    try {
      if (!statSync(path).isFile()) throw Object.assign(new Error("not a file"), { code: "not a file" })
      accessSync(path, constants.R_OK)
      return Either.right(Option.some(resolve(path)))
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message
      return Either.left(`must be a readable MaxMind DB (.mmdb) file (got ${shown(path)}: ${why})`)
    }
  }).pipe(Config.withDefault(Option.none<string>()))

const secretKeyConfig = secretVar("SECRET_KEY", (raw) => {
  const bytes = decodeSecretKey(raw)
  return bytes === undefined
    ? Either.left(`must be ${SECRET_KEY_FORMAT} (the value is not shown)`)
    : Either.right(Redacted.make(bytes))
}).pipe(Config.option)

export const settingsConfig = Config.all({
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  port: portVar("PORT", 8080),
  ingestPort: portVar("INGEST_PORT", 8081),
  opsPort: portVar("OPS_PORT", 9090),
  consolePort: portVar("CONSOLE_PORT", 3000),
  consoleTlsCert: envVar("CONSOLE_TLS_CERT_FILE", (path) => pemFile(path, "CERTIFICATE")).pipe(Config.option),
  consoleTlsKey: secretVar("CONSOLE_TLS_KEY_FILE", (path) => pemFile(path, "PRIVATE KEY")).pipe(Config.option),
  // Empty counts as unset (`DATABASE_URL=` in a compose file or CI): the embedded database.
  databaseUrl: secretVar("DATABASE_URL", (raw) => {
    const text = raw.trim()
    if (text === "") return Either.right(Option.none<Redacted.Redacted<string>>())
    const problem = databaseUrlProblem(text)
    return problem === undefined
      ? Either.right(Option.some(Redacted.make(text)))
      : Either.left(
          `must be a postgres:// or postgresql:// URL with a host (e.g. postgres://user:password@db:5432/incidents), or empty for the embedded database; ${problem} (the value is not shown)`,
        )
  }).pipe(Config.withDefault(Option.none<Redacted.Redacted<string>>())),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./.data")),
  baseUrl: envVar("BASE_URL", parseHttpUrl).pipe(Config.option),
  // Unset, the console's own address (CONSOLE_PORT, default 3000).
  appUrl: envVar("APP_URL", parseHttpUrl).pipe(Config.option),
  ingestUrl: envVar("INGEST_URL", parseHttpUrl).pipe(Config.option),
  secretKey: secretKeyConfig,
  secretKeyPrevious: secretVar("SECRET_KEY_PREVIOUS", (raw) => {
    const parts = raw
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "")
    const keys = parts.map(decodeSecretKey)
    const bad = keys.indexOf(undefined)
    return bad === -1
      ? Either.right(keys.map((k) => Redacted.make(k as Uint8Array)))
      : Either.left(
          `must be comma-separated keys, each ${SECRET_KEY_FORMAT} (key ${bad + 1} of ${parts.length} is not; the values are not shown)`,
        )
  }).pipe(Config.withDefault([] as ReadonlyArray<Redacted.Redacted<Uint8Array>>)),
  reopenWindow: durationVar("REOPEN_WINDOW", Duration.days(7)),
  idleClose: durationVar("INCIDENT_IDLE_CLOSE", Duration.hours(24)),
  idleCloseEvery: durationVar("INCIDENT_IDLE_CLOSE_EVERY", Duration.minutes(1)),
  sensorSweepEvery: durationVar("SENSOR_SWEEP_INTERVAL", Duration.seconds(30)),
  maxClockSkew: durationVar("MAX_CLOCK_SKEW", Duration.minutes(5)),
  trustProxy: envVar("TRUST_PROXY", (text) => {
    const parsed = parseTrustProxy(text)
    return parsed.ok
      ? Either.right(parsed.cidrs)
      : Either.left(`must be a comma-separated list of IP addresses or CIDRs (${parsed.reason})`)
  }).pipe(Config.withDefault([] as ReadonlyArray<Cidr>)),
  rateLimit: rateLimitConfig,
  databaseStartupWait: durationVar("DATABASE_STARTUP_WAIT", Duration.seconds(45)),
  databasePools: databasePoolConfig,
  databaseDriver: envVar("DATABASE_DRIVER", (text) =>
    text === "bun" || text === "pg" ? Either.right<DatabaseDriver>(text) : Either.left("must be bun or pg"),
  ).pipe(Config.withDefault<DatabaseDriver>("bun")),
  ingestInflightMiB: positiveInt("INGEST_INFLIGHT_MIB", 4),
  mcpMaxResultChars: mcpMaxResultCharsConfig,
  // 0 is refused (it would delete every event as it is stored); "keep forever" is a large number of days.
  retentionDays: daysVar("RETENTION_DAYS", 365),
  feedRetentionDays: daysVar("FEED_RETENTION_DAYS", 30),
  smtpUrl: secretVar("SMTP_URL", (raw) => {
    if (raw.trim() === "") return Either.right(Option.none<Redacted.Redacted<SmtpServer>>())
    const parsed = parseSmtpUrl(raw)
    return parsed.ok ? Either.right(Option.some(Redacted.make(parsed.server))) : Either.left(parsed.reason)
  }).pipe(Config.withDefault(Option.none<Redacted.Redacted<SmtpServer>>())),
  smtpFrom: envVar("SMTP_FROM", (raw) => {
    if (raw.trim() === "") return Either.right(Option.none<MailFrom>())
    const parsed = parseMailFrom(raw)
    return parsed.ok ? Either.right(Option.some(parsed.from)) : Either.left(`${parsed.reason} (got ${shown(raw)})`)
  }).pipe(Config.withDefault(Option.none<MailFrom>())),
  enrichment: Config.all({
    reverseDns: onOffVar("REVERSE_DNS", false),
    dnsServers: envVar("DNS_SERVERS", (text) => {
      const parts = text
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== "")
      const servers = parts.map(parseDnsServer)
      return servers.every((s) => s !== undefined)
        ? Either.right(servers as ReadonlyArray<DnsServer>)
        : Either.left(`must be ${DNS_SERVERS_ALLOWED} (got ${shown(text)})`)
    }).pipe(Config.withDefault([] as ReadonlyArray<DnsServer>)),
    reverseDnsTimeout: envVar(
      "REVERSE_DNS_TIMEOUT",
      expecting(`${DURATION}, from 100 milliseconds to 30 seconds`, (raw) => {
        const d = durationText(raw)
        const ms = d === undefined || !Duration.isFinite(d) ? Number.NaN : Duration.toMillis(d)
        return ms >= 100 && ms <= 30_000 ? d : undefined
      }),
    ).pipe(Config.withDefault(Duration.seconds(2))),
    mmdbAsnFile: mmdbFileVar("MMDB_ASN_FILE"),
    mmdbCountryFile: mmdbFileVar("MMDB_COUNTRY_FILE"),
  }),
  webhooks: Config.all({
    allowPrivate: envVar("WEBHOOK_ALLOW_PRIVATE", (text) => {
      const parsed = parseAllowPrivate(text)
      return parsed.ok
        ? Either.right(parsed.cidrs)
        : Either.left(`must be a comma-separated list of CIDRs such as 127.0.0.0/8 (${parsed.reason})`)
    }).pipe(Config.withDefault([] as ReadonlyArray<string>)),
    extraCa: caFileVar("WEBHOOK_CA_FILE"),
    syslogCa: caFileVar("SYSLOG_CA_FILE"),
    smtpCa: caFileVar("SMTP_CA_FILE"),
    retrySchedule: envVar(
      "WEBHOOK_RETRY_SCHEDULE",
      expecting("a comma-separated list of durations such as 5s,30s,2m,1h (units ms, s, m, h, d)", (text) => {
        const steps = text.split(",").map((part) => parseShortDuration(part.trim()))
        return steps.every((d) => d !== undefined) ? (steps as ReadonlyArray<Duration.Duration>) : undefined
      }),
    ).pipe(Config.withDefault(DEFAULT_RETRY_SCHEDULE)),
    concurrency: positiveInt("WEBHOOK_CONCURRENCY", 16),
    channelConcurrency: positiveInt("WEBHOOK_CHANNEL_CONCURRENCY", 4),
    lease: durationVar("WEBHOOK_LEASE", Duration.seconds(60)),
    pollInterval: durationVar("WEBHOOK_POLL_INTERVAL", Duration.seconds(1)),
    timeout: durationVar("WEBHOOK_TIMEOUT", Duration.seconds(5)),
  }),
})

/** A readable PEM file holding `what` (its text), or why not. The path is shown, never the content. */
const pemFile = (path: string, what: string): Either.Either<string, string> => {
  try {
    const pem = readFileSync(path, "utf8")
    if (!pem.includes(what)) throw new Error(`no ${what.toLowerCase()} in it`)
    return Either.right(pem)
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message
    return Either.left(`must be a readable PEM file with a ${what.toLowerCase()} (got ${shown(path)}: ${why})`)
  }
}

/** Email: SMTP_URL and SMTP_FROM together, or neither. */
const emailSettings = (
  server: Option.Option<Redacted.Redacted<SmtpServer>>,
  from: Option.Option<MailFrom>,
  ca: ReadonlyArray<string>,
) =>
  Option.isSome(server) === Option.isSome(from)
    ? Effect.succeed(Option.zipWith(server, from, (s, f): EmailSettings => ({ server: s, from: f, ca })))
    : Effect.fail(
        ConfigError.InvalidData(
          [Option.isSome(server) ? "SMTP_FROM" : "SMTP_URL"],
          Option.isSome(server)
            ? "must be set with SMTP_URL: the sender address of every email (e.g. Decoy alerts <alerts@example.com>)"
            : "must be set with SMTP_FROM: the SMTP submission server email alerts go through",
        ),
      )

/** Console TLS: both files or neither. */
const consoleTls = (cert: Option.Option<string>, key: Option.Option<string>) =>
  Option.isSome(cert) === Option.isSome(key)
    ? Effect.succeed(Option.zipWith(cert, key, (c, k) => ({ cert: c, key: k })))
    : Effect.fail(
        ConfigError.InvalidData(
          [Option.isSome(cert) ? "CONSOLE_TLS_KEY_FILE" : "CONSOLE_TLS_CERT_FILE"],
          "must be set together with CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE (the console's HTTPS certificate and key)",
        ),
      )

export const loadSettings: Effect.Effect<Settings, ConfigError.ConfigError> = Effect.gen(function* () {
  const raw = yield* settingsConfig
  const dataDir = resolve(raw.dataDir)
  const former = Option.isNone(raw.databaseUrl) ? formerEmbeddedDatabase(dataDir) : undefined
  if (former !== undefined) {
    // The PGlite database of earlier versions is not read by PostgreSQL 18; nothing is started over it.
    return yield* Effect.fail(
      ConfigError.InvalidData(
        ["DATA_DIR"],
        `holds the former embedded database (PGlite, ${former}), which this version does not read: export it with the previous version, or move it away to start empty (README "Storage")`,
      ),
    )
  }
  return {
    host: raw.host,
    port: raw.port,
    ingestPort: raw.ingestPort,
    opsPort: raw.opsPort,
    consolePort: raw.consolePort,
    consoleTls: yield* consoleTls(raw.consoleTlsCert, raw.consoleTlsKey),
    databaseUrl: raw.databaseUrl,
    dataDir,
    baseUrl: Option.getOrElse(raw.baseUrl, () => `http://localhost:${raw.port}`),
    appUrl: Option.getOrElse(raw.appUrl, () => `http://localhost:${raw.consolePort}`),
    ingestUrl: Option.getOrElse(raw.ingestUrl, () => {
      const host = Option.match(raw.appUrl, { onNone: () => "localhost", onSome: (url) => new URL(url).host })
      return `http://${host.replace(/:\d+$/, "")}:${raw.ingestPort}`
    }),
    secretKey: raw.secretKey,
    secretKeyPrevious: raw.secretKeyPrevious,
    reopenWindow: raw.reopenWindow,
    idleClose: raw.idleClose,
    idleCloseEvery: raw.idleCloseEvery,
    sensorSweepEvery: raw.sensorSweepEvery,
    maxClockSkew: raw.maxClockSkew,
    trustProxy: raw.trustProxy,
    rateLimit: raw.rateLimit,
    webhooks: raw.webhooks,
    databaseStartupWait: raw.databaseStartupWait,
    databasePools: raw.databasePools,
    databaseDriver: raw.databaseDriver,
    ingestInflightBytes: raw.ingestInflightMiB * 1024 * 1024,
    mcpMaxResultChars: raw.mcpMaxResultChars,
    retentionDays: raw.retentionDays,
    feedRetentionDays: raw.feedRetentionDays,
    enrichment: raw.enrichment,
    email: yield* emailSettings(raw.smtpUrl, raw.smtpFrom, raw.webhooks.smtpCa),
  }
})

export const AppConfigLive = Layer.effect(AppConfig, loadSettings)

// --- Reporting --------------------------------------------------------------------------------------------------------

const describeProblem = (path: ReadonlyArray<string>, message: string) => {
  const name = path.join("_")
  if (name === "") return message
  return /^(must|is) /.test(message) ? `${name} ${message}` : `${name}: ${message}`
}

/**
 * One line for a configuration error, naming each bad variable and what it allows:
 * `configuration error: BASE_URL must be an absolute http(s) URL … (got "notaurl")`. Never a secret's value: the
 * messages above leave them out, and Effect redacts its own messages about a Redacted variable.
 */
export const formatConfigError = (error: ConfigError.ConfigError): string => {
  const problems = ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left: ReadonlyArray<string>, right: ReadonlyArray<string>) => [...left, ...right],
    orCase: (_, left, right) => [...left, ...right],
    invalidDataCase: (_, path, message) => [describeProblem(path, message)],
    missingDataCase: (_, path, message) => [describeProblem(path, message)],
    sourceUnavailableCase: (_, path, message) => [describeProblem(path, message)],
    unsupportedCase: (_, path, message) => [describeProblem(path, message)],
  })
  return `configuration error: ${[...new Set(problems)].join("; ").replace(/[\r\n]+/g, " ")}`
}

/** The effective configuration for the start-up log line: every setting, secrets shown only as set or not. */
export const describeSettings = (s: Settings) => {
  const ms = (d: Duration.Duration) => Duration.format(d)
  return {
    host: s.host,
    port: s.port,
    ingestPort: s.ingestPort,
    opsPort: s.opsPort,
    consolePort: s.consolePort,
    database: Option.match(s.databaseUrl, {
      onNone: () => `embedded (${s.dataDir})`,
      onSome: (url) => databaseTarget(Redacted.value(url)),
    }),
    baseUrl: s.baseUrl,
    appUrl: s.appUrl,
    ingestUrl: s.ingestUrl,
    secretKey: "<redacted>",
    secretKeyPrevious: s.secretKeyPrevious.length > 0 ? `${s.secretKeyPrevious.length} key(s), redacted` : "none",
    databaseStartupWait: ms(s.databaseStartupWait),
    databaseDriver: s.databaseDriver,
    ingestInflight: `${s.ingestInflightBytes / 1024 / 1024} MiB`,
    reopenWindow: ms(s.reopenWindow),
    idleClose: ms(s.idleClose),
    idleCloseEvery: ms(s.idleCloseEvery),
    sensorSweepEvery: ms(s.sensorSweepEvery),
    maxClockSkew: ms(s.maxClockSkew),
    retentionDays: s.retentionDays,
    feedRetentionDays: s.feedRetentionDays,
    enrichment: {
      reverseDns: s.enrichment.reverseDns ? "on" : "off",
      dnsServers:
        s.enrichment.dnsServers.length === 0
          ? "the system's"
          : s.enrichment.dnsServers.map((d) =>
              d.host.includes(":") ? `[${d.host}]:${d.port}` : `${d.host}:${d.port}`,
            ),
      reverseDnsTimeout: ms(s.enrichment.reverseDnsTimeout),
      mmdbAsnFile: Option.getOrElse(s.enrichment.mmdbAsnFile, () => "none"),
      mmdbCountryFile: Option.getOrElse(s.enrichment.mmdbCountryFile, () => "none"),
    },
    trustProxy: s.trustProxy.map(([address, bits]) => `${address.toString()}/${bits}`),
    rateLimit: {
      store: Option.isSome(s.rateLimit.redisUrl) ? "redis (REDIS_URL set)" : "memory",
      limit: s.rateLimit.limit,
      window: ms(s.rateLimit.window),
    },
    webhooks: {
      allowPrivate: s.webhooks.allowPrivate,
      extraCa: s.webhooks.extraCa.length > 0,
      syslogCa: s.webhooks.syslogCa.length > 0,
      retrySchedule: s.webhooks.retrySchedule.map(ms),
      concurrency: s.webhooks.concurrency,
      channelConcurrency: s.webhooks.channelConcurrency,
      lease: ms(s.webhooks.lease),
      pollInterval: ms(s.webhooks.pollInterval),
      timeout: ms(s.webhooks.timeout),
    },
  }
}
