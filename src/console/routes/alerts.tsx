import { HttpRouter } from "@effect/platform"
import { Effect } from "effect"
import { ChannelAdmin } from "../../admin/ChannelAdmin.ts"
import { Invalid } from "../../admin/errors.ts"
import { type ChannelKind, kindSpec } from "../../domain/channels/registry.ts"
import { AlertsPage } from "../alerts/alertsPage.tsx"
import { DeliveryLogPage } from "../alerts/deliveryLogPage.tsx"
import type { Flash } from "../components.tsx"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { notFound } from "../responses.tsx"

/**
 * After an Add channel (D46): only a signing secret is ours to show (once); what an admin gave for the other kinds
 * (a URL that is a credential, a token) is stored sealed and is never shown again, so the kind's notice says so.
 */
const createdFlash = (created: {
  readonly id: string
  readonly kind: ChannelKind
  readonly secret?: string
}): Flash => ({
  kind: "ok",
  text: kindSpec(created.kind).added(created.id),
  ...(created.secret === undefined ? {} : { secret: { label: "Its signing secret.", value: created.secret } }),
})

const rotatedFlash = (
  kind: ChannelKind,
  rotated: { readonly secret: string | undefined; readonly previousSecretValidUntil: string | null },
): Flash => {
  const replaced = kindSpec(kind).replaced
  if (replaced !== undefined) return { kind: "ok", text: replaced }
  return {
    kind: "ok",
    text: rotated.previousSecretValidUntil
      ? `Secret rotated; the old one also signs until ${rotated.previousSecretValidUntil}.`
      : "Secret rotated; the old one no longer signs.",
    ...(rotated.secret === undefined ? {} : { secret: { label: "The new signing secret.", value: rotated.secret } }),
  }
}

/** The services name the CLI's `--settle`; the form calls it the settle window. */
const settleWorded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(effect, (e) =>
    e instanceof Invalid
      ? Object.assign(new Invalid(e), { message: e.message.replaceAll("--settle", "the settle window") })
      : e,
  )

/**
 * Settings → Alerts: channels of every kind (D46) and format (D47), a webhook's secret (shown once), rotation as the
 * kind needs it, test sends and the delivery log (D15–D18).
 */
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
            const created = yield* channelAdmin
              .create(s.orgId, {
                kind: form.kind || undefined,
                format: form.format || undefined,
                url: form.url,
                // An empty field is no token (the service refuses a token for a kind that takes none).
                token: form.token ? form.token : undefined,
                minSeverity: form.minSeverity,
                sensorHealth: form.sensorHealth === "on",
                // An empty field is the kind's default.
                settle: form.settle || undefined,
              })
              .pipe(settleWorded)
            return yield* flashTo(s, "/settings/alerts", createdFlash(created))
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
                // Syslog has no HTTP status: only what happened and how long it took.
                const status = result.status === null ? "" : `, HTTP ${result.status}`
                return yield* flashTo(s, back, {
                  kind: result.ok ? "ok" : "error",
                  text: `Send test: ${result.ok ? "delivered" : "failed"}${status} in ${result.durationMs} ms at ${new Date().toISOString()}${result.error ? ` (${result.error})` : ""}.`,
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
              case "settle": {
                const result = yield* channelAdmin.setSettle(id, form.settle ?? "").pipe(settleWorded)
                return yield* flashTo(s, "/settings/alerts", {
                  kind: "ok",
                  text:
                    result.settleSeconds === 0
                      ? "Settle window off: every change is sent at once."
                      : `Settle window set to ${result.settleSeconds} s: an incident's first message waits that long.`,
                })
              }
              case "rotate": {
                const rotated = yield* channelAdmin.rotate(id, form.grace || undefined, form.replacement || undefined)
                return yield* flashTo(s, "/settings/alerts", rotatedFlash((yield* channelAdmin.find(id)).kind, rotated))
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
