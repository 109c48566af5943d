import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Config, ConfigError, Context, Duration, Effect, Either, Layer, Option, Redacted } from "effect"
import { type Cidr, parseTrustProxy } from "./api/clientIp.ts"
import { makeSealer, type Sealer } from "./domain/sealing.ts"
import { type RateLimitSettings, rateLimitConfig } from "./ratelimit/RateLimiter.ts"
import { parseAllowPrivate } from "./webhooks/urlRule.ts"

/**
 * Every setting of the service, read once through Effect `Config` (README "Configuration" lists them).
 * A bad value fails start-up with a ConfigError that names the variable.
 */
export interface Settings {
  readonly host: string
  readonly port: number
  readonly ingestPort: number
  /** Operations listener (/healthz, /readyz, /metrics); never the public port. */
  readonly opsPort: number
  /** Unset: the embedded PostgreSQL (PGlite) under dataDir. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly baseUrl: string
  readonly appUrl: string
  /** Master key: 32 bytes. Cursor signing and secret encryption keys are derived from it. */
  readonly secretKey: Redacted.Redacted<Uint8Array>
  /** Master keys being rotated out: sealed secrets still open under them until `admin secrets reseal`. */
  readonly secretKeyPrevious: ReadonlyArray<Redacted.Redacted<Uint8Array>>
  /** D12: a closed incident resolved at most this long ago re-opens on new activity. */
  readonly reopenWindow: Duration.Duration
  /** D13: an open incident without a new event for this long is closed. */
  readonly idleClose: Duration.Duration
  /** How often the idle-close sweep runs. */
  readonly idleCloseEvery: Duration.Duration
  /** D11: proxies whose X-Forwarded-For is believed (CIDRs); empty: the socket peer is the client. */
  readonly trustProxy: ReadonlyArray<Cidr>
  /** D11: REDIS_URL (shared counts across replicas), RATE_LIMIT (120) and RATE_LIMIT_WINDOW (60 s). */
  readonly rateLimit: RateLimitSettings
  readonly webhooks: WebhookSettings
}

/** Webhook delivery (D15–D18). Defaults are the decisions'; tests shorten the schedule and the lease. */
export interface WebhookSettings {
  /** Test-only (D18): CIDRs a receiver may resolve to although they are not public. Empty by default. */
  readonly allowPrivate: ReadonlyArray<string>
  /** WEBHOOK_CA_FILE: extra CA certificates (PEM) trusted besides the system roots, e.g. a private PKI. */
  readonly extraCa: ReadonlyArray<string>
  /** D17 back-off after each failed attempt; after the last one the delivery is dead. */
  readonly retrySchedule: ReadonlyArray<Duration.Duration>
  /** Sends in flight per process, and per channel. */
  readonly concurrency: number
  readonly channelConcurrency: number
  /** How long a claimed delivery stays ours; a crashed process's deliveries are claimable again after it. */
  readonly lease: Duration.Duration
  /** The dispatcher looks for due deliveries at least this often (NOTIFY wakes it sooner). */
  readonly pollInterval: Duration.Duration
  /** D17: the whole send (connect, TLS, request, response) must finish within this. */
  readonly timeout: Duration.Duration
}

export class AppConfig extends Context.Tag("AppConfig")<AppConfig, Settings>() {}

/** An http(s) URL without a trailing slash, so `${appUrl}/incidents/<id>` is always well-formed. */
const httpUrl = (name: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((raw) => {
      try {
        const url = new URL(raw)
        if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("scheme")
        if (url.search || url.hash || url.username || url.password) throw new Error("parts")
        return Either.right(url.toString().replace(/\/+$/, ""))
      } catch {
        return Either.left(
          ConfigError.InvalidData([name], "Expected an http:// or https:// URL without query, fragment or credentials"),
        )
      }
    }),
  )

const positiveInt = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: "Expected an integer of at least 1", validation: (n) => n >= 1 }),
    Config.withDefault(fallback),
  )

/** `250ms`, `5s`, `2m`, `1h`, `1d` (the compact form the retry schedule is written in). */
export const parseShortDuration = (text: string): Duration.Duration | undefined => {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text)
  if (!match) return undefined
  const value = Number(match[1])
  const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as "ms" | "s" | "m" | "h" | "d"]
  return Duration.millis(value * unitMs)
}

/** A TCP port; 0 asks the system for a free one (tests use that). */
const portConfig = (name: string) =>
  Config.integer(name).pipe(
    Config.validate({ message: "Expected a port number from 0 to 65535", validation: (n) => n >= 0 && n <= 65535 }),
  )

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

const secretKeyConfig = Config.redacted("SECRET_KEY").pipe(
  Config.mapOrFail((value) => {
    const bytes = decodeSecretKey(Redacted.value(value))
    return bytes === undefined
      ? Either.left(
          ConfigError.InvalidData(["SECRET_KEY"], "Expected at least 32 bytes as hex (64+ characters) or base64"),
        )
      : Either.right(Redacted.make(bytes))
  }),
  Config.option,
)

export const settingsConfig = Config.all({
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  port: portConfig("PORT").pipe(Config.withDefault(8080)),
  ingestPort: portConfig("INGEST_PORT").pipe(Config.withDefault(8081)),
  opsPort: portConfig("OPS_PORT").pipe(Config.withDefault(9090)),
  // Empty counts as unset (`DATABASE_URL=` in a compose file or CI): the embedded database.
  databaseUrl: Config.redacted("DATABASE_URL").pipe(
    Config.option,
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== "")),
  ),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./.data")),
  baseUrl: httpUrl("BASE_URL").pipe(Config.option),
  appUrl: httpUrl("APP_URL").pipe(Config.withDefault("http://localhost:3000")),
  secretKey: secretKeyConfig,
  secretKeyPrevious: Config.redacted("SECRET_KEY_PREVIOUS").pipe(
    Config.withDefault(Redacted.make("")),
    Config.mapOrFail((value) => {
      const parts = Redacted.value(value)
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== "")
      const keys = parts.map(decodeSecretKey)
      return keys.every((k) => k !== undefined)
        ? Either.right(keys.map((k) => Redacted.make(k as Uint8Array)))
        : Either.left(
            ConfigError.InvalidData(
              ["SECRET_KEY_PREVIOUS"],
              "Expected comma-separated keys of at least 32 bytes as hex (64+ characters) or base64",
            ),
          )
    }),
  ),
  reopenWindow: Config.duration("REOPEN_WINDOW").pipe(Config.withDefault(Duration.days(7))),
  idleClose: Config.duration("INCIDENT_IDLE_CLOSE").pipe(Config.withDefault(Duration.hours(24))),
  idleCloseEvery: Config.duration("INCIDENT_IDLE_CLOSE_EVERY").pipe(Config.withDefault(Duration.minutes(1))),
  trustProxy: Config.string("TRUST_PROXY").pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) => {
      const parsed = parseTrustProxy(text)
      return parsed.ok
        ? Either.right(parsed.cidrs)
        : Either.left(
            ConfigError.InvalidData(["TRUST_PROXY"], `${parsed.reason}; expected a comma-separated list of CIDRs`),
          )
    }),
  ),
  rateLimit: rateLimitConfig,
  webhooks: Config.all({
    allowPrivate: Config.string("WEBHOOK_ALLOW_PRIVATE").pipe(
      Config.withDefault(""),
      Config.mapOrFail((text) => {
        const parsed = parseAllowPrivate(text)
        return parsed.ok
          ? Either.right(parsed.cidrs)
          : Either.left(ConfigError.InvalidData(["WEBHOOK_ALLOW_PRIVATE"], parsed.reason))
      }),
    ),
    extraCa: Config.string("WEBHOOK_CA_FILE").pipe(
      Config.withDefault(""),
      Config.mapOrFail((path) => {
        if (path.trim() === "") return Either.right([] as ReadonlyArray<string>)
        try {
          const pem = readFileSync(path, "utf8")
          if (!pem.includes("-----BEGIN CERTIFICATE-----")) throw new Error("no certificate")
          return Either.right([pem])
        } catch {
          return Either.left(
            ConfigError.InvalidData(["WEBHOOK_CA_FILE"], `Expected a readable PEM file of CA certificates: ${path}`),
          )
        }
      }),
    ),
    retrySchedule: Config.string("WEBHOOK_RETRY_SCHEDULE").pipe(
      Config.withDefault("5s,30s,2m,10m,30m,1h,3h,6h,12h,24h"),
      Config.mapOrFail((text) => {
        const steps = text.split(",").map((part) => parseShortDuration(part.trim()))
        return steps.length > 0 && steps.every((d) => d !== undefined)
          ? Either.right(steps as ReadonlyArray<Duration.Duration>)
          : Either.left(
              ConfigError.InvalidData(
                ["WEBHOOK_RETRY_SCHEDULE"],
                "Expected a comma-separated list of durations such as 5s,30s,2m,1h (ms, s, m, h, d)",
              ),
            )
      }),
    ),
    concurrency: positiveInt("WEBHOOK_CONCURRENCY", 16),
    channelConcurrency: positiveInt("WEBHOOK_CHANNEL_CONCURRENCY", 4),
    lease: Config.duration("WEBHOOK_LEASE").pipe(Config.withDefault(Duration.seconds(60))),
    pollInterval: Config.duration("WEBHOOK_POLL_INTERVAL").pipe(Config.withDefault(Duration.seconds(1))),
    timeout: Config.duration("WEBHOOK_TIMEOUT").pipe(Config.withDefault(Duration.seconds(5))),
  }),
})

/**
 * In embedded mode a missing SECRET_KEY is generated once and kept in DATA_DIR/secret.key (mode 0600), so
 * cursors and encrypted secrets survive restarts. With DATABASE_URL the key must be given: several replicas
 * must share it, and a generated one would be lost with the container.
 */
const resolveSecretKey = (
  given: Option.Option<Redacted.Redacted<Uint8Array>>,
  embedded: boolean,
  dataDir: string,
): Effect.Effect<Redacted.Redacted<Uint8Array>, ConfigError.ConfigError> => {
  if (Option.isSome(given)) return Effect.succeed(given.value)
  if (!embedded) {
    return Effect.fail(ConfigError.MissingData(["SECRET_KEY"], "SECRET_KEY is required when DATABASE_URL is set"))
  }
  return Effect.gen(function* () {
    const file = join(dataDir, "secret.key")
    if (existsSync(file)) {
      const bytes = decodeSecretKey(readFileSync(file, "utf8"))
      if (bytes === undefined) {
        return yield* Effect.fail(ConfigError.InvalidData(["SECRET_KEY"], `${file} does not hold a valid key`))
      }
      return Redacted.make(bytes)
    }
    mkdirSync(dataDir, { recursive: true, mode: 0o700 })
    const bytes = randomBytes(32)
    writeFileSync(file, `${bytes.toString("hex")}\n`, { mode: 0o600, flag: "wx" })
    chmodSync(file, 0o600)
    yield* Effect.logWarning(
      `SECRET_KEY is not set: generated one and stored it in ${file}. Set SECRET_KEY in production and back it up.`,
    )
    return Redacted.make(new Uint8Array(bytes))
  })
}

export const loadSettings: Effect.Effect<Settings, ConfigError.ConfigError> = Effect.gen(function* () {
  const raw = yield* settingsConfig
  const dataDir = resolve(raw.dataDir)
  const secretKey = yield* resolveSecretKey(raw.secretKey, Option.isNone(raw.databaseUrl), dataDir)
  return {
    host: raw.host,
    port: raw.port,
    ingestPort: raw.ingestPort,
    opsPort: raw.opsPort,
    databaseUrl: raw.databaseUrl,
    dataDir,
    baseUrl: Option.getOrElse(raw.baseUrl, () => `http://localhost:${raw.port}`),
    appUrl: raw.appUrl,
    secretKey,
    secretKeyPrevious: raw.secretKeyPrevious,
    reopenWindow: raw.reopenWindow,
    idleClose: raw.idleClose,
    idleCloseEvery: raw.idleCloseEvery,
    trustProxy: raw.trustProxy,
    rateLimit: raw.rateLimit,
    webhooks: raw.webhooks,
  }
})

export const AppConfigLive = Layer.effect(AppConfig, loadSettings)

/** The effective configuration for the start-up log line: every setting, secrets shown only as set or not. */
export const describeSettings = (s: Settings) => {
  const ms = (d: Duration.Duration) => Duration.format(d)
  return {
    host: s.host,
    port: s.port,
    ingestPort: s.ingestPort,
    opsPort: s.opsPort,
    database: Option.match(s.databaseUrl, {
      onNone: () => `embedded (${s.dataDir})`,
      onSome: (url) => {
        try {
          const parsed = new URL(Redacted.value(url))
          return `postgresql://${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`
        } catch {
          return "postgresql (unparsable URL)"
        }
      },
    }),
    baseUrl: s.baseUrl,
    appUrl: s.appUrl,
    secretKey: "<redacted>",
    secretKeyPrevious: s.secretKeyPrevious.length > 0 ? `${s.secretKeyPrevious.length} key(s), redacted` : "none",
    reopenWindow: ms(s.reopenWindow),
    idleClose: ms(s.idleClose),
    idleCloseEvery: ms(s.idleCloseEvery),
    trustProxy: s.trustProxy.map(([address, bits]) => `${address.toString()}/${bits}`),
    rateLimit: {
      store: Option.isSome(s.rateLimit.redisUrl) ? "redis (REDIS_URL set)" : "memory",
      limit: s.rateLimit.limit,
      window: ms(s.rateLimit.window),
    },
    webhooks: {
      allowPrivate: s.webhooks.allowPrivate,
      extraCa: s.webhooks.extraCa.length > 0,
      retrySchedule: s.webhooks.retrySchedule.map(ms),
      concurrency: s.webhooks.concurrency,
      channelConcurrency: s.webhooks.channelConcurrency,
      lease: ms(s.webhooks.lease),
      pollInterval: ms(s.webhooks.pollInterval),
      timeout: ms(s.webhooks.timeout),
    },
  }
}

/** Seals under SECRET_KEY; opens what SECRET_KEY or a SECRET_KEY_PREVIOUS sealed (D16, D19 secrets at rest). */
export const sealerOf = (s: Settings): Sealer =>
  makeSealer(
    Redacted.value(s.secretKey),
    s.secretKeyPrevious.map((k) => Redacted.value(k)),
  )
