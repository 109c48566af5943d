import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AdminActor, orgUser } from "../../src/admin/actor.ts"
import { IgnoreAdmin } from "../../src/admin/IgnoreAdmin.ts"
import { StoredId } from "../../src/domain/ids.ts"
import { parseNetwork } from "../../src/domain/ip.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createSensor, createTenant, idOf } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * `bun run admin ignore …` against the real database, and IgnoreAdmin's checks of who may do what: the operator and
 * an organization's administrators add and remove, analysts only list, another organization's rule is unknown, and
 * every change leaves an audit row.
 */

let server: RunningServer
let db: TestDatabase
let orgId: string
let otherOrgId: string
let sensorId: string
let otherSensorId: string

const auditOf = (org: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ action: string; actor: string; target: string; detail: string }>`
        select action, actor, target, detail from audit_log
        where org_id = ${org} and action like 'ignore.%' order by id`,
    ),
  )

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
  orgId = (await createTenant(db, "Ignore CLI")).orgId
  otherOrgId = (await createTenant(db, "Ignore CLI other")).orgId
  sensorId = (await createSensor(db, orgId)).id
  otherSensorId = (await createSensor(db, otherOrgId)).id
})

afterAll(() => shutdown(server, db))

describe("bun run admin ignore", () => {
  test("the group alone lists add, list and remove", async () => {
    const result = await admin(server.env, ["ignore"])
    expect(result.code).toBe(0)
    // The help of the group: its commands on lines `  - <command> <flags…>  <description>`.
    const listed = result.stdout.split("\n").flatMap((line) => /^ {2}- (\S+)/.exec(line)?.[1] ?? [])
    expect(listed).toEqual(["add", "list", "remove"])
  })

  test("add, list (duplicates marked), remove; each change audited as the operator", async () => {
    const a = await adminJson(server.env, [
      "ignore",
      "add",
      "--org",
      orgId,
      "--source",
      "192.0.2.77/24",
      "--sensor",
      sensorId,
      "--port",
      "443",
      "--type",
      "http.request",
      "--note",
      "scanner of the red team",
      "--expires",
      "2099-01-01T00:00:00Z",
    ])
    expect(a).toMatchObject({
      source: "192.0.2.0/24",
      sensorId,
      port: 443,
      eventType: "http.request",
      note: "scanner of the red team",
      createdBy: "cli",
      expiresAt: "2099-01-01T00:00:00.000Z",
      hitCount: 0,
      lastHitAt: null,
      sameAs: [],
    })
    // The same rule again is allowed, and said so.
    const again = await admin(server.env, [
      "ignore",
      "add",
      "--org",
      orgId,
      "--source",
      "192.0.2.0/24",
      "--sensor",
      sensorId,
      "--port",
      "443",
      "--type",
      "http.request",
    ])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain(`note: ${a.id} already match the same events`)
    const b = await adminJson(server.env, [
      "ignore",
      "add",
      "--org",
      orgId,
      "--source",
      "2001:DB8::1",
      "--expires",
      "12h",
    ])
    expect(b.source).toBe("2001:db8::1/128")
    expect(new Date(b.expiresAt).getTime() - Date.now()).toBeGreaterThan(11 * 3_600_000)

    const human = await admin(server.env, ["ignore", "list", "--org", orgId])
    expect(human.code).toBe(0)
    const lines = human.stdout.split("\n")
    expect(lines).toHaveLength(3)
    expect(lines[0]).toContain(`duplicateOf=`)
    expect(lines[0]).toContain(`note="scanner of the red team"`)
    expect(lines[2]).not.toContain("duplicateOf")

    const removed = await admin(server.env, ["ignore", "remove", a.id])
    expect(removed.code).toBe(0)
    const listed = await adminJson(server.env, ["ignore", "list", "--org", orgId])
    expect(listed.map((r: { id: string }) => r.id)).not.toContain(a.id)
    expect(listed.every((r: { sameAs: Array<string> }) => r.sameAs.length === 0)).toBe(true)
    const twice = await admin(server.env, ["ignore", "remove", a.id])
    expect(twice).toMatchObject({ code: 1, stderr: `error: unknown ignore rule: ${a.id}` })

    const audit = await auditOf(orgId)
    expect(audit.map((r) => [r.action, r.actor])).toEqual([
      ["ignore.add", "cli"],
      ["ignore.add", "cli"],
      ["ignore.add", "cli"],
      ["ignore.remove", "cli"],
    ])
    expect(audit[0]?.detail).toBe(
      `192.0.2.0/24 sensor ${sensorId} port 443 type http.request until 2099-01-01T00:00:00.000Z`,
    )
    expect(audit[3]?.target).toBe(a.id)
  })

  test("every refusal is one line naming the flag, exit 1, nothing stored", async () => {
    const cases: Array<[ReadonlyArray<string>, string]> = [
      [["ignore", "add", "--source", "192.0.2.1"], "error: --org is required"],
      [["ignore", "add", "--org", orgId], "error: --source is required"],
      [
        ["ignore", "add", "--org", orgId, "--source", "192.0.2.300"],
        "error: --source must be an IP address or a network such as 192.0.2.0/24 or 2001:db8::/48",
      ],
      [
        ["ignore", "add", "--org", orgId, "--source", "10.0.0.0/33"],
        "error: --source must be an IP address or a network such as 192.0.2.0/24 or 2001:db8::/48",
      ],
      [
        ["ignore", "add", "--org", orgId, "--source", "10.0.0.1", "--port", "70000"],
        "error: --port must be 0 to 65535",
      ],
      [
        ["ignore", "add", "--org", orgId, "--source", "10.0.0.1", "--sensor", otherSensorId],
        `error: --sensor: unknown sensor of this organization: ${otherSensorId}`,
      ],
      [
        ["ignore", "add", "--org", orgId, "--source", "10.0.0.1", "--type", "nope.nothing"],
        "error: --type: unknown event type nope.nothing (docs/ingestion.md lists them)",
      ],
      [
        ["ignore", "add", "--org", orgId, "--source", "10.0.0.1", "--expires", "2000-01-01T00:00:00Z"],
        "error: --expires must be in the future",
      ],
      [
        ["ignore", "add", "--org", orgId, "--source", "10.0.0.1", "--expires", "soon"],
        "error: --expires must be a duration such as 12h or 7d, or an RFC 3339 time with its zone",
      ],
      [["ignore", "list"], "error: --org is required"],
      [["ignore", "remove"], "error: <rule-id> is required"],
      [["ignore", "remove", "ign_nope"], "error: unknown ignore rule: ign_nope"],
    ]
    const before = (await adminJson(server.env, ["ignore", "list", "--org", orgId])).length
    for (const [args, message] of cases) {
      const result = await admin(server.env, args)
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 1, stderr: message })
    }
    expect((await adminJson(server.env, ["ignore", "list", "--org", orgId])).length).toBe(before)
  })
})

describe("IgnoreAdmin: who may", () => {
  const as = (role: "admin" | "analyst", org: string) =>
    AdminActor.of(
      orgUser({
        id: StoredId.UserId.make(`usr_test_${role}`),
        ip: "192.0.2.10",
        orgId: idOf("organization", org),
        role,
      }),
    )

  test("an organization's administrator adds and removes (audited with their id and address); an analyst only lists; another organization's rule is unknown", async () => {
    const run = <A, E>(actor: ReturnType<typeof as>, f: (rules: IgnoreAdmin) => Effect.Effect<A, E, AdminActor>) =>
      db.run(Effect.provideService(Effect.flatMap(IgnoreAdmin, f), AdminActor, actor).pipe(Effect.either))

    const added = await run(as("admin", otherOrgId), (r) => r.add(otherOrgId, { source: "198.51.100.0/25" }))
    expect(added._tag).toBe("Right")
    const id = added._tag === "Right" ? added.right.id : ""
    const analystAdd = await run(as("analyst", otherOrgId), (r) => r.add(otherOrgId, { source: "198.51.100.1" }))
    expect(analystAdd._tag === "Left" && analystAdd.left._tag).toBe("Forbidden")
    const analystRemove = await run(as("analyst", otherOrgId), (r) => r.remove(id))
    expect(analystRemove._tag === "Left" && analystRemove.left._tag).toBe("Forbidden")
    const analystList = await run(as("analyst", otherOrgId), (r) => r.list(otherOrgId))
    expect(analystList._tag === "Right" && analystList.right.map((x) => x.id)).toEqual([id])

    // Another organization's administrator: the rule does not exist for them, and their list is not this one.
    const foreignRemove = await run(as("admin", orgId), (r) => r.remove(id))
    expect(foreignRemove._tag === "Left" && foreignRemove.left._tag).toBe("NotFound")
    const foreignList = await run(as("admin", orgId), (r) => r.list(otherOrgId))
    expect(foreignList._tag === "Left" && foreignList.left._tag).toBe("NotFound")

    const removed = await run(as("admin", otherOrgId), (r) => r.remove(id))
    expect(removed._tag).toBe("Right")
    const audit = await auditOf(otherOrgId)
    expect(audit.map((r) => [r.action, r.actor, r.target])).toEqual([
      ["ignore.add", "usr_test_admin", id],
      ["ignore.remove", "usr_test_admin", id],
    ])
  })

  test("a source is an address or a network, IPv4 or IPv6, stored as its network", () => {
    const cidr = (text: string) => parseNetwork(text)?.cidr
    expect(cidr("192.0.2.7")).toBe("192.0.2.7/32")
    expect(cidr(" 192.0.2.7/24 ")).toBe("192.0.2.0/24")
    expect(cidr("::ffff:192.0.2.7")).toBe("192.0.2.7/32")
    expect(cidr("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1/128")
    expect(cidr("2001:db8:abcd:12::/48")).toBe("2001:db8:abcd::/48")
    expect(cidr("0.0.0.0/0")).toBe("0.0.0.0/0")
    for (const bad of ["", "192.0.2", "192.0.2.1/", "192.0.2.1/x", "2001:db8::/129", "fe80::1%eth0", "010.0.0.1"]) {
      expect({ bad, parsed: cidr(bad) }).toEqual({ bad, parsed: undefined })
    }
  })

  test("a network broader than a /8 of IPv4 or a /16 of IPv6 is refused as too broad; /8 and /16 are kept", async () => {
    for (const [source, shown, bound] of [
      ["0.0.0.0/0", "0.0.0.0/0", "/8 of IPv4"],
      ["10.1.2.3/7", "10.0.0.0/7", "/8 of IPv4"],
      ["2001:db8::/15", "2000::/15", "/16 of IPv6"],
      ["::/0", "::/0", "/16 of IPv6"],
    ] as const) {
      const refused = await admin(server.env, ["ignore", "add", "--org", orgId, "--source", source])
      expect({ source, code: refused.code, stderr: refused.stderr }).toEqual({
        source,
        code: 1,
        stderr: `error: --source is too broad: ${shown} (a rule may ignore at most a ${bound})`,
      })
    }
    const v4 = await adminJson(server.env, ["ignore", "add", "--org", orgId, "--source", "10.9.8.7/8"])
    expect(v4.source).toBe("10.0.0.0/8")
    const v6 = await adminJson(server.env, ["ignore", "add", "--org", orgId, "--source", "2001:db8::/16"])
    expect(v6.source).toBe("2001::/16")
    for (const id of [v4.id, v6.id]) await adminJson(server.env, ["ignore", "remove", id])
  })
})
