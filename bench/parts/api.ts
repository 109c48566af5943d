import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { SQL } from "bun"
import { type BenchContext, log, round, serviceEnv, sleep } from "../lib/common.ts"
import { memoryFigures, type Spawned, startBaseline, startFloor, startPeer, startService } from "../lib/proc.ts"
import { type Dataset, type SeedManifest, writeKeysFile } from "../lib/seed.ts"
import { errorCount, runWrk, type WrkResult } from "../lib/wrk.ts"

/**
 * The read API against the baseline (bench/baseline.ts) and the conventional peer (bench/peer/fastify.ts: Fastify and
 * `pg` on Node.js, with the same key check and rate limit), same run, same data: requests/s and latency at 16 and 64
 * connections (`api`), and the first and a deep page at 10k and 1M events (`scale`, service and baseline).
 */

export interface Timing {
  readonly seconds: number
  readonly warmupSeconds: number
  /** The warm-up of freshly started processes before their first measured run (default warmupSeconds). */
  readonly firstWarmupSeconds?: number
}

export interface LoadRow {
  readonly endpoint: string
  readonly connections: number
  readonly service: WrkResult
  readonly baseline: WrkResult
  readonly peer: WrkResult
  /** service req/s ÷ baseline req/s. */
  readonly rpsRatio: number
  /** service p99 ÷ baseline p99. */
  readonly p99Ratio: number
  /** service req/s ÷ peer req/s. */
  readonly peerRpsRatio: number
  /** service p99 ÷ peer p99. */
  readonly peerP99Ratio: number
}

export interface Targets {
  readonly service: Spawned
  readonly baseline: Spawned
  /** The conventional peer, in the parts that compare with it (api, sweep). */
  readonly peer?: Spawned
}

export const baselineEnv = (ctx: BenchContext): Record<string, string> => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  HOST: "127.0.0.1",
  PORT: "0",
  DATABASE_URL: ctx.databaseUrl,
  SECRET_KEY: ctx.secretKey,
  APP_URL: serviceEnv(ctx).APP_URL ?? "",
})

export const startTargets = async (ctx: BenchContext, name: string, withPeer = false): Promise<Targets> => {
  const service = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, `service-${name}`)
  // With --profile the baseline runs under --cpu-prof too, so its stages can be set beside the service's.
  const baseline = await startBaseline(ctx.workDir, baselineEnv(ctx), ctx.profile)
  // The peer with the service's limit (120 a minute per key: the load moves to the next key every 100 requests).
  if (!withPeer) return { service, baseline }
  const peer = await startPeer(ctx.workDir, peerEnv(ctx), ctx.profile)
  return { service, baseline, peer }
}

/** The peer's environment: the baseline's, with the service's rate limit and its API pool's size. */
export const peerEnv = (ctx: BenchContext): Record<string, string> => ({
  ...baselineEnv(ctx),
  RATE_LIMIT: serviceEnv(ctx).RATE_LIMIT ?? "120",
  POOL: serviceEnv(ctx).DATABASE_POOL_API ?? "10",
})

export const serviceUrl = (t: Targets) => `http://127.0.0.1:${t.service.ports.api}`
export const baselineUrl = (t: Targets) => `http://127.0.0.1:${t.baseline.ports.baseline}`
export const peerUrl = (t: Targets) => `http://127.0.0.1:${t.peer?.ports.peer}`
export const withOrg = (path: string, orgId: string) => `${path}${path.includes("?") ? "&" : "?"}org=${orgId}`

let xff = 0
/** One request as a client would make it (its own key and address), for checks and cursor walks. */
export const get = async (url: string, key?: string) => {
  xff++
  const headers: Record<string, string> = { "x-forwarded-for": `10.250.${(xff >> 8) & 255}.${xff & 255}` }
  if (key !== undefined) headers.authorization = `Bearer ${key}`
  const response = await fetch(url, { headers })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text) as { data?: Array<unknown>; nextCursor?: string | null; events?: Array<unknown> }
}

/**
 * The service, the baseline and the peer answer the same body (the baseline is only a baseline, and the peer a peer,
 * if they do the same work).
 */
let checkKey = 0
export const sameBody = async (t: Targets, dataset: Dataset, path: string) => {
  const fromService = await get(`${serviceUrl(t)}${path}`, dataset.keys[checkKey++ % 50])
  const fromBaseline = await get(`${baselineUrl(t)}${withOrg(path, dataset.orgId)}`)
  const fromPeer = t.peer === undefined ? fromService : await get(`${peerUrl(t)}${path}`, dataset.keys[checkKey++ % 50])
  const same = Bun.deepEquals(fromService, fromBaseline) && Bun.deepEquals(fromService, fromPeer)
  if (!Bun.deepEquals(fromService, fromBaseline)) log(`WARNING: service and baseline bodies differ for ${path}`)
  if (!Bun.deepEquals(fromService, fromPeer)) log(`WARNING: service and peer bodies differ for ${path}`)
  const rows = fromService.data?.length ?? fromService.events?.length ?? 0
  return { same, rows }
}

/**
 * A dataset's API keys as the load generator uses them: each for 100 consecutive requests (bench/wrk/api.lua).
 * `next` is the first key no run has used yet; keys 0–299 are left for the checks and cursor walks.
 */
export interface KeyPool {
  readonly file: string
  next: number
}

const pools = new Map<string, KeyPool>()
/** One pool per dataset for the whole run, so a later part never reuses a key within its minute. */
export const keyPool = (ctx: BenchContext, dataset: Dataset): KeyPool => {
  const existing = pools.get(dataset.name)
  if (existing) return existing
  const pool = { file: writeKeysFile(ctx, dataset.name, dataset.keys), next: 300 }
  pools.set(dataset.name, pool)
  return pool
}

const THREADS = 2

/** Requests wrk made per target URL in this run (for CPU per request from a profile). */
const served = new Map<string, number>()
export const servedRequests = (url: string) => served.get(url) ?? 0

/** A body check for every response (bench/wrk/api.lua): a 200 whose body contains `mustContain`; `cookie` is sent. */
export interface ResponseCheck {
  readonly mustContain: string
  readonly cookie?: string
}

export const load = async (
  url: string,
  path: string,
  connections: number,
  seconds: number,
  keys: KeyPool | undefined,
  check?: ResponseCheck,
): Promise<WrkResult> => {
  const keyArgs = keys === undefined ? ["", "0", String(THREADS)] : [keys.file, String(keys.next), String(THREADS)]
  const result = await runWrk({
    url,
    connections,
    seconds,
    threads: THREADS,
    script: "api.lua",
    args:
      check !== undefined
        ? [path, ...keyArgs, check.mustContain, check.cookie ?? ""]
        : keys === undefined
          ? [path]
          : [path, ...keyArgs],
  })
  served.set(url, (served.get(url) ?? 0) + result.requests)
  // Each thread moved one key on per 100 of its requests; a thread may have made all of them.
  if (keys !== undefined) keys.next += (Math.floor(result.requests / 100) + 2) * THREADS
  if (errorCount(result) > 0) log(`WARNING: ${url}${path} at ${connections}: errors ${JSON.stringify(result.errors)}`)
  return result
}

/** One endpoint on the three targets, interleaved (service, baseline, peer) at each connection count. */
const compare = async (
  t: Targets,
  dataset: Dataset,
  keys: KeyPool,
  endpoint: string,
  path: string,
  connectionCounts: ReadonlyArray<number>,
  timing: Timing,
  warmupSeconds = timing.warmupSeconds,
): Promise<Array<LoadRow>> => {
  const rows: Array<LoadRow> = []
  if (warmupSeconds > 0) {
    await load(serviceUrl(t), path, 16, warmupSeconds, keys)
    await load(baselineUrl(t), withOrg(path, dataset.orgId), 16, warmupSeconds, undefined)
    await load(peerUrl(t), path, 16, warmupSeconds, keys)
  }
  for (const connections of connectionCounts) {
    const service = await load(serviceUrl(t), path, connections, timing.seconds, keys)
    const baseline = await load(baselineUrl(t), withOrg(path, dataset.orgId), connections, timing.seconds, undefined)
    const peer = await load(peerUrl(t), path, connections, timing.seconds, keys)
    const row = {
      endpoint,
      connections,
      service,
      baseline,
      peer,
      rpsRatio: round(service.rps / baseline.rps, 2),
      p99Ratio: round(service.latencyMs.p99 / baseline.latencyMs.p99, 2),
      peerRpsRatio: round(service.rps / peer.rps, 2),
      peerP99Ratio: round(service.latencyMs.p99 / peer.latencyMs.p99, 2),
    }
    log(
      `${endpoint} c=${connections}: service ${service.rps} req/s p50 ${service.latencyMs.p50} p99 ${service.latencyMs.p99} ms | baseline ${baseline.rps} req/s p50 ${baseline.latencyMs.p50} p99 ${baseline.latencyMs.p99} ms | peer ${peer.rps} req/s p99 ${peer.latencyMs.p99} ms`,
    )
    rows.push(row)
  }
  return rows
}

/** 429s and 200s the service counted (http_requests_total), to prove the limits were on and never hit. */
export const statusCounts = async (t: { readonly service: Spawned }) => {
  const text = await (await fetch(`http://127.0.0.1:${t.service.ports.ops}/metrics`)).text()
  const counts: Record<string, number> = {}
  for (const line of text.split("\n")) {
    const match = /^http_requests_total\{.*status="(\d+)".*\} ([\d.e+]+)$/.exec(line)
    if (match?.[1]) counts[match[1]] = (counts[match[1]] ?? 0) + Number(match[2])
  }
  return counts
}

export const stopTargets = async (t: Targets) => {
  const [service, baseline, peer] = await Promise.all([t.service.stop(), t.baseline.stop(), t.peer?.stop()])
  return { service, baseline, peer }
}

export const runApi = async (ctx: BenchContext, manifest: SeedManifest, timing: Timing) => {
  const large = manifest.datasets.large
  const keys = keyPool(ctx, large)
  const t = await startTargets(ctx, "api", true)
  try {
    const endpoints = [
      { endpoint: "GET /v1/incidents", path: "/v1/incidents" },
      { endpoint: `GET /v1/events?type=${large.filterType}`, path: `/v1/events?type=${large.filterType}` },
      { endpoint: "GET /v1/incidents/{id} (200 events)", path: `/v1/incidents/${large.fatIncidentId}` },
    ]
    const checks: Record<string, { same: boolean; rows: number }> = {}
    const rows: Array<LoadRow> = []
    // The processes are fresh before the first endpoint: a longer warm-up there lets their JIT settle.
    const firstWarmup = timing.firstWarmupSeconds ?? timing.warmupSeconds
    for (const [i, e] of endpoints.entries()) {
      checks[e.endpoint] = await sameBody(t, large, e.path)
      const warmup = i === 0 ? firstWarmup : timing.warmupSeconds
      rows.push(...(await compare(t, large, keys, e.endpoint, e.path, [16, 64], timing, warmup)))
    }
    const floor = await measureFloor(ctx, t, large, rows, timing)
    const statuses = await statusCounts(t)
    const requestsServed = {
      service: servedRequests(serviceUrl(t)),
      baseline: servedRequests(baselineUrl(t)),
      peer: servedRequests(peerUrl(t)),
    }
    const memory = await stopTargets(t)
    const statements = await statementsPerRequest(ctx, large, endpoints)
    return {
      dataset: { events: large.events, incidents: large.incidents, apiKeys: large.keys.length },
      warmupSeconds: { first: firstWarmup, later: timing.warmupSeconds },
      checks,
      rows,
      floor,
      requestsServed,
      statementsPerRequest: statements,
      serviceStatuses: statuses,
      memory: {
        service: memoryFigures(memory.service),
        baseline: memoryFigures(memory.baseline),
        ...(memory.peer ? { peer: memoryFigures(memory.peer) } : {}),
      },
      ...(memory.service.profile ? { profile: memory.service.profile } : {}),
      ...(memory.baseline.profile ? { baselineProfile: memory.baseline.profile } : {}),
    }
  } catch (error) {
    await stopTargets(t).catch(() => undefined)
    throw error
  }
}

/**
 * The framework's floor (bench/httpapi-floor.ts): the HttpApi stack answering the baseline's first page of
 * GET /v1/incidents as a constant (same bytes, serialized per request), no database, at 16 and 64 connections;
 * set against the baseline's and the service's req/s on that list from the rows just measured.
 */
const measureFloor = async (
  ctx: BenchContext,
  t: Targets,
  dataset: Dataset,
  rows: ReadonlyArray<LoadRow>,
  timing: Timing,
) => {
  const response = await fetch(`${baselineUrl(t)}${withOrg("/v1/incidents", dataset.orgId)}`)
  const text = await response.text()
  const bodyFile = join(ctx.workDir, "floor-body.json")
  writeFileSync(bodyFile, text)
  const floor = await startFloor(ctx.workDir, bodyFile, ctx.profile)
  try {
    const url = `http://127.0.0.1:${floor.ports.floor}`
    const served = await (await fetch(`${url}/v1/floor`)).text()
    if (served !== text) log("WARNING: the floor's body differs from the baseline's page")
    if (timing.warmupSeconds > 0) await load(url, "/v1/floor", 16, timing.warmupSeconds, undefined)
    const out: Array<{
      connections: number
      floor: WrkResult
      baselineRps: number | undefined
      serviceRps: number | undefined
      floorVsBaseline: number | undefined
      serviceVsFloor: number | undefined
    }> = []
    for (const connections of [16, 64]) {
      const result = await load(url, "/v1/floor", connections, timing.seconds, undefined)
      const list = rows.find((r) => r.endpoint === "GET /v1/incidents" && r.connections === connections)
      log(
        `HttpApi floor c=${connections}: ${result.rps} req/s p50 ${result.latencyMs.p50} p99 ${result.latencyMs.p99} ms`,
      )
      out.push({
        connections,
        floor: result,
        baselineRps: list?.baseline.rps,
        serviceRps: list?.service.rps,
        floorVsBaseline: list ? round(result.rps / list.baseline.rps, 2) : undefined,
        serviceVsFloor: list ? round(list.service.rps / result.rps, 2) : undefined,
      })
    }
    const stopped = await floor.stop()
    return {
      bodyBytes: Buffer.byteLength(text),
      requestsServed: servedRequests(url),
      rows: out,
      memory: memoryFigures(stopped),
      ...(stopped.profile ? { profile: stopped.profile } : {}),
    }
  } catch (error) {
    await floor.stop().catch(() => undefined)
    throw error
  }
}

/** Follows nextCursor through `rows` rows (pages of 50) and returns the cursor there, from the service. */
const walk = async (t: Targets, dataset: Dataset, rows: number) => {
  let cursor = ""
  let seen = 0
  let keyIndex = 50
  while (seen < rows) {
    const key = dataset.keys[keyIndex++ % dataset.keys.length]
    const page = await get(
      `${serviceUrl(t)}/v1/events${cursor !== "" ? `?cursor=${encodeURIComponent(cursor)}` : ""}`,
      key ?? dataset.keys[0],
    )
    seen += page.data?.length ?? 0
    if (!page.nextCursor) throw new Error(`walk ended after ${seen} rows`)
    cursor = page.nextCursor
  }
  return { cursor, rows: seen }
}

export interface ScaleRow {
  readonly case: string
  readonly events: number
  readonly afterRows: number
  readonly service: WrkResult
  readonly baseline: WrkResult
}

export const runScale = async (ctx: BenchContext, manifest: SeedManifest, timing: Timing, connections = 16) => {
  const t = await startTargets(ctx, "scale")
  try {
    const rows: Array<ScaleRow> = []
    const checks: Record<string, { same: boolean; rows: number }> = {}
    for (const dataset of [manifest.datasets.small, manifest.datasets.large]) {
      const keys = keyPool(ctx, dataset)
      const label = dataset.events >= 1_000_000 ? "1M" : `${Math.round(dataset.events / 1000)}k`
      // "After 10,000 rows"; the 10k dataset has exactly 10,000 events, so its deep page is its last full page.
      const target = Math.min(10_000, dataset.events - 50)
      const { cursor, rows: walked } = await walk(t, dataset, target)
      log(`scale ${label}: walked ${walked} rows`)
      const cases = [
        { name: `first page, ${label} events`, path: "/v1/events", after: 0 },
        {
          name: `page after ${walked.toLocaleString("en")} rows, ${label} events`,
          path: `/v1/events?cursor=${encodeURIComponent(cursor)}`,
          after: walked,
        },
      ]
      for (const c of cases) {
        checks[c.name] = await sameBody(t, dataset, c.path)
        if (timing.warmupSeconds > 0) await load(serviceUrl(t), c.path, connections, 2, keys)
        const service = await load(serviceUrl(t), c.path, connections, timing.seconds, keys)
        const baseline = await load(
          baselineUrl(t),
          withOrg(c.path, dataset.orgId),
          connections,
          timing.seconds,
          undefined,
        )
        log(
          `${c.name}: service ${service.rps} req/s p50 ${service.latencyMs.p50} ms | baseline ${baseline.rps} req/s p50 ${baseline.latencyMs.p50} ms`,
        )
        rows.push({ case: c.name, events: dataset.events, afterRows: c.after, service, baseline })
        await sleep(200)
      }
    }
    const statuses = await statusCounts(t)
    const memory = await stopTargets(t)
    const reference = rows[0]
    const ratios = rows.map((r) => ({
      case: r.case,
      // Against the first page at 10k events: latency up (p50, p99) and throughput down, as factors.
      p50VsFirst10k: reference ? round(r.service.latencyMs.p50 / reference.service.latencyMs.p50, 2) : Number.NaN,
      p99VsFirst10k: reference ? round(r.service.latencyMs.p99 / reference.service.latencyMs.p99, 2) : Number.NaN,
      rpsDropVsFirst10k: reference ? round(reference.service.rps / r.service.rps, 2) : Number.NaN,
      baselineP50VsFirst10k: reference
        ? round(r.baseline.latencyMs.p50 / reference.baseline.latencyMs.p50, 2)
        : Number.NaN,
    }))
    return {
      connections,
      checks,
      rows,
      ratios,
      serviceStatuses: statuses,
      memory: { service: memoryFigures(memory.service), baseline: memoryFigures(memory.baseline) },
      ...(memory.service.profile ? { profile: memory.service.profile } : {}),
    }
  } catch (error) {
    await stopTargets(t).catch(() => undefined)
    throw error
  }
}

const xactCommits = async (sql: SQL) => {
  const rows = await sql`select xact_commit::bigint as n from pg_stat_database where datname = current_database()`
  return Number((rows[0] as { n: number | bigint }).n)
}

/** xact_commit once the closed connections' statistics have arrived (they are flushed when a backend exits). */
const settledCommits = async (sql: SQL) => {
  let last = await xactCommits(sql)
  for (let i = 0; i < 15; i++) {
    await sleep(200)
    const now = await xactCommits(sql)
    if (now === last) return now
    last = now
  }
  return last
}

/**
 * SQL statements per request, counted by PostgreSQL: a fresh process answers `n` sequential requests and exits
 * (its connections' statistics reach pg_stat_database.xact_commit when they close; every statement outside a
 * transaction is one commit, a transaction with several statements one); an idle process living as long is
 * subtracted (start-up, the webhook dispatcher's polls). The runner's own queries are the same in both.
 */
export const statementsPerRequest = async (
  ctx: BenchContext,
  dataset: Dataset,
  endpoints: ReadonlyArray<{ readonly endpoint: string; readonly path: string }>,
  n = 300,
) => {
  const sql = new SQL({ url: ctx.databaseUrl, max: 1 })
  const keys = keyPool(ctx, dataset)
  const lifetime = async (kind: "service" | "baseline", work: (url: string) => Promise<void>) => {
    const before = await settledCommits(sql)
    const proc =
      kind === "service"
        ? await startService(ctx.workDir, serviceEnv(ctx), false, "service-count")
        : await startBaseline(ctx.workDir, baselineEnv(ctx))
    const started = performance.now()
    await work(`http://127.0.0.1:${kind === "service" ? proc.ports.api : proc.ports.baseline}`)
    const ms = performance.now() - started
    await proc.stop()
    return { commits: (await settledCommits(sql)) - before, ms }
  }
  try {
    const out: Array<{ endpoint: string; service: number; baseline: number }> = []
    for (const e of endpoints) {
      const counted = async (kind: "service" | "baseline") => {
        const run = await lifetime(kind, async (url) => {
          for (let i = 0; i < n; i++) {
            const key = dataset.keys[keys.next + Math.floor(i / 100)]
            await get(kind === "service" ? `${url}${e.path}` : `${url}${withOrg(e.path, dataset.orgId)}`, key)
          }
        })
        const idle = await lifetime(kind, () => sleep(run.ms))
        return round((run.commits - idle.commits) / n, 2)
      }
      const service = await counted("service")
      keys.next += Math.ceil(n / 100) + 1
      const baseline = await counted("baseline")
      log(`${e.endpoint}: ${service} SQL statements per request (baseline ${baseline})`)
      out.push({ endpoint: e.endpoint, service, baseline })
    }
    return out
  } finally {
    await sql.close()
  }
}
