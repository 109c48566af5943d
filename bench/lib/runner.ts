/**
 * Runs the parts of a benchmark run in order: the machine's description, the database (fresh, or reused with --db),
 * the main dataset when a part needs it, then each part. Its caller writes the report.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join } from "node:path"
import { SQL } from "bun"
import { runApi, runScale } from "../parts/api.ts"
import { runConsole } from "../parts/console.ts"
import { runFeeds } from "../parts/feeds.ts"
import { runFlood } from "../parts/flood.ts"
import { runIngest } from "../parts/ingest.ts"
import { runRetention } from "../parts/retention.ts"
import { runRssCurve } from "../parts/rssCurve.ts"
import { runScale10m } from "../parts/scale10m.ts"
import { runSoak } from "../parts/soak.ts"
import { runSweep } from "../parts/sweep.ts"
import { runWebhooks } from "../parts/webhooks.ts"
import { BENCH_DIR, type BenchContext, log, round } from "./common.ts"
import { type BenchOptions, DB_PARTS, MAIN_SEED_PARTS } from "./options.ts"
import { createDatabase, databaseExists, databaseUrl, dropDatabase, newDatabaseName, postgresVersion } from "./pg.ts"
import { loadManifest, type SeedManifest, seed } from "./seed.ts"

// biome-ignore lint/suspicious/noExplicitAny: the parts' results are plain JSON, shaped by each part
export type Json = any

export interface MachineInfo {
  readonly cpu: string
  readonly cores: number
  readonly memoryGiB: number
  readonly bun: string
  readonly postgres?: string
  readonly loadBefore: ReadonlyArray<number>
}

/** The machine, its PostgreSQL when a part needs one, and its load before the run. */
export const machine = async (opts: BenchOptions): Promise<MachineInfo> => {
  const bun = Bun.version
  const pg = opts.parts.some((p) => DB_PARTS.includes(p)) ? await postgresVersion() : undefined
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGiB: round(totalmem() / 1024 ** 3, 1),
    bun,
    ...(pg ? { postgres: pg } : {}),
    loadBefore: loadavg().map((l) => round(l, 2)),
  }
}

/** A part that is a script of its own: its output is the result. */
const runScript = async (script: string, extra: ReadonlyArray<string> = []) => {
  const child = Bun.spawn(["bun", join(BENCH_DIR, script), ...extra], { stdout: "pipe", stderr: "inherit" })
  const [text, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
  process.stdout.write(text)
  if (code !== 0) throw new Error(`${script} exited with ${code}`)
  return { lines: text.trim().split("\n") }
}

export interface PartsOutcome {
  /** Each part's figures by name (seed too), with its seconds. */
  readonly results: Record<string, Json>
  /** The database and scratch directory of the run, when a part needed a database. */
  readonly ctx: BenchContext | undefined
  /** The error that stopped the run, if one did; the parts before it keep their results. */
  readonly failure: unknown
}

/** Runs the parts; drops the database at the end unless it is kept (--keep-db, --db). */
export const runParts = async (opts: BenchOptions): Promise<PartsOutcome> => {
  const { parts, quick, reuse, keepDb, timing, webhookSizes } = opts
  const results: Record<string, Json> = {}
  const workDir = mkdtempSync(join(tmpdir(), "dsvc-bench-"))
  let ctx: BenchContext | undefined
  let failure: unknown

  try {
    let manifest: SeedManifest | undefined
    if (parts.some((p) => DB_PARTS.includes(p))) {
      const database = reuse ?? newDatabaseName()
      const url = databaseUrl(database)
      let secretKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")
      if (reuse !== undefined) {
        if (!(await databaseExists(reuse))) throw new Error(`no database ${reuse}`)
        // The organizations' and channels' secrets are sealed under the SECRET_KEY of the run that seeded it.
        const sql = new SQL({ url, max: 1 })
        const rows = await sql`select value->>'key' as key from bench_manifest where name = 'secret'`.catch(() => [])
        await sql.close()
        const stored = (rows[0] as { key?: string } | undefined)?.key
        if (stored === undefined) throw new Error(`${reuse} has no bench manifest: seed it with --keep-db first`)
        secretKey = stored
      } else {
        await createDatabase(database)
        log(`database ${database}`)
        // The secret first: a part that seeds on its own (scale10m) leaves a database --db can reuse.
        const sql = new SQL({ url, max: 1 })
        await sql.unsafe("create table if not exists bench_manifest (name text primary key, value jsonb not null)")
        await sql`insert into bench_manifest (name, value) values ('secret', (${JSON.stringify({ key: secretKey })}::text)::jsonb)`
        await sql.close()
      }
      ctx = { database, databaseUrl: url, secretKey, workDir, profile: opts.profile }
      if (parts.some((p) => MAIN_SEED_PARTS.includes(p))) {
        manifest = reuse !== undefined ? await loadManifest(ctx) : undefined
        if (manifest === undefined) manifest = await seed(ctx, opts.seedEvents)
        results.seed = manifest.stats
      }
    }
    for (const part of parts) {
      log(`== ${part}`)
      const partStarted = performance.now()
      if (part === "seed") continue
      if (part === "ratelimit-memory") results[part] = await runScript("ratelimit-memory.ts")
      else if (part === "startup") results[part] = await runScript("startup.ts", quick ? ["--seconds", "3"] : [])
      else if (part === "flood" && ctx !== undefined) results.flood = await runFlood(ctx, { seconds: quick ? 10 : 30 })
      else if (part === "scale10m" && ctx !== undefined)
        results.scale10m = await runScale10m(ctx, timing, { events: opts.scaleEvents })
      else if (part === "retention" && ctx !== undefined)
        results.retention = await runRetention(ctx, { events: opts.scaleEvents })
      else if (ctx !== undefined && manifest !== undefined) {
        if (part === "api") results.api = await runApi(ctx, manifest, timing)
        if (part === "console") results.console = await runConsole(ctx, manifest, timing)
        if (part === "scale") results.scale = await runScale(ctx, manifest, timing)
        if (part === "feeds") results.feeds = await runFeeds(ctx, manifest, timing)
        if (part === "rss-curve") results["rss-curve"] = await runRssCurve(ctx, manifest, timing, quick)
        if (part === "soak")
          results.soak = await runSoak(ctx, manifest, { minutes: opts.soakMinutes, rate: opts.soakRate })
        if (part === "sweep") results.sweep = await runSweep(ctx, manifest, timing, opts.sweepPath)
        if (part === "ingest") {
          results.ingest = await runIngest(ctx, manifest, timing, 16, opts.ignoreRules)
        }
        if (part === "webhooks") results.webhooks = await runWebhooks(ctx, manifest, webhookSizes)
      }
      if (results[part] !== undefined) results[part].seconds = round((performance.now() - partStarted) / 1000, 1)
    }
  } catch (error) {
    failure = error
  } finally {
    if (ctx !== undefined && !keepDb) {
      await dropDatabase(ctx.database).catch((e) => log(`could not drop ${ctx?.database}: ${e}`))
      log(`dropped ${ctx.database}`)
    } else if (ctx !== undefined)
      log(`kept database ${ctx.database} (reuse: bun run bench <part> --db ${ctx.database})`)
    rmSync(workDir, { recursive: true, force: true })
  }
  return { results, ctx, failure }
}
