import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { SensorAdmin } from "../../admin/SensorAdmin.ts"
import { AppConfig } from "../../platform/config.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { SensorPage, SensorsPage } from "../pages/sensors.tsx"
import { notFound } from "../responses.tsx"

/** Settings → Sensors (D43): every user reads; administrators change, through SensorAdmin (tokens shown once). */
export const sensorRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const sensorAdmin = yield* SensorAdmin
    const { page, action, flashTo, readFlash, refused } = kit
    return HttpRouter.empty.pipe(
      // --- Settings → Sensors (D43): every user reads; admins change, through the audited SensorAdmin ---------------
      HttpRouter.get(
        "/settings/sensors",
        page((s) =>
          Effect.gen(function* () {
            const sensors = yield* sensorAdmin.list(s.orgId)
            const flash = yield* readFlash(s)
            return html(
              <SensorsPage
                viewer={s.viewer}
                sensors={sensors}
                flash={flash}
                now={new Date()}
                ingestUrl={config.ingestUrl}
                appUrl={config.appUrl}
              />,
            )
          }),
        ),
      ),
      HttpRouter.post(
        "/settings/sensors",
        action((s, form) =>
          Effect.gen(function* () {
            const created = yield* sensorAdmin.create(s.orgId, {
              name: form.name,
              profile: form.profile,
              heartbeatInterval: form.heartbeatInterval,
            })
            return yield* flashTo(s, "/settings/sensors", {
              kind: "ok",
              text: `Sensor ${created.id} added.`,
              secret: { label: "Its ingest token.", value: created.token },
            })
          }).pipe(refused(s, "/settings/sensors")),
        ),
      ),
      HttpRouter.get(
        "/settings/sensors/:id",
        page((s) =>
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.params
            const sensor = (yield* sensorAdmin.list(s.orgId)).find((x) => x.id === id)
            if (sensor === undefined) return notFound(s.viewer)
            return html(<SensorPage viewer={s.viewer} sensor={sensor} flash={yield* readFlash(s)} now={new Date()} />)
          }),
        ),
      ),
      HttpRouter.post(
        "/settings/sensors/:id/:verb",
        action((s, form) =>
          Effect.gen(function* () {
            const { id = "", verb } = yield* HttpRouter.params
            const back = `/settings/sensors/${encodeURIComponent(id)}`
            switch (verb) {
              case "rename": {
                const done = yield* sensorAdmin.rename(id, form.name)
                return yield* flashTo(s, back, { kind: "ok", text: `Renamed to ${done.name}.` })
              }
              case "heartbeat": {
                const done = yield* sensorAdmin.setHeartbeat(id, form.heartbeatInterval)
                const text =
                  done.heartbeatIntervalSeconds === null
                    ? "No heartbeat expected."
                    : `A heartbeat every ${done.heartbeatIntervalSeconds} s is expected.`
                return yield* flashTo(s, back, { kind: "ok", text })
              }
              case "rotate": {
                const force = form.force === "yes"
                const rotated = yield* sensorAdmin.rotate(id, form.grace || undefined, force)
                return yield* flashTo(s, "/settings/sensors", {
                  kind: "ok",
                  text: rotated.previousTokenValidUntil
                    ? `Token rotated; the old one also works until ${rotated.previousTokenValidUntil}.`
                    : "Token rotated; the old one no longer works.",
                  secret: { label: "The new ingest token.", value: rotated.token },
                })
              }
              case "revoke": {
                if (form.confirm !== "yes") {
                  return yield* flashTo(s, back, { kind: "error", text: "Tick the box to confirm the revocation." })
                }
                yield* sensorAdmin.revoke(id)
                return yield* flashTo(s, "/settings/sensors", { kind: "ok", text: `Sensor ${id} revoked.` })
              }
              default:
                return notFound(s.viewer)
            }
          }).pipe(refused(s, "/settings/sensors")),
        ),
      ),
    )
  })
