import { readFileSync } from "node:fs"
import { SQL } from "bun"
import { adminJson } from "../lib/admin.ts"
import { type BenchContext, log, percentile, round, serviceEnv, sleep } from "../lib/common.ts"
import { memoryFigures, type Spawned, startService } from "../lib/proc.ts"
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

/**
 * `retention`: the purge of a year out of an organization of N events (default 10,000,000; `--scale-events N` to
 * try it small) while sensors post events, and the tables' sizes before and after.
 *
 * The organization is seeded as scale10m's is (rows generated inside PostgreSQL, the events' secondary indexes
 * dropped during the load and rebuilt after, verified), with its incidents last seen over the two years before the
 * seed, so about half of its events were stored more than 365 days ago; its incidents' change-feed rows are dated
 * at each incident's last update (as the migration that made the feed dated them), so the feed's own retention
 * (FEED_RETENTION_DAYS, 30) has two years of rows to cut too. Recorded in bench_manifest (`--keep-db`, `--db`), but a
 * database is only reusable until a run has purged it.
 *
 * The run: a service process (the ingest target) is started with retention out of the way (RETENTION_DAYS and
 * FEED_RETENTION_DAYS at 100000, the organization on the default), and `connections` sensors of the organization post
 * batches of 100 events to it, closed-loop, for the whole run. After `beforeSeconds`, the organization's retention is
 * set to 365 days (the column the console's setting writes) and a second process of the service is started with the
 * default settings: its purge runs at start-up (then hourly), as a restarted or newly deployed process's would,
 * while the first keeps taking the events. The purge's wall time runs from that start to its "retention purge" log
 * line (one line at the end of a pass, with its counts); afterwards no event of the organization stored before the
 * cut-off and no incident left without events may remain (checked). Ingestion is measured before, during and after
 * the purge (events/s, p50/p99 of a batch), and the sizes of events, incidents and incident_changes before, after
 * the purge, and after a plain VACUUM (which makes the space reusable, it does not give it back to the file system).
 * A pass that fails (its first failed statement ends it) or has not ended after `maxPurgeMinutes` is reported as
 * such, with what it deleted and how long the events took.
 *
 * BENCH_RETENTION_SQL="create index …" runs a statement on the database before the measurement: to try a change of
 * the schema without touching the service (recorded in the results as benchSql).
 */

const RETENTION_DAYS = 365
/** The seeded incidents are last seen over this many days before the seed. */
const SPAN_DAYS = 730
const BATCH = 100
const DAY_MS = 86_400_000
const TABLES = ["events", "incidents", "incident_changes"] as const

interface RetentionManifest {
  readonly dataset: Dataset
  /** Tokens of the organization's sensors that post during the run (made by the admin CLI). */
  readonly sensorTokens: ReadonlyArray<string>
  readonly seed: Record<string, number | string | boolean>
}

const manifestName = (events: number) => `retention-${events}`

const seedRetention = async (
  ctx: BenchContext,
  sql: SQL,
  events: number,
  sensorCount: number,
): Promise<RetentionManifest> => {
  const env = serviceEnv(ctx)
  const stats: Record<string, number | string | boolean> = {}
  const started = performance.now()
  await adminJson(env, ["migrate"]).catch(() => ({}))
  await prepareGenerators(sql)
  const org = await adminJson<{ id: string }>(env, [
    "org",
    "create",
    "--name",
    `bench-retention-${events}-${crypto.randomUUID().slice(0, 8)}`,
  ])
  const nowMs = Date.now()
  const spec: DatasetSpec = {
    name: "retention",
    events,
    incidents: Math.max(2, Math.round(events / 10)),
    sensors: 50,
    keys: 10,
  }
  const dataset = await withoutEventIndexes(sql, stats, "retention", async () => {
    const loadStarted = performance.now()
    const d = await seedDataset(sql, env, stats, spec, org.id, 3, nowMs, 100_000, SPAN_DAYS)
    stats.loadSeconds = round((performance.now() - loadStarted) / 1000, 1)
    return d
  })
  let step = performance.now()
  // The trigger logged each seeded incident's change at the time of the seed; an organization two years old has them
  // spread over its two years.
  await sql`update incident_changes c set changed_at = i.updated_at from incidents i
    where c.org_id = ${org.id} and i.id = c.incident_id`
  stats.feedDatingSeconds = round((performance.now() - step) / 1000, 1)
  step = performance.now()
  for (const table of TABLES) await sql.unsafe(`vacuum (analyze) ${table}`)
  stats.vacuumAnalyzeSeconds = round((performance.now() - step) / 1000, 1)
  step = performance.now()
  const bad = ((await sql.unsafe(VERIFY_ORG, [org.id]))[0] as { bad: number }).bad
  if (bad !== 0) throw new Error(`retention seed verification failed: ${bad} incidents disagree with their events`)
  stats.verifySeconds = round((performance.now() - step) / 1000, 1)
  stats.verified = true
  const sensorTokens: Array<string> = []
  for (let i = 0; i < sensorCount; i++) {
    const sensor = await adminJson<{ token: string }>(env, [
      "sensor",
      "create",
      "--org",
      org.id,
      "--name",
      `retention-ingest-${i}`,
    ])
    sensorTokens.push(sensor.token)
  }
  await dropGenerators(sql)
  stats.totalSeconds = round((performance.now() - started) / 1000, 1)
  stats.eventsPerSecond = Math.round(events / Number(stats.loadSeconds ?? 1))
  const manifest: RetentionManifest = { dataset, sensorTokens, seed: stats }
  await saveManifest(sql, manifestName(events), manifest)
  return manifest
}

const loadManifest = (sql: SQL, events: number) => readManifest<RetentionManifest>(sql, manifestName(events))

const mib = (b: bigint | number | undefined) => round(Number(b ?? 0) / 1024 / 1024, 1)

/**
 * Each table's heap, its indexes and the total with TOAST (pg_total_relation_size), in MiB, with the statistics' live
 * and dead rows; and the database's size.
 */
const sizes = async (sql: SQL) => {
  const out: Record<
    string,
    { tableMiB: number; indexesMiB: number; totalMiB: number; liveRows: number; deadRows: number }
  > = {}
  for (const table of TABLES) {
    const [row] = (await sql`
      select sum(pg_relation_size(p.relid))::bigint as t, sum(pg_indexes_size(p.relid))::bigint as i,
             sum(pg_total_relation_size(p.relid))::bigint as total,
             sum(coalesce(pg_stat_get_live_tuples(p.relid), 0))::bigint as live,
             sum(coalesce(pg_stat_get_dead_tuples(p.relid), 0))::bigint as dead
      -- A table partitioned by month (sql/0044) is the sum of its partitions; another, itself.
      from pg_partition_tree(${table}::regclass) p`) as Array<Record<string, bigint>>
    out[table] = {
      tableMiB: mib(row?.t),
      indexesMiB: mib(row?.i),
      totalMiB: mib(row?.total),
      liveRows: Number(row?.live ?? 0),
      deadRows: Number(row?.dead ?? 0),
    }
  }
  const [db] = (await sql`select pg_database_size(current_database())::bigint as b`) as Array<{ b: bigint }>
  return { tables: out, databaseMiB: mib(db?.b) }
}

/** The organization's rows: events, those stored before `cut`, incidents, incidents last seen before `cut` left empty. */
const counts = async (sql: SQL, orgId: string, cut: Date) => {
  const [row] = (await sql`
    select (select count(*) from events where org_id = ${orgId})::int as events,
           (select count(*) from events where org_id = ${orgId} and received_at < ${cut})::int as "eventsBeforeCut",
           (select count(*) from incidents where org_id = ${orgId})::int as incidents,
           (select count(*) from incidents i where i.org_id = ${orgId} and i.last_seen_at < ${cut}
              and not exists (select 1 from events e where e.org_id = i.org_id and e.incident_id = i.id))::int
             as "emptyIncidentsBeforeCut",
           (select count(*) from incident_changes where org_id = ${orgId})::int as "feedRows"`) as Array<
    Record<string, number>
  >
  return row ?? {}
}

/** Rows deleted from each table so far (the statistics collector's running count). */
const deletedSoFar = async (sql: SQL) => {
  const rows = (await sql`
    select relname as name, n_tup_del::bigint as n, n_dead_tup::bigint as dead from pg_stat_user_tables
    where relname in ${sql(TABLES)}`) as Array<{ name: string; n: bigint; dead: bigint }>
  return Object.fromEntries(rows.map((r) => [r.name, { deleted: Number(r.n), dead: Number(r.dead) }]))
}

interface Posted {
  readonly end: number
  readonly ms: number
  readonly accepted: number
  readonly ok: boolean
}

/** Closed-loop senders: each sensor posts a batch of 100, waits for the answer and posts again until `stop()`. */
const startSenders = (url: string, tokens: ReadonlyArray<string>, tag: string) => {
  const posted: Array<Posted> = []
  let running = true
  const sender = async (s: number, token: string) => {
    let seq = 0
    while (running) {
      const time = new Date().toISOString()
      const body = JSON.stringify(
        Array.from({ length: BATCH }, () => {
          seq++
          const n = s * 20 + (seq % 20)
          const base = {
            sensorEventId: `${tag}-${s}-${seq}`,
            time,
            sourceIp: `198.${51 + Math.floor(n / 250)}.${(n * 37) % 256}.${1 + (n % 250)}`,
            sourcePort: 1024 + (seq % 60000),
          }
          return seq % 10 < 7
            ? { ...base, type: "ssh.login_attempt", attackerInput: { username: "root", password: `pw${seq % 997}` } }
            : seq % 10 < 9
              ? { ...base, type: "http.request", attackerInput: { path: "/wp-login.php", userAgent: "zgrab/0.x" } }
              : { ...base, type: "portscan.syn" }
        }),
      )
      const t0 = performance.now()
      let accepted = 0
      let ok = false
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body,
        })
        const answer = (await response.json()) as { accepted?: number }
        ok = response.status === 200
        accepted = ok ? (answer.accepted ?? 0) : 0
      } catch {
        ok = false
      }
      const end = performance.now()
      posted.push({ end, ms: end - t0, accepted, ok })
    }
  }
  const done = Promise.all(tokens.map((token, s) => sender(s, token)))
  return {
    posted,
    stop: async () => {
      running = false
      await done
    },
  }
}

/** Ingestion between two instants (performance.now()): events/s, batches, failures, p50/p99 of a batch. */
const rate = (posted: ReadonlyArray<Posted>, from: number, to: number) => {
  const inside = posted.filter((p) => p.end >= from && p.end < to)
  const latencies = inside.map((p) => p.ms).sort((a, b) => a - b)
  const seconds = (to - from) / 1000
  const accepted = inside.reduce((s, p) => s + p.accepted, 0)
  return {
    seconds: round(seconds, 1),
    batches: inside.length,
    failed: inside.filter((p) => !p.ok).length,
    eventsAccepted: accepted,
    eventsPerSecond: seconds > 0 ? round(accepted / seconds, 0) : 0,
    latencyMs: { p50: round(percentile(latencies, 50), 1), p99: round(percentile(latencies, 99), 1) },
  }
}

/** The purge pass's end in the purging process's log: its "retention purge" line (with counts), or its failure. */
const purgeOutcome = (logFile: string) => {
  let text = ""
  try {
    text = readFileSync(logFile, "utf8")
  } catch {}
  for (const line of text.split("\n")) {
    if (!line.includes("retention purge")) continue
    try {
      const entry = JSON.parse(line) as { message?: unknown; timestamp?: string; annotations?: Record<string, number> }
      if (entry.message === "retention purge")
        return { ok: true as const, at: entry.timestamp, counts: entry.annotations }
      if (entry.message === "retention purge failed") return { ok: false as const, line }
    } catch {}
  }
  return undefined
}

/** A failed pass's log line, shortened: the error and its cause's first line. */
const causeOf = (line: string) => {
  try {
    const cause = String((JSON.parse(line) as { cause?: unknown }).cause ?? line).split("\n")
    const inner = cause
      .find((l) => l.includes("[cause]:"))
      ?.replace("[cause]:", "")
      .trim()
    return [cause[0], inner].filter((x) => x !== undefined).join(": ")
  } catch {
    return line.slice(0, 300)
  }
}

/** The statistics' deletions, in the shape of the pass's own counts. */
const deletedCounts = (d: Record<string, { deleted: number }> | undefined) => ({
  events: d?.events?.deleted ?? 0,
  incidents: d?.incidents?.deleted ?? 0,
  feedRows: d?.incident_changes?.deleted ?? 0,
})

export const runRetention = async (
  ctx: BenchContext,
  options: {
    readonly events: number
    readonly connections?: number
    readonly beforeSeconds?: number
    readonly afterSeconds?: number
    readonly maxPurgeMinutes?: number
  },
) => {
  const connections = options.connections ?? 4
  const beforeSeconds = options.beforeSeconds ?? 30
  const afterSeconds = options.afterSeconds ?? 15
  const maxPurgeMinutes = options.maxPurgeMinutes ?? 120
  const sql = new SQL({ url: ctx.databaseUrl, max: 2 })
  const started: Array<Spawned> = []
  let senders: ReturnType<typeof startSenders> | undefined
  try {
    let manifest = await loadManifest(sql, options.events)
    if (manifest === undefined) {
      log(`retention: seeding ${options.events.toLocaleString("en")} events over ${SPAN_DAYS} days in one organization`)
      manifest = await seedRetention(ctx, sql, options.events, connections)
    } else log(`retention: reusing the seeded organization of ${options.events.toLocaleString("en")} events`)
    const orgId = manifest.dataset.orgId
    // Retention off for the organization until the purge is meant to start (a failed run may have left it set).
    await sql`update organizations set retention_days = null where id = ${orgId}`
    const probeCut = new Date(Date.now() - RETENTION_DAYS * DAY_MS)
    const old = await sql`select 1 from events where org_id = ${orgId} and received_at < ${probeCut} limit 1`
    if (old.length === 0) throw new Error("this database's organization was purged by an earlier run: seed a new one")

    const extraSql = process.env.BENCH_RETENTION_SQL
    if (extraSql !== undefined && extraSql !== "") {
      log(`retention: BENCH_RETENTION_SQL: ${extraSql}`)
      await sql.unsafe(extraSql)
    }
    const before = await counts(sql, orgId, probeCut)
    const sizesBefore = await sizes(sql)
    log(
      `retention: ${before.events} events (${before.eventsBeforeCut} stored more than ${RETENTION_DAYS} days ago), ${before.incidents} incidents, ${before.feedRows} feed rows; events ${sizesBefore.tables.events?.totalMiB} MiB`,
    )

    // The ingest target: this process purges nothing (its hourly pass is not due during the run).
    const ingest = await startService(
      ctx.workDir,
      serviceEnv(ctx, { RETENTION_DAYS: "100000", FEED_RETENTION_DAYS: "100000" }),
      ctx.profile,
      "service-retention-ingest",
    )
    started.push(ingest)
    const url = `http://127.0.0.1:${ingest.ports.ingest}/ingest/v1/events`
    const loadStart = performance.now()
    senders = startSenders(url, manifest.sensorTokens, `ret${Date.now().toString(36)}`)
    const warmEnd = loadStart + 3000
    const timeline: Array<{ t: number; deleted: Record<string, { deleted: number; dead: number }> }> = []
    const deleted0 = await deletedSoFar(sql)
    const sample = async (origin: number) => {
      const now = await deletedSoFar(sql)
      timeline.push({
        t: round((performance.now() - origin) / 1000, 1),
        deleted: Object.fromEntries(
          TABLES.map((t) => [
            t,
            { deleted: (now[t]?.deleted ?? 0) - (deleted0[t]?.deleted ?? 0), dead: now[t]?.dead ?? 0 },
          ]),
        ),
      })
    }
    await sleep(3000 + beforeSeconds * 1000)

    // The purge: the organization keeps a year (as the console's setting writes it), and a second process starts.
    await sql`update organizations set retention_days = ${RETENTION_DAYS} where id = ${orgId}`
    const purgeStartWall = Date.now()
    const purgeStart = performance.now()
    const cut = new Date(purgeStartWall - RETENTION_DAYS * DAY_MS)
    log(`retention: organization set to ${RETENTION_DAYS} days; starting the purging process`)
    const purger = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, "service-retention-purge")
    started.push(purger)
    let outcome: ReturnType<typeof purgeOutcome>
    let eventsStageSeconds: number | undefined
    let lastLog = 0
    for (;;) {
      await sleep(1000)
      outcome = purgeOutcome(purger.logFile)
      if (outcome !== undefined) break
      // The pass deletes the events first, then the incidents left empty, then the feed rows.
      if (eventsStageSeconds === undefined) {
        const left = await sql`select 1 from events where org_id = ${orgId} and received_at < ${cut} limit 1`
        if (left.length === 0) {
          eventsStageSeconds = round((performance.now() - purgeStart) / 1000, 1)
          log(`retention: no event before the cut-off left after ${eventsStageSeconds} s`)
        }
      }
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now()
        await sample(purgeStart)
        const last = timeline[timeline.length - 1]
        log(
          `retention: ${last?.t} s: deleted ${last?.deleted.events?.deleted} events, ${last?.deleted.incidents?.deleted} incidents, ${last?.deleted.incident_changes?.deleted} feed rows; ingest ${rate(senders.posted, performance.now() - 10_000, performance.now()).eventsPerSecond} events/s`,
        )
      }
      if (performance.now() - purgeStart > maxPurgeMinutes * 60_000) break
    }
    const purgeEnd = performance.now()
    await sample(purgeStart)
    const logged = outcome?.at !== undefined ? Date.parse(outcome.at) : Number.NaN
    const purgeSeconds = round(
      Number.isFinite(logged) ? (logged - purgeStartWall) / 1000 : (purgeEnd - purgeStart) / 1000,
      1,
    )
    // A failed pass (its first error ends it; the next is an hour later) or one that did not end in time is reported
    // as such, with what it had deleted.
    const failure =
      outcome === undefined
        ? `the pass had not ended after ${maxPurgeMinutes} minutes`
        : outcome.ok
          ? undefined
          : causeOf(outcome.line)
    log(
      failure === undefined
        ? `retention: purge done in ${purgeSeconds} s: ${JSON.stringify(outcome?.counts)}`
        : `retention: the purge failed after ${purgeSeconds} s: ${failure}`,
    )
    await sleep(afterSeconds * 1000)
    const loadEnd = performance.now()
    await senders.stop()
    const posted = senders.posted
    senders = undefined
    const purgerMemory = await purger.stop()
    const ingestMemory = await ingest.stop()
    started.length = 0

    const ingestion = {
      connections,
      batch: BATCH,
      before: rate(posted, warmEnd, purgeStart),
      during: rate(posted, purgeStart, purgeEnd),
      after: rate(posted, purgeEnd, loadEnd),
    }
    const duringVsBefore = round(ingestion.during.eventsPerSecond / ingestion.before.eventsPerSecond, 2)
    // Ingestion per 10 s from the purge's start (negative: before it).
    const perTenSeconds: Array<{ t: number; eventsPerSecond: number; p99Ms: number }> = []
    for (let from = warmEnd; from < loadEnd; from += 10_000) {
      const w = rate(posted, from, Math.min(loadEnd, from + 10_000))
      perTenSeconds.push({
        t: round((from - purgeStart) / 1000, 0),
        eventsPerSecond: w.eventsPerSecond,
        p99Ms: w.latencyMs.p99,
      })
    }

    const after = await counts(sql, orgId, cut)
    if (failure === undefined && (after.eventsBeforeCut !== 0 || after.emptyIncidentsBeforeCut !== 0)) {
      throw new Error(
        `after the purge: ${after.eventsBeforeCut} events before the cut-off, ${after.emptyIncidentsBeforeCut} empty incidents`,
      )
    }
    const sizesAfter = await sizes(sql)
    const vacuumStart = performance.now()
    for (const table of TABLES) await sql.unsafe(`vacuum ${table}`)
    const vacuumSeconds = round((performance.now() - vacuumStart) / 1000, 1)
    const sizesAfterVacuum = await sizes(sql)
    log(
      `retention: ingest before ${ingestion.before.eventsPerSecond} events/s (p99 ${ingestion.before.latencyMs.p99} ms), during ${ingestion.during.eventsPerSecond} (p99 ${ingestion.during.latencyMs.p99} ms), after ${ingestion.after.eventsPerSecond}; events total ${sizesBefore.tables.events?.totalMiB} -> ${sizesAfter.tables.events?.totalMiB} -> vacuum ${sizesAfterVacuum.tables.events?.totalMiB} MiB`,
    )
    return {
      events: options.events,
      retentionDays: RETENTION_DAYS,
      spanDays: SPAN_DAYS,
      seed: manifest.seed,
      ...(extraSql ? { benchSql: extraSql } : {}),
      before,
      after,
      purge: {
        ...(failure === undefined ? { seconds: purgeSeconds } : { failedAfterSeconds: purgeSeconds, failure }),
        eventsStageSeconds,
        // A failed pass logs no counts: the events it deleted are those missing from the count (the statistics lag),
        // the rest as the statistics have them.
        deleted: outcome?.ok
          ? (outcome.counts ?? {})
          : {
              ...deletedCounts(timeline[timeline.length - 1]?.deleted),
              events:
                Number(before.events ?? 0) + posted.reduce((n, p) => n + p.accepted, 0) - Number(after.events ?? 0),
            },
        timeline,
      },
      ingestion,
      duringVsBefore,
      perTenSeconds,
      sizes: { before: sizesBefore, afterPurge: sizesAfter, afterVacuum: sizesAfterVacuum, vacuumSeconds },
      memory: { service: memoryFigures(ingestMemory), purger: memoryFigures(purgerMemory) },
    }
  } finally {
    await senders?.stop().catch(() => undefined)
    for (const s of started) await s.stop().catch(() => undefined)
    await sql.close()
  }
}
