import { writeFileSync } from "node:fs"
import type { Socket } from "node:net"
import { join } from "node:path"
import { createServer as createTlsServer } from "node:tls"
import { startReceiver } from "../../test/support/receiver.ts"
import { makeTestCertificate } from "../../test/support/tls.ts"
import { adminJson } from "../lib/admin.ts"
import { type BenchContext, log, percentile, round, serviceEnv, sleep } from "../lib/common.ts"
import { countLogLines, memoryFigures, startService } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"

/**
 * Webhooks: new incidents are ingested (each event from a new source IP, so each makes an `incident.created`
 * delivery per channel) and the local HTTPS receiver of the tests (test/support/receiver.ts, certificate from
 * test/support/tls.ts, trusted through WEBHOOK_CA_FILE) records each arrival.
 *
 * - latency: one event every 100 ms; event-to-receipt = receiver arrival − the moment the ingest POST was sent.
 * - burst: 1,000 new incidents posted at once (10 × 100); deliveries/s = 1,000 ÷ (last arrival − first POST).
 * Both run twice: with the healthy channel alone, then with a second channel of the same organization whose
 * receiver accepts TLS and never answers (every attempt there takes the 5 s time-out). Only the healthy
 * channel's arrivals are measured.
 */

interface NeverAnswering {
  readonly url: string
  readonly connections: () => number
  readonly stop: () => void
}

/** A TLS server that accepts, reads, and never replies. */
const startNeverAnswering = async (cert: { cert: string; key: string }): Promise<NeverAnswering> => {
  const sockets = new Set<Socket>()
  let accepted = 0
  const server = createTlsServer({ cert: cert.cert, key: cert.key }, (socket) => {
    accepted++
    sockets.add(socket)
    socket.on("data", () => {})
    socket.on("error", () => {})
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    url: `https://127.0.0.1:${port}`,
    connections: () => accepted,
    stop: () => {
      for (const s of sockets) s.destroy()
      server.close()
    },
  }
}

interface Run {
  readonly deliveries: number
  readonly received: number
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number }
  /** Of which: the ingest POST until its answer (the transaction that writes the delivery row). */
  readonly ingestMs: { readonly p50: number; readonly p99: number }
  /** Burst only. */
  readonly deliveriesPerSecond?: number
}

export const runWebhooks = async (
  ctx: BenchContext,
  manifest: SeedManifest,
  options: { latencyEvents: number; burstEvents: number },
) => {
  const cert = makeTestCertificate({ ipAddresses: ["127.0.0.1"] })
  const caFile = join(ctx.workDir, "webhook-ca.pem")
  writeFileSync(caFile, cert.caCert)
  const env = serviceEnv(ctx, { WEBHOOK_ALLOW_PRIVATE: "127.0.0.0/8", WEBHOOK_CA_FILE: caFile })
  const receiver = await startReceiver(cert)
  const dead = await startNeverAnswering(cert)
  const orgId = manifest.webhooks.orgId
  // A database kept from an earlier run (--db) has that run's channels: their receivers are gone.
  const old = await adminJson<Array<{ id: string; enabled: boolean }>>(env, ["webhook", "list", "--org", orgId])
  for (const c of old) if (c.enabled) await adminJson(env, ["webhook", "disable", c.id])
  const created: Array<string> = []
  const createChannel = async (url: string) =>
    created.push((await adminJson<{ id: string }>(env, ["webhook", "create", "--org", orgId, "--url", url])).id)
  await createChannel(`${receiver.url}/healthy`)
  const service = await startService(ctx.workDir, env, ctx.profile, "service-webhooks")
  const ingestUrl = `http://127.0.0.1:${service.ports.ingest}/ingest/v1/events`
  const tag = Date.now().toString(36)
  let run = 0
  // Every event from a new source address (a new incident), also across runs on a kept database.
  let seq = Math.floor(Math.random() * 0x40000000)

  /** Posts events (each from a new address: a new incident); returns the POST start time of each incident. */
  const post = async (count: number, sentAt: Map<string, number>, answered?: Array<number>) => {
    const events = Array.from({ length: count }, (_, i) => {
      seq++
      return {
        sensorEventId: `wh-${tag}-${run}-${i}`,
        time: new Date().toISOString(),
        sourceIp: `${1 + ((seq >>> 24) % 200)}.${(seq >>> 16) & 255}.${(seq >>> 8) & 255}.${seq & 255}`,
        sourcePort: 40000 + (i % 20000),
        type: "ssh.login_attempt",
        attackerInput: { username: "root", password: "hunter2" },
      }
    })
    run++
    const started = Date.now()
    const response = await fetch(ingestUrl, {
      method: "POST",
      headers: { authorization: `Bearer ${manifest.webhooks.sensorToken}`, "content-type": "application/json" },
      body: JSON.stringify(events),
    })
    const body = (await response.json()) as { results?: Array<{ status: string; incidentId?: string }> }
    if (response.status !== 200) throw new Error(`ingest answered ${response.status}: ${JSON.stringify(body)}`)
    answered?.push(Date.now() - started)
    for (const r of body.results ?? []) if (r.incidentId) sentAt.set(r.incidentId, started)
    return started
  }

  /** Waits for the healthy channel's deliveries of these incidents; their latencies. */
  const collect = async (sentAt: Map<string, number>, from: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs
    const arrivals = new Map<string, number>()
    let scanned = from
    while (Date.now() < deadline) {
      for (; scanned < receiver.requests.length; scanned++) {
        const r = receiver.requests[scanned]
        if (r === undefined || r.path !== "/healthy") continue
        const id = (JSON.parse(r.body) as { incident?: { id?: string } }).incident?.id
        if (id !== undefined && sentAt.has(id) && !arrivals.has(id)) arrivals.set(id, r.at)
      }
      if (arrivals.size >= sentAt.size) break
      await sleep(20)
    }
    const latencies = [...arrivals].map(([id, at]) => at - (sentAt.get(id) ?? at)).sort((a, b) => a - b)
    return { arrivals, latencies }
  }

  const latencyRun = async (): Promise<Run> => {
    const sentAt = new Map<string, number>()
    const answered: Array<number> = []
    const from = receiver.requests.length
    const started = Date.now()
    for (let i = 0; i < options.latencyEvents; i++) {
      await post(1, sentAt, answered)
      const next = started + (i + 1) * 100
      await sleep(Math.max(0, next - Date.now()))
    }
    const { latencies } = await collect(sentAt, from, 30_000)
    answered.sort((a, b) => a - b)
    return {
      deliveries: sentAt.size,
      received: latencies.length,
      ingestMs: { p50: percentile(answered, 50), p99: percentile(answered, 99) },
      latencyMs: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies[latencies.length - 1] ?? Number.NaN,
      },
    }
  }

  const burstRun = async (): Promise<Run> => {
    const sentAt = new Map<string, number>()
    const from = receiver.requests.length
    const batches = Math.ceil(options.burstEvents / 100)
    const answered: Array<number> = []
    const first = Date.now()
    await Promise.all(Array.from({ length: batches }, () => post(100, sentAt, answered)))
    answered.sort((a, b) => a - b)
    const { arrivals, latencies } = await collect(sentAt, from, 120_000)
    const last = Math.max(...arrivals.values())
    return {
      deliveries: sentAt.size,
      received: arrivals.size,
      deliveriesPerSecond: round(arrivals.size / ((last - first) / 1000), 0),
      ingestMs: { p50: percentile(answered, 50), p99: percentile(answered, 99) },
      latencyMs: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies[latencies.length - 1] ?? Number.NaN,
      },
    }
  }

  try {
    // Warm-up: a few deliveries so the first measured one does not pay the JIT.
    await post(5, new Map())
    await sleep(1500)
    const idleLatency = await latencyRun()
    log(`webhooks healthy only: latency p50 ${idleLatency.latencyMs.p50} p99 ${idleLatency.latencyMs.p99} ms`)
    const idleBurst = await burstRun()
    log(`webhooks healthy only: burst ${idleBurst.deliveriesPerSecond} deliveries/s`)

    await createChannel(`${dead.url}/dead`)
    const deadLatency = await latencyRun()
    log(`webhooks + dead channel: latency p50 ${deadLatency.latencyMs.p50} p99 ${deadLatency.latencyMs.p99} ms`)
    const deadBurst = await burstRun()
    log(`webhooks + dead channel: burst ${deadBurst.deliveriesPerSecond} deliveries/s`)
    const deadConnections = dead.connections()
    const memory = await service.stop()
    return {
      healthyOnly: { latency: idleLatency, burst: idleBurst },
      withDeadChannel: { latency: deadLatency, burst: deadBurst, deadReceiverConnections: deadConnections },
      failedAttemptsLogged: countLogLines(service.logFile, "webhook attempt failed"),
      memory: { service: memoryFigures(memory) },
      ...(memory.profile ? { profile: memory.profile } : {}),
    }
  } catch (error) {
    await service.stop().catch(() => undefined)
    throw error
  } finally {
    receiver.stop()
    dead.stop()
    // Their receivers are gone: a later part on a kept database (--db) must not retry into them.
    for (const id of created) await adminJson(env, ["webhook", "disable", id]).catch(() => undefined)
  }
}
