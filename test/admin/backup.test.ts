import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Keys } from "../../src/platform/keys.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { newPostgresDatabase, type OwnDatabase } from "../support/postgres.ts"
import { type RunningServer, shutdown, startServer, testEnv, usingPostgres } from "../support/server.ts"

/**
 * D49: `admin backup FILE` while the service ingests, `admin restore FILE` into an empty database (a fresh DATA_DIR, or
 * a new database of the suite's PostgreSQL when it runs on DATABASE_URL), and a server on it with the same SECRET_KEY.
 */

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

/** Columns the restore rewrites on purpose (feed positions are the new cluster's; Backup.ts says why). */
const REWRITTEN: Record<string, ReadonlyArray<string>> = {
  events: ["change_xid", "change_seq"],
  incident_changes: ["change_xid", "change_seq"],
  incidents: ["change_xid"],
  feed_purges: ["purged_xid", "purged_seq"],
}

const work = mkdtempSync(join(tmpdir(), "dsvc-backup-"))
const createdDatabases: Array<OwnDatabase> = []
interface Target {
  readonly env: Record<string, string>
  db?: TestDatabase
  server?: RunningServer
}
const targets: Array<Target> = []

/** An empty target: a fresh DATA_DIR, or a new database beside DATABASE_URL's. */
const freshTarget = async (extra: Record<string, string>): Promise<Target> => {
  if (!usingPostgres()) {
    const target: Target = { env: testEnv(extra) }
    targets.push(target)
    return target
  }
  const database = await newPostgresDatabase("restore")
  createdDatabases.push(database)
  const target: Target = { env: testEnv(extra, database.url) }
  targets.push(target)
  return target
}

const fileLines = async (file: string) =>
  new TextDecoder()
    .decode(Bun.gunzipSync(new Uint8Array(await Bun.file(file).arrayBuffer())))
    .split("\n")
    .filter((l) => l !== "")

/** Every row of every table of a backup file, by table, as the file holds them. */
const fileTables = (lines: ReadonlyArray<string>) => {
  const tables = new Map<string, Array<string>>()
  let current: Array<string> | undefined
  for (const line of lines.slice(1)) {
    const value = JSON.parse(line)
    if (typeof value.table === "string" && typeof value.rows === "number" && Object.keys(value).length === 2) {
      current = []
      tables.set(value.table, current)
    } else if (value.end !== true) current?.push(line)
  }
  return tables
}

const withoutRewritten = (table: string, rows: ReadonlyArray<string>) =>
  rows
    .map((line) => {
      const value = JSON.parse(line)
      for (const column of REWRITTEN[table] ?? []) delete value[column]
      return JSON.stringify(value)
    })
    .sort()

const tableRows = (db: TestDatabase, table: string) =>
  db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.unsafe<{ j: string }>(`select row_to_json(t)::text as j from "${table}" t`),
    ),
  )

const allPages = async (base: string, path: string, key: string) => {
  const items: Array<Json> = []
  let cursor: string | null = null
  do {
    const res = await get(
      base,
      `${path}${path.includes("?") ? "&" : "?"}limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      key,
    )
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`)
    const body = res.body as Json
    items.push(...body.data)
    cursor = body.nextCursor
  } while (cursor)
  return items
}

const EXTRA = { WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8" }
let source: RunningServer
let sourceDb: TestDatabase
const backupFile = join(work, "decoy.backup")

beforeAll(async () => {
  source = await startServer({ env: testEnv(EXTRA) })
  sourceDb = testDatabase(source.env)
})

afterAll(async () => {
  for (const t of targets) {
    await t.db?.close()
    await t.server?.stop()
    if (t.env.DATA_DIR) rmSync(t.env.DATA_DIR, { recursive: true, force: true })
  }
  await shutdown(source, sourceDb)
  for (const database of createdDatabases) await database.drop()
  rmSync(work, { recursive: true, force: true })
})

describe("D49: admin backup and restore", () => {
  test("a backup taken while ingesting restores into an empty database: every row, the API key, the sealed secrets, and the feeds continue", async () => {
    const org = await adminJson(source.env, ["org", "create", "--name", `Backup ${crypto.randomUUID().slice(0, 8)}`])
    const sensor = await adminJson(source.env, ["sensor", "create", "--org", org.id, "--name", "backup-01"])
    const key = await adminJson(source.env, [
      "key",
      ...["create", "--org", org.id, "--name", "soar", "--scopes", "incidents:read,events:read"],
    ])
    // Critical only: nothing here is, so no delivery to this dead address stays queued in a database other tests
    // share (the ops test reads the queue's depth); its sealed secret is what the backup must carry.
    const channel = await adminJson(source.env, [
      "channel",
      "create",
      "--org",
      org.id,
      "--url",
      "https://127.0.0.1:9/hook",
      "--min-severity",
      "critical",
    ])
    expect(channel.secret).toBeString()
    await adminJson(source.env, [
      "user",
      "create",
      "--org",
      org.id,
      "--email",
      "backup@example.test",
      "--role",
      "admin",
    ])
    await adminJson(source.env, ["ignore", "add", "--org", org.id, "--source", "198.51.100.0/24", "--note", "scanner"])

    // Before the backup: incidents that later ingestion does not touch (their own source addresses).
    for (const ip of ["203.0.113.10", "203.0.113.11", "203.0.113.12"]) {
      const res = await ingest(source.ingestUrl, "events", sensor.token, [
        nativeEvent({ sourceIp: ip, attackerInput: { username: "root", password: "p\u00e4ss\u0000\"'" } }),
        nativeEvent({ sourceIp: ip, type: "http.request", attackerInput: { path: "/admin", headers: { a: ["b"] } } }),
      ])
      expect(res.status).toBe(200)
    }
    await ingest(source.ingestUrl, "events", sensor.token, [nativeEvent({ sourceIp: "198.51.100.7" })])
    const incidentsBefore = await allPages(source.url, "/v1/incidents", key.key)
    expect(incidentsBefore.length).toBe(3)
    const detailsBefore = await Promise.all(
      incidentsBefore.map(async (i) => (await get(source.url, `/v1/incidents/${i.id}`, key.key)).body),
    )

    // Ingestion goes on while the backup runs.
    let running = true
    let posted = 0
    const ingesting = (async () => {
      for (let n = 0; running; n++) {
        const res = await ingest(source.ingestUrl, "events", sensor.token, [
          nativeEvent({ sourceIp: `192.0.2.${n % 200}` }),
          nativeEvent({ sourceIp: `192.0.2.${(n + 1) % 200}` }),
        ])
        if (res.status === 200) posted++
      }
    })()
    while (posted < 3) await Bun.sleep(20)
    const postedBefore = posted
    const backup = await admin(source.env, ["backup", backupFile, "--json"])
    const postedDuring = posted - postedBefore
    running = false
    await ingesting
    expect(backup.stderr).toBe("")
    expect(backup.code).toBe(0)
    expect(postedDuring).toBeGreaterThan(0)
    const written = JSON.parse(backup.stdout)
    expect(statSync(backupFile).mode & 0o777).toBe(0o600)
    expect(readdirSync(work)).toEqual(["decoy.backup"])
    expect(written.bytes).toBe(statSync(backupFile).size)
    console.log(`backup: ${written.bytes} bytes, ${JSON.stringify(written.tables)} in ${written.durationMs} ms`)

    const lines = await fileLines(backupFile)
    const header = JSON.parse(lines[0] ?? "{}")
    expect(header.format).toBe("decoy-incident-service-backup")
    expect(header.migrations.at(-1)).toMatch(/^\d{4}_/)
    expect(JSON.parse(lines.at(-1) ?? "{}")).toMatchObject({ end: true })
    const saved = fileTables(lines)
    // The snapshot is consistent: every incident of the organization counts exactly the events the file holds for it.
    const events = (saved.get("events") ?? []).map((l) => JSON.parse(l)).filter((e) => e.org_id === org.id)
    for (const line of saved.get("incidents") ?? []) {
      const incident = JSON.parse(line)
      if (incident.org_id !== org.id) continue
      expect(events.filter((e) => e.incident_id === incident.id).length).toBe(incident.event_count)
    }

    const target = await freshTarget(EXTRA)
    const restored = await admin(target.env, ["restore", backupFile])
    expect(restored.stderr).toBe("")
    expect(restored.code).toBe(0)
    target.db = testDatabase(target.env)
    // Every table holds exactly the file's rows, value for value (bytea, jsonb, arrays, cidr, timestamptz).
    for (const table of header.tables) {
      const rows = (await tableRows(target.db, table.name)).map((r) => r.j)
      expect({ table: table.name, rows: rows.length }).toEqual({ table: table.name, rows: table.rows })
      expect(withoutRewritten(table.name, rows)).toEqual(withoutRewritten(table.name, saved.get(table.name) ?? []))
    }
    const sealed = await target.db.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { sealer } = yield* Keys
        const [row] = yield* sql<{
          secretEnc: string
        }>`select secret_enc from webhook_channels where id = ${channel.id}`
        const [orgRow] = yield* sql<{
          fingerprintKey: string
        }>`select fingerprint_key from organizations where id = ${org.id}`
        return { secret: sealer.open(row?.secretEnc ?? ""), fingerprintKey: sealer.open(orgRow?.fingerprintKey ?? "") }
      }),
    )
    expect(sealed.secret && new TextDecoder().decode(sealed.secret)).toBe(channel.secret)
    expect(sealed.fingerprintKey).toBeDefined()

    target.server = await startServer({ env: target.env })
    const restoredServer = target.server
    expect((await get(restoredServer.url, "/v1/incidents", key.key)).status).toBe(200)
    for (const detail of detailsBefore) {
      const after = await get(restoredServer.url, `/v1/incidents/${detail.id}`, key.key)
      expect(after.body).toEqual(detail)
    }
    const users = await adminJson(target.env, ["user", "list", "--org", org.id])
    expect(users.map((u: Json) => u.email)).toEqual(["backup@example.test"])

    // The feeds continue after the restored changes: a new event is the last of the organization's event feed.
    const eventsRestored = (await allPages(restoredServer.url, "/v1/events", key.key)).length
    const added = await ingest(restoredServer.ingestUrl, "events", sensor.token, [
      nativeEvent({ sourceIp: "203.0.113.99" }),
    ])
    expect(added.status).toBe(200)
    const feed: Array<Json> = []
    let after: string | undefined
    for (;;) {
      const query = `?limit=100&${after === undefined ? "from=2000-01-01T00:00:00Z" : `after=${encodeURIComponent(after)}`}`
      const page = await get(restoredServer.url, `/v1/events/changes${query}`, key.key)
      expect(page.status).toBe(200)
      const body = page.body as Json
      feed.push(...body.data)
      after = body.nextToken
      if (!body.hasMore) break
    }
    expect(feed.length).toBe(eventsRestored + 1)
    expect(feed.at(-1)?.sourceIp).toBe("203.0.113.99")
  }, 300_000)

  test("restore refuses a database with rows, a damaged or cut file and a backup of another migration level, and changes nothing", async () => {
    const restoredTarget = targets[0]
    expect(restoredTarget).toBeDefined()
    const again = await admin(restoredTarget?.env ?? {}, ["restore", backupFile])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain("the database is not empty")

    const lines = await fileLines(backupFile)
    const bytes = new Uint8Array(await Bun.file(backupFile).arrayBuffer())
    const cut = join(work, "cut.backup")
    writeFileSync(cut, bytes.slice(0, Math.floor(bytes.length * 0.7)))
    const corrupted = join(work, "corrupted.backup")
    const flipped = bytes.slice()
    const middle = Math.floor(flipped.length / 2)
    for (let i = middle; i < middle + 16; i++) flipped[i] = (flipped[i] ?? 0) ^ 0xff
    writeFileSync(corrupted, flipped)
    const shortened = join(work, "shortened.backup")
    writeFileSync(shortened, Bun.gzipSync(new TextEncoder().encode(`${lines.slice(0, -3).join("\n")}\n`)))
    const older = join(work, "older.backup")
    const header = JSON.parse(lines[0] ?? "{}")
    const olderHeader = { ...header, migrations: header.migrations.slice(0, -1) }
    writeFileSync(
      older,
      Bun.gzipSync(new TextEncoder().encode(`${[JSON.stringify(olderHeader), ...lines.slice(1)].join("\n")}\n`)),
    )

    const target = await freshTarget(EXTRA)
    for (const [file, message] of [
      [cut, "is not a complete backup"],
      [corrupted, "is not a complete backup"],
      [shortened, "is not a complete backup"],
      [older, `was written at migration level ${header.migrations.at(-2)}`],
      [join(work, "missing.backup"), "no such file"],
    ] as const) {
      const result = await admin(target.env, ["restore", file])
      expect({ file, code: result.code }).toEqual({ file, code: 1 })
      expect(result.stderr).toContain(message)
    }
    // Each refusal rolled back: the target is still empty, and the whole backup still restores into it.
    target.db = testDatabase(target.env)
    const [row] = await target.db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: string }>`select count(*)::text as n from events`),
    )
    expect(row?.n).toBe("0")
    const ok = await admin(target.env, ["restore", backupFile])
    expect(ok.stderr).toBe("")
    expect(ok.code).toBe(0)
  }, 300_000)

  test("restore refuses an empty database a server is using (its connections are open), and changes nothing", async () => {
    const target = await freshTarget(EXTRA)
    target.server = await startServer({ env: target.env })
    const refused = await admin(target.env, ["restore", backupFile])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("a server is using this database")
    target.db = testDatabase(target.env)
    const [row] = await target.db.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: string }>`select count(*)::text as n from events`),
    )
    expect(row?.n).toBe("0")
    // Once the server has stopped, the same restore goes in.
    expect(await target.server.stop()).toBe(0)
    const ok = await admin(target.env, ["restore", backupFile])
    expect(ok.stderr).toBe("")
    expect(ok.code).toBe(0)
  }, 300_000)
})
