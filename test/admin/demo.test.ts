import { afterAll, beforeAll, expect, test } from "bun:test"
import { join } from "node:path"
import { get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer

beforeAll(async () => {
  server = await startServer()
})

afterAll(() => shutdown(server))

test("D24: bun run demo seeds an attack and prints a working key and curl command", async () => {
  const child = Bun.spawn(["bun", "src/admin/demo.ts"], {
    cwd: join(import.meta.dir, "..", ".."),
    env: { ...server.env, BASE_URL: server.url },
    stdout: "pipe",
    stderr: "pipe",
  })
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  expect({ code, err }).toEqual({ code: 0, err: "" })
  const key = /\n {2}(dsk_\S+)\n/.exec(out)?.[1] as string
  expect(key).toMatch(/^dsk_key_/)
  expect(out).toContain(`curl -H "Authorization: Bearer ${key}" ${server.url}/v1/incidents`)
  const incidents = await get(server.url, "/v1/incidents", key)
  expect(incidents.status).toBe(200)
  expect(incidents.body.data).toHaveLength(2)
  const [reopened, attack] = incidents.body.data
  expect(attack).toMatchObject({ sourceIp: "203.0.113.66", severity: "high", status: "open", highConfidence: true })
  expect(attack.eventCount).toBe(42)
  expect(attack.eventTypes).toEqual(["portscan.syn", "ssh.command", "ssh.login_attempt", "ssh.login_success"])
  expect(reopened).toMatchObject({ sourceIp: "198.51.100.14", status: "open", resolvedAt: null, eventCount: 2 })
  const detail = await get(server.url, `/v1/incidents/${attack.id}`, key)
  expect(detail.body.events).toHaveLength(42)
  expect(JSON.stringify(detail.body)).not.toContain("P@ssw0rd")
})
