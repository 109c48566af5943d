import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { admin } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createTenant, get } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer } from "../support/server.ts"

/**
 * The organization's TLP 2.0 level for its STIX objects, on the real server and database: the column's default and
 * its check, the operator's `org tlp --org <id> <level>` (audited as organization.tlp, an unknown level refused in one
 * line with nothing changed), and the API reference (OpenAPI document and /docs) pointing at the TAXII server.
 */

let server: RunningServer
let db: TestDatabase

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  db.run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, SqlClient.SqlClient>)

const tlpOf = async (orgId: string) =>
  (await sqlRun((sql) => sql<{ tlp: string }>`select tlp from organizations where id = ${orgId}`))[0]?.tlp

const auditOf = async (orgId: string) =>
  (
    await sqlRun(
      (sql) => sql<{ detail: string; target: string }>`
        select detail, target from audit_log where org_id = ${orgId} and action = 'organization.tlp' order by at, id`,
    )
  ).map((r) => r.detail)

beforeAll(async () => {
  server = await startServer()
  db = testDatabase(server.env)
}, 120_000)

afterAll(() => shutdown(server, db))

describe("the organization's TLP level", () => {
  test("a new organization is amber; the database refuses a level outside TLP 2.0", async () => {
    const t = await createTenant(db, "TLP default")
    expect(await tlpOf(t.orgId)).toBe("amber")
    const refused = await sqlRun((sql) =>
      Effect.either(sql`update organizations set tlp = 'purple' where id = ${t.orgId}`),
    )
    expect(refused._tag).toBe("Left")
    expect(await tlpOf(t.orgId)).toBe("amber")
  })

  test("the operator sets it with org tlp --org <id> <level>, audited; an unknown level or organization is one line, nothing changed", async () => {
    const t = await createTenant(db, "TLP by CLI")
    const set = await admin(server.env, ["org", "tlp", "--org", t.orgId, "red", "--json"])
    expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: "" })
    expect(JSON.parse(set.stdout)).toEqual({ id: t.orgId, tlp: "red" })
    expect(await tlpOf(t.orgId)).toBe("red")

    // The marking's own spelling is accepted too.
    const prefixed = await admin(server.env, ["org", "tlp", "--org", t.orgId, "TLP:AMBER+STRICT"])
    expect(prefixed.code).toBe(0)
    expect(prefixed.stdout).toBe(`${t.orgId} marks its STIX/TAXII objects TLP:AMBER+STRICT`)
    expect(await tlpOf(t.orgId)).toBe("amber+strict")

    const unknown = await admin(server.env, ["org", "tlp", "--org", t.orgId, "white"])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.split("\n")).toEqual([
      "error: The TLP level must be one of clear, green, amber, amber+strict, red.",
    ])
    expect(await tlpOf(t.orgId)).toBe("amber+strict")

    const missing = await admin(server.env, ["org", "tlp", "--org", t.orgId])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("<level> is required")

    const noOrg = await admin(server.env, ["org", "tlp", "--org", "org_01JZZZZZZZZZZZZZZZZZZZZZZZ", "green"])
    expect(noOrg.code).toBe(1)
    expect(noOrg.stderr).toContain("unknown organization")

    expect(await auditOf(t.orgId)).toEqual(["amber -> red", "red -> amber+strict"])
  }, 60_000)
})

describe("the API reference points at the TAXII server", () => {
  test("the OpenAPI document's description and externalDocs name /taxii2/", async () => {
    const doc = (await get(server.url, "/openapi.json")).body as {
      info: { description: string }
      externalDocs: { url: string; description: string }
    }
    expect(doc.info.description).toContain("TAXII 2.1")
    expect(doc.info.description).toContain("`/taxii2/`")
    expect(doc.info.description).toContain("intel:read")
    expect(doc.externalDocs.url).toBe("/taxii2/")
    // The link leads somewhere real: the discovery endpoint answers (401 without a key, not 404).
    expect((await fetch(`${server.url}${doc.externalDocs.url}`)).status).toBe(401)
  })

  test("/docs shows a link to the TAXII server without JavaScript", async () => {
    const res = await fetch(`${server.url}/docs`)
    expect(res.status).toBe(200)
    const html = await res.text()
    expect(html).toMatch(/<p id="taxii-link"[^>]*>[^<]*<a href="\/taxii2\/">TAXII 2\.1 server<\/a>/)
  })
})
