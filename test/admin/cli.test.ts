import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

describe("bun run admin, against the running server's database", () => {
  test("org create, key create, then the key reads an empty page; key list never shows the key", async () => {
    const org = await adminJson(server.env, ["org", "create", "--name", `Acme SOC ${crypto.randomUUID().slice(0, 8)}`])
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
    const org = await adminJson(server.env, ["org", "create", "--name", `Revokers ${crypto.randomUUID().slice(0, 8)}`])
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
    const org = await adminJson(server.env, ["org", "create", "--name", `Expiring ${crypto.randomUUID().slice(0, 8)}`])
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
    const org = await adminJson(server.env, ["org", "create", "--name", `Errors ${crypto.randomUUID().slice(0, 8)}`])
    const cases: Array<[Array<string>, RegExp]> = [
      [
        ["key", "create", "--org", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "--name", "k", "--scopes", "events:read"],
        /unknown organization/,
      ],
      [["key", "create", "--org", "nope", "--name", "k", "--scopes", "events:read"], /unknown organization: nope/],
      [
        ["key", "create", "--org", org.id, "--name", "k", "--scopes", "events:write"],
        /unknown scope events:write; allowed scopes: incidents:read, events:read, intel:read, audit:read/,
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
      [["org", "create"], /--name is required/],
      [["org", "create", "--name", ""], /--name must be 1 to 200 printable characters/],
      [["org", "deception", org.id, "maybe"], /usage: org deception <org-id> on\|off/],
      [["org", "deception", "org_01ARZ3NDEKTSV4RRFFQ69G5FAV", "on"], /unknown organization/],
      [["key", "frobnicate"], /unknown command: key frobnicate/],
      [["org", "create", "--name", "x", "--bogus"], /unknown argument: '--bogus'/],
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

  test("sensor create --json prints one object {id, token, ingestUrl, setup}; the token writes on the ingest port; only its hash is stored", async () => {
    const org = await adminJson(server.env, [
      "org",
      "create",
      "--name",
      `Sensor owners ${crypto.randomUUID().slice(0, 8)}`,
    ])
    const result = await admin(server.env, [
      "sensor",
      "create",
      "--org",
      org.id,
      "--name",
      "dmz-web-01",
      "--profile",
      "linux-server",
      "--json",
    ])
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" })
    // One line of JSON, nothing else on stdout.
    expect(result.stdout.split("\n")).toHaveLength(1)
    const sensor = JSON.parse(result.stdout) as {
      id: string
      token: string
      ingestUrl: string
      setup: Array<{ title: string; text: string }>
    }
    expect(Object.keys(sensor)).toEqual(["id", "token", "ingestUrl", "setup"])
    // D43: the ready-to-paste configuration carries the token it was made for.
    expect(sensor.setup.length).toBeGreaterThan(0)
    for (const snippet of sensor.setup) expect(snippet.text).toContain(sensor.token)
    // D1: prefixed, time-sortable, URL-safe (ULID body).
    expect(sensor.id).toMatch(/^sen_[0-9A-HJKMNP-TV-Z]{26}$/)
    expect(typeof sensor.token).toBe("string")
    expect(sensor.token).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(sensor.token).toContain(sensor.id)
    const secret = sensor.token.slice(sensor.token.indexOf(sensor.id) + sensor.id.length + 1)
    // At least 256 bits of randomness (D9's rule, used for sensor tokens too): 43 base64url characters.
    expect(secret.length).toBeGreaterThanOrEqual(43)

    // The token writes on the ingest port, as that sensor of that organization.
    const key = await adminJson(server.env, [
      "key",
      "create",
      "--org",
      org.id,
      "--name",
      "reader",
      "--scopes",
      "incidents:read,events:read",
    ])
    const sent = await ingest(server.ingestUrl, "events", sensor.token, nativeEvent({ sourceIp: "198.51.100.231" }))
    expect(sent.status).toBe(200)
    expect(sent.body).toMatchObject({ accepted: 1, rejected: 0 })
    const event = await get(server.url, `/v1/events/${sent.body.results[0].id}`, key.key)
    expect(event.status).toBe(200)
    expect(event.body.sensor).toEqual({ id: sensor.id, name: "dmz-web-01" })
    // A token with one character changed, or without its secret, does not write.
    const last = sensor.token.slice(-1) === "A" ? "B" : "A"
    expect(
      (await ingest(server.ingestUrl, "events", `${sensor.token.slice(0, -1)}${last}`, nativeEvent())).status,
    ).toBe(401)
    expect(
      (await ingest(server.ingestUrl, "events", sensor.token.slice(0, -secret.length - 1), nativeEvent())).status,
    ).toBe(401)

    // The database holds only a hash: the sensors table as text has neither the token nor its secret part.
    const rows = await db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ id: string; row: string }>`select t.id, t::text as row from sensors t`,
      ),
    )
    const mine = rows.find((r) => r.id === sensor.id)
    expect(mine?.row).toContain("dmz-web-01")
    expect(mine?.row).toContain("linux-server")
    const table = rows.map((r) => r.row).join("\n")
    expect(table).not.toContain(sensor.token)
    expect(table).not.toContain(secret)
    expect(table).not.toContain(Buffer.from(secret, "utf8").toString("hex"))
    expect(table).not.toContain(Buffer.from(secret, "base64url").toString("hex"))
    // What it does hold is a SHA-256 hash (D22 "stored hashed"; the API keys' scheme, D9).
    const sha = (s: string) => createHash("sha256").update(s, "utf8").digest("hex")
    expect([sha(secret), sha(sensor.token)].some((h) => mine?.row.includes(h))).toBe(true)
    // And the sensor list never shows it.
    const list = await admin(server.env, ["sensor", "list", "--org", org.id, "--json"])
    expect(list.code).toBe(0)
    expect(list.stdout).toContain(sensor.id)
    expect(list.stdout).not.toContain(secret)
  })
})
