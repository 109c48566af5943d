import { HttpRouter } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { sourceFactsOf } from "../../domain/enrichment.ts"
import { canonicalIp } from "../../domain/ip.ts"
import { SOURCE_INCIDENTS_SHOWN } from "../../domain/models.ts"
import { classifySource } from "../../domain/networks.ts"
import { AppConfig } from "../../platform/config.ts"
import { IgnoreRulesRepo } from "../../repos/IgnoreRulesRepo.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { NetworksRepo } from "../../repos/NetworksRepo.ts"
import { presentIncidentSummary } from "../../repos/present.ts"
import { html, seeOther } from "../http.ts"
import type { Kit } from "../kit.ts"
import { NotAnAddressPage, SourcePage, UnknownSourcePage } from "./sourcePage.tsx"
import { sourceEventCounts } from "./sourceReads.ts"

/**
 * A source address's page, /sources/<ip>: the reads GET /v1/sources/{ip} makes (its incidents on every sensor and
 * their totals, the organization's networks, the ignore rule holding it), for any signed-in user of the organization.
 * An address the organization never saw, or another's, is the 404 page; another spelling of an address goes to its
 * one canonical form.
 */
export const sourceRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const incidents = yield* IncidentsRepo
    const networks = yield* NetworksRepo
    const ignoreRules = yield* IgnoreRulesRepo
    const sensorAdmin = yield* SensorAdmin
    const { page } = kit

    const showSource = page((s) =>
      Effect.gen(function* () {
        const { ip: text = "" } = yield* HttpRouter.params
        const ip = text.length > 64 ? undefined : canonicalIp(text)
        // Not found either way (the status an unknown path gets), each with a page saying which it is.
        if (ip === undefined) return html(<NotAnAddressPage viewer={s.viewer} />, 404)
        if (ip !== text) return seeOther(`/sources/${ip}`)
        const now = new Date()
        const { rows, totals, anyEvent } = yield* incidents.forSource(s.orgId, ip, SOURCE_INCIDENTS_SHOWN)
        if (totals.incidents === 0 && !anyEvent) return html(<UnknownSourcePage viewer={s.viewer} ip={ip} />, 404)
        const [own, rule, sensors, events] = yield* Effect.all([
          networks.get(s.orgId),
          ignoreRules.holding(s.orgId, ip, now),
          sensorAdmin.list(s.orgId),
          sourceEventCounts(sql, s.orgId, ip),
        ])
        const sensorName = (id: string) => sensors.find((x) => x.id === id)?.name ?? id
        const judged = classifySource(ip, own.networks)
        const facts = sourceFactsOf(rows[0] ?? {})
        return html(
          <SourcePage
            viewer={s.viewer}
            ip={ip}
            source={{ ...facts, scope: judged.scope, network: judged.network }}
            firstSeenAt={totals.firstSeenAt === null ? null : new Date(totals.firstSeenAt)}
            lastSeenAt={totals.lastSeenAt === null ? null : new Date(totals.lastSeenAt)}
            incidentCount={totals.incidents}
            sensorCount={totals.sensors}
            incidents={rows.map((r) => presentIncidentSummary(r, config.appUrl))}
            rule={
              rule === undefined
                ? undefined
                : {
                    id: rule.id,
                    source: rule.source,
                    sensorName: rule.sensorId === null ? null : sensorName(rule.sensorId),
                    port: rule.port,
                    eventType: rule.eventType,
                  }
            }
            eventCounts={events.counts.map((c) => ({ ...c, sensorName: sensorName(c.sensorId) }))}
            countsCapped={events.capped}
            sensors={sensors.filter((x) => x.revokedAt === null).map((x) => ({ id: x.id, name: x.name }))}
            now={now}
          />,
        )
      }),
    )

    return HttpRouter.empty.pipe(HttpRouter.get("/sources/:ip", showSource))
  })
