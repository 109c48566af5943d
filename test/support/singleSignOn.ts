import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./console.ts"
import { type TestDatabase, testDatabase } from "./db.ts"
import { startOidcProvider, type TestOidcProvider } from "./oidcProvider.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "./server.ts"

export interface SsoConsole {
  readonly op: TestOidcProvider
  readonly server: RunningServer
  readonly db: TestDatabase
  readonly consoleUrl: string
  readonly stop: () => Promise<void>
}

/**
 * A server whose console signs in through a real OpenID Connect provider on loopback: the provider's redirect URL is
 * the console's callback (the console's port is picked first, so APP_URL is known), its throwaway CA is trusted
 * through WEBHOOK_CA_FILE and its loopback address allowed through WEBHOOK_ALLOW_PRIVATE, as for channels.
 */
export const startSsoConsole = async (): Promise<SsoConsole> => {
  const port = freePort()
  const consoleUrl = `http://127.0.0.1:${port}`
  const op = await startOidcProvider({ redirectUris: [`${consoleUrl}/sign-in/sso/callback`] })
  const caDir = mkdtempSync(join(tmpdir(), "dsvc-oidc-"))
  writeFileSync(join(caDir, "ca.pem"), op.caPem)
  const server = await startServer({
    env: await testEnv({
      CONSOLE_PORT: String(port),
      APP_URL: consoleUrl,
      WEBHOOK_CA_FILE: join(caDir, "ca.pem"),
      WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
    }),
  })
  const db = testDatabase(server.env)
  return {
    op,
    server,
    db,
    consoleUrl,
    stop: async () => {
      await shutdown(server, db)
      await op.stop()
      rmSync(caDir, { recursive: true, force: true })
    },
  }
}
