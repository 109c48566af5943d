import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { admin, adminJson } from "../support/cli.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * The admin CLI's own answers, against a real server's database: a command group alone lists its commands (the help
 * @effect/cli writes for the group), and a missing flag or argument is one line naming it, the same for every command.
 */

let server: RunningServer

beforeAll(async () => {
  server = await startServer()
})

afterAll(() => shutdown(server))

const GROUPS: Record<string, ReadonlyArray<string>> = {
  org: ["create", "deception", "retention", "tlp", "two-factor", "list"],
  key: ["create", "list", "revoke"],
  sensor: ["create", "profiles", "list", "rename", "heartbeat", "rotate", "revoke"],
  incident: ["close", "note"],
  webhook: [
    "create",
    "list",
    "rotate",
    "update",
    "disable",
    "enable",
    "sensor-health",
    "test",
    "deliveries",
    "redeliver",
    "recipients",
    "invite",
    "remove-recipient",
  ],
  network: ["list", "set", "reset"],
  bait: ["add", "list", "remove"],
  user: ["create", "list", "disable", "reset", "end-sessions", "unlock"],
  "sign-in": ["show", "set", "passwords", "remove"],
  secrets: ["reseal"],
}

/** The commands a help text lists: its lines `  - <command> <flags…>  <description>`. */
const listedCommands = (help: string) => help.split("\n").flatMap((line) => /^ {2}- (\S+)/.exec(line)?.[1] ?? [])

describe("bun run admin <group> alone", () => {
  for (const [group, commands] of Object.entries(GROUPS)) {
    test(`${group}: lists its commands and only them, exit 0`, async () => {
      const result = await admin(server.env, [group])
      expect(result.code).toBe(0)
      expect(result.stderr).toBe("")
      expect(result.stdout).toContain(`$ ${group}`)
      expect(listedCommands(result.stdout)).toEqual([...commands])
    })
  }

  test("an unknown command of a group names it in one line and points to the group's list, exit 1", async () => {
    const result = await admin(server.env, ["org", "frobnicate"])
    expect(result.code).toBe(1)
    expect(result.stderr.split("\n")).toEqual([
      "error: unknown command: org frobnicate (bun run admin org lists the commands)",
    ])
  })
})

describe("a missing required flag or argument: one line naming it, exit 1", () => {
  test("every command", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", `Usage ${crypto.randomUUID()}`])
    const sensor = await adminJson(server.env, ["sensor", "create", "--org", org.id, "--name", "usage-01"])
    const cases: Array<[ReadonlyArray<string>, string]> = [
      [["org", "create"], "--name"],
      [["org", "deception"], "<org-id>"],
      [["org", "deception", org.id], "on|off"],
      [["org", "retention"], "<org-id>"],
      [["org", "retention", org.id], "<days|default>"],
      [["org", "tlp", "red"], "--org"],
      [["org", "tlp", "--org", org.id], "<level>"],
      [["org", "two-factor", "on"], "--org"],
      [["org", "two-factor", "--org", org.id], "on|off"],
      [["key", "create", "--name", "k", "--scopes", "events:read"], "--org"],
      [["key", "create", "--org", org.id, "--scopes", "events:read"], "--name"],
      [["key", "create", "--org", org.id, "--name", "k"], "--scopes"],
      [["key", "list"], "--org"],
      [["key", "revoke"], "<key-id>"],
      [["sensor", "create", "--name", "s"], "--org"],
      [["sensor", "create", "--org", org.id], "--name"],
      [["sensor", "list"], "--org"],
      [["sensor", "rename", sensor.id], "--name"],
      [["sensor", "rename"], "<sensor-id>"],
      [["sensor", "heartbeat", sensor.id], "<interval|off>"],
      [["sensor", "rotate"], "<sensor-id>"],
      [["sensor", "revoke"], "<sensor-id>"],
      [["incident", "close"], "<incident-id>"],
      [["incident", "close", "inc_01JZZZZZZZZZZZZZZZZZZZZZZZ"], "--reason"],
      [["incident", "close", "--org", org.id, "--sensor", sensor.id], "--reason"],
      [["incident", "note"], "<incident-id>"],
      [["incident", "note", "inc_01JZZZZZZZZZZZZZZZZZZZZZZZ"], "--note"],
      [["webhook", "create", "--url", "https://example.com/hook"], "--org"],
      [["webhook", "create", "--org", org.id], "--url"],
      [["webhook", "list"], "--org"],
      [["webhook", "rotate"], "<channel-id>"],
      [["webhook", "enable"], "<channel-id>"],
      [["webhook", "disable"], "<channel-id>"],
      [["webhook", "sensor-health"], "<channel-id>"],
      [["webhook", "test"], "<channel-id>"],
      [["webhook", "deliveries"], "<channel-id>"],
      [["webhook", "redeliver"], "<delivery-id>"],
      [["user", "create", "--email", "a@b.example", "--role", "admin"], "--org"],
      [["user", "create", "--org", org.id, "--role", "admin"], "--email"],
      [["user", "create", "--org", org.id, "--email", "a@b.example"], "--role"],
      [["user", "list"], "--org"],
      [["user", "disable"], "<user-id>"],
      [["user", "reset"], "<user-id>"],
      [["user", "end-sessions"], "<user-id>"],
      [["user", "unlock"], "<email>"],
    ]
    for (const [args, flag] of cases) {
      const result = await admin(server.env, args)
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({
        args,
        code: 1,
        stderr: `error: ${flag} is required`,
      })
    }
  }, 240_000)
})
