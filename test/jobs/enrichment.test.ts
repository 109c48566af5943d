import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { reverseName } from "../../src/jobs/enrichment/dns.ts"
import { olderWritersEnded, type TestDatabase, testDatabase } from "../support/db.ts"
import { startDnsServer, type TestDnsServer } from "../support/dnsServer.ts"
import { createSensor, createTenant, get } from "../support/fixtures.ts"
import { ingest, nativeEvent } from "../support/ingest.ts"
import { writeMmdb } from "../support/mmdb.ts"
import { type RunningServer, shutdown, startServer, testEnv } from "../support/server.ts"

/** A template placeholder as text (attackers write it hoping a renderer evaluates it). */
const TEMPLATE_SYNTAX = ["$", "{x}"].join("")

/**
 * The enrichment job end to end: a real server with REVERSE_DNS on, asking a DNS server the test runs on 127.0.0.1,
 * and MMDB files written by MaxMind's own writer. The PTR answers are hostile: markup, chat mentions, template syntax,
 * control characters, a 2 KB name, a name that claims someone else's host.
 */

const MARKUP_ADDRESS = "203.0.113.10"
const LONG_ADDRESS = "203.0.113.11"
const CLAIMING_ADDRESS = "203.0.113.12"
const SILENT_ADDRESS = "203.0.113.13"
const SIX_ADDRESS = "2001:db8::10"

const MARKUP_PTR = `<script>alert(1)</script>.<@U123>.<!channel>.@here.{{x}}.${TEMPLATE_SYNTAX}.a\u0007b\u001b[31mc.evil.example`
/** What the service keeps of it: the control characters removed, nothing else changed. */
const MARKUP_SHOWN = `<script>alert(1)</script>.<@U123>.<!channel>.@here.{{x}}.${TEMPLATE_SYNTAX}.ab[31mc.evil.example`
const LONG_PTR = `${`${"x".repeat(60)}.`.repeat(34)}example`
const AS_ORG = "<b>Evil</b> Hosting <@U999> \u0007"

/** The DNS server's lookups take this long at most before they count as failed. */
const LOOKUP_TIMEOUT_MS = 3000

let dns: TestDnsServer
let server: RunningServer
let db: TestDatabase
let dir: string
let tenant: { orgId: string; key: string }
let token: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "enrichment-"))
  writeMmdb(join(dir, "asn.mmdb"), "GeoLite2-ASN", [
    { network: "203.0.113.0/24", data: { autonomous_system_number: 64496, autonomous_system_organization: AS_ORG } },
    { network: "2001:db8::/32", data: { autonomous_system_number: 64497, autonomous_system_organization: "Six" } },
  ])
  writeMmdb(join(dir, "country.mmdb"), "GeoLite2-Country", [
    { network: "203.0.113.0/24", data: { country: { iso_code: "NL", names: { en: "Netherlands" } } } },
    { network: "2001:db8::/32", data: { country: { iso_code: "DE", names: { en: "Germany" } } } },
  ])
  dns = await startDnsServer({
    ptr: {
      [reverseName(MARKUP_ADDRESS)]: [MARKUP_PTR],
      [reverseName(LONG_ADDRESS)]: [LONG_PTR],
      [reverseName(CLAIMING_ADDRESS)]: ["mail.example.com"],
      [reverseName(SIX_ADDRESS)]: ["six.example.net"],
    },
    a: { [MARKUP_PTR]: [MARKUP_ADDRESS], "mail.example.com": ["192.0.2.25"] },
    aaaa: { "six.example.net": ["2001:db8:0:0:0:0:0:10"] },
    silent: new Set([reverseName(SILENT_ADDRESS)]),
  })
  server = await startServer({
    env: await testEnv({
      REVERSE_DNS: "on",
      DNS_SERVERS: `127.0.0.1:${dns.port}`,
      REVERSE_DNS_TIMEOUT: `${LOOKUP_TIMEOUT_MS} millis`,
      MMDB_ASN_FILE: join(dir, "asn.mmdb"),
      MMDB_COUNTRY_FILE: join(dir, "country.mmdb"),
    }),
  })
  db = testDatabase(server.env)
  tenant = await createTenant(db)
  token = (await createSensor(db, tenant.orgId, "decoy-01")).token
})

afterAll(async () => {
  await shutdown(server, db)
  await dns?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

/** The incident of `sourceIp` in the list, once `until` holds for it (the job runs every 2 s). */
// biome-ignore lint/suspicious/noExplicitAny: API JSON, checked field by field
const incidentOf = async (sourceIp: string, until: (incident: any) => boolean, key = tenant.key): Promise<any> => {
  const deadline = Date.now() + 20_000
  for (;;) {
    const res = await get(server.url, "/v1/incidents?limit=100", key)
    // biome-ignore lint/suspicious/noExplicitAny: API JSON
    const found = res.body.data.find((i: any) => i.sourceIp === sourceIp)
    if (found !== undefined && until(found)) return found
    if (Date.now() > deadline) throw new Error(`no enrichment for ${sourceIp}: ${JSON.stringify(found)}`)
    await Bun.sleep(200)
  }
}

const statusOf = (address: string) =>
  db.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ rdnsStatus: string }>`select rdns_status from address_enrichment where address = ${address}`.pipe(
        Effect.map((rows) => rows[0]?.rdnsStatus),
      ),
    ),
  )

const send = (sourceIp: string, sensorToken = token) =>
  ingest(server.ingestUrl, "events", sensorToken, [nativeEvent({ sourceIp })])

describe("enrichment of source addresses", () => {
  test("an event from an address whose DNS server never answers is accepted at once; AS and country come later, the name fails", async () => {
    const started = performance.now()
    const res = await send(SILENT_ADDRESS)
    const took = performance.now() - started
    expect(res.status).toBe(200)
    expect(res.body.accepted).toBe(1)
    // The lookup may take LOOKUP_TIMEOUT_MS; ingestion never waits for it.
    expect(took).toBeLessThan(LOOKUP_TIMEOUT_MS / 2)
    const incident = await incidentOf(SILENT_ADDRESS, (i) => i.source.asn !== null)
    expect(incident.source).toEqual({
      scope: "external",
      network: null,
      reverseDns: null,
      asn: 64496,
      asOrganization: "<b>Evil</b> Hosting <@U999>",
      country: "NL",
    })
    const deadline = Date.now() + 15_000
    while ((await statusOf(SILENT_ADDRESS)) !== "failed" && Date.now() < deadline) await Bun.sleep(200)
    expect(await statusOf(SILENT_ADDRESS)).toBe("failed")
    expect(dns.questions).toContainEqual({ type: "PTR", name: reverseName(SILENT_ADDRESS) })
  })

  test("a PTR name with markup, mentions and control characters reads back cleaned, as JSON data, in the list, the incident and the feed", async () => {
    expect((await send(MARKUP_ADDRESS)).status).toBe(200)
    const listed = await incidentOf(MARKUP_ADDRESS, (i) => i.source.reverseDns !== null)
    expect(listed.source).toEqual({
      scope: "external",
      network: null,
      reverseDns: MARKUP_SHOWN,
      asn: 64496,
      asOrganization: "<b>Evil</b> Hosting <@U999>",
      country: "NL",
    })
    // Forward-confirmed: its A record was asked for, under the name as the PTR record wrote it.
    expect(dns.questions).toContainEqual({ type: "A", name: MARKUP_PTR })
    const one = await fetch(`${server.url}/v1/incidents/${listed.id}`, {
      headers: { authorization: `Bearer ${tenant.key}` },
    })
    expect(one.headers.get("content-type")).toBe("application/json; charset=utf-8")
    const text = await one.text()
    // No control character, raw or escaped: they were removed before the name was stored.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters is the point
    expect(text).not.toMatch(/[\u0000-\u001f]|\\u00(0|1)[0-9a-f]/)
    expect(JSON.parse(text).source).toEqual(listed.source)
    await olderWritersEnded(db)
    const feed = await get(server.url, "/v1/incidents/changes?limit=100", tenant.key)
    // biome-ignore lint/suspicious/noExplicitAny: API JSON
    expect(feed.body.data.find((i: any) => i.id === listed.id)?.source.reverseDns).toBe(MARKUP_SHOWN)
  })

  test("a 2 KB PTR name is dropped, and a name whose forward records do not include the address is never shown", async () => {
    expect((await send(LONG_ADDRESS)).status).toBe(200)
    expect((await send(CLAIMING_ADDRESS)).status).toBe(200)
    for (const [address, status] of [
      [LONG_ADDRESS, "invalid"],
      [CLAIMING_ADDRESS, "unconfirmed"],
    ] as const) {
      const incident = await incidentOf(address, (i) => i.source.asn !== null)
      const deadline = Date.now() + 15_000
      while ((await statusOf(address)) !== status && Date.now() < deadline) await Bun.sleep(200)
      expect(await statusOf(address)).toBe(status)
      expect((await incidentOf(address, () => true)).source.reverseDns).toBeNull()
      expect(incident.source.country).toBe("NL")
    }
  })

  test("an IPv6 source is confirmed by its AAAA records and gets its own AS and country", async () => {
    expect((await send(SIX_ADDRESS)).status).toBe(200)
    const incident = await incidentOf(SIX_ADDRESS, (i) => i.source.reverseDns !== null && i.source.asn !== null)
    expect(incident.source).toEqual({
      scope: "external",
      network: null,
      reverseDns: "six.example.net",
      asn: 64497,
      asOrganization: "Six",
      country: "DE",
    })
  })

  test("another organization's incident from a known address shows the same facts without asking the DNS server again", async () => {
    await incidentOf(MARKUP_ADDRESS, (i) => i.source.reverseDns !== null)
    const other = await createTenant(db, "Other Org")
    const otherToken = (await createSensor(db, other.orgId, "decoy-02")).token
    const asked = dns.questions.length
    expect((await send(MARKUP_ADDRESS, otherToken)).status).toBe(200)
    const incident = await incidentOf(MARKUP_ADDRESS, (i) => i.source.reverseDns !== null, other.key)
    expect(incident.source.reverseDns).toBe(MARKUP_SHOWN)
    expect(dns.questions.length).toBe(asked)
  })

  test("an agent gets the PTR name and the AS organization only inside fences, structuredContent equal to the API", async () => {
    const listed = await incidentOf(MARKUP_ADDRESS, (i) => i.source.reverseDns !== null)
    const client = new Client({ name: "enrichment-test", version: "1" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tenant.key}` } },
      }),
    )
    try {
      // biome-ignore lint/suspicious/noExplicitAny: tool result
      const result: any = await client.callTool({ name: "get_incident", arguments: { id: listed.id } })
      expect(result.isError).toBeFalsy()
      const api = await fetch(`${server.url}/v1/incidents/${listed.id}`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      })
      expect(JSON.stringify(result.structuredContent)).toBe(await api.text())
      const text: string = result.content[0].text
      const nonce = /Text between <untrusted-([0-9a-f]{16})>/.exec(text)?.[1]
      expect(nonce).toBeDefined()
      const line = (key: string) => text.split("\n").find((l) => l.trim().startsWith(`${key}:`)) ?? ""
      for (const key of ["reverseDns", "asOrganization"]) {
        expect(line(key)).toMatch(
          new RegExp(`^\\s*${key}: <untrusted-${nonce}>"[\\x20-\\x3b\\x3d\\x3f-\\x7e]*"</untrusted-${nonce}>$`),
        )
      }
      expect(
        JSON.parse(
          line("reverseDns")
            .replace(/^[^<]*<untrusted-[0-9a-f]+>/, "")
            .replace(/<\/untrusted-.*$/, ""),
        ),
      ).toBe(MARKUP_SHOWN)
      // Outside the fences nothing of the name: no markup, no mention.
      const outside = text.replace(/<untrusted-[0-9a-f]{16}>.*?<\/untrusted-[0-9a-f]{16}>/g, "")
      for (const raw of ["<script>", "<@U123>", "<!channel>", "@here", "Evil"]) expect(outside).not.toContain(raw)
      expect(line("country")).toMatch(/country: NL$/)
    } finally {
      await client.close().catch(() => {})
    }
  })
})
