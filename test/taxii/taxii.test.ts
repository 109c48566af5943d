import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import Ajv2020 from "ajv/dist/2020"
import addFormats from "ajv-formats"
import { Effect } from "effect"
import { asOperator } from "../../src/admin/actor.ts"
import { OrgAdmin } from "../../src/admin/OrgAdmin.ts"
import { TLP2_MARKING_IDS } from "../../src/domain/stix.ts"
import { techniqueById } from "../../src/domain/techniques.ts"
import { collectionOf } from "../../src/taxii/queries.ts"
import { collectionIdFor } from "../../src/taxii/server.ts"
import { type TestDatabase, testDatabase } from "../support/db.ts"
import { createKey, createSensor, createTenant, seedIncident } from "../support/fixtures.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/**
 * The read-only TAXII 2.1 server: discovery, API root, the organization's collection, objects paged with limit and
 * next and filtered by added_after, manifest, versions, an object by id, errors as TAXII error messages, and every
 * object served valid against the OASIS STIX 2.1 schemas.
 */

const TAXII = "application/taxii+json;version=2.1"
const SCHEMA_ROOT = join(import.meta.dir, "../fixtures/stix2-json-schemas")
const BASE = "http://raw.githubusercontent.com/oasis-open/cti-stix2-json-schemas/stix2.1/schemas/"
const ajv = new Ajv2020({ strict: false, allErrors: true, unicodeRegExp: false })
addFormats(ajv)
for (const dir of ["common", "sdos", "sros"]) {
  for (const name of readdirSync(join(SCHEMA_ROOT, dir)))
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_ROOT, dir, name), "utf8")))
}
const SCHEMA_OF: Record<string, string> = {
  identity: "sdos/identity.json",
  indicator: "sdos/indicator.json",
  "attack-pattern": "sdos/attack-pattern.json",
  sighting: "sros/sighting.json",
  "marking-definition": "common/marking-definition.json",
}
const schemaErrors = (object: { type: string }): string | undefined => {
  const validate = ajv.getSchema(BASE + (SCHEMA_OF[object.type] ?? "none"))
  if (validate === undefined) return `no schema for ${object.type}`
  return validate(object) ? undefined : ajv.errorsText(validate.errors)
}

let server: RunningServer
let db: TestDatabase
let orgId: string
let key: string
let sensorId: string
let other: { orgId: string; key: string }
let collection: string

const get = (path: string, opts: { key?: string; accept?: string; auth?: string; method?: string } = {}) =>
  fetch(`${server.url}${path}`, {
    method: opts.method ?? "GET",
    headers: {
      accept: opts.accept ?? TAXII,
      ...(opts.auth !== undefined
        ? { authorization: opts.auth }
        : opts.key === undefined
          ? {}
          : { authorization: `Bearer ${opts.key}` }),
    },
  })

type Obj = { id: string; type: string; modified?: string; created: string }
const json = async (r: Response) => (await r.json()) as Record<string, unknown>
const basic = (password: string, user = "any") => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`

const readAll = async (limit: number, extra = "") => {
  const ids: Array<string> = []
  let next: string | undefined
  for (let i = 0; i < 100; i++) {
    const q = `limit=${limit}${extra}${next === undefined ? "" : `&next=${encodeURIComponent(next)}`}`
    const r = await get(`/taxii2/api/collections/${collection}/objects/?${q}`, { key })
    expect(r.status).toBe(200)
    const body = await json(r)
    const objects = (body.objects ?? []) as Array<Obj>
    expect(objects.length).toBeLessThanOrEqual(limit)
    ids.push(...objects.map((o) => o.id))
    if (body.more !== true) return ids
    next = body.next as string
  }
  throw new Error("too many pages")
}

beforeAll(async () => {
  server = await startServer({ env: await testEnv() })
  db = testDatabase(server.env)
  const tenant = await createTenant(db, "Taxii Corp", "intel:read")
  orgId = tenant.orgId
  key = tenant.key
  collection = collectionIdFor(orgId)
  sensorId = (await createSensor(db, orgId, "edge-01")).id
  const hourAgo = new Date(Date.now() - 3_600_000)
  for (const ip of ["198.51.100.1", "198.51.100.2", "2001:db8::9"]) {
    await seedIncident(db, { orgId, sensorId, sourceIp: ip, events: [{ time: hourAgo }] })
  }
  const t = await createTenant(db, "Other Corp", "intel:read")
  const otherSensor = await createSensor(db, t.orgId, "other-01")
  await seedIncident(db, {
    orgId: t.orgId,
    sensorId: otherSensor.id,
    sourceIp: "203.0.113.9",
    events: [{ time: hourAgo }],
  })
  other = { orgId: t.orgId, key: t.key }
}, 60_000)

afterAll(async () => {
  await shutdown(server)
})

describe("TAXII 2.1 server", () => {
  test("discovery, API root and collections, typed as TAXII 2.1", async () => {
    const discovery = await get("/taxii2/", { key })
    expect(discovery.status).toBe(200)
    expect(discovery.headers.get("content-type")).toBe(TAXII)
    expect(await json(discovery)).toMatchObject({ default: "/taxii2/api/", api_roots: ["/taxii2/api/"] })
    const root = await json(await get("/taxii2/api/", { key }))
    expect(root.versions).toEqual([TAXII])
    const list = await json(await get("/taxii2/api/collections/", { key }))
    expect(list.collections).toEqual([
      expect.objectContaining({
        id: collection,
        title: "Taxii Corp decoy sightings",
        can_read: true,
        can_write: false,
      }),
    ])
    const one = await json(await get(`/taxii2/api/collections/${collection}/`, { key }))
    expect(one.id).toBe(collection)
  })

  test("objects: every one valid STIX 2.1, paged with limit and next, each exactly once", async () => {
    const r = await get(`/taxii2/api/collections/${collection}/objects/`, { key })
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toBe(TAXII)
    const body = await json(r)
    const objects = body.objects as Array<Obj>
    expect(body.more).toBe(false)
    // marking, organization, sensor, at least one attack pattern, 3 indicators, 3 sightings
    expect(objects.filter((o) => o.type === "indicator")).toHaveLength(3)
    expect(objects.filter((o) => o.type === "sighting")).toHaveLength(3)
    for (const o of objects) expect(schemaErrors(o)).toBeUndefined()
    expect(JSON.stringify(objects)).not.toContain("203.0.113.9")
    const first = r.headers.get("x-taxii-date-added-first")
    const last = r.headers.get("x-taxii-date-added-last")
    expect(first).toMatch(/Z$/)
    expect(Date.parse(last ?? "")).toBeGreaterThanOrEqual(Date.parse(first ?? ""))

    const paged = await readAll(2)
    expect(paged).toEqual(objects.map((o) => o.id))
    expect(new Set(paged).size).toBe(paged.length)
  })

  test("added_after: only what was added or changed later; a new incident's objects come after a page read", async () => {
    const page1 = await get(`/taxii2/api/collections/${collection}/objects/`, { key })
    const last = page1.headers.get("x-taxii-date-added-last") ?? ""
    const none = await get(`/taxii2/api/collections/${collection}/objects/?added_after=${last}`, { key })
    expect(await json(none)).toEqual({ more: false })
    await Bun.sleep(5)
    await seedIncident(db, { orgId, sensorId, sourceIp: "192.0.2.44", events: [{ time: new Date() }] })
    const after = await json(await get(`/taxii2/api/collections/${collection}/objects/?added_after=${last}`, { key }))
    const ids = ((after.objects ?? []) as Array<Obj>).map((o) => `${o.type}`)
    expect(ids).toContain("indicator")
    expect(ids).toContain("sighting")
    // The three older indicators did not change: not served again.
    expect(ids.filter((t) => t === "indicator")).toHaveLength(1)
    const bad = await get(`/taxii2/api/collections/${collection}/objects/?added_after=yesterday`, { key })
    expect(bad.status).toBe(400)
    expect(await json(bad)).toMatchObject({ title: "Bad Request", http_status: "400" })
    const forged = await get(`/taxii2/api/collections/${collection}/objects/?next=abc.def`, { key })
    expect(forged.status).toBe(400)
  })

  test("match filters, manifest, object by id and its versions", async () => {
    const indicators = await json(
      await get(`/taxii2/api/collections/${collection}/objects/?match[type]=indicator`, { key }),
    )
    const objs = indicators.objects as Array<Obj>
    expect(objs.length).toBeGreaterThanOrEqual(3)
    expect(objs.every((o) => o.type === "indicator")).toBe(true)
    const target = objs[0] as Obj
    const manifest = await json(await get(`/taxii2/api/collections/${collection}/manifest/?limit=1000`, { key }))
    const entry = (manifest.objects as Array<Record<string, string>>).find((m) => m.id === target.id)
    expect(entry).toMatchObject({ version: target.modified, media_type: "application/stix+json;version=2.1" })
    expect(entry?.date_added).toMatch(/Z$/)
    const byId = await get(`/taxii2/api/collections/${collection}/objects/${target.id}/`, { key })
    expect(((await json(byId)).objects as Array<Obj>).map((o) => o.id)).toEqual([target.id])
    const versions = await json(
      await get(`/taxii2/api/collections/${collection}/objects/${target.id}/versions/`, { key }),
    )
    expect(versions.versions).toEqual([target.modified])
    const matched = await json(
      await get(`/taxii2/api/collections/${collection}/objects/?match[id]=${target.id}`, { key }),
    )
    expect((matched.objects as Array<Obj>).map((o) => o.id)).toEqual([target.id])
  })

  test("every object carries the organization's TLP level: amber unless set, the admin's choice once set", async () => {
    const t = await createTenant(db, "Taxii Red Corp", "intel:read")
    const sensor = await createSensor(db, t.orgId, "red-01")
    await seedIncident(db, {
      orgId: t.orgId,
      sensorId: sensor.id,
      sourceIp: "198.51.100.77",
      events: [{ time: new Date(Date.now() - 60_000) }],
    })
    const objectsOf = async () => {
      const r = await get(`/taxii2/api/collections/${collectionIdFor(t.orgId)}/objects/`, { key: t.key })
      expect(r.status).toBe(200)
      return (await json(r)).objects as Array<Obj & { object_marking_refs?: Array<string>; name?: string }>
    }
    const markings = (objects: ReadonlyArray<{ type: string; object_marking_refs?: Array<string> }>) =>
      new Set(objects.filter((o) => o.type !== "marking-definition").map((o) => JSON.stringify(o.object_marking_refs)))

    const before = await objectsOf()
    expect(before.filter((o) => o.type === "marking-definition").map((o) => o.name)).toEqual(["TLP:AMBER"])
    expect(markings(before)).toEqual(new Set([JSON.stringify([TLP2_MARKING_IDS.amber])]))

    await db.run(asOperator(Effect.flatMap(OrgAdmin, (orgs) => orgs.setTlp(t.orgId, "red"))))
    const after = await objectsOf()
    const marking = after.filter((o) => o.type === "marking-definition")
    expect(marking.map((o) => [o.id, o.name])).toEqual([[TLP2_MARKING_IDS.red, "TLP:RED"]])
    expect(markings(after)).toEqual(new Set([JSON.stringify([TLP2_MARKING_IDS.red])]))
    expect(after.map((o) => o.id).sort()).toEqual(
      before.map((o) => (o.id === TLP2_MARKING_IDS.amber ? TLP2_MARKING_IDS.red : o.id)).sort(),
    )
    for (const o of after) expect(schemaErrors(o)).toBeUndefined()
    // The other organizations keep theirs.
    const others = await json(await get(`/taxii2/api/collections/${collection}/objects/`, { key }))
    expect(markings(others.objects as Array<Obj>)).toEqual(new Set([JSON.stringify([TLP2_MARKING_IDS.amber])]))
  })

  test("another organization's collection and objects are 404", async () => {
    const theirs = collectionIdFor(other.orgId)
    const r = await get(`/taxii2/api/collections/${theirs}/objects/`, { key })
    expect(r.status).toBe(404)
    expect(r.headers.get("content-type")).toBe(TAXII)
    expect(await json(r)).toMatchObject({ http_status: "404" })
    const mine = await json(await get(`/taxii2/api/collections/${collection}/objects/?match[type]=sighting`, { key }))
    const sighting = (mine.objects as Array<Obj>)[0] as Obj
    const cross = await get(`/taxii2/api/collections/${theirs}/objects/${sighting.id}/`, { key: other.key })
    expect(cross.status).toBe(404)
  })

  test("auth: 401 without or with a wrong key (Basic challenge), 403 without intel:read, Basic accepted", async () => {
    const none = await get("/taxii2/", {})
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toBe('Basic realm="taxii"')
    expect(none.headers.get("content-type")).toBe(TAXII)
    expect(await json(none)).toMatchObject({ http_status: "401" })
    expect((await get("/taxii2/", { key: `${key}x` })).status).toBe(401)
    expect((await get("/taxii2/", { auth: basic("dsk_nope_nope") })).status).toBe(401)
    const readerOnly = (await createKey(db, orgId, "incidents:read,events:read")).key
    const forbidden = await get("/taxii2/", { key: readerOnly })
    expect(forbidden.status).toBe(403)
    expect(await json(forbidden)).toMatchObject({ http_status: "403" })
    const viaBasic = await get(`/taxii2/api/collections/${collection}/objects/`, { auth: basic(key, "opencti") })
    expect(viaBasic.status).toBe(200)
    const blocklist = await fetch(`${server.url}/v1/blocklist.txt`, { headers: { authorization: basic(key) } })
    expect(blocklist.status).toBe(200)
    expect(await blocklist.text()).toContain("198.51.100.1\n")
  })

  test("406 for an Accept it cannot serve, 405 for POST and DELETE", async () => {
    const r = await get("/taxii2/", { key, accept: "application/xml" })
    expect(r.status).toBe(406)
    expect(r.headers.get("content-type")).toBe(TAXII)
    expect((await get("/taxii2/", { key, accept: "application/taxii+json;version=2.0" })).status).toBe(406)
    expect((await get("/taxii2/", { key, accept: "application/taxii+json" })).status).toBe(200)
    for (const method of ["POST", "DELETE"]) {
      const w = await get(`/taxii2/api/collections/${collection}/objects/`, { key, method })
      expect(w.status).toBe(405)
      expect(w.headers.get("content-type")).toBe(TAXII)
      expect(await json(w)).toMatchObject({ http_status: "405" })
    }
  })
})

describe("the OASIS TAXII 2.1 client (taxii2client, Python)", () => {
  test("reads every page with Basic auth while incidents are stored between pages: nothing missed, nothing twice", async () => {
    // What existed before the read: every object id with its version.
    const before = await json(await get(`/taxii2/api/collections/${collection}/manifest/?limit=1000`, { key }))
    const existing = (before.objects as Array<{ id: string; version: string }>).map((m) => m.id)
    expect(existing.length).toBeGreaterThan(6)
    const script = join(import.meta.dir, "../fixtures/taxii2-client/read_collection.py")
    const child = Bun.spawn(["/usr/bin/python3", script, server.url], {
      env: { ...process.env, TAXII_KEY: key, PYTHONDONTWRITEBYTECODE: "1" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    })
    const reader = child.stdout.getReader()
    const decoder = new TextDecoder()
    let buffered = ""
    const nextLine = async (): Promise<Record<string, unknown>> => {
      for (;;) {
        const newline = buffered.indexOf("\n")
        if (newline >= 0) {
          const line = buffered.slice(0, newline)
          buffered = buffered.slice(newline + 1)
          return JSON.parse(line) as Record<string, unknown>
        }
        const { value, done } = await reader.read()
        if (done) throw new Error(`client ended: ${await new Response(child.stderr).text()}`)
        buffered += decoder.decode(value)
      }
    }
    const discovery = await nextLine()
    expect(discovery.api_roots).toEqual([`${server.url}/taxii2/api/`])
    expect(await nextLine()).toEqual({ collection, can_read: true, can_write: false })
    const got: Array<string> = []
    let pages = 0
    for (;;) {
      const line = await nextLine()
      if (line.done === true) break
      pages++
      got.push(...(line.page as Array<[string, string]>).map(([id, version]) => `${id} ${version}`))
      // A new incident from a new address while the client is between pages.
      if (pages <= 3) {
        await seedIncident(db, { orgId, sensorId, sourceIp: `192.0.2.${100 + pages}`, events: [{ time: new Date() }] })
      }
      child.stdin.write("next\n")
      child.stdin.flush()
    }
    child.stdin.end()
    expect(await child.exited).toBe(0)
    expect(pages).toBeGreaterThan(3)
    // Each (id, version) at most once; every object that existed before the read was served.
    expect(new Set(got).size).toBe(got.length)
    const ids = new Set(got.map((entry) => entry.split(" ")[0]))
    for (const id of existing) expect(ids.has(id)).toBe(true)
    // The objects of the incidents stored during the read came too (they were added after every page read).
    const indicators = await json(
      await get(`/taxii2/api/collections/${collection}/objects/?match[type]=indicator`, { key }),
    )
    for (const o of indicators.objects as Array<Obj>) expect(ids.has(o.id)).toBe(true)
  }, 60_000)
})

describe("date_added", () => {
  test("each object is dated by the latest change of the incidents it comes from", () => {
    const technique = techniqueById("T1110")
    const incident = (id: string, ip: string, sensor: string) => ({
      id,
      title: "t",
      narrative: "n",
      sensor: { id: sensor, name: sensor },
      sourceIp: ip,
      eventCount: 1,
      baitCredentialUsed: false,
      firstSeenAt: new Date("2026-01-01T00:00:00Z"),
      lastSeenAt: new Date("2026-01-01T01:00:00Z"),
      techniques: [technique],
      source: { scope: "external" as const },
    })
    const created = new Date("2025-06-01T00:00:00Z")
    const entries = collectionOf("Org", "org_x", created, [
      { incident: incident("inc_a", "198.51.100.1", "sen_1") as never, updatedAt: new Date("2026-01-02T00:00:00Z") },
      { incident: incident("inc_b", "198.51.100.1", "sen_2") as never, updatedAt: new Date("2026-01-05T00:00:00Z") },
      { incident: incident("inc_c", "198.51.100.2", "sen_1") as never, updatedAt: new Date("2026-01-03T00:00:00Z") },
    ])
    const at = (type: string, pick: (o: Record<string, unknown>) => boolean = () => true) =>
      entries
        .filter((e) => e.object.type === type && pick(e.object as unknown as Record<string, unknown>))
        .map((e) => new Date(e.addedMs).toISOString())
    expect(at("marking-definition")).toEqual([created.toISOString()])
    expect(at("identity", (o) => o.identity_class === "organization")).toEqual([created.toISOString()])
    expect(at("sighting").sort()).toEqual([
      "2026-01-02T00:00:00.000Z",
      "2026-01-03T00:00:00.000Z",
      "2026-01-05T00:00:00.000Z",
    ])
    expect(at("indicator", (o) => String(o.pattern).includes("198.51.100.1"))).toEqual(["2026-01-05T00:00:00.000Z"])
    expect(at("indicator", (o) => String(o.pattern).includes("198.51.100.2"))).toEqual(["2026-01-03T00:00:00.000Z"])
    expect(at("identity", (o) => o.identity_class === "system").sort()).toEqual([
      "2026-01-03T00:00:00.000Z",
      "2026-01-05T00:00:00.000Z",
    ])
    expect(at("attack-pattern")).toEqual(["2026-01-05T00:00:00.000Z"])
    // In date_added order.
    const order = entries.map((e) => e.addedMs)
    expect(order).toEqual([...order].sort((a, b) => a - b))
  })
})
