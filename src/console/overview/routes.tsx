import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { AppConfig } from "../../platform/config.ts"
import { IncidentsRepo } from "../../repos/IncidentsRepo.ts"
import { presentIncidentSummary } from "../../repos/present.ts"
import { ConsoleReads } from "../ConsoleReads.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { OverviewPage } from "./overviewPage.tsx"

/** Days of activity the overview draws, today (UTC) the last. */
const DAYS = 14

/**
 * The overview, the console's home page: open incidents by severity, the activity of the last 14 days, the latest
 * incidents and the sensors gone silent, of the user's organization. Its own area: it reads across incidents, events
 * and sensors, and belongs to none of them.
 */
export const overviewRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const reads = yield* ConsoleReads
    const incidents = yield* IncidentsRepo
    const sensorAdmin = yield* SensorAdmin
    const { page } = kit

    const showOverview = page((s) =>
      Effect.gen(function* () {
        const now = new Date()
        const start = new Date(
          Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (DAYS - 1) * 86_400_000,
        )
        const [open, activity, latest, sensors] = yield* Effect.all([
          reads.openBySeverity(s.orgId),
          reads.activity(s.orgId, start),
          incidents.list({ orgId: s.orgId, status: undefined, after: undefined, fetch: 8 }),
          sensorAdmin.list(s.orgId),
        ])
        const counts = new Map(activity.map((a) => [a.day, a.n]))
        const days = Array.from({ length: DAYS }, (_, i) => {
          const day = new Date(start.getTime() + i * 86_400_000).toISOString().slice(0, 10)
          return { day, n: counts.get(day) ?? 0 }
        })
        return html(
          <OverviewPage
            viewer={s.viewer}
            open={Object.fromEntries(open.map((o) => [o.severity, o.n]))}
            days={days}
            latest={latest.map((r) => presentIncidentSummary(r, config.appUrl))}
            now={now}
            silentSensors={sensors.filter((x) => x.status === "silent").length}
          />,
        )
      }),
    )

    return HttpRouter.empty.pipe(HttpRouter.get("/", showOverview))
  })
