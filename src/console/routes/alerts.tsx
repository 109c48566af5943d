import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { ChannelAdmin } from "../../admin/ChannelAdmin.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { AlertsPage, DeliveryLogPage } from "../pages/settings.tsx"
import { notFound } from "../responses.tsx"

/** Settings → Alerts: webhook channels, their secrets (shown once), test sends and the delivery log (D15–D18). */
export const alertRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const channelAdmin = yield* ChannelAdmin
    const { page, action, flashTo, readFlash, refused } = kit
    return HttpRouter.empty.pipe(
      // --- Settings → Alerts ---------------------------------------------------------------------------------------------
      HttpRouter.get(
        "/settings/alerts",
        page((s) =>
          Effect.gen(function* () {
            const channels = yield* channelAdmin.list(s.orgId)
            return html(
              <AlertsPage viewer={s.viewer} channels={channels} flash={yield* readFlash(s)} now={new Date()} />,
            )
          }),
        ),
      ),
      HttpRouter.post(
        "/settings/alerts/channels",
        action((s, form) =>
          Effect.gen(function* () {
            const created = yield* channelAdmin.create(s.orgId, {
              url: form.url,
              minSeverity: form.minSeverity,
              sensorHealth: form.sensorHealth === "on",
            })
            return yield* flashTo(s, "/settings/alerts", {
              kind: "ok",
              text: `Channel ${created.id} added.`,
              ...(created.secret === undefined
                ? {}
                : { secret: { label: "Its signing secret.", value: created.secret } }),
            })
          }).pipe(refused(s, "/settings/alerts")),
        ),
      ),
      HttpRouter.get(
        "/settings/alerts/channels/:id",
        page((s) =>
          Effect.gen(function* () {
            const { id } = yield* HttpRouter.params
            const channel = (yield* channelAdmin.list(s.orgId)).find((c) => c.id === id)
            if (channel === undefined) return notFound(s.viewer)
            const deliveries = yield* channelAdmin.deliveries(channel.id, undefined)
            return html(
              <DeliveryLogPage
                viewer={s.viewer}
                channel={channel}
                deliveries={deliveries}
                flash={yield* readFlash(s)}
                now={new Date()}
              />,
            )
          }),
        ),
      ),
      HttpRouter.post(
        "/settings/alerts/channels/:id/:verb",
        action((s, form) =>
          Effect.gen(function* () {
            const { id = "", verb } = yield* HttpRouter.params
            const back = `/settings/alerts/channels/${encodeURIComponent(id)}`
            switch (verb) {
              case "test": {
                const result = yield* channelAdmin.test(id)
                const status = result.status === null ? "no HTTP status" : `HTTP ${result.status}`
                return yield* flashTo(s, back, {
                  kind: result.ok ? "ok" : "error",
                  text: `Send test: ${result.ok ? "delivered" : "failed"}, ${status} in ${result.durationMs} ms at ${new Date().toISOString()}${result.error ? ` (${result.error})` : ""}.`,
                })
              }
              case "enable":
              case "disable": {
                yield* channelAdmin.setEnabled(id, verb === "enable")
                return yield* flashTo(s, "/settings/alerts", { kind: "ok", text: `Channel ${verb}d.` })
              }
              case "sensor-health-on":
              case "sensor-health-off": {
                const on = verb === "sensor-health-on"
                yield* channelAdmin.setSensorHealth(id, on)
                return yield* flashTo(s, "/settings/alerts", {
                  kind: "ok",
                  text: on ? "Sensor-health alerts on for this channel." : "Sensor-health alerts off for this channel.",
                })
              }
              case "rotate": {
                const rotated = yield* channelAdmin.rotate(id, form.grace || undefined)
                return yield* flashTo(s, "/settings/alerts", {
                  kind: "ok",
                  text: rotated.previousSecretValidUntil
                    ? `Secret rotated; the old one also signs until ${rotated.previousSecretValidUntil}.`
                    : "Secret rotated; the old one no longer signs.",
                  ...(rotated.secret === undefined
                    ? {}
                    : { secret: { label: "The new signing secret.", value: rotated.secret } }),
                })
              }
              default:
                return notFound(s.viewer)
            }
          }).pipe(refused(s, "/settings/alerts")),
        ),
      ),
      HttpRouter.post(
        "/settings/alerts/deliveries/:id/redeliver",
        action((s) =>
          Effect.gen(function* () {
            const { id = "" } = yield* HttpRouter.params
            yield* channelAdmin.redeliver(id)
            return yield* flashTo(s, "/settings/alerts", { kind: "ok", text: `Delivery ${id} queued again.` })
          }).pipe(refused(s, "/settings/alerts")),
        ),
      ),
    )
  })
