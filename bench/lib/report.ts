/**
 * The printed report of a run: one section per part (tables of its figures) and the SVG charts drawn beside the
 * results file (the connections sweep, the RSS curve).
 */
import { svgChart } from "./chart.ts"
import { table } from "./common.ts"
import type { Timing } from "./options.ts"
import type { Json, MachineInfo } from "./runner.ts"

const SEED_STEPS = [
  "migrate",
  "orgsCli",
  "smallKeys",
  "smallIncidents",
  "smallEvents",
  "largeKeys",
  "largeIncidents",
  "largeEvents",
  "ingestSensorsCli",
  "vacuumAnalyze",
  "verify",
]
/** Milliseconds as printed: two decimals under 10, one above; "-" when not a number. */

/** A service row's throughput, p50 and p99 beside the baseline's ("-" where the baseline was not measured). */
const SERVICE_AND_BASELINE_HEADS = ["svc req/s", "svc p50", "svc p99", "base req/s", "base p50", "base p99"]
const serviceAndBaseline = (r: Json) => [
  r.service.rps,
  ms(r.service.latencyMs.p50),
  ms(r.service.latencyMs.p99),
  r.baseline?.rps ?? "-",
  r.baseline ? ms(r.baseline.latencyMs.p50) : "-",
  r.baseline ? ms(r.baseline.latencyMs.p99) : "-",
]

/** The cells every service-against-baseline row shares: the figures of both and the throughput ratio. */
const VERSUS_BASELINE_HEADS = [...SERVICE_AND_BASELINE_HEADS, "svc/base req/s"]
const versusBaseline = (r: Json) => [...serviceAndBaseline(r), r.rpsRatio.toFixed(2)]

const VERSUS_PEER_HEADS = ["peer req/s", "peer p99", "svc/peer req/s", "svc/peer p99"]

/** The peer's cells (bench/peer/fastify.ts), "-" in a results file from before it was measured. */
const versusPeer = (r: Json) =>
  r.peer === undefined
    ? ["-", "-", "-", "-"]
    : [r.peer.rps, ms(r.peer.latencyMs.p99), r.peerRpsRatio.toFixed(2), r.peerP99Ratio.toFixed(2)]

export const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : "-")

/** A chart written beside the results file. */
export interface Chart {
  readonly file: string
  readonly svg: string
}

/** The service's (and the baseline's) peak RSS and RSS at start of each part that measured them: one row a part. */
export const memoryRows = (results: Record<string, Json>): Array<Array<string | number>> => {
  const rows: Array<Array<string | number>> = []
  const parts = ["api", "console", "scale", "sweep", "ingest", "webhooks", "flood", "scale10m", "retention", "soak"]
  for (const part of parts) {
    // The flood part's memory figure is its unread-bodies phase (the listener's own service).
    const m =
      part === "flood" ? results.flood?.bodyFlood && { service: results.flood.bodyFlood.memory } : results[part]?.memory
    if (m) {
      rows.push([
        part,
        m.service.peakRssMiB,
        m.service.startRssMiB,
        m.baseline?.peakRssMiB ?? "-",
        m.baseline?.startRssMiB ?? "-",
        m.peer?.peakRssMiB ?? "-",
        ...(m.service.atPeak
          ? [
              m.service.atPeak.rssMiB,
              m.service.atPeak.heapTotalMiB,
              m.service.atPeak.heapUsedMiB,
              m.service.atPeak.outsideHeapMiB,
            ]
          : ["-", "-", "-", "-"]),
      ])
    }
  }
  return rows
}

/** The sections of the parts that ran, in the report's order, and their charts (named after `stamp`). */
export const partSections = (
  results: Record<string, Json>,
  run: { readonly timing: Timing; readonly quick: boolean; readonly info: MachineInfo; readonly stamp: string },
): { readonly sections: Array<string>; readonly charts: Array<Chart> } => {
  const { timing, quick, info, stamp } = run
  const sections: Array<string> = []
  const charts: Array<Chart> = []
  if (results.seed) {
    const s = results.seed
    sections.push(
      `Seed: ${s.events?.toLocaleString("en")} events, ${s.incidents?.toLocaleString("en")} incidents, ${s.apiKeys} API keys, ${s.organizations} organizations, ${s.sensors} sensors, ${s.databaseMiB} MiB; verified ${s.verified}; ${s.totalSeconds} s\n` +
        table(
          ["step", "seconds"],
          SEED_STEPS.filter((k) => s[`${k}Seconds`] !== undefined).map((k) => [k, String(s[`${k}Seconds`])]),
        ),
    )
  }
  if (results.api) {
    sections.push(
      `API (wrk, 2 threads, ${timing.seconds} s per run; service with auth + rate limits on, ${results.api.dataset.apiKeys} keys rotated, X-Forwarded-For rotated)\n` +
        table(
          ["endpoint", "conns", ...VERSUS_BASELINE_HEADS, ...VERSUS_PEER_HEADS],
          results.api.rows.map((r: Json) => [r.endpoint, r.connections, ...versusBaseline(r), ...versusPeer(r)]),
        ) +
        `\nSQL statements per request (PostgreSQL's count): ${results.api.statementsPerRequest
          .map((x: Json) => `${x.endpoint} ${x.service} (baseline ${x.baseline})`)
          .join("; ")}` +
        `\nservice statuses counted: ${JSON.stringify(results.api.serviceStatuses)}; same body as baseline: ${Object.values(
          results.api.checks,
        )
          .map((c: Json) => c.same)
          .join(", ")}`,
    )
    if (results.api.floor) {
      const f = results.api.floor
      sections.push(
        `HttpApi floor (bench/httpapi-floor.ts: the service's HttpApi + BunHttpServer stack, no database, the baseline's ${f.bodyBytes}-byte first page of GET /v1/incidents as a constant)\n` +
          table(
            [
              "conns",
              "floor req/s",
              "floor p50",
              "floor p99",
              "baseline list req/s",
              "floor/base",
              "svc list req/s",
              "svc/floor",
            ],
            f.rows.map((r: Json) => [
              r.connections,
              r.floor.rps,
              ms(r.floor.latencyMs.p50),
              ms(r.floor.latencyMs.p99),
              r.baselineRps ?? "-",
              r.floorVsBaseline?.toFixed(2) ?? "-",
              r.serviceRps ?? "-",
              r.serviceVsFloor?.toFixed(2) ?? "-",
            ]),
          ),
      )
    }
  }
  if (results.console) {
    const c = results.console
    sections.push(
      `Console pages (wrk, 2 threads, ${timing.seconds} s per run; signed in with a session cookie; beside the API endpoint reading the same rows, same process, run just before; "checks failed" = responses that were not a 200 with the signed-in page or the API's JSON)\n` +
        table(
          [
            "page",
            "conns",
            "page req/s",
            "page p50",
            "page p99",
            "API endpoint",
            "API req/s",
            "API p50",
            "API p99",
            "page/API",
            "checks failed",
          ],
          c.rows.map((r: Json) => [
            r.page,
            r.connections,
            r.console.rps,
            ms(r.console.latencyMs.p50),
            ms(r.console.latencyMs.p99),
            r.api,
            r.apiResult.rps,
            ms(r.apiResult.latencyMs.p50),
            ms(r.apiResult.latencyMs.p99),
            r.rpsRatio.toFixed(2),
            `${r.console.failedChecks} of ${r.console.checked} / ${r.apiResult.failedChecks} of ${r.apiResult.checked}`,
          ]),
        ) +
        `\npages: ${Object.entries(c.checks)
          .map(
            ([page, x]: [string, Json]) =>
              `${page} ${x.signedIn.bytes} bytes, ${x.signedIn.count} rows (signed out: ${x.signedOutStatus})`,
          )
          .join("; ")}; API statuses counted: ${JSON.stringify(c.apiStatuses)}`,
    )
  }
  if (results.feeds) {
    sections.push(
      `Feeds: GET /v1/events/changes?limit=50, ${results.feeds.connections} connections (latency in ms); EXPLAIN ANALYZE of the feed's statement\n` +
        table(
          ["case", "req/s", "p50", "p99", "plan", "SQL ms", "buffers"],
          results.feeds.rows.map((r: Json, i: number) => [
            r.case,
            r.service.rps,
            ms(r.service.latencyMs.p50),
            ms(r.service.latencyMs.p99),
            results.feeds.plans[i]?.plan ?? "-",
            String(results.feeds.plans[i]?.executionMs ?? "-"),
            String(results.feeds.plans[i]?.sharedBuffers ?? "-"),
          ]),
        ),
    )
  }
  if (results.scale) {
    sections.push(
      `Scale: GET /v1/events, ${results.scale.connections} connections (latency in ms; "vs first@10k" = p50 ÷ p50 of the first page at 10k)\n` +
        table(
          [
            "case",
            "svc req/s",
            "svc p50",
            "svc p99",
            "base req/s",
            "base p50",
            "svc p50 vs first@10k",
            "base p50 vs first@10k",
          ],
          results.scale.rows.map((r: Json, i: number) => [
            r.case,
            r.service.rps,
            ms(r.service.latencyMs.p50),
            ms(r.service.latencyMs.p99),
            r.baseline.rps,
            ms(r.baseline.latencyMs.p50),
            results.scale.ratios[i].p50VsFirst10k.toFixed(2),
            results.scale.ratios[i].baselineP50VsFirst10k.toFixed(2),
          ]),
        ),
    )
  }
  if (results.scale10m) {
    const x = results.scale10m
    const seedLine = [
      "loadSeconds",
      "eventsPerSecond",
      "indexBuildSeconds",
      "vacuumAnalyzeSeconds",
      "verifySeconds",
      "verified",
      "totalSeconds",
    ]
      .filter((k) => x.seed[k] !== undefined)
      .map((k) => `${k} ${x.seed[k]}`)
      .join(", ")
    sections.push(
      `scale10m: GET /v1/events with ${x.events.toLocaleString("en")} events in one organization, ${x.connections} connections (ms; "vs first@10k" = ÷ the first page at 10k)\n` +
        `seed: ${seedLine}\n` +
        table(
          ["case", ...SERVICE_AND_BASELINE_HEADS, "p50 vs first@10k", "p99 vs first@10k"],
          x.rows.map((r: Json, i: number) => [
            r.case,
            ...serviceAndBaseline(r),
            x.ratios[i].p50VsFirst10k.toFixed(2),
            x.ratios[i].p99VsFirst10k.toFixed(2),
          ]),
        ) +
        `\nchange feed: ${x.feed.available ? `measured (followed through ${x.feed.walked} rows${x.feed.ended ? ", where it ended" : ""})` : `GET /v1/events/changes answered ${x.feed.status}, not measured`}; same body as baseline: ${Object.values(
          x.checks,
        )
          .map((c: Json) => c.same)
          .join(", ")}\n` +
        `events table (all organizations, about ${x.sizes.estimatedRows.toLocaleString("en")} rows): table ${x.sizes.tableMiB} MiB, indexes ${x.sizes.indexesMiB} MiB, total with TOAST ${x.sizes.totalMiB} MiB; incidents total ${x.sizes.incidentsTotalMiB} MiB\n` +
        table(
          ["index", "MiB"],
          x.sizes.indexes.map((i: Json) => [i.name, i.MiB]),
        ),
    )
  }
  if (results.sweep) {
    const w = results.sweep
    sections.push(
      `Connections sweep: ${w.endpoint} (${w.events.toLocaleString("en")} events), service vs baseline and the Fastify + pg peer (ms)\n` +
        table(
          ["conns", ...VERSUS_BASELINE_HEADS, "svc/base p99", ...VERSUS_PEER_HEADS],
          w.rows.map((r: Json) => [r.connections, ...versusBaseline(r), r.p99Ratio.toFixed(2), ...versusPeer(r)]),
        ),
    )
    const categories = w.rows.map((r: Json) => String(r.connections))
    const series = (key: "rps" | "p99", who: "service" | "baseline" | "peer") =>
      w.rows
        .filter((r: Json) => r[who] !== undefined)
        .map((r: Json, i: number) => ({ x: i, y: key === "rps" ? r[who].rps : r[who].latencyMs.p99 }))
    const hasPeer = w.rows.some((r: Json) => r.peer !== undefined)
    const peerSeries = (key: "rps" | "p99") =>
      hasPeer
        ? [{ name: "peer (Fastify + pg, Node.js)", color: "#2a9d4b", dashed: true, points: series(key, "peer") }]
        : []
    charts.push({
      file: `${stamp}-chart.svg`,
      svg: svgChart(
        `${w.endpoint}: service vs baseline (bare Bun.serve + Bun.sql)${hasPeer ? " and peer (Fastify + pg)" : ""}, same run`,
        `${new Date().toISOString().slice(0, 16)}Z, ${info.cores} cores, Bun ${info.bun}, wrk ${timing.seconds} s per point${quick ? " (quick run: not for reporting)" : ""}; load average at start ${info.loadBefore.join(" ")}`,
        [
          {
            title: "Throughput",
            xLabel: "connections (wrk)",
            yLabel: "requests/s",
            categories,
            series: [
              { name: "service", color: "#1f6fb2", points: series("rps", "service") },
              { name: "baseline", color: "#e07b00", dashed: true, points: series("rps", "baseline") },
              ...peerSeries("rps"),
            ],
          },
          {
            title: "Latency p99",
            xLabel: "connections (wrk)",
            yLabel: "p99 ms",
            categories,
            series: [
              { name: "service", color: "#1f6fb2", points: series("p99", "service") },
              { name: "baseline", color: "#e07b00", dashed: true, points: series("p99", "baseline") },
              ...peerSeries("p99"),
            ],
          },
        ],
      ),
    })
  }
  if (results.soak) {
    const k = results.soak
    const every = k.minutes > 5 ? 6 : 1
    sections.push(
      `Soak: ${k.minutes} min at ${k.ratePerSecond} req/s (achieved ${k.achievedPerSecond}; incidents, events and a 200-event incident; plus ${k.ingestBatches} ingestion batches of 10), service RSS every 10 s${every > 1 ? " (one line a minute)" : ""}\n` +
        table(
          ["at s", "RSS MiB", "requests", "errors", "p99 ms"],
          k.windows
            .filter((_: Json, i: number) => (i + 1) % every === 0)
            .map((w: Json) => [w.atSeconds, w.rssMiB, w.requests, w.errors, ms(w.p99Ms)]),
        ) +
        `\nRSS after ${k.settleSeconds} s: ${k.rssAtSettleMiB} MiB; at the end: ${k.rssEndMiB} MiB; mean of the ${k.comparedSeconds} s after ${k.settleSeconds} s ${k.rssMeanAfterSettleMiB} MiB, of the last ${k.comparedSeconds} s ${k.rssMeanLastMinuteMiB} MiB: growth ${k.growthMiB} MiB; slope after ${k.settleSeconds} s ${k.slopeMiBPerMinute} MiB/min; peak (VmHWM) ${k.memory.service.peakRssMiB} MiB` +
        `\nerrors: ${k.errors} (statuses ${JSON.stringify(k.statuses)}, ${k.skippedInFlightCap} not sent: 512 in flight); latency p50 ${ms(k.latencyMs.p50)} ms, p99 ${ms(k.latencyMs.p99)} ms, max ${ms(k.latencyMs.max)} ms; ${k.eventsIngested} events ingested`,
    )
  }
  if (results["rss-curve"]) {
    const c = results["rss-curve"]
    sections.push(
      `RSS against throughput: ${c.endpoint} at ${c.connections} connections, a fresh service per setting (MiB)\n` +
        table(
          ["setting", "req/s", "p50 ms", "p99 ms", "RSS at start", "peak RSS", "max polled RSS"],
          c.points.map((p: Json) => [
            p.setting,
            p.load.rps,
            ms(p.load.latencyMs.p50),
            ms(p.load.latencyMs.p99),
            p.startRssMiB,
            p.peakRssMiB,
            p.maxPolledRssMiB,
          ]),
        ),
    )
    charts.push({
      file: `${stamp}-rss-curve.svg`,
      svg: svgChart(
        `Memory against throughput: ${c.endpoint}, ${c.connections} connections`,
        `${new Date().toISOString().slice(0, 16)}Z, ${info.cores} cores, Bun ${info.bun}, one fresh service per setting${quick ? " (quick run: not for reporting)" : ""}`,
        [
          {
            title: "Peak RSS against req/s",
            xLabel: "requests/s",
            yLabel: "peak RSS (VmHWM), MiB",
            reference: { y: 200, label: "200 MiB (target)" },
            series: [
              {
                name: "service, one point per setting",
                color: "#1f6fb2",
                markersOnly: true,
                // Numbers beside the markers; the key under the chart names the settings.
                points: c.points.map((p: Json, i: number) => ({
                  x: p.load.rps,
                  y: p.peakRssMiB,
                  label: String(i + 1),
                })),
              },
            ],
          },
        ],
        c.points.map((p: Json, i: number) => `${i + 1}: ${p.setting}: ${p.load.rps} req/s, peak ${p.peakRssMiB} MiB`),
      ),
    })
  }
  if (results.ingest) {
    sections.push(
      `Ingestion: POST /ingest/v1/events (native) and Cowrie's HEC requests (hec-cowrie: one event per request, a new connection each), ${results.ingest.rows[0]?.connections} connections (closed loop), ${results.ingest.sensors} sensors, ${results.ingest.sourceIps} source IPs\n` +
        table(
          [
            "route",
            "batch",
            "body KiB",
            "events/s",
            "req/s",
            "p50 ms",
            "p99 ms",
            "accepted",
            "stored",
            "not accepted",
            "CPU: service / PostgreSQL / all",
            "µs per event: service / PostgreSQL",
          ],
          results.ingest.rows.map((r: Json) => [
            r.route ?? "native",
            r.batch,
            r.bodyKiB ?? "-",
            r.eventsPerSecond,
            r.requestsPerSecond,
            ms(r.latencyMs.p50),
            ms(r.latencyMs.p99),
            r.eventsAccepted,
            r.eventsStored,
            r.eventsNotAccepted,
            r.cpu ? `${r.cpu.service} / ${r.cpu.postgres} / ${r.cpu.total}` : `client ${r.clientCpu}`,
            r.cpuUsPerEvent ? `${r.cpuUsPerEvent.service} / ${r.cpuUsPerEvent.postgres}` : "-",
          ]),
        ),
    )
  }
  if (results.webhooks) {
    const w = results.webhooks
    const row = (name: string, r: Json) => [
      name,
      r.received,
      r.deliveries,
      ms(r.latencyMs.p50),
      ms(r.latencyMs.p99),
      ms(r.latencyMs.max),
      `${ms(r.ingestMs.p50)} / ${ms(r.ingestMs.p99)}`,
      r.deliveriesPerSecond ?? "-",
    ]
    sections.push(
      "Webhooks: healthy channel's deliveries (event-to-receipt = receiver arrival - ingest POST sent)\n" +
        table(
          ["run", "received", "sent", "p50 ms", "p99 ms", "max ms", "ingest answer p50/p99", "deliveries/s"],
          [
            row("latency (10 events/s), healthy only", w.healthyOnly.latency),
            row("burst of new incidents, healthy only", w.healthyOnly.burst),
            row("latency (10 events/s), + dead channel", w.withDeadChannel.latency),
            row("burst of new incidents, + dead channel", w.withDeadChannel.burst),
          ],
        ) +
        `\ndead receiver: ${w.withDeadChannel.deadReceiverConnections} connections held; ${w.failedAttemptsLogged} failed attempts logged`,
    )
  }
  if (results.retention) {
    const r = results.retention
    const sizeRow = (table: string) => {
      const at = (s: Json) => s.tables[table]
      const rows = (s: Json) => `${at(s).liveRows.toLocaleString("en")} / ${at(s).deadRows.toLocaleString("en")}`
      return [
        table,
        `${at(r.sizes.before).tableMiB} / ${at(r.sizes.before).indexesMiB}`,
        at(r.sizes.before).totalMiB,
        at(r.sizes.afterPurge).totalMiB,
        at(r.sizes.afterVacuum).totalMiB,
        rows(r.sizes.before),
        rows(r.sizes.afterPurge),
        rows(r.sizes.afterVacuum),
      ]
    }
    const phase = (name: string, w: Json) => [
      name,
      w.seconds,
      w.eventsPerSecond,
      ms(w.latencyMs.p50),
      ms(w.latencyMs.p99),
      w.failed,
    ]
    sections.push(
      `Retention: ${r.events.toLocaleString("en")} events over ${r.spanDays} days in one organization, purged to ${r.retentionDays} days while ${r.ingestion.connections} sensors post batches of ${r.ingestion.batch}\n` +
        `${r.purge.failure === undefined ? `purge: ${r.purge.seconds} s` : `purge FAILED after ${r.purge.failedAfterSeconds} s (${r.purge.failure})`}; the events before the cut-off gone after ${r.purge.eventsStageSeconds ?? "-"} s; deleted ${r.purge.deleted.events?.toLocaleString("en")} events, ${r.purge.deleted.incidents?.toLocaleString("en")} incidents left empty, ${r.purge.deleted.feedRows?.toLocaleString("en")} incident feed rows; left ${r.after.events.toLocaleString("en")} events (${r.after.eventsBeforeCut} before the cut-off), ${r.after.incidents.toLocaleString("en")} incidents (${r.after.emptyIncidentsBeforeCut} empty before the cut-off)${r.benchSql ? `; BENCH_RETENTION_SQL: ${r.benchSql}` : ""}\n` +
        table(
          ["ingestion", "seconds", "events/s", "p50 ms", "p99 ms", "failed"],
          [
            phase("before the purge", r.ingestion.before),
            phase("during the purge", r.ingestion.during),
            phase("after the purge", r.ingestion.after),
          ],
        ) +
        `\nduring ÷ before: ${r.duringVsBefore}\n` +
        table(
          [
            "table (MiB)",
            "before: heap / indexes",
            "before total",
            "after purge",
            "after VACUUM",
            "live / dead rows before",
            "after purge",
            "after VACUUM",
          ],
          ["events", "incidents", "incident_changes"].map(sizeRow),
        ) +
        `\ndatabase ${r.sizes.before.databaseMiB} -> ${r.sizes.afterPurge.databaseMiB} -> ${r.sizes.afterVacuum.databaseMiB} MiB; VACUUM ${r.sizes.vacuumSeconds} s (it makes the space reusable; the files keep their size)`,
    )
  }
  if (results.flood) {
    const f = results.flood
    sections.push(
      `Isolation (D37): ${f.ingest.sensors} sensors post batches of 10 for ${f.postSeconds} s while ${f.api.connections} connections flood GET /v1/incidents with unknown keys (one client address each)\n` +
        table(
          ["listener", "requests", "req/s", "failed", "failed %", "p50 ms", "p99 ms", "statuses"],
          [
            [
              "ingest",
              f.ingest.requests,
              f.ingest.requestsPerSecond,
              f.ingest.failedRequests,
              f.ingest.failedShare,
              ms(f.ingest.latencyMs.p50),
              ms(f.ingest.latencyMs.p99),
              JSON.stringify(f.ingest.statuses),
            ],
            [
              "api (flood)",
              f.api.requests,
              f.api.requestsPerSecond,
              "-",
              "-",
              ms(f.api.latencyMs.p50),
              ms(f.api.latencyMs.p99),
              JSON.stringify(f.api.statuses),
            ],
          ],
        ) +
        `\nevents accepted ${f.ingest.eventsAccepted}, stored ${f.ingest.eventsStored}, not accepted ${f.ingest.eventsNotAccepted}` +
        (f.bodyFlood
          ? `\nunread bodies: ${f.bodyFlood.connections} connections posted ${f.bodyFlood.requests} bodies of ${(f.bodyFlood.bodyBytes / 1e6).toFixed(1)} MB with a wrong sensor token (${f.bodyFlood.requestsPerSecond} req/s, ${JSON.stringify(f.bodyFlood.statuses)}): the ingest listener's peak RSS ${f.bodyFlood.memory.peakRssMiB} MiB`
          : ""),
    )
  }
  const rows = memoryRows(results)
  const floorMemory = results.api?.floor?.memory
  if (rows.length > 0) {
    sections.push(
      `Memory: peak RSS (VmHWM) in MiB, and RSS right after start-up (1 s after the listeners are up, no load yet); the service's highest reading of its own (every 100 ms): the JavaScript heap (its size and what was live after the last collection) and everything outside it (bodies, the database client's buffers, large strings' contents, code, JIT, stacks)\n${table(
        [
          "part",
          "service peak",
          "service at start",
          "baseline peak",
          "baseline at start",
          "peer peak",
          "probe RSS",
          "JS heap",
          "heap live",
          "outside heap",
        ],
        rows,
      )}${floorMemory ? `\nthe HttpApi floor (api part, no database): peak ${floorMemory.peakRssMiB} MiB, at start ${floorMemory.startRssMiB} MiB` : ""}`,
    )
  }
  if (results["ratelimit-memory"])
    sections.push(`Rate limit store memory\n${results["ratelimit-memory"].lines.join("\n")}`)
  if (results.startup) sections.push(results.startup.lines.join("\n"))
  return { sections, charts }
}
