import { SQL } from "bun"
import { API_KEY_TOKEN, issueToken } from "../../src/domain/secretToken.ts"
import { adminJson } from "../lib/admin.ts"
import { type BenchContext, log, percentile, round, serviceEnv, sleep } from "../lib/common.ts"
import { memoryFigures, startService } from "../lib/proc.ts"

/**
 * Isolation under load (D37, issue #17 item 5): sensors post events while the read API is flooded.
 *
 * The flood: `floodConnections` (200) closed-loop workers send GET /v1/incidents with a well-formed key that does not
 * exist, each from a client address of its own (X-Forwarded-For through the trusted proxy), so the per-IP limit
 * does not turn them away and every request costs a key lookup on the API's pool: the worst case for the database
 * (answers are 401, or 503 busy when the API's pool has no connection free in time).
 * Meanwhile `sensors` (4) sensors each post a batch of 10 events, wait for the answer and post again. Every
 * non-200 answer or event not accepted is an ingest failure (the goal: 0), and the database count is checked.
 *
 * Self-contained: it creates an organization and its sensors with the admin CLI in the run's database, no seed.
 */

const postEvents = async (url: string, token: string, tag: string, deadline: number) => {
  let seq = 0
  const out = { requests: 0, accepted: 0, failedRequests: 0, notAccepted: 0, statuses: {} as Record<string, number> }
  const latencies: Array<number> = []
  while (performance.now() < deadline) {
    const time = new Date().toISOString()
    const batch = Array.from({ length: 10 }, () => ({
      sensorEventId: `${tag}-${seq++}`,
      time,
      sourceIp: `198.51.100.${1 + (seq % 200)}`,
      sourcePort: 40000 + (seq % 20000),
      type: "ssh.login_attempt",
      attackerInput: { username: "root", password: `pw${seq}` },
    }))
    const t0 = performance.now()
    let status = 0
    let accepted = 0
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(batch),
      })
      status = response.status
      const answer = (await response.json()) as { accepted?: number }
      accepted = status === 200 ? (answer.accepted ?? 0) : 0
    } catch {
      status = 0 // connection error
    }
    latencies.push(performance.now() - t0)
    out.requests++
    out.statuses[String(status)] = (out.statuses[String(status)] ?? 0) + 1
    if (status !== 200) out.failedRequests++
    out.accepted += accepted
    out.notAccepted += batch.length - accepted
  }
  return { ...out, latencies }
}

const flood = async (url: string, worker: number, deadline: number) => {
  const statuses: Record<string, number> = {}
  const latencies: Array<number> = []
  let requests = 0
  while (performance.now() < deadline) {
    requests++
    const ip = `10.${(worker >> 8) & 255}.${worker & 255}.${requests % 250}`
    const t0 = performance.now()
    let status = 0
    try {
      const response = await fetch(url, {
        headers: { authorization: `Bearer ${issueToken(API_KEY_TOKEN).token}`, "x-forwarded-for": ip },
      })
      status = response.status
      await response.arrayBuffer()
    } catch {
      status = 0
    }
    latencies.push(performance.now() - t0)
    statuses[String(status)] = (statuses[String(status)] ?? 0) + 1
  }
  return { requests, statuses, latencies }
}

const sum = (records: ReadonlyArray<Record<string, number>>) => {
  const out: Record<string, number> = {}
  for (const r of records) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v
  return out
}

const latencyFigures = (all: Array<number>) => {
  all.sort((a, b) => a - b)
  return {
    p50: round(percentile(all, 50), 1),
    p99: round(percentile(all, 99), 1),
    max: round(all[all.length - 1] ?? Number.NaN, 1),
  }
}

/**
 * Bodies nobody reads: `connections` workers post 1.1 MB bodies (over the 1 MiB a request may hold) to the ingest
 * listener with a well-formed sensor token whose secret is wrong, so each answer (401) waits for the token's lookup
 * while the body arrives. Unauthenticated: a body the service answers without reading must not stay in memory. The
 * figure is the listener's peak RSS, on a service of its own.
 */
const runBodyFlood = async (ctx: BenchContext, sensorToken: string, seconds: number, connections = 16) => {
  const service = await startService(ctx.workDir, serviceEnv(ctx), false, "service-bodyflood")
  try {
    const url = `http://127.0.0.1:${service.ports.ingest}/ingest/v1/events`
    const wrongToken = `${sensorToken.slice(0, -4)}${sensorToken.endsWith("AAAA") ? "BBBB" : "AAAA"}`
    const body = `[${"1,".repeat(550_000)}1]`
    const statuses: Record<string, number> = {}
    let requests = 0
    const deadline = performance.now() + seconds * 1000
    const started = performance.now()
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (performance.now() < deadline) {
          let status = 0
          try {
            const response = await fetch(url, {
              method: "POST",
              headers: { authorization: `Bearer ${wrongToken}`, "content-type": "application/json" },
              body,
            })
            status = response.status
            await response.arrayBuffer()
          } catch {}
          requests++
          statuses[String(status)] = (statuses[String(status)] ?? 0) + 1
        }
      }),
    )
    const elapsed = (performance.now() - started) / 1000
    const memory = memoryFigures(await service.stop())
    log(`flood: ${requests} unread 1.1 MB bodies with a wrong token, peak RSS ${memory.peakRssMiB} MiB`)
    return {
      connections,
      bodyBytes: body.length,
      requests,
      requestsPerSecond: round(requests / elapsed, 0),
      statuses,
      memory,
    }
  } catch (error) {
    await service.stop().catch(() => undefined)
    throw error
  }
}

export const runFlood = async (
  ctx: BenchContext,
  options: { seconds: number; floodConnections?: number; sensors?: number },
) => {
  const floodConnections = options.floodConnections ?? 200
  const sensorCount = options.sensors ?? 4
  const service = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, "service-flood")
  const env = serviceEnv(ctx)
  const sql = new SQL({ url: ctx.databaseUrl, max: 1 })
  try {
    // A per-run suffix: the admin tool refuses a second organization of the same name, and runs share a database.
    const org = await adminJson<{ id: string }>(env, [
      "org",
      "create",
      "--name",
      `Flood bench ${crypto.randomUUID().slice(0, 8)}`,
    ])
    const tokens: Array<string> = []
    for (let i = 0; i < sensorCount; i++) {
      const sensor = await adminJson<{ token: string }>(env, [
        "sensor",
        "create",
        "--org",
        org.id,
        "--name",
        `flood-${i}`,
      ])
      tokens.push(sensor.token)
    }
    const apiUrl = `http://127.0.0.1:${service.ports.api}/v1/incidents`
    const ingestUrl = `http://127.0.0.1:${service.ports.ingest}/ingest/v1/events`
    const tag = `f${Date.now().toString(36)}`
    // The flood starts first and runs a second longer than the posts, so every post meets it.
    const floodStarted = performance.now()
    const floodDeadline = floodStarted + (options.seconds + 2) * 1000
    const floods = Array.from({ length: floodConnections }, (_, w) => flood(apiUrl, w, floodDeadline))
    await sleep(1000)
    const postStarted = performance.now()
    const posts = await Promise.all(
      tokens.map((token, i) => postEvents(ingestUrl, token, `${tag}s${i}`, postStarted + options.seconds * 1000)),
    )
    const postSeconds = (performance.now() - postStarted) / 1000
    const floodResults = await Promise.all(floods)
    const floodSeconds = (performance.now() - floodStarted) / 1000
    await sleep(500)
    const rows = await sql`select count(*)::int as n from events where org_id = ${org.id}`
    const stored = Number((rows[0] as { n: number }).n)
    const ingestRequests = posts.reduce((n, p) => n + p.requests, 0)
    const ingest = {
      sensors: sensorCount,
      requests: ingestRequests,
      failedRequests: posts.reduce((n, p) => n + p.failedRequests, 0),
      failedShare: 0,
      eventsAccepted: posts.reduce((n, p) => n + p.accepted, 0),
      eventsNotAccepted: posts.reduce((n, p) => n + p.notAccepted, 0),
      eventsStored: stored,
      statuses: sum(posts.map((p) => p.statuses)),
      requestsPerSecond: round(ingestRequests / postSeconds, 1),
      latencyMs: latencyFigures(posts.flatMap((p) => p.latencies)),
    }
    ingest.failedShare = round((100 * ingest.failedRequests) / Math.max(1, ingest.requests), 2)
    const floodRequests = floodResults.reduce((n, f) => n + f.requests, 0)
    const api = {
      connections: floodConnections,
      requests: floodRequests,
      requestsPerSecond: round(floodRequests / floodSeconds, 0),
      statuses: sum(floodResults.map((f) => f.statuses)),
      latencyMs: latencyFigures(floodResults.flatMap((f) => f.latencies)),
    }
    log(
      `flood: ingest ${ingest.failedRequests} failed of ${ingest.requests} posts (${ingest.failedShare} %), ${ingest.eventsStored} stored of ${ingest.eventsAccepted} accepted; API ${api.requestsPerSecond} req/s ${JSON.stringify(api.statuses)}`,
    )
    if (ingest.failedRequests > 0 || ingest.eventsStored !== ingest.eventsAccepted) {
      log("WARNING: sensors lost events to the API flood (D37 goal: 0 ingest failures)")
    }
    await service.stop()
    const bodyFlood = await runBodyFlood(ctx, tokens[0] ?? "", options.seconds)
    return { postSeconds: options.seconds, ingest, api, bodyFlood }
  } catch (error) {
    await service.stop().catch(() => undefined)
    throw error
  } finally {
    await sql.close()
  }
}
