import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { admin } from "../support/cli.ts"
import { freePort } from "../support/console.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"
import { shellBlock } from "../support/shellBlocks.ts"

/**
 * The commands the documentation gives a reader, run: every `bun run admin …` written in README.md or docs/ is a
 * command the admin tool lists, with flags that command takes; and the shell blocks that can run here run as written
 * (only addresses, ports, file paths and placeholders are the test's): the README's "by hand" and webhook blocks, the
 * same webhook block of docs/webhooks.md and its signature check, the channel pages' commands and the syslog CA.
 * test/docs/shellBlocks.test.ts lists which test runs each block and why the others are not run here.
 */

const ROOT = join(import.meta.dir, "..", "..")
// docs/design.md records decisions, some not built yet; the other pages tell a reader what to run.
const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md") && f !== "design.md")
    .map((f) => `docs/${f}`),
]
const read = (page: string) => readFileSync(join(ROOT, page), "utf8")

/** Every `bun run [--silent] admin <words and flags>` in a page, up to a shell operator, quote or comment. */
const adminCommands = (page: string): Array<{ page: string; words: string[]; flags: string[] }> =>
  [...read(page).matchAll(/bun run (?:--silent )?admin ([^`|#)\n;&"]+)/g)].map((m) => {
    const parts = (m[1] ?? "").trim().split(/\s+/)
    return {
      page,
      words: parts.filter((p) => /^[a-z][a-z-]*$/.test(p)).slice(0, 2),
      flags: parts.filter((p) => /^--[a-z-]+$/.test(p)),
    }
  })

/** Runs `script` with bash (-euo pipefail) from the repository's root; `stdin` is what a reader would type. */
const bash = async (
  script: string,
  env: Record<string, string>,
  options: { cwd?: string; stdin?: string | undefined } = {},
) => {
  const run = Bun.spawn(["bash", "-euo", "pipefail", "-c", script], {
    cwd: options.cwd ?? ROOT,
    env: { ...env, PATH: process.env.PATH ?? "" },
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe",
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(run.stdout).text(),
    new Response(run.stderr).text(),
    run.exited,
  ])
  return { stdout, stderr, code }
}

/**
 * The webhook walk-through (README.md and docs/webhooks.md give the same block): a self-signed certificate, the server
 * started with the block's two exported settings, an organization and a channel, the example receiver over TLS, and
 * the demo, whose incidents the receiver prints. The test's own server stands in for `bun run start &`; the
 * certificate goes to a directory of the test's and the receiver's port is a free one instead of 3443.
 */
const runWebhookWalkThrough = async (page: string) => {
  const dir = mkdtempSync(join(tmpdir(), "dsvc-webhook-block-"))
  const port = String(freePort())
  const lines = shellBlock(page, "openssl req -x509 -newkey ec")
    .replaceAll("key.pem", join(dir, "key.pem"))
    .replaceAll("cert.pem", join(dir, "cert.pem"))
    .replaceAll("3443", port)
    .replace(/--name (?:"Acme[^"\n]*"|Acme)(?= )/, `--name "Acme webhooks ${Date.now()}"`)
    .split("\n")
  const startAt = lines.findIndex((l) => l.startsWith("bun run start &"))
  const exportLine = lines.find((l) => l.startsWith("export ")) ?? ""
  expect(startAt).toBeGreaterThan(0)
  const certificate = await bash(lines.slice(0, startAt).join("\n"), {})
  expect({ code: certificate.code, stderr: certificate.code === 0 ? "" : certificate.stderr }).toEqual({
    code: 0,
    stderr: "",
  })
  // The server "in the shell that exports both settings".
  const settings = Object.fromEntries(
    (
      exportLine
        .replace(/#.*/, "")
        .replace(/^export\s+/, "")
        .trim()
        .split(/\s+/) ?? []
    ).map((pair) => {
      const [name = "", ...value] = pair.split("=")
      return [name, value.join("=")]
    }),
  )
  expect(Object.keys(settings).sort()).toEqual(["WEBHOOK_ALLOW_PRIVATE", "WEBHOOK_CA_FILE"])
  // A database of its own (as every testEnv): the webhook dispatcher of this file's other server (started without
  // these settings) would otherwise claim the walk-through's deliveries and refuse the receiver's loopback address.
  const webhookServer = await startServer({ env: await testEnv(settings) })
  try {
    // The receiver runs until it is stopped: the script waits (interruptibly) and stops its jobs when it is ended.
    // The demo starts once the receiver listens, as it would for a reader who starts the receiver and then types the
    // next line: on a loaded machine the demo's first delivery could otherwise meet a closed port and wait for its
    // retry. A receiver that never listens ends the script (and the test) with its own error.
    const rest = lines.slice(startAt + 1)
    const demoAt = rest.findIndex((l) => l.startsWith("bun run demo"))
    expect(demoAt).toBeGreaterThan(0)
    const waitForReceiver = [
      `for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && break; sleep 0.1; done`,
      `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null || { echo 'the receiver did not listen in 30 s' >&2; exit 1; }`,
    ]
    const script = [
      "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
      "trap 'exit 0' TERM",
      exportLine,
      ...rest.slice(0, demoAt),
      'echo "walk-through organization $ORG"',
      ...waitForReceiver,
      ...rest.slice(demoAt),
      "sleep 120 & wait $!",
    ].join("\n")
    const run = Bun.spawn(["bash", "-euo", "pipefail", "-c", script], {
      cwd: ROOT,
      env: { ...webhookServer.env, PATH: process.env.PATH ?? "" },
      stdout: "pipe",
      stderr: "pipe",
    })
    const stderr = new Response(run.stderr).text()
    const printed: Array<string> = []
    const types = ["incident.created", "incident.escalated", "incident.reopened"]
    const seen = (async () => {
      const decoder = new TextDecoder()
      let buffer = ""
      for await (const chunk of run.stdout) {
        buffer += decoder.decode(chunk, { stream: true })
        printed.push(...buffer.split("\n").slice(0, -1))
        buffer = buffer.slice(buffer.lastIndexOf("\n") + 1)
        if (types.every((type) => printed.some((line) => line.startsWith(`${type} `)))) return true
      }
      return false
    })()
    const outcome = await Promise.race([seen, run.exited.then(() => false), Bun.sleep(90_000).then(() => false)])
    run.kill("SIGTERM")
    const code = await run.exited
    // On a failure, what the receiver, the demo and the outbox say: the deliveries of the walk-through's organization.
    const deliveries = outcome ? "" : await walkThroughDeliveries(webhookServer.env, printed)
    expect({ outcome, stderr: outcome ? "" : await stderr, printed: outcome ? [] : printed, deliveries }).toEqual({
      outcome: true,
      stderr: "",
      printed: [],
      deliveries: "",
    })
    expect(code).toBe(0)
  } finally {
    await shutdown(webhookServer)
  }
}

/** The delivery log of the channel the walk-through made (the demo prints its organization's id). */
const walkThroughDeliveries = async (env: Record<string, string>, printed: ReadonlyArray<string>) => {
  const org = printed.join("\n").match(/walk-through organization (\S+)/)?.[1]
  if (org === undefined) return "(no organization was made)"
  const channels = await admin(env, ["channel", "list", "--org", org])
  const channel = channels.stdout.match(/whc_\S+/)?.[0]
  if (channel === undefined) return `(no channel: ${channels.stdout}${channels.stderr})`
  const log = await admin(env, ["channel", "deliveries", channel])
  return log.stdout + log.stderr
}

/**
 * A channel page's block with its placeholders filled: a new organization for `<org-id>`, the example hosts replaced by
 * 127.0.0.1 (allowed through WEBHOOK_ALLOW_PRIVATE: no resolver here), and what the reader pastes on standard input.
 * `bun run admin channel test` lines are left out: they send to the real Slack, Teams, Splunk or collector.
 */
const runWithOrganization = async (page: string, first: string, stdin?: string) => {
  const org = await admin(server.env, ["org", "create", "--name", `Docs ${page} ${Date.now()}`, "--json"])
  expect(org.code).toBe(0)
  const orgId = (JSON.parse(org.stdout) as { id: string }).id
  const script = shellBlock(page, first)
    .split("\n")
    .filter((line) => !line.startsWith("bun run admin channel test "))
    .join("\n")
    .replaceAll("<org-id>", orgId)
    .replace(/[a-z]+\.example\.com/g, (host) => (host === "example.com" ? host : "127.0.0.1"))
    .replaceAll("ana@example.com", `ana-${Date.now()}@example.com`)
  const result = await bash(script, { ...server.env, WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }, { stdin })
  expect({ code: result.code, stderr: result.code === 0 ? "" : result.stderr }).toEqual({ code: 0, stderr: "" })
  return result.stdout
}

const CHAT_URL = "https://127.0.0.1:9/services/T0DOCS001/B0DOCS001/docsSecretPart0123456789\n"

let server: RunningServer
beforeAll(async () => {
  server = await startServer({ env: await testEnv() })
})
afterAll(() => shutdown(server))

describe("commands in the documentation", () => {
  test("every `bun run admin …` in README.md and docs/ is a command the admin tool lists, with flags it takes", async () => {
    const usage = await admin(server.env, ["help"])
    expect(usage.code).toBe(0)
    // The help lists every command on one line with all its flags: `  - <group> <command> <flags…>  <description>`.
    const lines = usage.stdout.split("\n").flatMap((l) => (l.startsWith("  - ") ? [l.slice(4)] : []))
    const commands = PAGES.flatMap(adminCommands).filter((c) => c.words.length > 0 && c.words[0] !== "help")
    expect(commands.length).toBeGreaterThan(20)
    const unknown: string[] = []
    for (const { page, words, flags } of commands) {
      const [group, command] = words
      // A group alone (`bun run admin org`) lists its commands; otherwise the help has a line for the command.
      const entries = lines.filter((l) => `${l} `.startsWith(`${group} ${command ?? ""}`.trim() + " "))
      if (entries.length === 0) {
        unknown.push(`${page}: admin ${words.join(" ")}`)
        continue
      }
      const text = entries.join(" ")
      // --json and --help: every command takes them.
      for (const flag of flags)
        if (flag !== "--json" && flag !== "--help" && !text.includes(flag))
          unknown.push(`${page}: admin ${words.join(" ")} ${flag}`)
    }
    expect(unknown).toEqual([])
  })

  test("the README's by-hand block runs as written: an organization, a key, and curl reads the incidents", async () => {
    const block = shellBlock("README.md", 'ORG=$(bun run --silent admin org create --name "Acme"')
    expect(block).toContain("admin org create")
    const address = new URL(server.url).host
    const script = block
      .split("\n")
      // `open` starts a browser; the demo has a test of its own (it plays a two-minute story).
      .filter((line) => !line.startsWith("open ") && !line.startsWith("bun run demo"))
      .join("\n")
      .replaceAll("localhost:8080", address)
      // Organization names are unique in a database that other tests share.
      .replaceAll('--name "Acme"', `--name "Acme ${Date.now()}"`)
    const { stdout, stderr, code } = await bash(`${script}\necho\necho "KEY=$KEY"`, server.env)
    expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" })
    const [answer, keyLine] = stdout.trim().split("\n")
    expect(JSON.parse(answer ?? "")).toEqual({ data: [], nextCursor: null })
    expect(keyLine).toMatch(/^KEY=dsk_/)
  }, 60_000)
  test("README's webhook block runs: the receiver prints the demo's created, escalated and reopened incidents", async () => {
    await runWebhookWalkThrough("README.md")
  }, 150_000)

  test("docs/webhooks.md's receiver walk-through runs the same way", async () => {
    await runWebhookWalkThrough("docs/webhooks.md")
  }, 150_000)

  test("docs/webhooks.md's signature check in a shell gives the HMAC the service sends", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dsvc-hmac-block-"))
    const body = '{"id":"evt_1","type":"webhook.test"}'
    writeFileSync(join(dir, "body.json"), body)
    const env = { T: "1700000000", WEBHOOK_SECRET: "whsec_docs" }
    const result = await bash(shellBlock("docs/webhooks.md", "printf '%s.%s' \"$T\""), env, { cwd: dir })
    expect(result.code).toBe(0)
    expect(result.stdout.trim()).toBe(createHmac("sha256", env.WEBHOOK_SECRET).update(`${env.T}.${body}`).digest("hex"))
  })

  test("docs/channels/syslog.md's self-signed collector certificate is made as written, for its host name", async () => {
    const dir = mkdtempSync(join(tmpdir(), "dsvc-syslog-ca-"))
    const block = shellBlock("docs/channels/syslog.md", "openssl req -x509 -newkey ec").replaceAll(
      "/path/to/",
      `${dir}/`,
    )
    const result = await bash(
      `${block}\nopenssl x509 -in ca.pem -noout -ext subjectAltName\necho "$SYSLOG_CA_FILE"`,
      {},
      {
        cwd: dir,
      },
    )
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("DNS:siem.example.com")
    expect(result.stdout.trim().endsWith(`${dir}/server-cert.pem`)).toBe(true)
  })

  test("the channel pages' commands create their channels, the URL or token read from standard input", async () => {
    const created = (out: string) => out.match(/channel whc_\S+ created/g)?.length ?? 0
    expect(created(await runWithOrganization("docs/channels/README.md", "read -rs SLACK_URL", CHAT_URL))).toBe(1)
    expect(created(await runWithOrganization("docs/channels/slack.md", "read -rs SLACK_URL", CHAT_URL))).toBe(1)
    expect(created(await runWithOrganization("docs/channels/teams.md", "read -rs TEAMS_URL", CHAT_URL))).toBe(1)
    expect(
      created(await runWithOrganization("docs/channels/splunk-hec.md", "read -rs HEC_TOKEN", "hec-docs-token\n")),
    ).toBe(1)
    expect(created(await runWithOrganization("docs/channels/syslog.md", "bun run admin channel create"))).toBe(1)
    expect(created(await runWithOrganization("docs/channels/ocsf.md", "bun run admin channel create"))).toBe(2)
  }, 120_000)

  test("docs/console.md's first admin: the organization list and a user with a one-time link", async () => {
    const out = await runWithOrganization("docs/console.md", "bun run admin org list")
    expect(out).toMatch(/user usr_\S+ \(ana-\d+@example\.com, admin\) created/)
    expect(out).toMatch(/\/set-password\//)
  }, 60_000)
})
