/**
 * `bun bench/console-search.ts --db <dsvc_bench_*> [--runs N]`
 *
 * The console's search and list filters at 1M events: the statements the Incidents and Events pages run for their
 * first page (51 rows), built by the service's own statement builders (ConsoleListsRepo, EventsRepo), on the large
 * seeded organization (bench/lib/seed.ts gives its events Cowrie-like commands with download URLs, a hash each, web
 * paths and file names). Each query runs N times one after another, after one warm-up run; prints p50 and p95 of the
 * wall time per statement as PostgreSQL answers it through Bun's client. The goal: a search's p50 under 200 ms.
 */
import { SQL } from "bun"
import { isId, type OrgId } from "../src/domain/ids.ts"
import { type ConsoleIncidentFilters, consoleIncidentListStatement } from "../src/repos/ConsoleListsRepo.ts"
import { type EventListQuery, eventListStatement } from "../src/repos/EventsRepo.ts"
import type { SqlText } from "../src/repos/statement.ts"
import { round, scriptOptions, table } from "./lib/common.ts"
import { databaseUrl } from "./lib/pg.ts"
import { loadManifest } from "./lib/seed.ts"

const { option, database } = scriptOptions("bun bench/console-search.ts --db <dsvc_bench_*> [--runs N]")
const runs = Number(option("--runs", "30"))
const url = databaseUrl(database)

const manifest = await loadManifest({ databaseUrl: url })
if (manifest === undefined) throw new Error(`${database} has no seed manifest`)
const orgId = manifest.datasets.large.orgId
if (!isId("organization", orgId)) throw new Error(`${database}'s seed manifest names no organization`)

const sql = new SQL({ url, max: 1 })

// The seed judges every source external; the "inside" filters need some internal incidents to find: about 1 in 100
// of the organization's incidents are marked so (once; the mark is all the lists read).
await sql`update incidents set source_scope = 'internal'
  where org_id = ${orgId} and source_ip like '72.1.%' and source_scope = 'external'`
await sql`analyze incidents`

// Terms taken from the data itself, so they exist whatever the seed's random parts drew.
const sample = (await sql`
  select e.attacker_input->>'shasum' as hash, e.attacker_input->>'url' as url, e.sensor_id as sensor
  from events e where e.org_id = ${orgId} and e.type = 'ssh.command' and e.attacker_input ? 'shasum'
  order by e.id limit 1 offset 500`) as Array<{ hash: string; url: string; sensor: string }>
const picked = sample[0]
if (picked === undefined) throw new Error("the seed has no ssh.command events with a hash: seed again with this seed")
const counts = (await sql`
  select count(*) filter (where search_text like '%xmrig%')::int as rare,
    count(*) filter (where search_text like '%root%')::int as common,
    count(*) filter (where search_text like ${`%${picked.url}%`})::int as url,
    count(*)::int as events
  from events where org_id = ${orgId} and ignore_rule_id is null`) as Array<Record<string, number>>

const searches: ReadonlyArray<readonly [string, string]> = [
  ["rare term (xmrig)", "xmrig"],
  ["common term (root)", "root"],
  ["a hash (sha256-shaped)", picked.hash],
  ["a URL", picked.url],
  ["no match", "no-such-thing-anywhere"],
  // Under three characters there is no trigram to look up: every listed event of the organization is read.
  ["two characters, no match", "zq"],
]

const incidents = (filters: ConsoleIncidentFilters): SqlText =>
  consoleIncidentListStatement({ orgId: orgId as OrgId, filters, after: undefined, fetch: 51 })
const events = (q: Partial<EventListQuery>): SqlText =>
  eventListStatement({ orgId: orgId as OrgId, filters: {}, after: undefined, fetch: 51, ...q })

const dayAgo = new Date(Date.now() - 86_400_000)
const weekAgo = new Date(Date.now() - 7 * 86_400_000)
const cases: ReadonlyArray<readonly [string, string, SqlText]> = [
  ...searches.map(([name, q]) => ["search", `incidents: ${name}`, incidents({ q })] as const),
  ...searches.map(([name, q]) => ["search", `events: ${name}`, events({ q })] as const),
  ["search", "incidents: open + a URL", incidents({ status: "open", q: picked.url })],
  ["search", "events: sensor + rare term", events({ filters: { sensorId: picked.sensor as never }, q: "xmrig" })],
  ["filter", "incidents: none (first page)", incidents({})],
  ["filter", "incidents: open, high", incidents({ status: "open", severity: "high" })],
  ["filter", "incidents: sensor", incidents({ sensorId: picked.sensor as never })],
  ["filter", "incidents: source 71.0.0.0/8", incidents({ sourceNetwork: "71.0.0.0/8" })],
  ["filter", "incidents: type ssh.command", incidents({ type: "ssh.command" })],
  ["filter", "incidents: owner nobody", incidents({ owner: "none" })],
  ["filter", "incidents: inside", incidents({ scope: "internal" })],
  ["filter", "incidents: active last 24 h", incidents({ from: dayAgo })],
  [
    "filter",
    "incidents: a week ago, 1 day",
    incidents({ from: weekAgo, to: new Date(weekAgo.getTime() + 86_400_000) }),
  ],
  ["filter", "events: inside", events({ scope: "internal" })],
  ["filter", "events: outside, type http.request", events({ scope: "external", filters: { type: "http.request" } })],
  ["filter", "events: source 71.0.0.0/8", events({ sourceNetwork: "71.0.0.0/8" })],
]

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

const rows: Array<ReadonlyArray<string | number>> = []
for (const [kind, name, { text, params }] of cases) {
  let found = 0
  await sql.unsafe(text, [...params])
  const times: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    const result = (await sql.unsafe(text, [...params])) as Array<unknown>
    times.push(performance.now() - started)
    found = result.length
  }
  times.sort((a, b) => a - b)
  rows.push([kind, name, found, round(percentile(times, 50), 1), round(percentile(times, 95), 1)])
}
await sql.close()

console.log(
  `Console search and filters, ${database}: organization ${orgId}, ${counts[0]?.events ?? 0} listed events; ` +
    `"xmrig" in ${counts[0]?.rare ?? 0}, "root" in ${counts[0]?.common ?? 0}, the URL in ${counts[0]?.url ?? 0}; ` +
    `${runs} runs each, first page of 51 (ms)\n`,
)
console.log(table(["kind", "query", "rows", "p50 ms", "p95 ms"], rows))
