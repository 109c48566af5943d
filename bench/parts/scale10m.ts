import { SQL } from "bun"
import { deriveKey } from "../../src/domain/crypto.ts"
import { encodeCursor } from "../../src/domain/cursor.ts"
import { decodeSecretKey } from "../../src/platform/config.ts"
import { adminJson } from "../lib/admin.ts"
import { type BenchContext, log, round, serviceEnv, sleep } from "../lib/common.ts"
import { memoryFigures } from "../lib/proc.ts"
import {
  type Dataset,
  type DatasetSpec,
  dropGenerators,
  prepareGenerators,
  readManifest,
  saveManifest,
  seedDataset,
  VERIFY_ORG,
  withoutEventIndexes,
} from "../lib/seed.ts"
import type { WrkResult } from "../lib/wrk.ts"
import {
  baselineUrl,
  get,
  keyPool,
  load,
  sameBody,
  serviceUrl,
  startTargets,
  statusCounts,
  stopTargets,
  type Targets,
  type Timing,
  withOrg,
} from "./api.ts"

/**
 * `scale10m`: one organization with N events (default 10,000,000; `--scale-events N` to try it small), and a
 * reference organization with 10,000. Measured with wrk at 16 connections, service and baseline: the first page
 * of GET /v1/events at 10k and at N, the page after N/10 rows (1,000,000 at 10M), and, when the service has it
 * (D32), GET /v1/events/changes: its first page and the page after N/10 rows of the feed. Then the size of the
 * events table and of each of its indexes.
 *
 * Seeding as fast as PostgreSQL allows: the rows are generated inside PostgreSQL (no row crosses the wire: the
 * incidents are planned in TypeScript with the service's own texts, ids and token code, 100,000 at a time, and
 * their events are generated from each incident row, bench/lib/seed.ts), with the events' secondary indexes
 * dropped during the load and rebuilt afterwards (two at a time), then analyzed and verified (every incident's
 * count, times, types, severity against its events). The seeded organizations are recorded in bench_manifest, so
 * `--keep-db` and `--db` reuse them.
 *
 * The position "after N/10 rows" is found in SQL (the row at that offset in the list's order) and turned into a
 * cursor with the service's own cursor code and key; the part checks that the service's page starts at the next
 * row. The feed's tokens are opaque, so its deep page is reached by following nextToken (limit 100).
 */

interface ScaleManifest {
  readonly ref: Dataset
  readonly big: Dataset
  readonly seed: Record<string, number | string | boolean>
}

const manifestName = (events: number) => `scale10m-${events}`

const seedScale = async (ctx: BenchContext, sql: SQL, events: number): Promise<ScaleManifest> => {
  const env = serviceEnv(ctx)
  const stats: Record<string, number | string | boolean> = {}
  const started = performance.now()
  await adminJson(env, ["migrate"]).catch(() => ({}))
  await prepareGenerators(sql)
  const [refOrg, bigOrg] = await Promise.all(
    ["bench-scale-10k", `bench-scale-${events}`].map((name) =>
      adminJson<{ id: string }>(env, ["org", "create", "--name", name]),
    ),
  )
  if (refOrg === undefined || bigOrg === undefined) throw new Error("could not create the organizations")
  const nowMs = Date.now()
  const refSpec: DatasetSpec = { name: "scaleRef", events: 10_000, incidents: 1_000, sensors: 10, keys: 1_500 }
  const bigSpec: DatasetSpec = {
    name: "scaleBig",
    events,
    incidents: Math.max(2, Math.round(events / 10)),
    sensors: 50,
    keys: 3_000,
  }
  const ref = await seedDataset(sql, env, stats, refSpec, refOrg.id, 2, nowMs)

  const big = await withoutEventIndexes(sql, stats, "scale10m", async () => {
    const loadStarted = performance.now()
    const dataset = await seedDataset(sql, env, stats, bigSpec, bigOrg.id, 3, nowMs)
    stats.loadSeconds = round((performance.now() - loadStarted) / 1000, 1)
    return dataset
  })
  let step = performance.now()
  await sql.unsafe("vacuum (analyze) events")
  await sql.unsafe("vacuum (analyze) incidents")
  stats.vacuumAnalyzeSeconds = round((performance.now() - step) / 1000, 1)
  step = performance.now()
  for (const org of [refOrg.id, bigOrg.id]) {
    const rows = await sql.unsafe(VERIFY_ORG, [org])
    const bad = (rows[0] as { bad: number }).bad
    if (bad !== 0) throw new Error(`scale10m seed verification failed: ${bad} incidents disagree with their events`)
  }
  stats.verifySeconds = round((performance.now() - step) / 1000, 1)
  stats.verified = true
  stats.totalSeconds = round((performance.now() - started) / 1000, 1)
  stats.eventsPerSecond = Math.round(events / Number(stats.loadSeconds ?? 1))
  await dropGenerators(sql)
  const manifest: ScaleManifest = { ref, big, seed: stats }
  await saveManifest(sql, manifestName(events), manifest)
  return manifest
}

const loadScaleManifest = (sql: SQL, events: number) => readManifest<ScaleManifest>(sql, manifestName(events))

/** Sizes of the events table and its indexes (the whole table: other organizations' events too). */
const sizes = async (sql: SQL) => {
  const [table] = (await sql`
    select pg_relation_size('events')::bigint as "tableBytes", pg_indexes_size('events')::bigint as "indexesBytes",
           pg_total_relation_size('events')::bigint as "totalBytes",
           (select reltuples::bigint from pg_class where oid = 'events'::regclass) as "estimatedRows",
           pg_total_relation_size('incidents')::bigint as "incidentsTotalBytes"`) as Array<Record<string, bigint>>
  const indexes = (await sql`
    select c.relname as name, pg_relation_size(c.oid)::bigint as bytes
    from pg_index x join pg_class c on c.oid = x.indexrelid
    where x.indrelid = 'events'::regclass order by 2 desc, 1`) as Array<{ name: string; bytes: bigint }>
  const mib = (b: bigint | number | undefined) => round(Number(b ?? 0) / 1024 / 1024, 1)
  return {
    estimatedRows: Number(table?.estimatedRows ?? 0),
    tableMiB: mib(table?.tableBytes),
    indexesMiB: mib(table?.indexesBytes),
    totalMiB: mib(table?.totalBytes),
    incidentsTotalMiB: mib(table?.incidentsTotalBytes),
    indexes: indexes.map((i) => ({ name: i.name, MiB: mib(i.bytes) })),
  }
}

export interface Scale10mRow {
  readonly case: string
  readonly service: WrkResult
  readonly baseline?: WrkResult
}

/** The cursor of GET /v1/events after `rows` rows of the organization, made as the service makes it. */
const cursorAfter = async (ctx: BenchContext, sql: SQL, orgId: string, rows: number) => {
  const [at, next] = (await sql`
    select e.time, e.id from events e where e.org_id = ${orgId}
    order by e.time desc, e.id desc offset ${rows - 1} limit 2`) as Array<{ time: Date; id: string }>
  if (at === undefined) throw new Error(`the organization has fewer than ${rows} events`)
  const secret = decodeSecretKey(ctx.secretKey)
  if (secret === undefined) throw new Error("bad SECRET_KEY")
  const cursor = encodeCursor(
    deriveKey(secret, "cursor-v1"),
    { endpoint: "events", orgId, filters: { type: undefined } },
    { time: at.time, id: at.id },
  )
  return { cursor, nextId: next?.id }
}

/** Follows the change feed's nextToken through `rows` rows (limit 100); undefined if it ends before. */
const walkFeed = async (t: Targets, dataset: Dataset, rows: number) => {
  let token: string | undefined
  let seen = 0
  let keyIndex = 50
  while (seen < rows) {
    const query = `limit=${Math.min(100, rows - seen)}${token !== undefined ? `&after=${encodeURIComponent(token)}` : ""}`
    const page = (await get(
      `${serviceUrl(t)}/v1/events/changes?${query}`,
      dataset.keys[keyIndex++ % dataset.keys.length],
    )) as { data?: Array<unknown>; nextToken?: string; hasMore?: boolean }
    const n = page.data?.length ?? 0
    seen += n
    token = page.nextToken
    if (token === undefined) throw new Error("the change feed answered without nextToken")
    if (n === 0 || (page.hasMore === false && seen < rows)) return { token, rows: seen, ended: true }
  }
  return { token: token ?? "", rows: seen, ended: false }
}

export const runScale10m = async (
  ctx: BenchContext,
  timing: Timing,
  options: { readonly events: number; readonly connections?: number },
) => {
  const connections = options.connections ?? 16
  const sql = new SQL({ url: ctx.databaseUrl, max: 4 })
  let t: Targets | undefined
  try {
    let manifest = await loadScaleManifest(sql, options.events)
    if (manifest === undefined) {
      log(`scale10m: seeding ${options.events.toLocaleString("en")} events in one organization`)
      manifest = await seedScale(ctx, sql, options.events)
    } else log(`scale10m: reusing the seeded organization of ${options.events.toLocaleString("en")} events`)
    const { ref, big } = manifest
    const tableSizes = await sizes(sql)
    const deep = Math.max(1, Math.round(options.events / 10))
    const { cursor, nextId } = await cursorAfter(ctx, sql, big.orgId, deep)
    const label = (n: number) => (n >= 1_000_000 ? `${round(n / 1_000_000, 1)}M` : `${Math.round(n / 1000)}k`)

    t = await startTargets(ctx, "scale10m")
    const targets = t
    // The deep page starts right after the row found in SQL, or the cursor is not what the service makes.
    const check = (await get(
      `${serviceUrl(targets)}/v1/events?cursor=${encodeURIComponent(cursor)}`,
      big.keys[10],
    )) as { data?: Array<{ id?: string }> }
    if (check.data?.[0]?.id !== nextId) throw new Error(`the deep page starts at ${check.data?.[0]?.id}, not ${nextId}`)

    const cases: Array<{ name: string; dataset: Dataset; path: string; baseline: boolean }> = [
      { name: "first page, 10k events", dataset: ref, path: "/v1/events", baseline: true },
      { name: `first page, ${label(options.events)} events`, dataset: big, path: "/v1/events", baseline: true },
      {
        name: `page after ${deep.toLocaleString("en")} rows, ${label(options.events)} events`,
        dataset: big,
        path: `/v1/events?cursor=${encodeURIComponent(cursor)}`,
        baseline: true,
      },
    ]
    // The change feed (D32), if this service has it.
    const probe = await fetch(`${serviceUrl(targets)}/v1/events/changes?limit=1`, {
      headers: { authorization: `Bearer ${big.keys[11]}`, "x-forwarded-for": "10.249.0.1" },
    })
    await probe.text()
    let feed: { available: boolean; status: number; walked?: number; ended?: boolean } = {
      available: probe.status === 200,
      status: probe.status,
    }
    if (probe.status === 200) {
      const walked = await walkFeed(targets, big, deep)
      feed = { ...feed, walked: walked.rows, ended: walked.ended }
      log(`scale10m: followed the change feed through ${walked.rows} rows${walked.ended ? " (it ended there)" : ""}`)
      cases.push({ name: "changes feed, first page", dataset: big, path: "/v1/events/changes", baseline: false })
      cases.push({
        name: `changes feed, page after ${walked.rows.toLocaleString("en")} rows`,
        dataset: big,
        path: `/v1/events/changes?after=${encodeURIComponent(walked.token)}`,
        baseline: false,
      })
    } else log(`scale10m: GET /v1/events/changes answered ${probe.status}: not measured`)

    const rows: Array<Scale10mRow> = []
    const checks: Record<string, { same: boolean; rows: number }> = {}
    // Both processes warm (JIT, pools) before the first case, or the reference case pays for it.
    if (timing.warmupSeconds > 0) {
      await load(serviceUrl(targets), "/v1/events", connections, timing.warmupSeconds, keyPool(ctx, ref))
      await load(baselineUrl(targets), withOrg("/v1/events", ref.orgId), connections, timing.warmupSeconds, undefined)
    }
    for (const c of cases) {
      const keys = keyPool(ctx, c.dataset)
      if (c.baseline) checks[c.name] = await sameBody(targets, c.dataset, c.path)
      if (timing.warmupSeconds > 0) await load(serviceUrl(targets), c.path, connections, 2, keys)
      const service = await load(serviceUrl(targets), c.path, connections, timing.seconds, keys)
      const baseline = c.baseline
        ? await load(baselineUrl(targets), withOrg(c.path, c.dataset.orgId), connections, timing.seconds, undefined)
        : undefined
      log(
        `${c.name}: service ${service.rps} req/s p50 ${service.latencyMs.p50} p99 ${service.latencyMs.p99} ms${baseline ? ` | baseline ${baseline.rps} req/s p50 ${baseline.latencyMs.p50} ms` : ""}`,
      )
      rows.push({ case: c.name, service, ...(baseline ? { baseline } : {}) })
      await sleep(200)
    }
    const statuses = await statusCounts(targets)
    const memory = await stopTargets(targets)
    t = undefined
    const reference = rows[0]
    const ratios = rows.map((r) => ({
      case: r.case,
      p50VsFirst10k: reference ? round(r.service.latencyMs.p50 / reference.service.latencyMs.p50, 2) : Number.NaN,
      p99VsFirst10k: reference ? round(r.service.latencyMs.p99 / reference.service.latencyMs.p99, 2) : Number.NaN,
      baselineP50VsFirst10k:
        reference?.baseline && r.baseline
          ? round(r.baseline.latencyMs.p50 / reference.baseline.latencyMs.p50, 2)
          : undefined,
    }))
    return {
      events: options.events,
      deepAfterRows: deep,
      connections,
      seed: manifest.seed,
      sizes: tableSizes,
      feed,
      checks,
      rows,
      ratios,
      serviceStatuses: statuses,
      memory: { service: memoryFigures(memory.service), baseline: memoryFigures(memory.baseline) },
      ...(memory.service.profile ? { profile: memory.service.profile } : {}),
    }
  } finally {
    if (t !== undefined) await stopTargets(t).catch(() => undefined)
    await sql.close()
  }
}
