import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { admin, adminJson } from "../support/cli.ts"
import { get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer

beforeAll(async () => {
  server = await startServer()
})

afterAll(() => shutdown(server))

describe("D24: bun run admin, against the running server's database", () => {
  test("org create, key create, then the key reads an empty page; key list never shows the key", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", "Acme SOC"])
    expect(Object.keys(org)).toEqual(["id"])
    expect(org.id).toMatch(/^org_[0-9A-HJKMNP-TV-Z]{26}$/)
    const key = await adminJson(server.env, [
      "key",
      "create",
      "--org",
      org.id,
      "--name",
      "soar",
      "--scopes",
      "incidents:read,events:read",
    ])
    expect(Object.keys(key)).toEqual(["id", "key"])
    expect(key.id).toMatch(/^key_/)
    const page = await get(server.url, "/v1/incidents", key.key)
    expect(page.status).toBe(200)
    expect(page.body).toEqual({ data: [], nextCursor: null })
    const list = await admin(server.env, ["key", "list", "--org", org.id, "--json"])
    expect(list.code).toBe(0)
    // The secret part: everything after `dsk_<key id>_` (it may itself contain "_").
    const secret = key.key.slice(`dsk_${key.id}_`.length)
    expect(secret).toHaveLength(43)
    expect(list.stdout).not.toContain(secret)
    const rows = JSON.parse(list.stdout)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      id: key.id,
      name: "soar",
      scopes: ["incidents:read", "events:read"],
      revokedAt: null,
    })
    const human = await admin(server.env, ["key", "list", "--org", org.id])
    expect(human.stdout).toContain(key.id)
    expect(human.stdout).not.toContain(key.key)
  })

  test("key revoke and org deception take effect on the running server", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", "Revokers"])
    const key = await adminJson(server.env, [
      "key",
      "create",
      "--org",
      org.id,
      "--name",
      "k",
      "--scopes",
      "incidents:read",
    ])
    expect((await get(server.url, "/v1/incidents", key.key)).status).toBe(200)
    expect((await admin(server.env, ["org", "deception", org.id, "off"])).code).toBe(0)
    expect((await get(server.url, "/v1/incidents", key.key)).body.code).toBe("feature_disabled")
    expect((await admin(server.env, ["org", "deception", org.id, "on"])).code).toBe(0)
    expect((await get(server.url, "/v1/incidents", key.key)).status).toBe(200)
    const revoked = await admin(server.env, ["key", "revoke", key.id])
    expect(revoked.code).toBe(0)
    expect((await get(server.url, "/v1/incidents", key.key)).status).toBe(401)
  })

  test("key create with an expiry", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", "Expiring"])
    const expires = new Date(Date.now() + 86_400_000).toISOString()
    const key = await adminJson(server.env, [
      "key",
      "create",
      "--org",
      org.id,
      "--name",
      "k",
      "--scopes",
      "events:read",
      "--expires",
      expires,
    ])
    const [row] = await adminJson(server.env, ["key", "list", "--org", org.id])
    expect(row.id).toBe(key.id)
    expect(row.expiresAt).toBe(expires)
  })

  test("errors print a clear message and exit non-zero", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", "Errors"])
    const cases: Array<[Array<string>, RegExp]> = [
      [
        ["key", "create", "--org", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--name", "k", "--scopes", "events:read"],
        /unknown organization/,
      ],
      [["key", "create", "--org", "nope", "--name", "k", "--scopes", "events:read"], /unknown organization: nope/],
      [
        ["key", "create", "--org", org.id, "--name", "k", "--scopes", "events:write"],
        /unknown scope events:write; allowed scopes: incidents:read, events:read/,
      ],
      [["key", "create", "--org", org.id, "--name", "k"], /--scopes is required/],
      [
        [
          "key",
          "create",
          "--org",
          org.id,
          "--name",
          "k",
          "--scopes",
          "events:read",
          "--expires",
          "2020-01-01T00:00:00Z",
        ],
        /--expires must be in the future/,
      ],
      [
        ["key", "create", "--org", org.id, "--name", "k", "--scopes", "events:read", "--expires", "tomorrow"],
        /--expires must be an RFC 3339 timestamp/,
      ],
      [["key", "create", "--name", "k", "--scopes", "events:read"], /--org is required/],
      [["key", "revoke", "key_01ARZ3NDEKTSV4RRFFQ69G5FAV"], /unknown key/],
      [["org", "create"], /--name must be 1 to 200 printable characters/],
      [["org", "deception", org.id, "maybe"], /usage: org deception <org-id> on\|off/],
      [["org", "deception", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "on"], /unknown organization/],
      [["key", "frobnicate"], /unknown command: key frobnicate/],
      [["org", "create", "--name", "x", "--bogus"], /Unknown option '--bogus'/],
    ]
    for (const [args, message] of cases) {
      const result = await admin(server.env, args)
      expect({ args, code: result.code }).toEqual({ args, code: 1 })
      expect(result.stderr).toMatch(message)
      expect(result.stderr).not.toContain("    at ")
    }
  })

  test("a bad configuration value stops with a message naming the variable", async () => {
    const result = await admin({ ...server.env, SECRET_KEY: "short" }, ["org", "list"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("SECRET_KEY")
    expect(result.stderr).not.toContain("short")
  })
})
