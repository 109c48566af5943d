import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningServer, startServer, testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

const dir = mkdtempSync(join(tmpdir(), "console-tls-"))
const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
writeFileSync(join(dir, "cert.pem"), certs.cert)
writeFileSync(join(dir, "key.pem"), certs.key)
let server: RunningServer | undefined

afterAll(async () => {
  await server?.stop()
})

test("with CONSOLE_TLS_CERT_FILE and CONSOLE_TLS_KEY_FILE the console serves HTTPS itself", async () => {
  server = await startServer({
    env: await testEnv({ CONSOLE_TLS_CERT_FILE: join(dir, "cert.pem"), CONSOLE_TLS_KEY_FILE: join(dir, "key.pem") }),
  })
  const url = server.consoleUrl.replace("http://", "https://")
  const response = await fetch(`${url}/sign-in`, { tls: { ca: certs.caCert } })
  expect(response.status).toBe(200)
  expect(response.headers.get("content-security-policy")).toContain("default-src 'none'")
  expect(await response.text()).toContain("Sign in")
})

test("only one of the two TLS files is a configuration error naming the missing one", async () => {
  const child = Bun.spawn(["bun", "src/main.ts"], {
    cwd: join(import.meta.dir, "..", ".."),
    env: await testEnv({ CONSOLE_TLS_CERT_FILE: join(dir, "cert.pem") }),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
  expect(code).toBe(1)
  expect(stderr).toContain("CONSOLE_TLS_KEY_FILE")
})
