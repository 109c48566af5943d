import { createHash } from "node:crypto"
import { join } from "node:path"
import { ConfigProvider, Effect, Exit, Logger, Redacted } from "effect"
import { formatConfigError, loadSettings } from "../../src/platform/config.ts"
import { loadKeys } from "../../src/platform/keys.ts"

/**
 * One contender of the SECRET_KEY race (test/config/startup.test.ts). It waits until START_AT (epoch ms), then loads
 * the configuration as the server does (its environment: no SECRET_KEY, no DATABASE_URL) once for each of ROUNDS
 * empty data directories, DATA_DIR/0, DATA_DIR/1, …, in that order, so the contenders meet on many of them at the
 * same instant. It prints one JSON line per round: the SHA-256 of the key it got (never the key) and whether it
 * logged the generation warning, i.e. created the key file; or the failure.
 */
const startAt = Number(process.env.START_AT ?? "0")
const rounds = Number(process.env.ROUNDS ?? "1")
const base = process.env.DATA_DIR ?? ""
await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())))

for (let round = 0; round < rounds; round++) {
  const messages: Array<string> = []
  const capture = Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ message }) => {
      messages.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    }),
  )
  const env = new Map(Object.entries({ ...process.env, DATA_DIR: join(base, String(round)) }))
  const exit = await Effect.runPromiseExit(
    Effect.flatMap(loadSettings, loadKeys).pipe(
      Effect.withConfigProvider(ConfigProvider.fromMap(env)),
      Effect.provide(capture),
    ),
  )
  if (Exit.isSuccess(exit)) {
    const fingerprint = createHash("sha256").update(Redacted.value(exit.value.secretKey)).digest("hex")
    const created = messages.some((m) => m.startsWith("SECRET_KEY is not set: generated one"))
    console.log(JSON.stringify({ round, fingerprint, created }))
  } else {
    const failure = exit.cause._tag === "Fail" ? formatConfigError(exit.cause.error) : String(exit.cause)
    console.log(JSON.stringify({ round, failure }))
  }
}
