import { SQL } from "bun"
import { newId } from "../../src/domain/ids.ts"
import { sendRaw } from "../../test/support/rawHttp.ts"
import { type BenchContext, log, percentile, round, serviceEnv, sleep } from "../lib/common.ts"
import { cpuSecondsOf, memoryFigures, postgresCpuSeconds, startService } from "../lib/proc.ts"
import type { SeedManifest } from "../lib/seed.ts"

/**
 * Ingestion: events/s through POST /ingest/v1/events in batches of 1, 100 and 1000, and through the HEC route one
 * Cowrie event per request on a new connection each, as Cowrie's own Splunk output sends them.
 *
 * The load: 50 sensors (tokens from `admin sensor create`) and 1,000 source IPs, each sensor with its own 20
 * attackers; every batch comes from one sensor (a sensor posts its own events) and draws its events from that
 * sensor's attackers, so a batch of 100 touches about 20 grouping keys. Mix: 70 % SSH login attempts (username and
 * password, so masking and fingerprinting run), 15 % HTTP requests, 10 % SYN scans, 5 % SSH commands.
 *
 * The generator is closed-loop in this process: `connections` workers each post, wait for the answer and post
 * again until the time is up, and each finishes its last request, so the window runs from the first request to
 * the last answer and every answered event is counted (wrk would cut the long batches of 1000 off mid-request).
 * Each answer's `accepted` is summed (anything else is reported), and the database count is checked against it.
 */

const USERS = ["root", "admin", "ubuntu", "test", "oracle", "pi", "user", "postgres"]
const PATHS = ["/wp-login.php", "/.env", "/admin", "/cgi-bin/luci", "/phpmyadmin/"]

const attackerIp = (sensor: number, attacker: number) => {
  const n = sensor * 20 + attacker
  return `198.${51 + Math.floor(n / 250)}.${(n * 37) % 256}.${1 + (n % 250)}`
}

export interface IngestRow {
  /** `native`: POST /ingest/v1/events on kept-alive connections; `hec-cowrie`: Cowrie's HEC requests. */
  readonly route: "native" | "hec-cowrie"
  readonly batch: number
  /** The average body size in KiB (the largest rows are near the 1 MiB a request may hold). */
  readonly bodyKiB: number
  readonly connections: number
  readonly requests: number
  readonly seconds: number
  readonly eventsAccepted: number
  /** Duplicates, rejections and non-200 answers (all should be 0). */
  readonly eventsNotAccepted: number
  readonly failedRequests: number
  readonly eventsStored: number
  readonly eventsPerSecond: number
  readonly requestsPerSecond: number
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number }
  /** CPU the load generator used, as a share of one core. */
  readonly clientCpu: number
  /**
   * Where the machine's CPU went during the row, as shares of one core (the machine has two): the service, every
   * PostgreSQL process, and both with the generator. Under 2 in total, the rest of each request's time was spent
   * waiting (commits' WAL flushes, locks), not computing.
   */
  readonly cpu: { readonly service: number; readonly postgres: number; readonly total: number }
  /** CPU time per stored event, in µs: the service's and PostgreSQL's. */
  readonly cpuUsPerEvent: { readonly service: number; readonly postgres: number }
}

/** What one request of a load did: its size on the wire and what the answer said of its events. */
interface Sent {
  readonly bytes: number
  readonly accepted: number
  readonly notAccepted: number
  readonly failed: boolean
}

/**
 * `connections` closed-loop workers, each sending (`send(worker, counter)`), waiting for the answer and sending again
 * until `seconds` are up; each finishes its last request, so the window runs from the first request to the last
 * answer and every answered event is counted.
 */
const closedLoop = async (
  connections: number,
  seconds: number,
  send: (worker: number, counter: number) => Promise<Sent>,
) => {
  let bodyBytes = 0
  let accepted = 0
  let notAccepted = 0
  let failed = 0
  let requests = 0
  const latencies: Array<number> = []
  const started = performance.now()
  const deadline = started + seconds * 1000
  const cpuBefore = process.cpuUsage()
  const worker = async (w: number) => {
    let counter = 0
    while (performance.now() < deadline) {
      counter++
      const t0 = performance.now()
      const sent = await send(w, counter)
      latencies.push(performance.now() - t0)
      requests++
      bodyBytes += sent.bytes
      accepted += sent.accepted
      notAccepted += sent.notAccepted
      if (sent.failed) failed++
    }
  }
  await Promise.all(Array.from({ length: connections }, (_, w) => worker(w)))
  const elapsed = (performance.now() - started) / 1000
  const cpu = process.cpuUsage(cpuBefore)
  latencies.sort((a, b) => a - b)
  return {
    requests,
    bodyKiB: round(bodyBytes / Math.max(1, requests) / 1024, 1),
    seconds: round(elapsed, 2),
    accepted,
    notAccepted,
    failed,
    latencyMs: {
      p50: round(percentile(latencies, 50), 1),
      p99: round(percentile(latencies, 99), 1),
      max: round(latencies[latencies.length - 1] ?? Number.NaN, 1),
    },
    clientCpu: round((cpu.user + cpu.system) / 1e6 / elapsed, 2),
  }
}

const load = async (
  url: string,
  tokens: ReadonlyArray<string>,
  batch: number,
  connections: number,
  seconds: number,
  tag: string,
  /** Characters of command text added to every event: 800 brings a batch of 1,000 near the 1 MiB limit. */
  pad = 0,
) => {
  let seq = 0
  const event = (sensor: number, time: string) => {
    seq++
    const base = {
      sensorEventId: `${tag}-${seq}`,
      time,
      sourceIp: attackerIp(sensor, Math.floor(Math.random() * 20)),
      sourcePort: 1024 + Math.floor(Math.random() * 64000),
    }
    if (pad > 0) return { ...base, type: "ssh.command", attackerInput: { command: `echo ${"x".repeat(pad)}` } }
    const r = Math.random()
    if (r < 0.7) {
      const username = USERS[Math.floor(Math.random() * USERS.length)]
      const password = `pw${Math.floor(Math.random() * 100_000)}`
      return { ...base, type: "ssh.login_attempt", attackerInput: { username, password } }
    }
    if (r < 0.85) {
      const path = PATHS[Math.floor(Math.random() * PATHS.length)]
      return { ...base, type: "http.request", attackerInput: { path, userAgent: "Mozilla/5.0 zgrab/0.x" } }
    }
    if (r < 0.95) return { ...base, type: "portscan.syn" }
    return { ...base, type: "ssh.command", attackerInput: { command: "uname -a" } }
  }
  return closedLoop(connections, seconds, async (w, counter) => {
    const sensor = (w * 17 + counter) % tokens.length
    const time = new Date().toISOString()
    const body = JSON.stringify(Array.from({ length: batch }, () => event(sensor, time)))
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens[sensor]}`, "content-type": "application/json" },
      body,
    })
    const answer = (await response.json()) as { accepted?: number; duplicates?: number; rejected?: number }
    return response.status !== 200
      ? { bytes: body.length, accepted: 0, notAccepted: batch, failed: true }
      : {
          bytes: body.length,
          accepted: answer.accepted ?? 0,
          notAccepted: (answer.duplicates ?? 0) + (answer.rejected ?? 0),
          failed: false,
        }
  })
}

/**
 * Cowrie's Splunk HEC output, request for request: one `cowrie.login.failed` per POST, the headers in the order and
 * the body in the form Cowrie's plugin writes them (test/fixtures/hec/cowrie-output-splunk: Python's json.dumps
 * separators, `Connection: close`), each on a new TCP connection that the answer closes. Each event has its own
 * session id and uuid, so none is a duplicate; the source addresses are the batches' attackers.
 */
const hecLoad = async (
  ingestUrl: string,
  tokens: ReadonlyArray<string>,
  connections: number,
  seconds: number,
  tag: string,
) => {
  const host = new URL(ingestUrl).host
  let seq = 0
  const request = (sensor: number) => {
    seq++
    const now = Date.now()
    const session = `${tag}${seq.toString(16)}`.slice(-12).padStart(12, "0")
    const username = USERS[seq % USERS.length] ?? "root"
    const password = `pw${Math.floor(Math.random() * 100_000)}`
    const event = {
      session,
      protocol: "ssh",
      src_ip: attackerIp(sensor, Math.floor(Math.random() * 20)),
      src_port: 1024 + Math.floor(Math.random() * 64000),
      dst_ip: "10.0.0.5",
      dst_port: 22,
      username,
      password,
      eventid: "cowrie.login.failed",
      sensor: `cowrie-bench-${sensor}`,
      uuid: crypto.randomUUID(),
      time: now / 1000,
      timestamp: new Date(now).toISOString().replace("Z", "000Z"),
      message: `login attempt [${username}/${password}] failed`,
    }
    const envelope = { index: "cowrie", source: "cowrie", sourcetype: "cowrie", host: event.sensor, event }
    // json.dumps' default separators.
    const body = Buffer.from(
      JSON.stringify(envelope).replace(/","/g, '", "').replace(/":/g, '": ').replace(/,"/g, ', "'),
    )
    const head = [
      "POST /services/collector/event HTTP/1.1",
      "Connection: close",
      `Content-Length: ${body.length}`,
      "User-Agent: Cowrie SSH Honeypot",
      `Authorization: Splunk ${tokens[sensor]}`,
      "Content-Type: application/json",
      `Host: ${host}`,
      "",
      "",
    ].join("\r\n")
    return Buffer.concat([Buffer.from(head, "latin1"), body])
  }
  return closedLoop(connections, seconds, async (w, counter) => {
    const bytes = request((w * 17 + counter) % tokens.length)
    const answer = await sendRaw(ingestUrl, bytes).catch(() => undefined)
    const ok = answer?.status === 200
    const success = ok && answer.body.includes('"code":0')
    return { bytes: bytes.length, accepted: success ? 1 : 0, notAccepted: ok && !success ? 1 : 0, failed: !ok }
  })
}

/**
 * `--ignore-rules N`: the organization's ignore rules, as an administrator with many would have them: networks of
 * every size in 10.0.0.0/8 and fd00::/8 (the load's sources are in 198.51–55.x.x, so none matches and every event is
 * still grouped); three in four narrowed to a sensor, a port or a type. Every event of the load is looked up among
 * them (the rules' network index), none is ignored: the figures are the cost of the lookup.
 */
const seedIgnoreRules = async (sql: SQL, orgId: string, n: number) => {
  const sensorIds = (
    (await sql`select id from sensors where org_id = ${orgId} order by id`) as Array<{ id: string }>
  ).map((r) => r.id)
  const rows = Array.from({ length: n }, (_, i) => {
    const v6 = i % 4 === 3
    const prefix = v6 ? 48 + (i % 64) : 16 + (i % 17)
    const source = v6
      ? `fd00:${((i * 7919) % 65536).toString(16)}::/${prefix}`
      : `10.${(i * 37) % 256}.${(i * 11) % 256}.0/${prefix}`
    return {
      id: newId("ignoreRule"),
      org_id: orgId,
      source,
      sensor_id: i % 4 === 0 ? (sensorIds[i % sensorIds.length] ?? null) : null,
      port: i % 4 === 1 ? 22 : null,
      event_type: i % 4 === 2 ? "ssh.login_attempt" : null,
      note: `bench rule ${i}`,
    }
  })
  await sql`insert into ignore_rules (id, org_id, source, sensor_id, port, event_type, note, created_by, created_at)
    select id, org_id, network(source::inet),
      sensor_id, port, event_type, note, 'bench', now()
    from jsonb_to_recordset((${JSON.stringify(rows)}::text)::jsonb)
      as r(id text, org_id text, source text, sensor_id text, port integer, event_type text, note text)`
  log(`ingest: ${n} ignore rules given to ${orgId} (none matches the load)`)
}

export const runIngest = async (
  ctx: BenchContext,
  manifest: SeedManifest,
  timing: { seconds: number; warmupSeconds: number },
  connections = 16,
  ignoreRules = 0,
) => {
  const sql = new SQL({ url: ctx.databaseUrl, max: 1 })
  // A reused database (--db) may hold an earlier run's rules: each run starts from exactly its own number of them.
  await sql`delete from ignore_rules where org_id = ${manifest.ingest.orgId} and created_by = 'bench'`
  if (ignoreRules > 0) await seedIgnoreRules(sql, manifest.ingest.orgId, ignoreRules)
  const service = await startService(ctx.workDir, serviceEnv(ctx), ctx.profile, "service-ingest")
  const url = `http://127.0.0.1:${service.ports.ingest}/ingest/v1/events`
  const hecUrl = `http://127.0.0.1:${service.ports.ingest}/`
  const tokens = manifest.ingest.tokens
  const count = async (table: "events" | "incidents") => {
    const rows = await sql`select count(*)::int as n from ${sql(table)} where org_id = ${manifest.ingest.orgId}`
    return Number((rows[0] as { n: number }).n)
  }
  try {
    const tag = `r${Date.now().toString(36)}`
    if (timing.warmupSeconds > 0) await load(url, tokens, 100, 8, timing.warmupSeconds, `${tag}w`)
    const rows: Array<IngestRow> = []
    // The last native row: batches near the 1 MiB a request may hold, the most a sensor can make the listener take in.
    const runs = [
      ...[1, 100, 1000].map((batch) => ({ route: "native" as const, batch, pad: 0 })),
      { route: "native" as const, batch: 1000, pad: 800 },
      { route: "hec-cowrie" as const, batch: 1, pad: 0 },
    ]
    for (const { route, batch, pad } of runs) {
      await sleep(500)
      const before = await count("events")
      const serviceCpuBefore = cpuSecondsOf(service.pid) ?? 0
      const postgresCpuBefore = postgresCpuSeconds()
      const r =
        route === "native"
          ? await load(url, tokens, batch, connections, timing.seconds, `${tag}b${batch}p${pad}`, pad)
          : await hecLoad(hecUrl, tokens, connections, timing.seconds, `${tag}h`)
      const serviceCpu = (cpuSecondsOf(service.pid) ?? 0) - serviceCpuBefore
      const postgresCpu = postgresCpuSeconds() - postgresCpuBefore
      const stored = (await count("events")) - before
      if (r.failed > 0 || r.notAccepted > 0 || stored !== r.accepted) {
        log(
          `WARNING: ingest ${route} batch ${batch}: ${r.failed} failed requests, ${r.notAccepted} events not accepted, ${stored} stored of ${r.accepted}`,
        )
      }
      const row: IngestRow = {
        route,
        batch,
        bodyKiB: r.bodyKiB,
        connections,
        requests: r.requests,
        seconds: r.seconds,
        eventsAccepted: r.accepted,
        eventsNotAccepted: r.notAccepted,
        failedRequests: r.failed,
        eventsStored: stored,
        eventsPerSecond: round(r.accepted / r.seconds, 0),
        requestsPerSecond: round(r.requests / r.seconds, 1),
        latencyMs: r.latencyMs,
        clientCpu: r.clientCpu,
        cpu: {
          service: round(serviceCpu / r.seconds, 2),
          postgres: round(postgresCpu / r.seconds, 2),
          total: round((serviceCpu + postgresCpu) / r.seconds + r.clientCpu, 2),
        },
        cpuUsPerEvent: {
          service: round((serviceCpu * 1e6) / Math.max(1, r.accepted), 0),
          postgres: round((postgresCpu * 1e6) / Math.max(1, r.accepted), 0),
        },
      }
      log(
        `ingest ${route} batch ${batch}: ${row.eventsPerSecond} events/s (${row.requestsPerSecond} req/s, p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms; CPU service ${row.cpu.service}, PostgreSQL ${row.cpu.postgres}, client ${r.clientCpu} of a core; per event ${row.cpuUsPerEvent.service} + ${row.cpuUsPerEvent.postgres} µs)`,
      )
      rows.push(row)
    }
    const incidents = await count("incidents")
    const memory = await service.stop()
    const ignored = await sql`select count(*)::int as n from events
      where org_id = ${manifest.ingest.orgId} and ignore_rule_id is not null`
    return {
      sensors: tokens.length,
      sourceIps: 1000,
      ignoreRules,
      eventsIgnored: Number((ignored[0] as { n: number }).n),
      rows,
      incidentsAfter: incidents,
      memory: { service: memoryFigures(memory) },
      ...(memory.profile ? { profile: memory.profile } : {}),
    }
  } catch (error) {
    await service.stop().catch(() => undefined)
    throw error
  } finally {
    await sql.close()
  }
}
