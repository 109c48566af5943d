import { type BenchContext, log, percentile, round, serviceEnv, sleep } from "../lib/common.ts"
import { memoryFigures, rssMiB, startService } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"
import { keyPool } from "./api.ts"

/**
 * `soak`: the service under a steady open-loop load for `--soak-minutes` (default 30) at `--soak-rate` requests/s
 * (default 200; wrk has no fixed rate and wrk2 is not in Debian, so the generator is this process: each 10 ms it
 * sends the requests the schedule says are due, whether or not earlier ones have answered, with at most 512 in
 * flight). The mix: GET /v1/incidents 40 %, GET /v1/events?type=… 40 %, GET /v1/incidents/{id} (200 events) 20 %,
 * each with a rotating key and X-Forwarded-For as the api part sends them, plus one ingestion batch of 10 events a
 * second (new incidents and events keep being written, so the write paths soak too).
 *
 * The service's RSS is read from /proc every 10 s. It prints the samples (per minute in a long run), the RSS when
 * the first 5 minutes are over (or half the run, if shorter), at the end, the growth between the two (the mean of
 * the minute after the settling point against the mean of the last minute, a quarter of the run each when it is
 * shorter than 4 minutes, so the collector's saw-tooth does not count), the least-squares slope over the settled
 * part, and every request that did not answer 200 (by status; network errors; requests not sent because 512 were
 * in flight). Target (issue #15): no growth after the first 5 minutes, no error.
 */

interface Window {
  readonly atSeconds: number
  readonly rssMiB: number
  readonly requests: number
  readonly errors: number
  readonly p99Ms: number
}

const USERS = ["root", "admin", "ubuntu", "test"]

export const runSoak = async (
  ctx: BenchContext,
  manifest: SeedManifest,
  options: { readonly minutes: number; readonly rate: number },
) => {
  const dataset = manifest.datasets.large
  const keys = keyPool(ctx, dataset)
  const service = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, "service-soak")
  const api = `http://127.0.0.1:${service.ports.api}`
  const ingest = `http://127.0.0.1:${service.ports.ingest}/ingest/v1/events`
  const paths = [
    "/v1/incidents",
    "/v1/incidents",
    `/v1/events?type=${dataset.filterType}`,
    `/v1/events?type=${dataset.filterType}`,
    `/v1/incidents/${dataset.fatIncidentId}`,
  ]
  const statuses: Record<string, number> = {}
  let sent = 0
  let inFlight = 0
  let skipped = 0
  let windowLatencies: Array<number> = []
  let allLatencies: Array<number> = []
  let windowRequests = 0
  let windowErrors = 0
  let errors = 0
  let ingested = 0
  const count = (status: string) => {
    statuses[status] = (statuses[status] ?? 0) + 1
    if (status !== "200" && status !== "ingest 200") {
      errors++
      windowErrors++
    }
  }
  const firstKey = keys.next
  const request = async (n: number) => {
    const key = dataset.keys[(firstKey + Math.floor(n / 100)) % dataset.keys.length]
    const headers = {
      authorization: `Bearer ${key}`,
      "x-forwarded-for": `10.${160 + ((n >> 16) & 31)}.${(n >> 8) & 255}.${n & 255}`,
    }
    const t0 = performance.now()
    inFlight++
    try {
      const response = await fetch(`${api}${paths[n % paths.length]}`, { headers })
      await response.arrayBuffer()
      count(String(response.status))
    } catch {
      count("network error")
    } finally {
      inFlight--
      const ms = performance.now() - t0
      windowLatencies.push(ms)
      windowRequests++
    }
  }
  let batchNo = 0
  const tag = `soak${Date.now().toString(36)}`
  const tokens = manifest.ingest.tokens
  const ingestBatch = async () => {
    batchNo++
    const sensor = batchNo % tokens.length
    const time = new Date().toISOString()
    const events = Array.from({ length: 10 }, (_, i) => ({
      sensorEventId: `${tag}-${batchNo}-${i}`,
      time,
      type: "ssh.login_attempt",
      sourceIp: `198.${51 + (batchNo % 4)}.${sensor}.${1 + (i % 20)}`,
      sourcePort: 1024 + i,
      attackerInput: { username: USERS[i % USERS.length], password: `pw${batchNo}-${i}` },
    }))
    try {
      const response = await fetch(ingest, {
        method: "POST",
        headers: { authorization: `Bearer ${tokens[sensor]}`, "content-type": "application/json" },
        body: JSON.stringify(events),
      })
      const answer = (await response.json()) as { accepted?: number }
      count(`ingest ${response.status}`)
      if (response.status === 200) ingested += answer.accepted ?? 0
    } catch {
      count("ingest network error")
    }
  }
  const windows: Array<Window> = []
  const durationMs = options.minutes * 60_000
  const started = performance.now()
  let lastWindow = started
  let nextIngest = started
  const closeWindow = (now: number) => {
    windowLatencies.sort((a, b) => a - b)
    const w = {
      atSeconds: Math.round((now - started) / 1000),
      rssMiB: rssMiB(service.pid),
      requests: windowRequests,
      errors: windowErrors,
      p99Ms: round(percentile(windowLatencies, 99), 1),
    }
    windows.push(w)
    if (w.atSeconds % 60 < 10) log(`soak ${w.atSeconds} s: RSS ${w.rssMiB} MiB, p99 ${w.p99Ms} ms, errors ${errors}`)
    allLatencies = allLatencies.concat(windowLatencies)
    windowLatencies = []
    windowRequests = 0
    windowErrors = 0
  }
  log(`soak: ${options.rate} req/s for ${options.minutes} min, RSS every 10 s (service pid ${service.pid})`)
  try {
    while (performance.now() - started < durationMs) {
      const now = performance.now()
      const due = Math.floor(((now - started) / 1000) * options.rate)
      while (sent < due) {
        if (inFlight >= 512) {
          skipped++
          sent++
          continue
        }
        void request(sent++)
      }
      if (now >= nextIngest) {
        nextIngest += 1000
        void ingestBatch()
      }
      if (now - lastWindow >= 10_000) {
        lastWindow = now
        closeWindow(now)
      }
      await sleep(10)
    }
    // The last sample at the end of the run (the requests still in flight answer into it).
    while (inFlight > 0) await sleep(20)
    closeWindow(performance.now())
  } finally {
    keys.next += Math.ceil(sent / 100) + 2
  }
  const seconds = (performance.now() - started) / 1000
  const stopped = await service.stop()
  allLatencies = allLatencies.concat(windowLatencies).sort((a, b) => a - b)

  // Settled: after 5 minutes, or after half the run when it is shorter (a --soak-minutes 1 try).
  const settleSeconds = Math.min(300, (options.minutes * 60) / 2)
  const mean = (ws: ReadonlyArray<Window>) =>
    ws.length ? ws.reduce((s, w) => s + w.rssMiB, 0) / ws.length : Number.NaN
  const settled = windows.filter((w) => w.atSeconds > settleSeconds)
  // The means compared: a minute each (a quarter of the run when it is shorter than 4 minutes).
  const span = Math.min(60, (options.minutes * 60) / 4)
  const afterSettle = settled.filter((w) => w.atSeconds <= settleSeconds + span)
  const lastMinute = windows.filter((w) => w.atSeconds > seconds - span)
  const atSettle = windows.find((w) => w.atSeconds >= settleSeconds)
  // Least-squares slope of RSS over the settled samples, MiB per minute.
  const slope = (() => {
    if (settled.length < 2) return Number.NaN
    const xs = settled.map((w) => w.atSeconds / 60)
    const ys = settled.map((w) => w.rssMiB)
    const mx = xs.reduce((a, b) => a + b, 0) / xs.length
    const my = ys.reduce((a, b) => a + b, 0) / ys.length
    const num = xs.reduce((s, x, i) => s + (x - mx) * ((ys[i] ?? 0) - my), 0)
    const den = xs.reduce((s, x) => s + (x - mx) ** 2, 0)
    return den > 0 ? num / den : Number.NaN
  })()
  const growthMiB = round(mean(lastMinute) - mean(afterSettle), 1)
  return {
    minutes: options.minutes,
    ratePerSecond: options.rate,
    achievedPerSecond: round(sent / seconds, 1),
    requests: sent,
    skippedInFlightCap: skipped,
    ingestBatches: batchNo,
    eventsIngested: ingested,
    statuses,
    errors: errors + skipped,
    latencyMs: {
      p50: round(percentile(allLatencies, 50), 1),
      p99: round(percentile(allLatencies, 99), 1),
      max: round(allLatencies[allLatencies.length - 1] ?? Number.NaN, 1),
    },
    settleSeconds,
    comparedSeconds: span,
    rssAtSettleMiB: atSettle?.rssMiB ?? Number.NaN,
    rssEndMiB: windows[windows.length - 1]?.rssMiB ?? Number.NaN,
    rssMeanAfterSettleMiB: round(mean(afterSettle), 1),
    rssMeanLastMinuteMiB: round(mean(lastMinute), 1),
    growthMiB,
    slopeMiBPerMinute: round(slope, 2),
    windows,
    memory: { service: memoryFigures(stopped) },
    ...(stopped.profile ? { profile: stopped.profile } : {}),
  }
}
