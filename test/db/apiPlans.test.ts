import { afterAll, describe, expect, test } from "bun:test"
import { rmSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer } from "effect"
import { type AppConfig, AppConfigLive } from "../../src/platform/config.ts"
import { DatabaseLive, serverPool } from "../../src/platform/db/client.ts"
import { testEnv } from "../support/server.ts"

/**
 * The read API's statements are planned once per connection (plan_cache_mode force_generic_plan on its pool's
 * sessions): planning them afresh at each request cost more than running them over the events' month partitions.
 * The other pools keep PostgreSQL's own choice. Through both drivers, against the real server.
 */

const ADMIN_URL = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const planCacheMode = (env: Record<string, string>, layer: Layer.Layer<SqlClient.SqlClient, unknown, AppConfig>) =>
  Effect.runPromise(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ mode: string }>`select current_setting('plan_cache_mode') as mode`,
    ).pipe(
      Effect.map((rows) => rows[0]?.mode),
      Effect.provide(layer.pipe(Layer.provide(AppConfigLive))),
      Effect.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
      Effect.scoped,
    ) as Effect.Effect<string | undefined, unknown, never>,
  )

describe("the read API plans its statements once per connection", () => {
  for (const driver of ["bun", "pg"]) {
    test(`${driver} driver: the API pool's sessions plan once for any values; the console's, the ingest side's and the admin tool's plan each statement`, async () => {
      const env = await testEnv({ DATABASE_URL: ADMIN_URL, DATABASE_DRIVER: driver })
      if (env.DATA_DIR) dirs.push(env.DATA_DIR)
      expect(await planCacheMode(env, serverPool("api"))).toBe("force_generic_plan")
      expect(await planCacheMode(env, serverPool("console"))).toBe("auto")
      expect(await planCacheMode(env, serverPool("ingest"))).toBe("auto")
      expect(await planCacheMode(env, DatabaseLive)).toBe("auto")
    })
  }
})
