import { afterAll, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigProvider, Duration, Effect, Either, Logger, LogLevel, Option, Redacted } from "effect"
import {
  describeSettings,
  formatConfigError,
  loadSettings,
  loggingConfig,
  rateLimitConfig,
  settingsConfig,
} from "../../src/platform/config.ts"
import { loadKeys } from "../../src/platform/keys.ts"
import { TEST_SECRET_KEY } from "../support/server.ts"

/**
 * The configuration layer itself (src/platform/config.ts) over a given environment: which DATABASE_URLs it accepts (those
 * the pg driver can connect with), the one-line messages of bad values, and the key file's failure cases.
 * Start-up with real processes is in startup.test.ts.
 */

const dirs: Array<string> = []
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "dsvc-config-"))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const provider = (env: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(env)))
const read = <A, E>(effect: Effect.Effect<A, E>, env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(effect, provider(env))))
/** The line a bad environment is reported with, or undefined if the settings load. */
const errorLine = (env: Record<string, string>) => {
  const result = Effect.runSync(
    Effect.either(
      Effect.withConfigProvider(Effect.flatMap(loadSettings, loadKeys), provider({ DATA_DIR: freshDir(), ...env })),
    ).pipe(
      // The generation warning of a valid environment is not what these tests look at.
      Logger.withMinimumLogLevel(LogLevel.Error),
    ),
  )
  return Either.isLeft(result) ? formatConfigError(result.left) : undefined
}

describe("DATABASE_URL", () => {
  const accepted: ReadonlyArray<[string, string]> = [
    ["postgres://app:secret@db.example:5432/incidents", "postgresql://db.example:5432/incidents"],
    ["postgresql://db.example/incidents", "postgresql://db.example:5432/incidents"],
    ["postgres://app@127.0.0.1:6543/x?sslmode=require", "postgresql://127.0.0.1:6543/x"],
    // Unix sockets, as pg-connection-string reads them: ?host=, with or without credentials, or an encoded host.
    [
      "postgres:///incidents?host=/run/postgresql",
      "postgresql, database incidents on the socket /run/postgresql/.s.PGSQL.5432",
    ],
    [
      "postgres://app@/incidents?host=/run/postgresql&port=6432",
      "postgresql, database incidents on the socket /run/postgresql/.s.PGSQL.6432",
    ],
    [
      "postgres://%2Frun%2Fpostgresql/incidents",
      "postgresql, database incidents on the socket /run/postgresql/.s.PGSQL.5432",
    ],
    ["postgres://app:pw@[::1]:5433/x", "postgresql://[::1]:5433/x"],
    ["  postgres://db.example/incidents  ", "postgresql://db.example:5432/incidents"],
  ]
  for (const [url, shown] of accepted) {
    test(`accepted: ${url}`, () => {
      const result = read(settingsConfig, { DATABASE_URL: url })
      expect(Either.isRight(result)).toBe(true)
      if (Either.isRight(result)) {
        expect(Option.map(result.right.databaseUrl, Redacted.value)).toEqual(Option.some(url.trim()))
        const settings = Effect.runSync(
          Effect.withConfigProvider(loadSettings, provider({ DATABASE_URL: url, SECRET_KEY: TEST_SECRET_KEY })),
        )
        // The start-up log line shows where, never who or the password.
        expect(describeSettings(settings).database).toBe(shown)
      }
    })
  }

  test("empty or blank: the embedded database", () => {
    for (const url of ["", "   "]) {
      const result = read(settingsConfig, { DATABASE_URL: url })
      expect(Either.isRight(result) && Option.isNone(result.right.databaseUrl)).toBe(true)
    }
  })

  test("the DATABASE_URL the test run uses (PostgreSQL runs) is accepted", () => {
    const url = process.env.DATABASE_URL ?? ""
    const result = read(settingsConfig, { DATABASE_URL: url })
    expect(Either.isRight(result)).toBe(true)
    if (Either.isRight(result)) expect(Option.isSome(result.right.databaseUrl)).toBe(url.trim() !== "")
  })

  const rejected: ReadonlyArray<[string, string]> = [
    ["notaurl", "got something that is not a URL"],
    ["db.example:5432", "got a URL of another scheme"],
    ["http://x", "got a URL of another scheme"],
    ["mysql://app:pw-Secret-1@db/x", "got a URL of another scheme"],
    ["postgres:db.example/x", "got a URL without // before its host"],
    ["postgres://", "got a URL without a host"],
    ["postgresql:///incidents", "got a URL without a host"],
    ["postgres://app:pw-Secret-2@:5432/x", "got a URL that cannot be parsed"],
    ["postgres://app:pw-Secret-3@db.example:99999/x", "got a URL that cannot be parsed"],
  ]
  const START =
    "configuration error: DATABASE_URL must be a postgres:// or postgresql:// URL with a host (e.g. postgres://user:password@db:5432/incidents), or empty for the embedded database; "
  for (const [url, reason] of rejected) {
    test(`rejected: ${url}`, () => {
      const line = errorLine({ DATABASE_URL: url, SECRET_KEY: TEST_SECRET_KEY })
      expect(line).toStartWith(START)
      expect(line).toContain(reason)
      expect(line).toEndWith("(the value is not shown)")
      // Never the value, so never its password.
      if (!START.includes(url)) expect(line).not.toContain(url)
      expect(line).not.toContain("pw-Secret")
    })
  }
})

describe("configuration error messages", () => {
  test("one line per environment, every bad variable named with what it allows and the value given", () => {
    expect(errorLine({ PORT: "abc" })).toBe(
      'configuration error: PORT must be an integer from 0 to 65535, 0 for any free port (got "abc")',
    )
    // Only decimal digits: Number() would read "" as 0 (any free port), "0x50" as 80 and "8e3" as 8000.
    for (const value of ["", "  ", "0x50", "8e3", "80.0", "-1"]) {
      expect(errorLine({ PORT: value })).toBe(
        `configuration error: PORT must be an integer from 0 to 65535, 0 for any free port (got ${JSON.stringify(value)})`,
      )
    }
    expect(errorLine({ BASE_URL: "notaurl" })).toBe(
      'configuration error: BASE_URL must be an absolute http(s) URL without query, fragment or credentials, e.g. https://api.example.com (got "notaurl")',
    )
    expect(errorLine({ RATE_LIMIT: "0", WEBHOOK_LEASE: "soon" })).toBe(
      'configuration error: RATE_LIMIT must be an integer of at least 1 (got "0"); WEBHOOK_LEASE must be a duration such as "30 seconds", "5 minutes" or "7 days" (got "soon")',
    )
    // A long value is cut, and a newline in it cannot split the line.
    const long = errorLine({ APP_URL: `ftp://${"x".repeat(200)}\nsecond line` })
    expect(long).toStartWith("configuration error: APP_URL must be an absolute http(s) URL")
    expect(long).toContain("…")
    expect(long?.split("\n")).toHaveLength(1)
  })

  test("secrets are never echoed", () => {
    const key = "c2hvcnQ-Secret-Value"
    const line = errorLine({ SECRET_KEY: key })
    expect(line).toBe(
      "configuration error: SECRET_KEY must be at least 32 bytes written as hex (64+ characters) or base64, e.g. `openssl rand -hex 32` (the value is not shown)",
    )
    const previous = errorLine({ SECRET_KEY: TEST_SECRET_KEY, SECRET_KEY_PREVIOUS: `${TEST_SECRET_KEY},${key}` })
    expect(previous).toContain("SECRET_KEY_PREVIOUS must be comma-separated keys")
    expect(previous).toContain("key 2 of 2 is not")
    expect(previous).not.toContain(key)
    expect(previous).not.toContain(TEST_SECRET_KEY)
    const withCredentials = errorLine({ BASE_URL: "https://admin:pw-Secret-4@api.example.com" })
    expect(withCredentials).toContain("BASE_URL must be an absolute http(s) URL")
    expect(withCredentials).not.toContain("pw-Secret-4")
  })

  test("defaults: PORT 8080, INGEST_PORT 8081, DATA_DIR ./.data, BASE_URL http://localhost:$PORT", () => {
    const dataDir = freshDir()
    const load = (env: Record<string, string>) =>
      Effect.runSync(
        Effect.withConfigProvider(loadSettings, provider({ DATA_DIR: dataDir, ...env })).pipe(
          Logger.withMinimumLogLevel(LogLevel.Error),
        ),
      )
    expect(load({ PORT: " 8081 " }).port).toBe(8081)
    const defaults = load({})
    expect({ port: defaults.port, ingestPort: defaults.ingestPort, baseUrl: defaults.baseUrl }).toEqual({
      port: 8080,
      ingestPort: 8081,
      baseUrl: "http://localhost:8080",
    })
    expect(load({ PORT: "9000" }).baseUrl).toBe("http://localhost:9000")
    expect(load({ BASE_URL: "https://api.example.com/" }).baseUrl).toBe("https://api.example.com")
    const raw = Effect.runSync(Effect.withConfigProvider(settingsConfig, provider({})))
    expect(raw.dataDir).toBe("./.data")
  })

  test("the moved variables keep their defaults: LOG_FORMAT json, LOG_LEVEL info, RATE_LIMIT 120 per 60 s", () => {
    const logging = Effect.runSync(Effect.withConfigProvider(loggingConfig, provider({})))
    expect({ format: logging.format, level: logging.level.label }).toEqual({ format: "json", level: "INFO" })
    const levels = Effect.runSync(
      Effect.withConfigProvider(loggingConfig, provider({ LOG_FORMAT: "pretty", LOG_LEVEL: " Warn " })),
    )
    expect({ format: levels.format, level: levels.level.label }).toEqual({ format: "pretty", level: "WARN" })
    const limits = Effect.runSync(Effect.withConfigProvider(rateLimitConfig, provider({ REDIS_URL: "  " })))
    expect({
      redis: Option.isSome(limits.redisUrl),
      limit: limits.limit,
      windowMs: Duration.toMillis(limits.window),
    }).toEqual({ redis: false, limit: 120, windowMs: 60_000 })
  })
})

describe("the key file (embedded mode, no SECRET_KEY)", () => {
  test("a key file without a valid key stops start-up naming SECRET_KEY, and is left as it is", () => {
    const dataDir = freshDir()
    writeFileSync(join(dataDir, "secret.key"), "0123abc\n", { mode: 0o600 })
    const line = errorLine({ DATA_DIR: dataDir })
    expect(line).toBe(
      `configuration error: SECRET_KEY is not set, and ${join(dataDir, "secret.key")} (generated at a first start) does not hold a valid key: restore it from a backup, or set SECRET_KEY`,
    )
    expect(readFileSync(join(dataDir, "secret.key"), "utf8")).toBe("0123abc\n")
  })

  test("a DATA_DIR that cannot be created stops start-up naming SECRET_KEY and the reason", () => {
    const file = join(freshDir(), "a-file")
    writeFileSync(file, "")
    const line = errorLine({ DATA_DIR: join(file, "data") })
    expect(line).toBe(
      `configuration error: SECRET_KEY is not set, and ${join(file, "data", "secret.key")} cannot be read or created (ENOTDIR): set SECRET_KEY, or make DATA_DIR writable`,
    )
  })

  test("reading the settings writes nothing; the key ring creates DATA_DIR/secret.key once, then reads the same key", () => {
    const dataDir = join(freshDir(), "data")
    const settings = Effect.runSync(
      Effect.withConfigProvider(loadSettings, provider({ DATA_DIR: dataDir })).pipe(
        Logger.withMinimumLogLevel(LogLevel.Error),
      ),
    )
    expect(existsSync(dataDir)).toBe(false)
    const keyOf = () =>
      Buffer.from(
        Redacted.value(Effect.runSync(loadKeys(settings).pipe(Logger.withMinimumLogLevel(LogLevel.Error))).secretKey),
      ).toString("hex")
    const first = keyOf()
    expect(readFileSync(join(dataDir, "secret.key"), "utf8").trim()).toBe(first)
    expect(keyOf()).toBe(first)
  })

  test("with DATABASE_URL, SECRET_KEY is required and no key file is written", () => {
    const dataDir = freshDir()
    expect(errorLine({ DATA_DIR: dataDir, DATABASE_URL: "postgres://db.example/x" })).toBe(
      "configuration error: SECRET_KEY must be set when DATABASE_URL is set (every replica must use the same key): at least 32 bytes written as hex (64+ characters) or base64, e.g. `openssl rand -hex 32`",
    )
    expect(() => readFileSync(join(dataDir, "secret.key"))).toThrow()
  })
})
