import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Keys } from "../../src/platform/keys.ts"
import { admin } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D46/D47 through `bun run admin channel …` (and its old name `webhook …`), against a real server's database:
 * every kind is created and rotated, a Slack or Teams URL and a HEC token are stored sealed and shown nowhere
 * (list, create's output, audit log), `-` reads them from standard input, and each refusal is one line.
 * The addresses are 127.0.0.1 with WEBHOOK_ALLOW_PRIVATE: they pass the address rule without a resolver.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }) })
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

/** `bun run admin …` (the CLI bundled once for the run) with `stdin` as its standard input. */
const cli = (args: ReadonlyArray<string>, stdin = "") => admin(server.env, args, stdin)

const json = async (args: ReadonlyArray<string>, stdin = "") => {
  const result = await cli([...args, "--json"], stdin)
  if (result.code !== 0) throw new Error(`admin ${args.join(" ")} failed: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** A refusal: exit 1, nothing on stdout, one `error: …` line on stderr. */
const refused = async (args: ReadonlyArray<string>, stdin = "") => {
  const result = await cli(args, stdin)
  expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 1, stdout: "" })
  expect(result.stderr).toMatch(/^error: [^\n]+$/)
  return result.stderr
}

const newOrg = async () => (await json(["org", "create", "--name", `Channels ${crypto.randomUUID()}`])).id as string

/** The stored row and, opened with the server's SECRET_KEY, what is sealed in it. */
const stored = (channelId: string) =>
  db.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { sealer } = yield* Keys
      const [row] = yield* sql<{ secretEnc: string | null; url: string; row: string }>`
        select secret_enc as "secretEnc", url, t::text as row from webhook_channels t where id = ${channelId}`
      if (row === undefined) throw new Error(`no channel ${channelId}`)
      const opened = row.secretEnc === null ? undefined : sealer.open(row.secretEnc)
      return { ...row, opened: opened === undefined ? undefined : new TextDecoder().decode(opened) }
    }),
  )

const auditOf = (orgId: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ action: string; row: string }>`select action, t::text as row from audit_log t where org_id = ${orgId}`,
    ),
  )

// Credentials as a receiver makes them: the path of an incoming-webhook URL, a HEC token (a GUID).
const SLACK_PATH = "/services/T0SLACK01/B0SLACK01/slackSecretPart0123456789"
const SLACK_URL = `https://127.0.0.1:9${SLACK_PATH}`
const TEAMS_PATH = "/workflows/teamsSecretPart0123456789/triggers/manual/paths/invoke?sig=teamsSig0123456789"
const TEAMS_URL = `https://127.0.0.1:9${TEAMS_PATH}`
const HEC_TOKEN = "7c1e4a2b-9d3f-4e5a-8b6c-0d1e2f3a4b5c"
const HEC_URL = "https://127.0.0.1:9/services/collector"
const SYSLOG = "syslog+tls://127.0.0.1:6514"

describe("channel create, one per kind", () => {
  test("each kind and format is created; only a webhook prints a secret; list shows kind and format, never a credential", async () => {
    const org = await newOrg()
    const webhook = await json(["channel", "create", "--org", org, "--url", "https://127.0.0.1:9/hook"])
    expect(webhook).toEqual({
      id: expect.stringMatching(/^whc_/),
      kind: "webhook",
      format: "native",
      settleSeconds: 0,
      secret: expect.any(String),
    })
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/)

    const slackHuman = await cli(["channel", "create", "--org", org, "--kind", "slack", "--url", SLACK_URL])
    expect(slackHuman.code).toBe(0)
    expect(slackHuman.stdout).toMatch(
      /^slack channel whc_\S+ created \(settle 30 s\); its URL is stored sealed and not shown again$/,
    )
    const slackId = /whc_\S+/.exec(slackHuman.stdout)?.[0] ?? ""

    // `--url -`: the Teams URL comes from standard input, one line, trimmed.
    const teams = await json(["channel", "create", "--org", org, "--kind", "teams", "--url", "-"], `  ${TEAMS_URL}  \n`)
    expect(teams).toEqual({ id: expect.stringMatching(/^whc_/), kind: "teams", format: "native", settleSeconds: 30 })

    const syslog = await json([
      "channel",
      "create",
      "--org",
      org,
      "--kind",
      "syslog",
      "--format",
      "ocsf",
      "--url",
      SYSLOG,
    ])
    expect(syslog).toEqual({ id: expect.stringMatching(/^whc_/), kind: "syslog", format: "ocsf", settleSeconds: 0 })

    // `--token -`: only the first line is the token; what follows is not read into it.
    const hecArgs = ["channel", "create", "--org", org, "--kind", "splunk_hec", "--format", "ocsf", "--url", HEC_URL]
    const hecHuman = await cli([...hecArgs, "--token", "-", "--min-severity", "high"], `${HEC_TOKEN}\nnot-the-token\n`)
    expect(hecHuman.code).toBe(0)
    expect(hecHuman.stdout).toMatch(
      /^splunk_hec channel whc_\S+ created; its HEC token is stored sealed and not shown again$/,
    )
    const hecId = /whc_\S+/.exec(hecHuman.stdout)?.[0] ?? ""
    for (const output of [slackHuman.stdout, hecHuman.stdout, JSON.stringify(teams)]) {
      for (const secret of [SLACK_PATH, TEAMS_PATH, "teamsSig", HEC_TOKEN]) expect(output).not.toContain(secret)
    }

    const rows = await json(["channel", "list", "--org", org])
    const byId = new Map(rows.map((r: { id: string }) => [r.id, r]))
    expect(byId.get(webhook.id)).toMatchObject({ kind: "webhook", format: "native", url: "https://127.0.0.1:9/hook" })
    expect(byId.get(slackId)).toMatchObject({ kind: "slack", format: "native", url: "https://127.0.0.1:9/…" })
    expect(byId.get(teams.id)).toMatchObject({ kind: "teams", format: "native", url: "https://127.0.0.1:9/…" })
    expect(byId.get(syslog.id)).toMatchObject({ kind: "syslog", format: "ocsf", url: SYSLOG })
    expect(byId.get(hecId)).toMatchObject({ kind: "splunk_hec", format: "ocsf", minSeverity: "high", url: HEC_URL })
    const human = await cli(["channel", "list", "--org", org])
    expect(human.code).toBe(0)
    expect(human.stdout).toContain(`kind=splunk_hec  format=ocsf`)
    expect(human.stdout).toContain(`kind=teams  format=native`)
    for (const listing of [JSON.stringify(rows), human.stdout]) {
      for (const secret of [SLACK_PATH, "slackSecretPart", TEAMS_PATH, "teamsSecretPart", "teamsSig", HEC_TOKEN]) {
        expect(listing).not.toContain(secret)
      }
    }

    // Stored sealed: the column is not the credential, and the server's key opens it to exactly the value given.
    const slackRow = await stored(slackId)
    const teamsRow = await stored(teams.id)
    const hecRow = await stored(hecId)
    expect(slackRow.opened).toBe(SLACK_URL)
    expect(teamsRow.opened).toBe(TEAMS_URL)
    expect(hecRow.opened).toBe(HEC_TOKEN)
    for (const row of [slackRow, teamsRow, hecRow]) {
      for (const secret of ["slackSecretPart", "teamsSecretPart", "teamsSig", HEC_TOKEN]) {
        expect(row.row).not.toContain(secret)
      }
    }
    expect((await stored(syslog.id)).secretEnc).toBeNull()
    expect((await stored(webhook.id)).opened).toBe(webhook.secret)

    // D31: the audit log names the channels, never the credentials.
    const audit = await auditOf(org)
    expect(audit.filter((a) => a.action === "webhook.create")).toHaveLength(5)
    for (const a of audit) {
      for (const secret of ["slackSecretPart", "teamsSecretPart", "teamsSig", HEC_TOKEN, webhook.secret]) {
        expect(a.row).not.toContain(secret)
      }
    }
  })
})

describe("channel rotate, per kind", () => {
  test("HEC takes a new token and Slack a new URL at once; syslog and --grace beside them are refused in one line", async () => {
    const org = await newOrg()
    const hec = await json(
      ["channel", "create", "--org", org, "--kind", "splunk_hec", "--url", HEC_URL, "--token", "-"],
      `${HEC_TOKEN}\n`,
    )
    const slack = await json(["channel", "create", "--org", org, "--kind", "slack", "--url", SLACK_URL])
    const syslog = await json(["channel", "create", "--org", org, "--kind", "syslog", "--url", SYSLOG])
    const webhook = await json(["channel", "create", "--org", org, "--url", "https://127.0.0.1:9/hook"])

    const newToken = "0f9e8d7c-6b5a-4c3d-9e2f-1a0b9c8d7e6f"
    const hecRotated = await cli(["channel", "rotate", hec.id, "--token", "-"], `${newToken}\n`)
    expect(hecRotated).toEqual({
      code: 0,
      stdout: `splunk_hec channel ${hec.id}: the new HEC token is stored sealed and used from now on`,
      stderr: "",
    })
    expect((await stored(hec.id)).opened).toBe(newToken)
    expect((await stored(hec.id)).url).toBe(HEC_URL)

    const newSlackPath = "/services/T0SLACK01/B0SLACK02/slackRotatedPart987654321"
    const slackRotated = await json(["channel", "rotate", slack.id, "--url", `https://127.0.0.1:9${newSlackPath}`])
    expect(slackRotated).toEqual({ kind: "slack", previousSecretValidUntil: null })
    expect((await stored(slack.id)).opened).toBe(`https://127.0.0.1:9${newSlackPath}`)

    expect(await refused(["channel", "rotate", syslog.id])).toBe("error: a syslog channel has no secret to rotate")
    expect(await refused(["channel", "rotate", hec.id, "--grace", "24h", "--token", "x"])).toBe(
      "error: --grace is for webhook channels",
    )
    expect(await refused(["channel", "rotate", slack.id, "--grace", "1h", "--url", SLACK_URL])).toBe(
      "error: --grace is for webhook channels",
    )
    expect(await refused(["channel", "rotate", hec.id, "--url", "https://127.0.0.1:9/other"])).toContain("--token")
    expect(await refused(["channel", "rotate", slack.id, "--token", newToken])).toContain("--url")
    expect(await refused(["channel", "rotate", slack.id])).toBe("error: --url is required")
    expect(await refused(["channel", "rotate", hec.id])).toBe("error: --token is required")
    expect(await refused(["channel", "rotate", webhook.id, "--token", "x"])).toContain("signing secret")
    expect(await refused(["channel", "rotate", hec.id, "--token", "-"], "\n")).toContain("standard input")
    expect(await refused(["channel", "rotate", slack.id, "--url", "http://127.0.0.1:9/services/x"])).toContain("https")
    // Nothing refused changed what is stored.
    expect((await stored(hec.id)).opened).toBe(newToken)
    expect((await stored(slack.id)).opened).toBe(`https://127.0.0.1:9${newSlackPath}`)

    const webhookRotated = await json(["channel", "rotate", webhook.id, "--grace", "24h"])
    expect(webhookRotated.kind).toBe("webhook")
    expect(webhookRotated.secret).toMatch(/^whsec_/)
    expect(webhookRotated.secret).not.toBe(webhook.secret)
    expect(webhookRotated.previousSecretValidUntil).not.toBeNull()

    const audit = await auditOf(org)
    expect(audit.filter((a) => a.action === "webhook.rotate")).toHaveLength(3)
    for (const a of audit) {
      for (const secret of [HEC_TOKEN, newToken, "slackSecretPart", "slackRotatedPart", webhookRotated.secret]) {
        expect(a.row).not.toContain(secret)
      }
    }
  })
})

describe("the settle window through channel create and channel update", () => {
  test("people's kinds default to their kind's window and machine kinds to 0; update changes it, audited; list shows it", async () => {
    const org = await newOrg()
    const slack = await json(["channel", "create", "--org", org, "--kind", "slack", "--url", SLACK_URL])
    const teams = await json([
      "channel",
      "create",
      "--org",
      org,
      "--kind",
      "teams",
      "--url",
      TEAMS_URL,
      "--settle",
      "5",
    ])
    const webhook = await json(["channel", "create", "--org", org, "--url", "https://127.0.0.1:9/hook"])
    const hec = await json([
      "channel",
      "create",
      "--org",
      org,
      "--kind",
      "splunk_hec",
      "--url",
      HEC_URL,
      "--token",
      HEC_TOKEN,
    ])
    // 0 is every machine kind's window, so saying it is accepted.
    const syslog = await json(["channel", "create", "--org", org, "--kind", "syslog", "--url", SYSLOG, "--settle", "0"])
    expect([slack, teams, webhook, hec, syslog].map((c) => [c.kind, c.settleSeconds])).toEqual([
      ["slack", 30],
      ["teams", 5],
      ["webhook", 0],
      ["splunk_hec", 0],
      ["syslog", 0],
    ])

    expect(await cli(["channel", "update", slack.id, "--settle", "0"])).toEqual({
      code: 0,
      stdout: `channel ${slack.id}: settle window off: every change is sent at once`,
      stderr: "",
    })
    expect(await json(["channel", "update", teams.id, "--settle", "3600"])).toEqual({
      id: teams.id,
      settleSeconds: 3600,
    })
    // The old name of the group takes it too.
    expect(await json(["webhook", "update", slack.id, "--settle", " 12 "])).toEqual({ id: slack.id, settleSeconds: 12 })
    const rows = await json(["channel", "list", "--org", org])
    expect(Object.fromEntries(rows.map((r: { id: string; settleSeconds: number }) => [r.id, r.settleSeconds]))).toEqual(
      {
        [slack.id]: 12,
        [teams.id]: 3600,
        [webhook.id]: 0,
        [hec.id]: 0,
        [syslog.id]: 0,
      },
    )
    expect((await cli(["channel", "list", "--org", org])).stdout).toContain("settleSeconds=12")

    const audit = await auditOf(org)
    const settles = audit.filter((a) => a.action === "webhook.settle").map((a) => a.row)
    expect(settles).toHaveLength(3)
    expect(settles.join("\n")).toContain("settle off (was 30 s)")
    expect(settles.join("\n")).toContain("settle 3600 s (was 5 s)")
    expect(settles.join("\n")).toContain("settle 12 s (was off)")
    const created = audit.filter((a) => a.action === "webhook.create").map((a) => a.row)
    expect(created.filter((row) => row.includes("settle 5 s"))).toHaveLength(1)
  })

  test("a value that is not whole seconds from 0 to 3600, or a window on a machine kind, is refused in one line", async () => {
    const org = await newOrg()
    const slack = await json(["channel", "create", "--org", org, "--kind", "slack", "--url", SLACK_URL])
    const webhook = await json(["channel", "create", "--org", org, "--url", "https://127.0.0.1:9/hook"])
    const range = "--settle must be a whole number of seconds from 0 to 3600 (0: every change at once)"
    const machines = "--settle is for slack, teams and email channels"
    const create = (...args: ReadonlyArray<string>) => ["channel", "create", "--org", org, ...args]
    const cases: Array<[ReadonlyArray<string>, string]> = [
      [create("--kind", "slack", "--url", SLACK_URL, "--settle", "3601"), range],
      [create("--kind", "slack", "--url", SLACK_URL, "--settle=-1"), range],
      [create("--kind", "teams", "--url", TEAMS_URL, "--settle", "1.5"), range],
      [create("--kind", "teams", "--url", TEAMS_URL, "--settle", "30s"), range],
      [create("--url", "https://127.0.0.1:9/hook", "--settle", "30"), `${machines}: a webhook channel's receiver`],
      [create("--kind", "syslog", "--url", SYSLOG, "--settle", "1"), `${machines}: a syslog channel's receiver`],
      [["channel", "update", slack.id, "--settle", "abc"], range],
      [["channel", "update", slack.id, "--settle", "99999999"], range],
      [["channel", "update", slack.id], "--settle is required"],
      [["channel", "update", webhook.id, "--settle", "5"], `${machines}: a webhook channel's receiver`],
      [["channel", "update", "whc_00000000000000000000000000", "--settle", "5"], "unknown webhook channel"],
      [["channel", "update"], "<channel-id> is required"],
    ]
    for (const [args, fragment] of cases) {
      const line = await refused(args)
      expect({ args, line }).toEqual({ args, line: expect.stringContaining(fragment) })
    }
    // Nothing refused was created or changed.
    const rows = await json(["channel", "list", "--org", org])
    expect(rows.map((r: { id: string; settleSeconds: number }) => [r.id, r.settleSeconds])).toEqual([
      [slack.id, 30],
      [webhook.id, 0],
    ])
    expect((await auditOf(org)).filter((a) => a.action === "webhook.settle")).toEqual([])
  })
})

describe("what channel create refuses, in one line, creating nothing", () => {
  test("unknown kind, ocsf for people, ocsf with sensor health, a token where none goes, wrong destinations", async () => {
    const org = await newOrg()
    const create = (...args: ReadonlyArray<string>) => ["channel", "create", "--org", org, ...args]
    const cases: Array<[ReadonlyArray<string>, string, string?]> = [
      [create("--kind", "pagerduty", "--url", "https://127.0.0.1:9/x"), "--kind must be one of"],
      [create("--kind", "slack", "--format", "ocsf", "--url", SLACK_URL), "--format ocsf"],
      [create("--format", "ocsf", "--sensor-health", "--url", "https://127.0.0.1:9/x"), "sensor-health"],
      [create("--format", "cef", "--url", "https://127.0.0.1:9/x"), "--format must be one of"],
      [create("--token", HEC_TOKEN, "--url", "https://127.0.0.1:9/x"), "--token is for splunk_hec"],
      [create("--kind", "slack", "--token", "-", "--url", SLACK_URL), "--token is for splunk_hec", `${HEC_TOKEN}\n`],
      [create("--kind", "splunk_hec", "--url", HEC_URL), "--token is required"],
      [create("--kind", "splunk_hec", "--url", HEC_URL, "--token", "two words"), "the HEC token must be"],
      [create("--kind", "syslog", "--url", "https://127.0.0.1:6514"), "syslog+tls://"],
      [create("--kind", "syslog", "--url", "syslog://127.0.0.1:514"), "syslog+tls://"],
      [create("--kind", "slack", "--url", "http://127.0.0.1:9/services/T/B/x"), "https"],
      [create("--kind", "teams", "--url", "-"), "nothing on standard input", "\n"],
      [create("--kind", "splunk_hec", "--url", "-", "--token", "-"), "only one of --url and --token", "a\nb\n"],
    ]
    for (const [args, fragment, stdin] of cases) {
      const line = await refused(args, stdin)
      expect({ args, line }).toEqual({ args, line: expect.stringContaining(fragment) })
      // A refused credential is not echoed back.
      expect(line).not.toContain(HEC_TOKEN)
    }
    expect(await json(["channel", "list", "--org", org])).toEqual([])
    expect((await auditOf(org)).filter((a) => a.action === "webhook.create")).toEqual([])
  })
})

describe("a refused channel address names an internationalized host as it was typed", () => {
  test("ξ.local, ξ.example and xn--nxa.example (β) appear in the refusal as given, never as another form", async () => {
    const org = await newOrg()
    const create = (kind: string, url: string) => ["channel", "create", "--org", org, "--kind", kind, "--url", url]
    const cases: Array<[ReadonlyArray<string>, string]> = [
      [create("webhook", "https://ξ.local/x"), "error: webhook URL refused: ξ.local is a multicast DNS host name"],
      [create("slack", "https://xn--nxa.local/x"), "error: Slack URL refused: xn--nxa.local is a multicast DNS host"],
      [create("teams", "https://bücher.internal/x"), "error: Teams URL refused: bücher.internal is an internal host"],
      [create("syslog", "syslog+tls://ξ.local:6514"), "error: syslog destination refused: ξ.local is a multicast DNS"],
      // .example never resolves (RFC 2606), through the machine's real resolver.
      [create("webhook", "https://ξ.example/x"), "error: webhook URL refused: ξ.example does not resolve"],
      [create("webhook", "https://xn--nxa.example/x"), "error: webhook URL refused: xn--nxa.example does not resolve"],
      [create("syslog", "syslog+tls://ξ.example"), "error: syslog destination refused: ξ.example does not resolve"],
    ]
    for (const [args, start] of cases) {
      const line = await refused(args)
      expect({ args, line }).toEqual({ args, line: expect.stringContaining(start) })
      expect(line).not.toContain("xn--zxa")
      expect(line).not.toContain("xn--bcher")
    }
    expect(await json(["channel", "list", "--org", org])).toEqual([])
  })
})

describe("`webhook` is the old name of the channel group and works the same", () => {
  test("it lists the same commands under its own name", async () => {
    const [channel, webhook] = await Promise.all([cli(["channel"]), cli(["webhook"])])
    expect(channel.code).toBe(0)
    expect(webhook.code).toBe(0)
    // The commands each help lists (`  - <command> <flags…>  <description>`) are the same, flags and all.
    const commands = (help: string) => help.split("\n").filter((line) => line.startsWith("  - "))
    expect(channel.stdout).toContain("$ channel")
    expect(webhook.stdout).toContain("$ webhook")
    expect(commands(webhook.stdout)).toEqual(commands(channel.stdout))
    expect(commands(channel.stdout).length).toBe(13)
    const help = await cli(["help"])
    expect(help.stdout).toContain(
      "  - channel create --org <org-id> [--kind webhook|slack|teams|syslog|splunk_hec|email]",
    )
    expect(help.stdout).toContain("--url - or")
    expect(await refused(["webhook", "frobnicate"])).toBe(
      "error: unknown command: webhook frobnicate (bun run admin webhook lists the commands)",
    )
  })

  test("webhook create, list, rotate and disable act on the same channels as channel …", async () => {
    const org = await newOrg()
    const created = await json(["webhook", "create", "--org", org, "--url", "https://127.0.0.1:9/hook"])
    expect(created).toMatchObject({ kind: "webhook", format: "native", secret: expect.stringMatching(/^whsec_/) })
    const hec = await json(
      ["webhook", "create", "--org", org, "--kind", "splunk_hec", "--url", HEC_URL, "--token", "-"],
      `${HEC_TOKEN}\n`,
    )
    expect(hec).toEqual({ id: expect.any(String), kind: "splunk_hec", format: "native", settleSeconds: 0 })
    expect(await json(["webhook", "list", "--org", org])).toEqual(await json(["channel", "list", "--org", org]))
    expect((await json(["webhook", "rotate", created.id])).secret).toMatch(/^whsec_/)
    await json(["webhook", "disable", hec.id])
    const rows = await json(["channel", "list", "--org", org])
    expect(rows.find((r: { id: string }) => r.id === hec.id)?.enabled).toBe(false)
    expect(await refused(["webhook", "rotate", hec.id, "--grace", "1h"])).toBe("error: --grace is for webhook channels")
  })
})
