import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { SensorAdmin } from "../../src/admin/SensorAdmin.ts"
import { setupSnippets } from "../../src/admin/sensorSetup.ts"
import { statusOf } from "../../src/domain/sensorStatus.ts"
import { INGEST_ROUTE_TABLE } from "../../src/ingest/routes.ts"
import { SensorsRepo } from "../../src/repos/SensorsRepo.ts"
import { admin, adminJson } from "../support/cli.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createOrg, idOf } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * D43: sensors managed with the admin CLI against the running server: revoke (401 at once on every ingest route, HEC's
 * 403 code 4 on the HEC route), rotate with a grace that ends, the token shown with ready-to-paste configuration,
 * rename, heartbeat and last contact, status, profiles; every change audited. The organizations and sensors a
 * test only needs (it is not about creating them) are made in process by the admin services the CLI runs
 * (test/support/fixtures.ts), not by a CLI process each: the CLI's own create is checked where it is the subject.
 */

let server: RunningServer
let db: TestDatabase

beforeAll(async () => {
  server = await startServer({ env: await testEnv({ INGEST_URL: "https://ingest.example.test:8443" }) })
  db = testDatabase(server.env)
})

afterAll(() => shutdown(server, db))

const audit = (target: string) =>
  db.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ actor: string; action: string; target: string; detail: string | null; orgId: string | null }>`
          select actor, action, target, detail, org_id from audit_log where target = ${target} order by id`,
    ),
  )

/** Organization names are unique: each gets this run's suffix (a rerun on the same database makes them again). */
const RUN = crypto.randomUUID().slice(0, 8)
const newOrg = async (name: string) =>
  (await adminJson(server.env, ["org", "create", "--name", `${name} ${RUN}`])).id as string

/** Two sensors in service in one organization have two names. */
const newSensor = async (orgId: string, extra: ReadonlyArray<string> = [], name = "s-1") => {
  const made = (await adminJson(server.env, ["sensor", "create", "--org", orgId, "--name", name, ...extra])) as {
    id: string
    token: string
  }
  return { id: idOf("sensor", made.id), token: made.token }
}

/** An organization for a test that is not about `org create`: made by the operator's service, in process. */
const orgFor = async (name: string) => (await createOrg(db, `${name} ${RUN}`)).id as string

/**
 * A sensor for a test that is not about `sensor create`, made in process as `sensor create` makes it (no --profile:
 * generic; a name another sensor in service has is refused): its id and token.
 */
const sensorFor = async (orgId: string, input: { profile?: string; heartbeatInterval?: string } = {}, name = "s-1") => {
  const made = await db.run(
    asOperator(
      Effect.flatMap(SensorAdmin, (sensors) =>
        sensors.create(orgId, { name, profile: input.profile, heartbeatInterval: input.heartbeatInterval }),
      ),
    ),
  )
  return { id: idOf("sensor", made.id), token: made.token }
}

const listed = async (orgId: string, sensorId: string) => {
  const rows = (await adminJson(server.env, ["sensor", "list", "--org", orgId])) as Array<Record<string, unknown>>
  return rows.find((r) => r.id === sensorId) as Record<string, unknown>
}

const heartbeat = (token: string | undefined, body?: string) =>
  fetch(`${server.ingestUrl}/ingest/v1/heartbeat`, {
    method: "POST",
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body }),
  })

/** One Cowrie line as Cowrie's output_splunk posts it (`Authorization: Splunk <token>`, one HEC event). */
const hecEvent = (token: string) =>
  fetch(`${server.ingestUrl}/services/collector/event`, {
    method: "POST",
    headers: { authorization: `Splunk ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      index: "cowrie",
      sourcetype: "cowrie",
      source: "cowrie",
      time: Date.now() / 1000,
      event: {
        eventid: "cowrie.login.failed",
        username: "root",
        password: "123456",
        message: "login attempt [root/123456] failed",
        sensor: "cowrie-1",
        timestamp: new Date(Date.now() - 1000).toISOString(),
        src_ip: "203.0.113.44",
        session: crypto.randomUUID().slice(0, 12),
      },
    }),
  })

const eventually = async <A>(read: () => Promise<A>, ok: (a: A) => boolean, ms = 5000) => {
  const until = Date.now() + ms
  let last = await read()
  while (!ok(last) && Date.now() < until) {
    await Bun.sleep(50)
    last = await read()
  }
  return last
}

describe("sensor revoke", () => {
  test("a revoked token gets 401 at once on every /ingest/v1 route; revoking again records nothing", async () => {
    const orgId = await orgFor("Revoke sensors")
    const sensor = await sensorFor(orgId)
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(200)
    expect(await (await hecEvent(sensor.token)).json()).toEqual({ text: "Success", code: 0 })

    const revoked = await admin(server.env, ["sensor", "revoke", sensor.id])
    expect(revoked.code).toBe(0)
    expect(revoked.stdout).toContain("revoked")
    // The very next request, no wait: there is no token cache to expire.
    // Every event route under /ingest/v1 (HEC's are checked below, in HEC's own shape).
    const routes = INGEST_ROUTE_TABLE.filter((r) => r.events && !r.hec).map((r) => r.path.replace("/ingest/v1/", ""))
    expect(routes.length).toBeGreaterThan(0)
    for (const route of routes) {
      const res = await ingest(server.ingestUrl, route, sensor.token, nativeEvent())
      expect({ route, status: res.status, code: res.body.code }).toEqual({ route, status: 401, code: "unauthorized" })
      expect(res.body.detail).toContain("revoked")
    }
    expect((await heartbeat(sensor.token)).status).toBe(401)
    // D41 (a): on the HEC route, HEC's own refusal, as Cowrie's output_splunk sends it.
    const hec = await hecEvent(sensor.token)
    expect(hec.status).toBe(403)
    expect(await hec.json()).toEqual({ text: "Invalid token", code: 4 })

    expect((await admin(server.env, ["sensor", "revoke", sensor.id])).code).toBe(0)
    const rows = (await audit(sensor.id)).filter((r) => r.action === "sensor.revoke")
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ actor: "cli", orgId })
    expect((await listed(orgId, sensor.id)).status).toBe("revoked")
    // A revoked sensor cannot be rotated back to life, nor renamed.
    const rotate = await admin(server.env, ["sensor", "rotate", sensor.id])
    expect(rotate.code).toBe(1)
    expect(rotate.stderr).toContain("revoked")
  })

  test("an unknown or malformed sensor id is refused with its own message", async () => {
    const result = await admin(server.env, ["sensor", "revoke", "sen_01ZZZZZZZZZZZZZZZZZZZZZZZZ"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("unknown sensor")
    expect((await admin(server.env, ["sensor", "rename", "nope", "--name", "x"])).stderr).toContain("unknown sensor")
  })
})

describe("sensor rotate", () => {
  test("with a grace the old token works until it ends, then 401; the new one works; the token is never audited", async () => {
    const orgId = await orgFor("Rotate sensors")
    const sensor = await sensorFor(orgId)
    const rotated = (await adminJson(server.env, ["sensor", "rotate", sensor.id, "--grace", "6s"])) as {
      id: string
      token: string
      previousTokenValidUntil: string
    }
    expect(rotated.id).toBe(sensor.id)
    expect(rotated.token).not.toBe(sensor.token)
    expect(rotated.token).toStartWith(`dst_${sensor.id}_`)
    expect(Date.parse(rotated.previousTokenValidUntil)).toBeGreaterThan(Date.now())

    // The listing shows the grace only while it runs: the admin command that reads it (seconds on a loaded machine)
    // starts at once, beside the requests to the in-process server, so the grace has to outlast the slower of the two
    // rather than both one after the other.
    const listing = listed(orgId, sensor.id)
    listing.catch(() => {}) // a failure is reported where it is awaited, below
    expect((await ingest(server.ingestUrl, "events", rotated.token, nativeEvent())).status).toBe(200)
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(200)
    expect((await heartbeat(sensor.token)).status).toBe(204)

    await Bun.sleep(Math.max(0, Date.parse(rotated.previousTokenValidUntil) - Date.now()) + 200)
    expect((await listing).previousTokenValidUntil).toBe(rotated.previousTokenValidUntil)
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(401)
    expect((await heartbeat(sensor.token)).status).toBe(401)
    expect((await ingest(server.ingestUrl, "events", rotated.token, nativeEvent())).status).toBe(200)

    const rows = (await audit(sensor.id)).filter((r) => r.action === "sensor.rotate")
    expect(rows).toHaveLength(1)
    expect(rows[0]?.detail).toContain("grace until")
    const all = JSON.stringify(await audit(sensor.id))
    expect(all).not.toContain(rotated.token.slice(-43))
    expect(all).not.toContain(sensor.token.slice(-43))
  })

  test("without a grace the old token stops at once; a second rotation with --force ends the first one's grace", async () => {
    const orgId = await orgFor("Rotate sensors, no grace")
    const sensor = await sensorFor(orgId)
    const first = await adminJson(server.env, ["sensor", "rotate", sensor.id, "--grace", "1h"])
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(200)
    const second = await adminJson(server.env, ["sensor", "rotate", sensor.id, "--force"])
    expect(second.previousTokenValidUntil).toBeNull()
    expect((await ingest(server.ingestUrl, "events", sensor.token, nativeEvent())).status).toBe(401)
    expect((await ingest(server.ingestUrl, "events", first.token, nativeEvent())).status).toBe(401)
    expect((await ingest(server.ingestUrl, "events", second.token, nativeEvent())).status).toBe(200)
    const bad = await admin(server.env, ["sensor", "rotate", sensor.id, "--grace", "45d"])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("--grace")
  })
})

describe("the token is shown with ready-to-paste configuration", () => {
  const INGEST = "https://ingest.example.test:8443"

  test("sensor create prints the profile's snippet first, then the others and the heartbeat, with the token and this service's ingest address", async () => {
    const orgId = await orgFor("Snippets")
    const created = await admin(server.env, ["sensor", "create", "--org", orgId, "--name", "cw", "--profile", "cowrie"])
    expect(created.code).toBe(0)
    const out = created.stdout
    const token = /(dst_sen_[0-9A-Z]{26}_[A-Za-z0-9_-]{43})/.exec(out)?.[1] ?? ""
    expect(token).not.toBe("")
    // Each snippet as the console shows it, in the profile's order: Cowrie's [output_splunk] first.
    const expected = setupSnippets({ ingestUrl: INGEST, token, profile: "cowrie" })
    expect(expected[0]?.kind).toBe("cowrie")
    let at = -1
    for (const snippet of expected) {
      const found = out.indexOf(snippet.text)
      expect({ kind: snippet.kind, found: found > at }).toEqual({ kind: snippet.kind, found: true })
      at = found
      expect(out).toContain(snippet.title)
    }
    expect(out).toContain(`url = ${INGEST}/services/collector/event\ntoken = ${token}`)
    expect(out).toContain(`"headers": {"Authorization": "Bearer ${token}"}`)
    expect(out).toContain(`Authorization: Bearer ${token}`)
    // An https console with an https ingest address: nothing to warn about.
    expect(out).not.toContain("plain HTTP")

    // --json stays one parseable object: the same snippets are its `setup` member.
    const json = (await adminJson(server.env, [
      "sensor",
      "create",
      "--org",
      orgId,
      "--name",
      "oc",
      "--profile",
      "opencanary",
    ])) as { id: string; token: string; ingestUrl: string; setup: Array<Record<string, string>> }
    expect(json.ingestUrl).toBe(INGEST)
    expect(json.setup).toEqual(
      setupSnippets({ ingestUrl: INGEST, token: json.token, profile: "opencanary" }).map((s) => ({ ...s })),
    )
    expect(json.setup.map((s) => s.kind)).toEqual(["opencanary", "cowrie", "vector", "fluentbit", "heartbeat"])
    const webhook = JSON.parse(`{${json.setup[0]?.text}}`).Webhook
    expect(webhook).toMatchObject({
      url: `${INGEST}/ingest/v1/opencanary`,
      headers: { Authorization: `Bearer ${json.token}` },
    })
  })

  test("sensor rotate prints the configuration again, with the new token only", async () => {
    const orgId = await orgFor("Snippets rotate")
    const sensor = await sensorFor(orgId, { profile: "opencanary" })
    const rotated = await admin(server.env, ["sensor", "rotate", sensor.id])
    expect(rotated.code).toBe(0)
    const token = /(dst_sen_[0-9A-Z]{26}_[A-Za-z0-9_-]{43})/.exec(rotated.stdout)?.[1] ?? ""
    expect(token).not.toBe(sensor.token)
    for (const snippet of setupSnippets({ ingestUrl: INGEST, token, profile: "opencanary" }))
      expect(rotated.stdout).toContain(snippet.text)
    expect(rotated.stdout).not.toContain(sensor.token)

    const json = (await adminJson(server.env, ["sensor", "rotate", sensor.id, "--force"])) as {
      token: string
      setup: Array<{ kind: string; text: string }>
    }
    expect(json.setup.map((s) => s.kind)).toEqual(["opencanary", "cowrie", "vector", "fluentbit", "heartbeat"])
    for (const s of json.setup) {
      expect(s.text).toContain(json.token)
      expect(s.text).not.toContain(token)
    }
  })
})

describe("rename, profiles, list with status and last contact", () => {
  test("rename changes the name events carry from the next request on, audited with both names", async () => {
    const orgId = await orgFor("Rename sensors")
    const sensor = await sensorFor(orgId)
    const renamed = await admin(server.env, ["sensor", "rename", sensor.id, "--name", "dmz-db-02"])
    expect(renamed.code).toBe(0)
    expect((await listed(orgId, sensor.id)).name).toBe("dmz-db-02")
    const rows = (await audit(sensor.id)).filter((r) => r.action === "sensor.rename")
    expect(rows).toEqual([
      { actor: "cli", action: "sensor.rename", target: sensor.id, detail: "s-1 → dmz-db-02", orgId },
    ])
    const empty = await admin(server.env, ["sensor", "rename", sensor.id, "--name", "  "])
    expect(empty.code).toBe(1)
  })

  test("an unknown profile is refused with the documented list; sensor profiles prints it", async () => {
    const orgId = await orgFor("Profiles")
    const toaster = await admin(server.env, ["sensor", "create", "--org", orgId, "--name", "t", "--profile", "toaster"])
    expect(toaster.code).toBe(1)
    expect(toaster.stderr).toContain("--profile must be one of opencanary, cowrie,")
    expect(toaster.stderr).toContain("generic")
    const profiles = (await adminJson(server.env, ["sensor", "profiles"])) as Array<{ id: string }>
    expect(profiles.map((p) => p.id)).toEqual(
      expect.arrayContaining(["opencanary", "cowrie", "linux-server", "linux-database-server", "generic"]),
    )
    const cowrie = await newSensor(orgId, ["--profile", "cowrie"])
    expect((await listed(orgId, cowrie.id)).profile).toBe("cowrie")
    const plain = await newSensor(orgId, [], "s-2")
    expect((await listed(orgId, plain.id)).profile).toBe("generic")
    const badInterval = await admin(server.env, [
      "sensor",
      "create",
      "--org",
      orgId,
      "--name",
      "t",
      "--heartbeat-interval",
      "5s",
    ])
    expect(badInterval.code).toBe(1)
    expect(badInterval.stderr).toContain("--heartbeat-interval")
  })

  test("POST /ingest/v1/heartbeat answers 204 and sets last heard from; a bad token 401; status alive", async () => {
    const orgId = await orgFor("Heartbeats")
    const sensor = await sensorFor(orgId, { heartbeatInterval: "60s" })
    const before = await listed(orgId, sensor.id)
    expect(before).toMatchObject({ status: "unknown", lastSeenAt: null, heartbeatIntervalSeconds: 60 })

    const started = Date.now()
    const res = await heartbeat(sensor.token)
    expect(res.status).toBe(204)
    expect(await res.text()).toBe("")
    const after = await eventually(
      () => listed(orgId, sensor.id),
      (row) => row.lastSeenAt !== null,
    )
    expect(Date.parse(after.lastSeenAt as string)).toBeGreaterThanOrEqual(started - 1000)
    expect(after.status).toBe("alive")

    expect((await heartbeat(undefined)).status).toBe(401)
    // The last character changed (to another one: a token may well end in "A").
    expect((await heartbeat(`${sensor.token.slice(0, -1)}${sensor.token.endsWith("A") ? "B" : "A"}`)).status).toBe(401)
    expect((await heartbeat("dsk_key_01ZZZZZZZZZZZZZZZZZZZZZZZZ_x")).status).toBe(401)
    // A body is allowed and ignored; GET is 405, not a 404.
    expect((await heartbeat(sensor.token, "{}")).status).toBe(204)
    const get = await fetch(`${server.ingestUrl}/ingest/v1/heartbeat`)
    expect(get.status).toBe(405)

    const human = await admin(server.env, ["sensor", "list", "--org", orgId])
    expect(human.stdout).toContain("status=alive")
    expect(human.stdout).not.toContain(sensor.token)
  })

  test("any authenticated ingest request is contact too; a sensor with no heartbeat stays unknown", async () => {
    const orgId = await orgFor("Contact")
    const sensor = await sensorFor(orgId, { profile: "opencanary" })
    // An OpenCanary boot line: ignored as an event, yet the sensor was heard from.
    const boot = await ingest(server.ingestUrl, "opencanary", sensor.token, {
      dst_host: "",
      dst_port: -1,
      local_time: new Date().toISOString().replace("T", " ").replace("Z", "000"),
      logdata: { msg: { logdata: "Canary running!!!" } },
      logtype: 1001,
      node_id: "canary-01",
      src_host: "",
      src_port: -1,
    })
    expect(boot.status).toBe(200)
    const row = await eventually(
      () => listed(orgId, sensor.id),
      (r) => r.lastSeenAt !== null,
    )
    expect(row.lastSeenAt).not.toBeNull()
    expect(row.status).toBe("unknown")
    // Heartbeat interval set later: now alive.
    expect((await admin(server.env, ["sensor", "heartbeat", sensor.id, "5m"])).code).toBe(0)
    expect((await listed(orgId, sensor.id)).status).toBe("alive")
    expect((await audit(sensor.id)).map((r) => r.action)).toEqual(["sensor.create", "sensor.heartbeat"])
  })
})

describe("(Hardening 2): every admin CLI change is audited once", () => {
  test("org create, org deception on|off and sensor create write audit rows with actor cli", async () => {
    const orgId = await newOrg("Audited org")
    expect(await audit(orgId)).toEqual([
      { actor: "cli", action: "org.create", target: orgId, detail: `Audited org ${RUN}`, orgId },
    ])
    expect((await admin(server.env, ["org", "deception", orgId, "off"])).code).toBe(0)
    expect((await admin(server.env, ["org", "deception", orgId, "on"])).code).toBe(0)
    expect((await audit(orgId)).map((r) => [r.action, r.detail])).toEqual([
      ["org.create", `Audited org ${RUN}`],
      ["org.deception", "off"],
      ["org.deception", "on"],
    ])
    const sensor = await newSensor(orgId, ["--profile", "cowrie"])
    const rows = await audit(sensor.id)
    expect(rows).toEqual([{ actor: "cli", action: "sensor.create", target: sensor.id, detail: "s-1 (cowrie)", orgId }])
    expect(JSON.stringify(rows)).not.toContain(sensor.token.slice(-43))
  })

  test("revoking an already revoked key writes one key.revoke row, not two", async () => {
    const orgId = await orgFor("Key revokers")
    const key = await adminJson(server.env, [
      "key",
      "create",
      "--org",
      orgId,
      "--name",
      "k",
      "--scopes",
      "incidents:read",
    ])
    expect((await admin(server.env, ["key", "revoke", key.id])).code).toBe(0)
    expect((await admin(server.env, ["key", "revoke", key.id])).code).toBe(0)
    expect((await audit(key.id)).filter((r) => r.action === "key.revoke")).toHaveLength(1)
  })
})

describe("status and health, for the silent-detection sweep", () => {
  test("statusOf: revoked wins; no heartbeat is unknown; three missed intervals are silent", () => {
    const created = new Date("2026-11-26T10:00:00Z")
    const at = (s: number) => new Date(created.getTime() + s * 1000)
    const row = { createdAt: created, revokedAt: null, lastSeenAt: null, heartbeatIntervalSeconds: 60 }
    expect(statusOf(row, at(30))).toBe("unknown")
    expect(statusOf(row, at(181))).toBe("silent")
    expect(statusOf({ ...row, lastSeenAt: at(100) }, at(200))).toBe("alive")
    expect(statusOf({ ...row, lastSeenAt: at(100) }, at(280))).toBe("alive")
    expect(statusOf({ ...row, lastSeenAt: at(100) }, at(281))).toBe("silent")
    expect(statusOf({ ...row, heartbeatIntervalSeconds: null, lastSeenAt: at(1) }, at(99_999))).toBe("unknown")
    expect(statusOf({ ...row, revokedAt: at(1), lastSeenAt: at(2) }, at(3))).toBe("revoked")
  })

  test("listWatched and setHealth (compare-and-set: one caller announces a change)", async () => {
    const orgId = await orgFor("Health")
    const watched = await sensorFor(orgId, { heartbeatInterval: "60s" })
    const unwatched = await sensorFor(orgId, {}, "s-2")
    const ids = await db.run(
      Effect.map(
        Effect.flatMap(SensorsRepo, (r) => r.listWatched()),
        (rows) => rows.map((r) => r.id),
      ),
    )
    expect(ids).toContain(watched.id)
    expect(ids).not.toContain(unwatched.id)
    const sets = await db.run(
      Effect.flatMap(SensorsRepo, (r) =>
        Effect.all([
          r.setHealth(watched.id, "unknown", "silent", new Date()),
          r.setHealth(watched.id, "unknown", "silent", new Date()),
          r.setHealth(watched.id, "silent", "alive", new Date()),
        ]),
      ),
    )
    expect(sets).toEqual([true, false, true])
    await admin(server.env, ["sensor", "revoke", watched.id])
    const after = await db.run(
      Effect.map(
        Effect.flatMap(SensorsRepo, (r) => r.listWatched()),
        (rows) => rows.map((r) => r.id),
      ),
    )
    expect(after).not.toContain(watched.id)
  })
})
