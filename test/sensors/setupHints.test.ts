import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { SensorView } from "../../src/admin/SensorAdmin.ts"
import { HEARTBEAT_HEADER_FILE, setupSnippets } from "../../src/admin/sensorSetup.ts"
import { SensorPage } from "../../src/console/sensors/sensorPage.tsx"
import { SensorsPage } from "../../src/console/sensors/sensorsPage.tsx"
import { SensorId } from "../../src/domain/ids.ts"
import { type RunningServer, startServer, testEnv } from "../support/server.ts"

/**
 * D43 set-up hints on Settings → Sensors: the heartbeat snippet never puts the token on a command line and creates
 * its header file readable by root alone; a plain-HTTP ingest address behind an HTTPS console is warned about on
 * the page and once in the start-up log; a sensor's heartbeat form starts on its current value.
 */

const SENSOR_ID = SensorId.make("sen_01JD2Q7QZX3V5B7N9M1K3J5H7G")
const TOKEN = `dst_${SENSOR_ID}_${"Q".repeat(43)}`

const sensor = (overrides: Partial<SensorView> = {}): SensorView => ({
  id: SENSOR_ID,
  name: "dmz-web-01",
  profile: "linux-server",
  status: "alive",
  lastSeenAt: null,
  heartbeatIntervalSeconds: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  revokedAt: null,
  previousTokenValidUntil: null,
  ...overrides,
})

const viewer = { email: "admin@acme.example", role: "admin" as const, csrfToken: "csrf" }
const now = new Date("2026-01-02T00:00:00.000Z")

describe("the heartbeat snippet keeps the token off command lines", () => {
  test("run as pasted, it writes the header to a file of mode 600; no command it runs carries the token", async () => {
    const heartbeat = setupSnippets({
      ingestUrl: "https://ingest.example.test",
      token: TOKEN,
      profile: "generic",
    }).find((s) => s.kind === "heartbeat")
    expect(heartbeat).toBeDefined()
    const dir = mkdtempSync(join(tmpdir(), "heartbeat-"))
    try {
      const file = join(dir, "decoy-heartbeat.header")
      // As pasted into a shell: the shell reads the commands, and the command that reads the terminal gets the
      // lines after it. `-x` prints every command the shell runs, with its arguments.
      const script = (heartbeat?.text ?? "").replaceAll(HEARTBEAT_HEADER_FILE, file)
      const shell = Bun.spawn(["bash", "-x"], { stdin: "pipe", stdout: "pipe", stderr: "pipe" })
      shell.stdin.write(`${script}\n`)
      await shell.stdin.end()
      const [trace, code] = await Promise.all([new Response(shell.stderr).text(), shell.exited])
      expect(code).toBe(0)
      expect(trace).not.toContain(TOKEN.slice(-20))
      expect(readFileSync(file, "utf8")).toBe(`Authorization: Bearer ${TOKEN}\n`)
      expect(statSync(file).mode & 0o777).toBe(0o600)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("a plain-HTTP ingest address behind an HTTPS console is warned about", () => {
  const page = (appUrl: string, ingestUrl: string) =>
    String(
      SensorsPage({
        viewer,
        sensors: [sensor()],
        flash: { kind: "ok", text: "Sensor added.", secret: { label: "The ingest token.", value: TOKEN } },
        now,
        ingestUrl,
        appUrl,
      }),
    )

  test("on the Sensors page, at the top and next to the snippets", () => {
    const html = page("https://console.example.test", "http://console.example.test:8081")
    const setup = html.indexOf('id="setup"')
    expect(setup).toBeGreaterThan(0)
    const warnings = [...html.matchAll(/is plain HTTP: sensor tokens would travel unencrypted/g)].map((m) => m.index)
    expect(warnings).toHaveLength(2)
    expect(warnings[1]).toBeGreaterThan(setup)
    expect(html).toContain("set INGEST_URL to its https:// address")
  })

  test("not when the ingest address is HTTPS, nor when the console itself is plain HTTP", () => {
    expect(page("https://console.example.test", "https://ingest.example.test")).not.toContain("plain HTTP")
    expect(page("http://localhost:8082", "http://localhost:8081")).not.toContain("plain HTTP")
  })

  let server: RunningServer | undefined
  beforeAll(async () => {
    // APP_URL is https://console.test in the test environment, and INGEST_URL is unset.
    server = await startServer({ env: await testEnv() })
  })
  afterAll(async () => {
    await server?.stop()
  })

  test("once in the start-up log", () => {
    const lines = (server?.logs ?? []).filter((l) => l.includes("sensor tokens would travel unencrypted"))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("INGEST_URL")
  })
})

describe("a sensor's heartbeat form starts on its current value", () => {
  const selected = (seconds: number | null) => {
    const html = String(
      SensorPage({ viewer, sensor: sensor({ heartbeatIntervalSeconds: seconds }), flash: undefined, now }),
    )
    const select = /<select id="heartbeat-interval"[^>]*>([\s\S]*?)<\/select>/.exec(html)?.[1] ?? ""
    return [...select.matchAll(/<option value="([^"]*)"([^>]*)>/g)]
      .filter((m) => /\bselected\b/.test(m[2] ?? ""))
      .map((m) => m[1])
  }

  test("the interval in force is the one selected (saving without a change keeps it)", () => {
    expect(selected(300)).toEqual(["5m"])
    expect(selected(86400)).toEqual(["24h"])
    expect(selected(null)).toEqual([""])
    // An interval set from the CLI that the list does not offer is offered and selected.
    expect(selected(120)).toEqual(["120s"])
  })
})
