import { HttpRouter } from "@effect/platform"
import { Effect, Option } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { eventTypeSpec } from "../../domain/eventTypes.ts"
import { classifySource } from "../../domain/networks.ts"
import { AppConfig } from "../../platform/config.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { NetworksRepo } from "../../repos/NetworksRepo.ts"
import { presentIncidentSummary } from "../../repos/present.ts"
import { ConsoleReads } from "../ConsoleReads.ts"
import type { Bar } from "../charts/barChart.tsx"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { query } from "../session.ts"
import { type OverviewFigures, OverviewPage } from "./overviewPage.tsx"
import { bucketLabel, bucketWords, parseRange, rangeWindow } from "./range.ts"

/** The events search of one attacker value (URL-encoded: attacker text is data, never a link target of its own). */
const searchHref = (value: string) => `/events?q=${encodeURIComponent(value)}`

/**
 * The overview, the console's home page: open incidents by severity; for the range asked (`?range=24h|7d|30d`) the
 * activity over time, the top sources, sensors, services, event types, usernames and commands, and the countries of
 * outside sources; the latest incidents and the sensors gone silent, of the user's organization. Its own area: it
 * reads across incidents, events and sensors, and belongs to none of them.
 */
export const overviewRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const reads = yield* ConsoleReads
    const incidents = yield* IncidentsRepo
    const networksRepo = yield* NetworksRepo
    const sensorAdmin = yield* SensorAdmin
    const { page } = kit
    const geoConfigured =
      Option.isSome(config.enrichment.mmdbCountryFile) || Option.isSome(config.enrichment.mmdbAsnFile)

    const showOverview = page((s) =>
      Effect.gen(function* () {
        const now = new Date()
        const window = rangeWindow(parseRange((yield* query).get("range")), now)
        const { start, unit } = window
        const since = `from=${encodeURIComponent(start.toISOString())}`
        const { networks } = yield* networksRepo.get(s.orgId)
        const [
          open,
          events,
          begun,
          sources,
          sensorRows,
          services,
          types,
          usernames,
          commands,
          countries,
          latest,
          sensors,
        ] = yield* Effect.all(
          [
            reads.openBySeverity(s.orgId),
            reads.eventsOverTime(s.orgId, start, unit),
            reads.incidentsOverTime(s.orgId, start, unit),
            reads.topSources(s.orgId, start),
            reads.topSensors(s.orgId, start),
            reads.topServices(s.orgId, start),
            reads.topTypes(s.orgId, start),
            reads.topAttackerValues(s.orgId, start, "username"),
            reads.topAttackerValues(s.orgId, start, "command"),
            reads.eventsByCountry(
              s.orgId,
              start,
              networks.map((n) => n.cidr),
            ),
            incidents.list({ orgId: s.orgId, status: undefined, after: undefined, fetch: 8 }),
            sensorAdmin.list(s.orgId),
          ],
          { concurrency: 4 },
        )
        const eventsAt = new Map(events.map((b) => [b.bucket, b.n]))
        const begunAt = new Map(begun.map((b) => [b.bucket, b.n]))
        const figures: OverviewFigures = {
          window,
          buckets: window.buckets.map((key) => ({
            key,
            label: bucketLabel(key, unit),
            words: bucketWords(key, unit),
            events: eventsAt.get(key) ?? 0,
            incidents: begunAt.get(key) ?? 0,
          })),
          sources: sources.map((r): Bar => {
            const inside = classifySource(r.sourceIp, networks).scope === "internal"
            return {
              key: r.sourceIp,
              label: r.sourceIp,
              n: r.n,
              href: `/sources/${encodeURIComponent(r.sourceIp)}`,
              note: `${inside ? "inside" : "outside"}${r.country === null ? "" : ` · ${r.country}`}`,
              mark: inside ? "inside" : (r.country ?? undefined),
            }
          }),
          sensors: sensorRows.map(
            (r): Bar => ({
              key: r.sensorId,
              label: r.name,
              n: r.n,
              href: `/events?sensorId=${encodeURIComponent(r.sensorId)}&${since}`,
            }),
          ),
          services: services.map(
            (r): Bar => ({ key: `${r.service}/${r.port}`, label: `${r.service}/${r.port}`, n: r.n }),
          ),
          types: types.map(
            (r): Bar => ({
              key: r.value,
              label: r.value,
              n: r.n,
              href: `/events?type=${encodeURIComponent(r.value)}&${since}`,
              note: eventTypeSpec(r.value)?.label ?? "",
            }),
          ),
          usernames: usernames.map(
            (r): Bar => ({ key: r.value, label: r.value, n: r.n, attacker: true, href: searchHref(r.value) }),
          ),
          commands: commands.map(
            (r): Bar => ({ key: r.value, label: r.value, n: r.n, attacker: true, href: searchHref(r.value) }),
          ),
          countries,
          geoConfigured,
        }
        return html(
          <OverviewPage
            viewer={s.viewer}
            open={Object.fromEntries(open.map((o) => [o.severity, o.n]))}
            figures={figures}
            latest={latest.map((r) => presentIncidentSummary(r, config.appUrl))}
            now={now}
            silentSensors={sensors.filter((x) => x.status === "silent").length}
          />,
        )
      }),
    )

    return HttpRouter.empty.pipe(HttpRouter.get("/", showOverview))
  })
