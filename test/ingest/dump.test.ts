import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createChannel, createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { cleanup, embeddedTestEnv, type RunningServer, startServer, testEnv, usingPostgres } from "../support/server.ts"
import { makeTestCertificate } from "../support/tls.ts"

/**
 * D19, "the raw value never reaches the database (test: grep a database dump)": captured passwords, tokens, secrets,
 * API keys and passphrases are sent through all three ingest routes (native, OpenCanary, Cowrie), a webhook channel
 * receives the incidents (so the outbox's stored bodies are in the dump too), then the database is dumped and
 * searched for every raw value:
 * - every row of every table of the public schema as text (tables enumerated from information_schema, so a new
 *   table is covered without touching this test), on both databases;
 * - on PostgreSQL (DATABASE_URL), the real `pg_dump` of the test database;
 * - on the embedded database, the raw files of its cluster, DATA_DIR/pg (its log included), as bytes, after the
 *   service has stopped and with it the database (a clean stop checkpoints). Not pg_dump: the embedded server is
 *   PostgreSQL 18, and the pg_dump of the machine may be older (it refuses a newer server).
 * The dump must contain the masked fingerprints and the usernames, so an empty or broken dump fails the test.
 */

const tag = crypto.randomUUID().slice(0, 8)
/** A unique raw secret: never a substring of anything else in the database. */
const secret = (label: string) => `${label}-${tag}-${crypto.randomUUID()}`

let receiver: Receiver
let caFile: string
let server: RunningServer
let db: TestDatabase | undefined
let serverStopped = false
let tenant: { orgId: string; key: string }
let sensor: { id: string; token: string }

beforeAll(async () => {
  const certs = makeTestCertificate({ dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] })
  caFile = join(tmpdir(), `dsvc-ca-dump-${process.pid}-${Date.now()}.pem`)
  writeFileSync(caFile, certs.caCert)
  receiver = await startReceiver(certs)
  const settings = {
    WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8",
    WEBHOOK_CA_FILE: caFile,
    WEBHOOK_POLL_INTERVAL: "200 millis",
  }
  // On the embedded run, an embedded database of its own: its cluster's raw files are searched, and no other test's.
  server = await startServer({ env: usingPostgres() ? await testEnv(settings) : embeddedTestEnv(settings) })
  db = testDatabase(server.env)
  tenant = await createTenant(db, "Dump")
  sensor = await createSensor(db, tenant.orgId, "dump-01")
})

afterAll(async () => {
  await db?.close()
  if (!serverStopped) await server?.stop()
  if (server) cleanup(server)
  receiver?.stop()
  rmSync(caFile, { force: true })
})

/** Every raw value sent, by where it was sent. */
const RAW: Record<string, string> = {
  nativePassword: secret("native-password"),
  nativePassphrase: secret("native-passphrase"),
  nativeToken: secret("native-token"),
  nativeSecret: secret("native-secret"),
  nativeApiKey: secret("native-apikey"),
  nativeKey: secret("native-key"),
  nativeUpperPassword: secret("NATIVE-UPPER-PASSWORD"),
  nativeSnakeApiKey: secret("native-api_key"),
  nativeNestedToken: secret("native-nested-token"),
  nativeArraySecret: secret("native-array-secret"),
  nativeNumberSecret: String(700_000_000_000_000 + Math.floor(Math.random() * 99_999_999_999_999)),
  nativeUnicode: `pässwörd-ü-${secret("native-unicode")}-🔑`,
  ocFtp: secret("oc-2000-ftp"),
  ocHttpLogin: secret("oc-3001-http"),
  ocHttpApiKey: secret("oc-3000-api-key"),
  ocSsh: secret("oc-4002-ssh"),
  ocTelnet: secret("oc-6001-telnet"),
  ocMysql: secret("oc-8001-mysql"),
  ocMssql: secret("oc-9001-mssql"),
  ocVnc: secret("oc-12001-vnc"),
  ocRedisAuth: secret("oc-17001-redis"),
  cowrieFailed: secret("cowrie-login-failed"),
  cowrieSuccess: secret("cowrie-login-success"),
}
const USERNAMES = {
  native: `dump-native-user-${tag}`,
  opencanary: `dump-oc-user-${tag}`,
  cowrie: `dump-cowrie-user-${tag}`,
}

const eventIds: Array<string> = []
const incidentIds = new Set<string>()
const fingerprints = new Set<string>()

const record = (
  label: string,
  res: { status: number; body: { accepted: number; results: Array<Record<string, string>> } },
  count: number,
) => {
  expect({ label, status: res.status, accepted: res.body.accepted }).toEqual({ label, status: 200, accepted: count })
  for (const r of res.body.results) {
    eventIds.push(r.id as string)
    incidentIds.add(r.incidentId as string)
  }
}

const ocTime = () => `${new Date(Date.now() - 120_000).toISOString().slice(0, 19).replace("T", " ")}.053123`
let ocPort = 43000
const ocLine = (logtype: number, logdata: Record<string, unknown>) => ({
  dst_host: "10.0.0.5",
  dst_port: 0,
  local_time: ocTime(),
  logdata,
  logtype,
  node_id: "opencanary-dump",
  src_host: "203.0.113.201",
  src_port: ocPort++,
  utc_time: ocTime(),
})
let cowriePort = 44000
const cowrieLine = (eventid: string, fields: Record<string, unknown>) => ({
  eventid,
  message: "login attempt",
  sensor: "cowrie-dump",
  session: `dump${tag}`,
  src_ip: "203.0.113.202",
  src_port: cowriePort++,
  dst_ip: "10.0.0.6",
  dst_port: 2222,
  timestamp: new Date(Date.now() - 60_000).toISOString().replace(/Z$/, "123Z"),
  ...fields,
})

/** Runs an effect needing SqlClient on the test's own connection. */
const withSql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  (db as TestDatabase).run(Effect.flatMap(SqlClient.SqlClient, f) as Effect.Effect<A, never, SqlClient.SqlClient>)

/** Every row of every base table of the public schema, as PostgreSQL's own text of the row. */
const rowsAsText = async () => {
  const tables = await withSql(
    (sql) =>
      sql<{ tableName: string }>`
      select table_name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`,
  )
  const names = tables.map((t) => t.tableName)
  const parts: Array<string> = []
  for (const name of names) {
    const quoted = `"${name.replace(/"/g, '""')}"`
    const rows = await withSql((sql) => sql.unsafe<{ row: string }>(`select t::text as row from public.${quoted} t`))
    parts.push(`-- ${name} (${rows.length} rows)`, ...rows.map((r) => r.row))
  }
  return { names, text: parts.join("\n") }
}

/** The findings of one dump: which raw values it holds (must be none), and the markers it must hold. */
const inspect = (label: string, contains: (needle: string) => boolean) => {
  const leaked = Object.entries(RAW)
    .filter(([, raw]) => contains(raw) || contains(Buffer.from(raw, "utf8").toString("hex")))
    .map(([name]) => name)
  expect({ label, leaked }).toEqual({ label, leaked: [] })
  // The dump is real: it holds what is stored around the secrets.
  expect(fingerprints.size).toBeGreaterThanOrEqual(Object.keys(RAW).length - 1)
  const missingFingerprints = [...fingerprints].filter((f) => !contains(f))
  expect({ label, missingFingerprints }).toEqual({ label, missingFingerprints: [] })
  const missingUsernames = Object.values(USERNAMES).filter((u) => !contains(u))
  expect({ label, missingUsernames }).toEqual({ label, missingUsernames: [] })
}

describe("no raw captured secret anywhere in a database dump", () => {
  test("secrets go in through the native, OpenCanary and Cowrie routes; the API answers them masked", async () => {
    const native = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({
        sourceIp: "203.0.113.200",
        attackerInput: {
          username: USERNAMES.native,
          password: RAW.nativePassword,
          passphrase: RAW.nativePassphrase,
          token: RAW.nativeToken,
          secret: RAW.nativeSecret,
          apiKey: RAW.nativeApiKey,
          key: RAW.nativeKey,
        },
      }),
      nativeEvent({
        sourceIp: "203.0.113.200",
        type: "http.login_attempt",
        attackerInput: {
          username: USERNAMES.native,
          PASSWORD: RAW.nativeUpperPassword,
          api_key: RAW.nativeSnakeApiKey,
          session: { credentials: { Token: RAW.nativeNestedToken } },
          attempts: [{ secret: RAW.nativeArraySecret }],
          pin: { key: Number(RAW.nativeNumberSecret) },
          passphrase: RAW.nativeUnicode,
        },
      }),
    ])
    record("native", native, 2)

    const lines = [
      ocLine(2000, { USERNAME: USERNAMES.opencanary, PASSWORD: RAW.ocFtp }),
      ocLine(3001, {
        HOSTNAME: "intranet",
        PATH: "/index.html",
        SKIN: "basicLogin",
        USERAGENT: "curl/8.5.0",
        USERNAME: USERNAMES.opencanary,
        PASSWORD: RAW.ocHttpLogin,
      }),
      ocLine(3000, { HOSTNAME: "intranet", PATH: "/api", USERAGENT: "curl/8.5.0", API_KEY: RAW.ocHttpApiKey }),
      ocLine(4002, { USERNAME: USERNAMES.opencanary, PASSWORD: RAW.ocSsh, REMOTEVERSION: "SSH-2.0-Go" }),
      ocLine(6001, { USERNAME: USERNAMES.opencanary, PASSWORD: RAW.ocTelnet }),
      ocLine(8001, { USERNAME: USERNAMES.opencanary, PASSWORD: RAW.ocMysql }),
      ocLine(9001, { UserName: USERNAMES.opencanary, Password: RAW.ocMssql, AppName: "sqlcmd" }),
      ocLine(12001, { "VNC Password": RAW.ocVnc, "VNC Server Challenge": "0f1e2d3c4b5a69788796a5b4c3d2e1f0" }),
      ocLine(17001, { CMD: "AUTH", ARGS: RAW.ocRedisAuth }),
    ]
    record("opencanary", await ingest(server.ingestUrl, "opencanary", sensor.token, lines), lines.length)

    const cowrie = [
      cowrieLine("cowrie.login.failed", { username: USERNAMES.cowrie, password: RAW.cowrieFailed }),
      cowrieLine("cowrie.login.success", { username: USERNAMES.cowrie, password: RAW.cowrieSuccess }),
    ]
    record("cowrie", await ingest(server.ingestUrl, "cowrie", sensor.token, cowrie), cowrie.length)

    // Read back: every secret masked, and its fingerprint kept for the dump's positive check.
    const collect = (value: unknown) => {
      if (typeof value !== "object" || value === null) return
      const v = value as Record<string, unknown>
      if (typeof v.fingerprint === "string" && typeof v.masked === "string") fingerprints.add(v.fingerprint)
      for (const child of Object.values(v)) collect(child)
    }
    for (const id of eventIds) {
      const event = await get(server.url, `/v1/events/${id}`, tenant.key)
      expect(event.status).toBe(200)
      collect(event.body.attackerInput)
      const text = JSON.stringify(event.body)
      for (const [name, raw] of Object.entries(RAW))
        expect({ id, name, leaked: text.includes(raw) }).toEqual({ id, name, leaked: false })
    }
    // One per secret, the number secret as its digits (D19: numbers through String()).
    expect(fingerprints.size).toBe(Object.keys(RAW).length)
  })

  test("the webhook channel receives the incidents; their bodies are stored in the outbox", async () => {
    const channel = await createChannel(db as TestDatabase, tenant.orgId, `${receiver.url}/dump`, "low")
    expect(channel.id).toMatch(/^whc_/)
    // A new event per grouping key after the channel exists: each incident is announced (escalated or, for a new
    // key, created) to the channel, with the stored attacker input in its body.
    const more = await ingest(server.ingestUrl, "events", sensor.token, [
      nativeEvent({
        sourceIp: "203.0.113.203",
        type: "ssh.login_success",
        attackerInput: { username: USERNAMES.native, password: RAW.nativePassword, token: RAW.nativeToken },
      }),
    ])
    record("native after channel", more, 1)
    const until = Date.now() + 30_000
    while (receiver.requests.length < 1 && Date.now() < until) await Bun.sleep(100)
    expect(receiver.requests.length).toBeGreaterThanOrEqual(1)
    const bodies = receiver.requests.map((r) => r.body).join("\n")
    expect(bodies).toContain(USERNAMES.native)
    for (const [name, raw] of Object.entries(RAW))
      expect({ name, leaked: bodies.includes(raw) }).toEqual({ name, leaked: false })
    const stored = await withSql(
      (sql) => sql<{ body: string | null }>`select body from webhook_deliveries where org_id = ${tenant.orgId}`,
    )
    expect(stored.length).toBeGreaterThanOrEqual(1)
    expect(stored.some((row) => row.body?.includes(USERNAMES.native))).toBe(true)
  })

  test("every row of every public table as text holds no raw secret, but the fingerprints and usernames", async () => {
    const { names, text } = await rowsAsText()
    for (const table of ["events", "incidents", "sensors", "webhook_deliveries", "incident_transitions"]) {
      expect(names).toContain(table)
    }
    expect(text).toContain(sensor.id)
    inspect("rows as text", (needle) => text.includes(needle))
  })

  test("the database's own storage: pg_dump on PostgreSQL, the raw cluster files (server stopped) on the embedded database", async () => {
    if (usingPostgres()) {
      // The real pg_dump binary against the test database.
      const dump = Bun.spawnSync(["pg_dump", "--no-owner", "--no-privileges", server.env.DATABASE_URL ?? ""], {
        stdout: "pipe",
        stderr: "pipe",
        env: { PATH: process.env.PATH ?? "" },
      })
      expect({ code: dump.exitCode, stderr: dump.stderr.toString() }).toEqual({ code: 0, stderr: "" })
      const text = dump.stdout.toString("utf8")
      expect(text).toContain("COPY public.events")
      expect(text).toContain(sensor.id)
      inspect("pg_dump", (needle) => text.includes(needle))
      return
    }
    // Embedded: the service is stopped, the last user of the database, so PostgreSQL stops too (a checkpoint), and
    // the cluster's files are searched as bytes.
    await db?.close()
    db = undefined
    const code = await server.stop()
    serverStopped = true
    expect(code).toBe(0)
    const root = join(server.env.DATA_DIR ?? "", "pg")
    const files: Array<string> = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir)) {
        const path = join(dir, entry)
        const stat = statSync(path)
        if (stat.isDirectory()) walk(path)
        else if (stat.isFile()) files.push(path)
      }
    }
    walk(root)
    expect(files.length).toBeGreaterThan(10)
    const contents = files.map((path) => readFileSync(path))
    expect(contents.reduce((n, b) => n + b.length, 0)).toBeGreaterThan(1024 * 1024)
    expect(contents.some((buffer) => buffer.indexOf(Buffer.from(sensor.id)) >= 0)).toBe(true)
    inspect("raw cluster files", (needle) => {
      const bytes = Buffer.from(needle, "utf8")
      return contents.some((buffer) => buffer.indexOf(bytes) >= 0)
    })
  })
})
