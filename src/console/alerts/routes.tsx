import { HttpRouter } from "@effect/platform"
import { Effect, Schema } from "effect"
import { ChannelAdmin } from "../../admin/ChannelAdmin.ts"
import { type ChannelKind, kindSpec } from "../../domain/channels/registry.ts"
import type { Flash } from "../components.tsx"
import { Blank, Checkbox, decodeForm, OptionalText, Text } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { notFound } from "../responses.tsx"
import type { SignedIn } from "../session.ts"
import { AlertsPage } from "./alertsPage.tsx"
import { DeliveryLogPage } from "./deliveryLogPage.tsx"

/**
 * After an Add channel: only a signing secret is ours to show (once); what an admin gave for the other kinds
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

/**
 * Add a channel: one form for every kind. An empty kind, format or settle window is the service's default; an empty
 * token is no token (the service refuses a token for a kind that takes none).
 */
const AddChannelForm = Schema.Struct({
  kind: OptionalText,
  format: OptionalText,
  url: Text,
  token: OptionalText,
  minSeverity: Text,
  sensorHealth: Checkbox("on"),
  settle: OptionalText,
})
const SettleForm = Schema.Struct({ settle: Blank })
/** Rotate: a signing secret's grace period, or the new URL or token the receiver made (empty: not given). */
const RotateForm = Schema.Struct({ grace: OptionalText, replacement: OptionalText })

type Fields = Record<string, string>

/**
 * Settings → Alerts: channels of every kind and format, a webhook's secret (shown once), rotation as the kind needs
 * it, test sends and the delivery log with redelivery.
 */
export const alertRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const channelAdmin = yield* ChannelAdmin
    const { page, action, flashTo, readFlash, refused } = kit

    const listChannels = page((s) =>
      Effect.gen(function* () {
        const channels = yield* channelAdmin.list(s.orgId)
        return html(<AlertsPage viewer={s.viewer} channels={channels} flash={yield* readFlash(s)} now={new Date()} />)
      }),
    )

    const addChannel = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(AddChannelForm)(fields)
        const created = yield* channelAdmin.create(s.orgId, form)
        return yield* flashTo(s, "/settings/alerts", createdFlash(created))
      }).pipe(refused(s, "/settings/alerts")),
    )

    /** A channel's own page: its facts and its delivery log. */
    const showChannel = page((s) =>
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
    )

    // Each change of a channel is given the channel's id, the path of its page, the form's fields and the verb.

    const sendTest = (s: SignedIn, id: string, back: string) =>
      Effect.gen(function* () {
        const result = yield* channelAdmin.test(id)
        // Syslog has no HTTP status: only what happened and how long it took.
        const status = result.status === null ? "" : `, HTTP ${result.status}`
        return yield* flashTo(s, back, {
          kind: result.ok ? "ok" : "error",
          text: `Send test: ${result.ok ? "delivered" : "failed"}${status} in ${result.durationMs} ms at ${new Date().toISOString()}${result.error ? ` (${result.error})` : ""}.`,
        })
      })

    const setEnabled = (s: SignedIn, id: string, _back: string, _fields: Fields, verb: string) =>
      Effect.gen(function* () {
        yield* channelAdmin.setEnabled(id, verb === "enable")
        return yield* flashTo(s, "/settings/alerts", { kind: "ok", text: `Channel ${verb}d.` })
      })

    const setSensorHealth = (s: SignedIn, id: string, _back: string, _fields: Fields, verb: string) =>
      Effect.gen(function* () {
        const on = verb === "sensor-health-on"
        yield* channelAdmin.setSensorHealth(id, on)
        return yield* flashTo(s, "/settings/alerts", {
          kind: "ok",
          text: on ? "Sensor-health alerts on for this channel." : "Sensor-health alerts off for this channel.",
        })
      })

    const setSettle = (s: SignedIn, id: string, _back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(SettleForm)(fields)
        const result = yield* channelAdmin.setSettle(id, form.settle)
        return yield* flashTo(s, "/settings/alerts", {
          kind: "ok",
          text:
            result.settleSeconds === 0
              ? "Settle window off: every change is sent at once."
              : `Settle window set to ${result.settleSeconds} s: an incident's first message waits that long.`,
        })
      })

    const rotate = (s: SignedIn, id: string, _back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(RotateForm)(fields)
        const rotated = yield* channelAdmin.rotate(id, form.grace, form.replacement)
        return yield* flashTo(s, "/settings/alerts", rotatedFlash((yield* channelAdmin.find(id)).kind, rotated))
      })

    const CHANGES = {
      test: sendTest,
      enable: setEnabled,
      disable: setEnabled,
      "sensor-health-on": setSensorHealth,
      "sensor-health-off": setSensorHealth,
      settle: setSettle,
      rotate,
    }

    /** POST /settings/alerts/channels/<id>/<verb>: a verb the console does not know is the 404 page. */
    const changeChannel = action((s, fields) =>
      Effect.gen(function* () {
        const { id = "", verb = "" } = yield* HttpRouter.params
        const change = Object.hasOwn(CHANGES, verb) ? CHANGES[verb as keyof typeof CHANGES] : undefined
        if (change === undefined) return notFound(s.viewer)
        return yield* change(s, id, `/settings/alerts/channels/${encodeURIComponent(id)}`, fields, verb)
      }).pipe(refused(s, "/settings/alerts")),
    )

    const redeliver = action((s) =>
      Effect.gen(function* () {
        const { id = "" } = yield* HttpRouter.params
        yield* channelAdmin.redeliver(id)
        return yield* flashTo(s, "/settings/alerts", { kind: "ok", text: `Delivery ${id} queued again.` })
      }).pipe(refused(s, "/settings/alerts")),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/settings/alerts", listChannels),
      HttpRouter.post("/settings/alerts/channels", addChannel),
      HttpRouter.get("/settings/alerts/channels/:id", showChannel),
      HttpRouter.post("/settings/alerts/channels/:id/:verb", changeChannel),
      HttpRouter.post("/settings/alerts/deliveries/:id/redeliver", redeliver),
    )
  })
