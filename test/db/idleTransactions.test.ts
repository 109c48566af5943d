import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { type AppConfig, AppConfigLive } from "../../src/platform/config.ts"
import { DatabaseLive, serverPool } from "../../src/platform/db/client.ts"
import { testEnv } from "../support/server.ts"

/**
 * D33: a change feed's horizon is the cluster's oldest open writing transaction, so the service's own sessions may
 * not stay idle inside a transaction: each connection sets idle_in_transaction_session_timeout to 15 s, and the
 * embedded cluster has it as its own setting (for every client, also an operator's psql). Both ways, on every run.
 */

const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const withEnv = <A, E>(
  env: Record<string, string>,
  layer: Layer.Layer<SqlClient.SqlClient, unknown, AppConfig>,
  effect: Effect.Effect<A, E, SqlClient.SqlClient>,
) =>
  Effect.runPromise(
    effect.pipe(
      Effect.provide(layer.pipe(Layer.provide(AppConfigLive))),
      Effect.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
      Effect.scoped,
    ) as Effect.Effect<A, unknown, never>,
  )

const sessionSetting = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ value: string }>`select current_setting('idle_in_transaction_session_timeout') as value`,
).pipe(Effect.map((rows) => rows[0]?.value))

describe("the service's sessions never sit idle in a transaction for long", () => {
  test("DATABASE_URL: the admin pool's and the API pool's sessions have idle_in_transaction_session_timeout 15s", async () => {
    const env = await testEnv({ DATABASE_URL: ADMIN_URL })
    if (env.DATA_DIR) dirs.push(env.DATA_DIR)
    expect(await withEnv(env, DatabaseLive, sessionSetting)).toBe("15s")
    expect(await withEnv(env, serverPool("api"), sessionSetting)).toBe("15s")
  })

  test("embedded: the cluster's own setting is 15s (postgresql.conf, any client) and the service's sessions have it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dsvc-idle-"))
    dirs.push(dataDir)
    const env = await testEnv({ DATABASE_URL: "" })
    if (env.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true })
    const embedded = { ...env, DATA_DIR: dataDir }
    const result = await withEnv(
      embedded,
      DatabaseLive,
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const session = yield* sessionSetting
        // The value in the cluster's configuration files, whatever a session asked for.
        const file = yield* sql<{ setting: string }>`
          select setting from pg_file_settings where name = 'idle_in_transaction_session_timeout' and applied`
        return { session, file: file.map((row) => row.setting) }
      }),
    )
    expect(result.session).toBe("15s")
    expect(result.file).toEqual(["15000"])
    expect(readFileSync(join(dataDir, "pg", "postgresql.conf"), "utf8")).toContain(
      "idle_in_transaction_session_timeout = 15000",
    )
  })
})
