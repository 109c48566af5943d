import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { BACKUP_MAC_PURPOSE } from "../../src/admin/Backup.ts"
import { deriveKey, hmacSha256 } from "../../src/domain/crypto.ts"
import { decodeSecretKey } from "../../src/platform/config.ts"
import { Keys } from "../../src/platform/keys.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { eventually } from "../support/eventually.ts"
import { get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import {
  embeddedTestEnv,
  type RunningServer,
  shutdown,
  startServer,
  TEST_SECRET_KEY,
  testEnv,
} from "../support/server.ts"

/**
 * `admin backup FILE` while the service ingests, `admin restore FILE` into an empty database (a new one on the
 * run's PostgreSQL), and a server on it with the same SECRET_KEY.
 */

// biome-ignore lint/suspicious/noExplicitAny: loosely typed JSON for assertions
type Json = any

/** Columns the restore rewrites on purpose (feed positions are the new cluster's; Backup.ts says why). */
const REWRITTEN: Record<string, ReadonlyArray<string>> = {
  events: ["change_xid", "change_seq"],
  incident_changes: ["change_xid", "change_seq"],
  audit_log: ["change_xid", "change_seq"],
  incidents: ["change_xid"],
  feed_purges: ["purged_xid", "purged_seq"],
}

const work = mkdtempSync(join(tmpdir(), "dsvc-backup-"))
interface Target {
  readonly env: Record<string, string>
  db?: TestDatabase
  server?: RunningServer
}
const targets: Array<Target> = []

/** An empty target: a new database (migrated, no rows) on the run's PostgreSQL. */
const freshTarget = async (extra: Record<string, string>): Promise<Target> => {
  const target: Target = { env: await testEnv(extra) }
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

/** The backup MAC key of the tests' SECRET_KEY, derived as the service derives it. */
const testMacKey = deriveKey(decodeSecretKey(TEST_SECRET_KEY) ?? new Uint8Array(), BACKUP_MAC_PURPOSE)

/**
 * A backup file of `lines` (the last one, the end line, left out) with a valid MAC under the tests' key, as someone
 * holding SECRET_KEY could write: what the restore then refuses, it refuses for another reason than the MAC.
 */
const writeSigned = (file: string, lines: ReadonlyArray<string>, rows: number) => {
  const body = lines.map((l) => `${l}\n`).join("")
  const mac = hmacSha256(testMacKey, body).toString("hex")
  writeFileSync(file, Bun.gzipSync(new TextEncoder().encode(`${body}${JSON.stringify({ end: true, rows, mac })}\n`)))
}

/** Lines as written, gzip'd, with no new MAC: an edit by someone without SECRET_KEY. */
const writeEdited = (file: string, lines: ReadonlyArray<string>) =>
  writeFileSync(file, Bun.gzipSync(new TextEncoder().encode(`${lines.join("\n")}\n`)))

/** One line on stderr, with no stack frame ("    at …") and no TypeError. */
const expectOneLine = (stderr: string) => {
  expect(stderr.split("\n")).toHaveLength(1)
  expect(stderr).not.toMatch(/^\s+at /m)
  expect(stderr).not.toContain("TypeError")
}

const countRows = (db: TestDatabase, tables: ReadonlyArray<string>) =>
  db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.forEach(tables, (t) =>
        Effect.map(sql.unsafe<{ n: number }>(`select count(*)::int as n from "${t}"`), ([r]) => [t, r?.n] as const),
      ),
    ),
  )

const withoutRewritten = (table: string, rows: ReadonlyArray<string>) =>
  rows
    .map((line) => {
      const value = JSON.parse(line)
      for (const column of REWRITTEN[table] ?? []) delete value[column]
      return JSON.stringify(value)
    })
    .sort()

/** A table's rows as the backup writes them: every column but the generated ones, which a database computes. */
const tableRows = (db: TestDatabase, table: string) =>
  db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.gen(function* () {
        const columns = yield* sql.unsafe<{ name: string }>(
          `select attname as name from pg_attribute where attrelid = '"${table}"'::regclass and attnum > 0
            and not attisdropped and attgenerated = '' order by attnum`,
        )
        const list = columns.map((c) => `t."${c.name}"`).join(", ")
        return yield* sql.unsafe<{ j: string }>(
          `select row_to_json(r)::text as j from "${table}" t cross join lateral (select ${list}) r`,
        )
      }),
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
  source = await startServer({ env: await testEnv(EXTRA) })
  sourceDb = testDatabase(source.env)
})

afterAll(async () => {
  for (const t of targets) {
    await t.db?.close()
    await t.server?.stop()
    if (t.env.DATA_DIR) rmSync(t.env.DATA_DIR, { recursive: true, force: true })
  }
  await shutdown(source, sourceDb)
  rmSync(work, { recursive: true, force: true })
})

describe("admin backup and restore", () => {
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
    // Every table holds exactly the file's rows, value for value (bytea, jsonb, arrays, cidr, timestamptz); the audit
    // log has the restore's own row besides.
    const restoreRow = (table: string, j: string) => table === "audit_log" && JSON.parse(j).action === "backup.restore"
    for (const table of header.tables) {
      const rows = (await tableRows(target.db, table.name)).map((r) => r.j).filter((j) => !restoreRow(table.name, j))
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
    // Read as a feed client reads: again until the new event shows. A change becomes visible once every older writing
    // transaction of the PostgreSQL server has ended, and other test files write on the same server.
    const readFeed = async () => {
      const feed: Array<Json> = []
      let after: string | undefined
      for (;;) {
        const query = `?limit=100&${after === undefined ? "from=2000-01-01T00:00:00Z" : `after=${encodeURIComponent(after)}`}`
        const page = await get(restoredServer.url, `/v1/events/changes${query}`, key.key)
        expect(page.status).toBe(200)
        const body = page.body as Json
        feed.push(...body.data)
        after = body.nextToken
        if (!body.hasMore) return feed
      }
    }
    let feed = await readFeed()
    await eventually("the new event in the feed", async () => {
      feed = await readFeed()
      return feed.length > eventsRestored
    })
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
    const end = JSON.parse(lines.at(-1) ?? "{}")
    writeSigned(older, [JSON.stringify(olderHeader), ...lines.slice(1, -1)], end.rows)

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

describe("a backup carries its own integrity, and backup and restore refuse in one line", () => {
  /** An empty, migrated target the refusals share: after each refusal it must still hold no row at all. */
  let refusals: Target
  let tableNames: ReadonlyArray<string>
  let lines: ReadonlyArray<string>
  const refuseInto = async (env: Record<string, string>, file: string, message: string) => {
    const result = await admin(env, ["restore", file])
    expect({ file, code: result.code }).toEqual({ file, code: 1 })
    expect(result.stderr).toContain(message)
    expectOneLine(result.stderr)
    return result
  }
  const expectEmpty = async (target: Target) => {
    target.db ??= testDatabase(target.env)
    const counts = await countRows(target.db, tableNames)
    expect(counts.filter(([, n]) => n !== 0)).toEqual([])
  }

  beforeAll(async () => {
    lines = await fileLines(backupFile)
    tableNames = JSON.parse(lines[0] ?? "{}").tables.map((t: Json) => t.name)
    refusals = await freshTarget(EXTRA)
    expect((await admin(refusals.env, ["migrate"])).code).toBe(0)
  }, 120_000)

  test("a backup whose api_keys hash was replaced is refused before any row is written, so no one who can only write to the backup store can plant a key", async () => {
    // bytea as row_to_json writes it: \x and hex.
    const planted = `\\x${createHash("sha256").update("planted-secret").digest("hex")}`
    let edited = 0
    const tampered = lines.map((line) => {
      const value = JSON.parse(line)
      if (edited > 0 || typeof value.secret_hash !== "string" || typeof value.scopes === "undefined") return line
      edited++
      return JSON.stringify({ ...value, secret_hash: planted })
    })
    expect(edited).toBe(1)
    const file = join(work, "tampered.backup")
    writeEdited(file, tampered)
    await refuseInto(refusals.env, file, "does not match its integrity check")
    await expectEmpty(refusals)

    // Changing the end line's row count or dropping the MAC does not help either.
    const noMac = join(work, "no-mac.backup")
    const end = JSON.parse(lines.at(-1) ?? "{}")
    writeEdited(noMac, [...tampered.slice(0, -1), JSON.stringify({ end: true, rows: end.rows })])
    await refuseInto(refusals.env, noMac, "is not a complete backup")
    await expectEmpty(refusals)
  }, 120_000)

  test("a header without migrations, or otherwise malformed, is one line naming what is wrong (never a TypeError)", async () => {
    const header = JSON.parse(lines[0] ?? "{}")
    const end = JSON.parse(lines.at(-1) ?? "{}")
    const { migrations: _, ...withoutMigrations } = header
    const file = join(work, "no-migrations.backup")
    writeSigned(file, [JSON.stringify(withoutMigrations), ...lines.slice(1, -1)], end.rows)
    await refuseInto(refusals.env, file, "has a malformed header (migrations: is missing)")
    const badTables = join(work, "bad-tables.backup")
    writeSigned(
      badTables,
      [JSON.stringify({ ...header, tables: [{ name: "events" }] }), ...lines.slice(1, -1)],
      end.rows,
    )
    await refuseInto(refusals.env, badTables, "has a malformed header (tables.0.columns: is missing)")
    await expectEmpty(refusals)
  }, 120_000)

  test("a backup of format version 1 is refused, since it carries no integrity check", async () => {
    const header = JSON.parse(lines[0] ?? "{}")
    const { keyId: _, ...v1 } = { ...header, version: 1 }
    const end = JSON.parse(lines.at(-1) ?? "{}")
    const file = join(work, "v1.backup")
    writeEdited(file, [JSON.stringify(v1), ...lines.slice(1, -1), JSON.stringify({ end: true, rows: end.rows })])
    await refuseInto(refusals.env, file, "is a backup of format version 1, which carries no integrity check")
    await expectEmpty(refusals)
  }, 120_000)

  test("a small gzip holding one very long line is refused as damaged at once, since lines are read with a bound", async () => {
    const file = join(work, "long-line.backup")
    const long = new Uint8Array(48 * 1024 * 1024).fill(0x61)
    writeFileSync(file, Bun.gzipSync(long))
    expect(statSync(file).size).toBeLessThan(1024 * 1024)
    const started = performance.now()
    await refuseInto(refusals.env, file, "line 1 is longer than 16 MiB")
    expect(performance.now() - started).toBeLessThan(15_000)
    await expectEmpty(refusals)
  }, 120_000)

  test("restore with another SECRET_KEY says the backup was written with another key, and restores nothing", async () => {
    const env = { ...refusals.env, SECRET_KEY: "0123456789abcdef".repeat(4) }
    await refuseInto(env, backupFile, "was written with another SECRET_KEY")
    await expectEmpty(refusals)
  }, 120_000)

  test("restore without SECRET_KEY on an empty DATA_DIR refuses and generates no key, since the backup's key is needed; with its secret.key in DATA_DIR it restores", async () => {
    // The embedded database's DATA_DIR, where the service would keep a key of its own, on both runs.
    const target: Target = { env: embeddedTestEnv(EXTRA) }
    targets.push(target)
    const { SECRET_KEY: _, DATA_DIR: dataDir = "", ...rest } = target.env
    const env = { ...rest, DATA_DIR: dataDir }
    await refuseInto(env, backupFile, "restore needs the SECRET_KEY of the service that wrote the backup")
    // Refused before anything was made: no key file, not even the database.
    expect(existsSync(join(dataDir, "secret.key"))).toBe(false)
    expect(readdirSync(dataDir)).toEqual([])
    writeFileSync(join(dataDir, "secret.key"), `${TEST_SECRET_KEY}\n`, { mode: 0o600 })
    const ok = await admin(env, ["restore", backupFile])
    expect(ok.stderr).toBe("")
    expect(ok.code).toBe(0)
  }, 300_000)

  test("backup to a directory, into a missing directory or over an existing file: one line, exit 1, nothing left behind", async () => {
    const dest = join(work, "dest")
    mkdirSync(dest)
    const existing = join(dest, "existing.backup")
    writeFileSync(existing, "an older backup")
    const before = readdirSync(work).sort()
    for (const [file, message] of [
      [dest, "it is a directory"],
      [`${join(work, "later")}/`, "it names a directory"],
      [join(work, "missing", "decoy.backup"), `the directory ${join(work, "missing")} does not exist`],
      [existing, "the file already exists"],
    ] as const) {
      const result = await admin(source.env, ["backup", file])
      expect({ file, code: result.code }).toEqual({ file, code: 1 })
      expect(result.stderr).toContain(message)
      expectOneLine(result.stderr)
      expect(readdirSync(work).sort()).toEqual(before)
      expect(readdirSync(dest)).toEqual(["existing.backup"])
    }
    expect(readFileSync(existing, "utf8")).toBe("an older backup")
  }, 120_000)

  test("backup, restore and secrets reseal each write an audit row; the restore's is in the restored database, after the restored rows", async () => {
    const file = join(work, "audited.backup")
    const done = await adminJson(source.env, ["backup", file])
    expect(done.keyId).toMatch(/^[0-9a-f]{16}$/)
    const reseal = await admin(source.env, ["secrets", "reseal"])
    expect(reseal.code).toBe(0)
    const sourceRows = await sourceDb.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ action: string; actor: string; target: string | null; detail: string; orgId: string | null }>`
          select action, actor, target, detail, org_id from audit_log
          where action in ('backup.create', 'secrets.reseal') order by id`,
      ),
    )
    expect(sourceRows.find((r) => r.action === "backup.create" && r.target === file)).toMatchObject({
      actor: "cli",
      orgId: null,
      detail: expect.stringContaining(`key ${done.keyId}`),
    })
    expect(sourceRows.at(-1)).toMatchObject({ action: "secrets.reseal", actor: "cli", orgId: null })

    const target = await freshTarget(EXTRA)
    const restored = await admin(target.env, ["restore", file])
    expect(restored.stderr).toBe("")
    expect(restored.code).toBe(0)
    target.db = testDatabase(target.env)
    const targetRows = await target.db.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ action: string; actor: string; target: string | null }>`
          select action, actor, target from audit_log order by id`,
      ),
    )
    // The restored log (it ends before this backup's own row, written once the file existed), then the restore's.
    expect(targetRows.length).toBeGreaterThan(1)
    expect(targetRows.filter((r) => r.action === "backup.restore")).toHaveLength(1)
    expect(targetRows.at(-1)).toEqual({ action: "backup.restore", actor: "cli", target: file })
    expect(targetRows.some((r) => r.action === "backup.create" && r.target === backupFile)).toBe(true)
  }, 300_000)
})
