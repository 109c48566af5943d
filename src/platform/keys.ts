import { randomBytes } from "node:crypto"
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs"
import { join } from "node:path"
import { ConfigError, Effect, Layer, Option, Redacted } from "effect"
import { deriveKey } from "../domain/crypto.ts"
import { makeSealer, type Sealer } from "../domain/sealing.ts"
import { AppConfig, decodeSecretKey, SECRET_KEY_FORMAT, type Settings } from "./config.ts"

/**
 * The master key and every key derived from it. SECRET_KEY is read with the settings; in embedded mode without it,
 * the key lives in DATA_DIR/secret.key, read or created here (not while reading settings, which never writes a file).
 */

const errnoCode = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code ?? String(error)

/** The key in `file`, or undefined if there is no such file. Throws on any other failure. */
const readKeyFile = (file: string): Uint8Array | undefined => {
  let text: string
  try {
    text = readFileSync(file, "utf8")
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined
    throw error
  }
  const bytes = decodeSecretKey(text)
  if (bytes === undefined) throw new InvalidKeyFile(file)
  return bytes
}

class InvalidKeyFile extends Error {}

/**
 * DATA_DIR/secret.key, created if missing. Safe when several processes start together on an empty DATA_DIR: each
 * writes its candidate to its own temporary file (0600) in DATA_DIR, flushes it, then hard-links it to secret.key,
 * which fails with EEXIST if another process got there first; the loser reads the winner's key. The file appears
 * under its name only complete, so a reader never sees part of a key. DATA_DIR is created 0700.
 */
const readOrCreateKeyFile = (dataDir: string): { readonly key: Uint8Array; readonly created: boolean } => {
  const file = join(dataDir, "secret.key")
  const existing = readKeyFile(file)
  if (existing !== undefined) return { key: existing, created: false }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const key = new Uint8Array(randomBytes(32))
  const temporary = join(dataDir, `.secret.key.${process.pid}.${randomBytes(6).toString("hex")}.tmp`)
  let created = false
  try {
    const fd = openSync(temporary, "wx", 0o600)
    try {
      writeSync(fd, `${Buffer.from(key).toString("hex")}\n`)
      fchmodSync(fd, 0o600) // whatever the umask
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    try {
      linkSync(temporary, file)
      created = true
    } catch (error) {
      if (errnoCode(error) !== "EEXIST") throw error
    }
  } finally {
    rmSync(temporary, { force: true })
  }
  if (created) {
    // The new name survives a crash too (best effort: not every platform can fsync a directory).
    try {
      const dir = openSync(dataDir, "r")
      try {
        fsyncSync(dir)
      } finally {
        closeSync(dir)
      }
    } catch {}
    return { key, created: true }
  }
  const winner = readKeyFile(file)
  if (winner === undefined) throw Object.assign(new Error("secret.key vanished"), { code: "ENOENT" })
  return { key: winner, created: false }
}

/** How the key is found when SECRET_KEY is not set. */
export interface KeyOptions {
  /**
   * Set: never generate a key. Only SECRET_KEY or, in embedded mode, an existing DATA_DIR/secret.key is taken; without
   * either, the refusal ends with this text (what to do). For a command that needs a key made before it, such as
   * `admin restore`, which needs the backed-up service's.
   */
  readonly existingOnly?: string
}

/**
 * In embedded mode a missing SECRET_KEY is generated once and kept in DATA_DIR/secret.key (mode 0600), so
 * cursors and encrypted secrets survive restarts. With DATABASE_URL the key must be given: several replicas
 * must share it, and a generated one would be lost with the container.
 */
export const resolveSecretKey = (
  given: Option.Option<Redacted.Redacted<Uint8Array>>,
  embedded: boolean,
  dataDir: string,
  options: KeyOptions = {},
): Effect.Effect<Redacted.Redacted<Uint8Array>, ConfigError.ConfigError> => {
  if (Option.isSome(given)) return Effect.succeed(given.value)
  const file = join(dataDir, "secret.key")
  if (options.existingOnly !== undefined) {
    // Only a key that exists: SECRET_KEY, or in embedded mode a key file already in DATA_DIR. Nothing is written.
    const { existingOnly } = options
    return Effect.try({
      try: () => (embedded ? readKeyFile(file) : undefined),
      catch: (error) =>
        ConfigError.InvalidData(
          ["SECRET_KEY"],
          error instanceof InvalidKeyFile
            ? `is not set, and ${file} does not hold a valid key: ${existingOnly}`
            : `is not set, and ${file} cannot be read (${errnoCode(error)}): ${existingOnly}`,
        ),
    }).pipe(
      Effect.flatMap((key) =>
        key === undefined
          ? Effect.fail(
              ConfigError.MissingData(
                ["SECRET_KEY"],
                embedded ? `is not set, and ${file} does not exist: ${existingOnly}` : `is not set: ${existingOnly}`,
              ),
            )
          : Effect.succeed(Redacted.make(key)),
      ),
    )
  }
  if (!embedded) {
    return Effect.fail(
      ConfigError.MissingData(
        ["SECRET_KEY"],
        `must be set when DATABASE_URL is set (every replica must use the same key): ${SECRET_KEY_FORMAT}`,
      ),
    )
  }
  return Effect.try({
    try: () => readOrCreateKeyFile(dataDir),
    catch: (error) =>
      ConfigError.InvalidData(
        ["SECRET_KEY"],
        error instanceof InvalidKeyFile
          ? `is not set, and ${file} (generated at a first start) does not hold a valid key: restore it from a backup, or set SECRET_KEY`
          : `is not set, and ${file} cannot be read or created (${errnoCode(error)}): set SECRET_KEY, or make DATA_DIR writable`,
      ),
  }).pipe(
    Effect.tap(({ created }) =>
      created
        ? Effect.logWarning(
            `SECRET_KEY is not set: generated one and stored it in ${file}. Set SECRET_KEY in production and back it up.`,
          )
        : Effect.void,
    ),
    Effect.map(({ key }) => Redacted.make(key)),
  )
}

/** The service's keys, resolved once from the settings: the master key and what is derived from it. */
export interface KeyRing {
  /** The master key itself (redacted): only for a fingerprint; use the derived keys. */
  readonly secretKey: Redacted.Redacted<Uint8Array>
  /** Seals under SECRET_KEY; opens what SECRET_KEY or a SECRET_KEY_PREVIOUS sealed (secrets at rest). */
  readonly sealer: Sealer
  /** The key for one purpose (cursor signing, feed tokens, …), derived from SECRET_KEY. */
  readonly derive: (purpose: string) => Buffer
  /** The keys for one purpose derived from SECRET_KEY, then each SECRET_KEY_PREVIOUS: sign with the first, accept any. */
  readonly deriveWithPrevious: (purpose: string) => ReadonlyArray<Buffer>
}

/** The key ring of `settings`: SECRET_KEY, or the key file in embedded mode (created at a first start). */
export const loadKeys = (
  settings: Settings,
  options: KeyOptions = {},
): Effect.Effect<KeyRing, ConfigError.ConfigError> =>
  Effect.map(
    resolveSecretKey(settings.secretKey, Option.isNone(settings.databaseUrl), settings.dataDir, options),
    (secretKey) => {
      const current = Redacted.value(secretKey)
      const previous = settings.secretKeyPrevious.map((k) => Redacted.value(k))
      return {
        secretKey,
        sealer: makeSealer(current, previous),
        derive: (purpose) => deriveKey(current, purpose),
        deriveWithPrevious: (purpose) => [current, ...previous].map((k) => deriveKey(k, purpose)),
      }
    },
  )

export class Keys extends Effect.Service<Keys>()("Keys", { effect: Effect.flatMap(AppConfig, loadKeys) }) {}

/** The Keys service of a command that must not generate a key (KeyOptions.existingOnly says what to do instead). */
export const existingKeysLayer = (existingOnly: string): Layer.Layer<Keys, ConfigError.ConfigError, AppConfig> =>
  Layer.effect(
    Keys,
    Effect.flatMap(AppConfig, (settings) =>
      Effect.map(loadKeys(settings, { existingOnly }), (ring) => Keys.make(ring)),
    ),
  )
