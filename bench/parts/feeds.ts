import { SQL } from "bun"
import { eventChangesStatement } from "../../src/api/ChangesRepo.ts"
import { deriveKey } from "../../src/domain/crypto.ts"
import { encodeFeedToken } from "../../src/domain/feedToken.ts"
import { isId } from "../../src/domain/ids.ts"
import { type BenchContext, log, round, serviceEnv } from "../lib/common.ts"
import { startService } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"
import { keyPool, load, type Timing } from "./api.ts"

/**
 * D32 scale: GET /v1/events/changes on the organization with 1,000,000 events, the first page against a page deep in
 * it (after 900,000 changes), 16 connections. A page is one range scan of events_org_change_idx from the token's
 * position, so the deep page should cost what the first does; EXPLAIN (ANALYZE, BUFFERS) of the feed's own statement
 * shows the plan and the pages it touched.
 */
export const runFeeds = async (ctx: BenchContext, manifest: SeedManifest, timing: Timing, connections = 16) => {
  const large = manifest.datasets.large
  const orgId = large.orgId
  if (!isId("organization", orgId)) throw new Error("the seed manifest names no organization")
  const keys = keyPool(ctx, large)
  const sql = new SQL({ url: ctx.databaseUrl, max: 1 })
  const deepAfter = Math.min(900_000, large.events - 100)
  const [row] = (await sql.unsafe(
    `select change_xid::text as xid, change_seq::text as seq from events where org_id = $1
     order by change_xid, change_seq offset $2 limit 1`,
    [large.orgId, deepAfter - 1],
  )) as Array<{ xid: string; seq: string }>
  if (!row) throw new Error("no deep position")
  const key = deriveKey(Buffer.from(ctx.secretKey, "hex"), "feed-token-v1")
  const token = encodeFeedToken(key, "events/changes", large.orgId, { xid: row.xid, seq: row.seq, fromMs: null })
  const cases = [
    { name: "first page, 1M events", path: "/v1/events/changes?limit=50", position: { xid: "0", seq: "0" } },
    {
      name: `page after ${deepAfter.toLocaleString("en")} changes, 1M events`,
      path: `/v1/events/changes?limit=50&after=${encodeURIComponent(token)}`,
      position: row,
    },
  ]
  const plans: Array<{ case: string; plan: string; executionMs: number; sharedBuffers: number }> = []
  for (const c of cases) {
    const statement = eventChangesStatement({
      orgId,
      after: { ...c.position, fromMs: null },
      fetch: 51,
    })
    const explained = (await sql.unsafe(
      `explain (analyze, buffers, format json) ${statement.text}`,
      statement.params as Array<unknown>,
    )) as Array<{ "QUERY PLAN": Array<{ Plan: Record<string, unknown>; "Execution Time": number }> }>
    const top = explained[0]?.["QUERY PLAN"][0]
    const text = JSON.stringify(top?.Plan ?? {})
    plans.push({
      case: c.name,
      plan: /events_org_change_idx/.test(text) ? "index range scan (events_org_change_idx)" : "OTHER PLAN",
      executionMs: round(top?.["Execution Time"] ?? Number.NaN, 2),
      sharedBuffers: Number((top?.Plan as { "Shared Hit Blocks"?: number })?.["Shared Hit Blocks"] ?? 0),
    })
  }
  await sql.close()

  const service = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, "service-feeds")
  try {
    const url = `http://127.0.0.1:${service.ports.api}`
    const rows = []
    for (const c of cases) {
      const check = await fetch(`${url}${c.path}`, { headers: { authorization: `Bearer ${large.keys[0]}` } })
      const body = (await check.json()) as { data?: Array<unknown> }
      if (check.status !== 200 || body.data?.length !== 50) throw new Error(`${c.name}: ${check.status}`)
      if (timing.warmupSeconds > 0) await load(url, c.path, connections, Math.min(2, timing.warmupSeconds), keys)
      const result = await load(url, c.path, connections, timing.seconds, keys)
      log(`${c.name}: ${result.rps} req/s p50 ${result.latencyMs.p50} ms p99 ${result.latencyMs.p99} ms`)
      rows.push({ case: c.name, service: result })
    }
    return { connections, rows, plans }
  } finally {
    await service.stop()
  }
}
