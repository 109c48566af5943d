import { afterAll, expect, test } from "bun:test"
import { rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type IncidentWebhook, type Receiver, startReceiver } from "../../examples/receiver.ts"
import { adminJson } from "../support/cli.ts"
import { freePort } from "../support/console.ts"
import { testEnv } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * Issue "Signed webhooks", done when: a channel pointed at the example receiver gets signed incident.created,
 * incident.escalated and incident.reopened requests from `bun run demo`.
 */

const ROOT = join(import.meta.dir, "..", "..")
let receiver: Receiver | undefined
let env: Record<string, string> | undefined

afterAll(async () => {
  await receiver?.stop()
  if (env?.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true })
})

test("`bun run demo --org` sends signed created, escalated and reopened webhooks to examples/receiver.ts", async () => {
  const certs = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
  const caFile = join(tmpdir(), `dsvc-demo-ca-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  env = await testEnv({ WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8", WEBHOOK_CA_FILE: caFile })

  const org = await adminJson(env, ["org", "create", "--name", `Demo receiver ${crypto.randomUUID().slice(0, 8)}`])
  const port = freePort()
  const channel = await adminJson(env, [
    "webhook",
    "create",
    "--org",
    org.id,
    "--url",
    `https://127.0.0.1:${port}/webhooks`,
  ])
  const received: Array<IncidentWebhook> = []
  receiver = startReceiver({
    secret: channel.secret,
    port,
    hostname: "127.0.0.1",
    tls: { cert: certs.cert, key: certs.key },
    onIncident: (event) => {
      received.push(event)
    },
  })

  const demo = Bun.spawn(["bun", "src/demo.ts", "--org", org.id], {
    cwd: ROOT,
    env,
    stdout: "pipe",
    stderr: "pipe",
  })
  const [out, err, code] = await Promise.all([
    new Response(demo.stdout).text(),
    new Response(demo.stderr).text(),
    demo.exited,
  ])
  expect({ code, err }).toEqual({ code: 0, err: "" })
  expect(out).toContain(`Demo organization ${org.id}`)
  expect(out).toMatch(/Webhooks to 1 channel\(s\): \d+ delivered, 0 still retrying, 0 dead/)
  await receiver.idle()

  const types = received.map((event) => event.type)
  expect(types).toContain("incident.created")
  expect(types).toContain("incident.escalated")
  expect(types).toContain("incident.reopened")
  // Every request passed the receiver's signature check (a bad one is answered 400 and never reaches onIncident).
  expect(receiver.stats.rejected).toBe(0)
  expect(receiver.stats.accepted).toBe(received.length)
}, 90_000)
