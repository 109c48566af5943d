import { HttpRouter } from "@effect/platform"
import { Duration, Effect, Schema } from "effect"
import { ChannelAdmin } from "../../admin/ChannelAdmin.ts"
import type { InviteOutcome } from "../../admin/emailRecipients.ts"
import { type ChannelKind, kindSpec } from "../../domain/channels/registry.ts"
import { AppConfig } from "../../platform/config.ts"
import { type ChannelDeliveryState, DeliveriesRepo } from "../../repos/DeliveriesRepo.ts"
import type { Flash } from "../components.tsx"
import { Blank, Checkbox, decodeForm, OptionalText, Text } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { notFound } from "../responses.tsx"
import { query, type SignedIn } from "../session.ts"
import { AlertsPage } from "./alertsPage.tsx"
import type { ChannelState } from "./channel.tsx"
import { DeliveryLogPage } from "./deliveryLogPage.tsx"

/**
 * After an Add channel: only a signing secret is ours to show (once); what an admin gave for the other kinds
 * (a URL that is a credential, a token) is stored sealed and is never shown again, so the kind's notice says so.
 */
const createdFlash = (created: {
  readonly id: string
  readonly kind: ChannelKind
  readonly secret?: string
  readonly recipients?: ReadonlyArray<InviteOutcome>
}): Flash => {
  const unsent = (created.recipients ?? []).filter((r) => r.state === "invited" && !r.mailed)
  return {
    kind: unsent.length === 0 ? "ok" : "error",
    text:
      unsent.length === 0
        ? kindSpec(created.kind).added(created.id)
        : `Email channel ${created.id} added, but the confirmation could not be mailed to ${unsent.map((r) => `${r.address} (${r.error ?? "refused"})`).join(", ")}: send it again from the channel's page.`,
    ...(created.secret === undefined ? {} : { secret: { label: "Its signing secret.", value: created.secret } }),
  }
}

/** What Invite says: who was mailed a link, who had confirmed already, whose mail failed. */
const invitedFlash = (outcomes: ReadonlyArray<InviteOutcome>): Flash => {
  const failed = outcomes.filter((o) => o.state === "invited" && !o.mailed)
  const mailed = outcomes.filter((o) => o.state === "invited" && o.mailed).map((o) => o.address)
  const confirmed = outcomes.filter((o) => o.state === "confirmed").map((o) => o.address)
  const recent = outcomes.filter((o) => o.state === "recent").map((o) => o.address)
  const parts = [
    ...(mailed.length > 0 ? [`Confirmation link mailed to ${mailed.join(", ")}.`] : []),
    ...(confirmed.length > 0 ? [`Already confirmed: ${confirmed.join(", ")}.`] : []),
    ...(recent.length > 0 ? [`Mailed a link less than 10 minutes ago, so not again yet: ${recent.join(", ")}.`] : []),
    ...(failed.length > 0
      ? [`Could not mail ${failed.map((o) => `${o.address} (${o.error ?? "refused"})`).join(", ")}.`]
      : []),
  ]
  return { kind: failed.length > 0 ? "error" : "ok", text: parts.join(" ") }
}

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
  url: OptionalText,
  token: OptionalText,
  recipients: OptionalText,
  minSeverity: Text,
  sensorHealth: Checkbox("on"),
  settle: OptionalText,
})
const SettleForm = Schema.Struct({ settle: Blank })
/** An email channel's recipient(s): addresses to invite, or the one to remove. */
const RecipientsForm = Schema.Struct({ recipients: Blank })
/** Rotate: a signing secret's grace period, or the new URL or token the receiver made (empty: not given). */
const RotateForm = Schema.Struct({ grace: OptionalText, replacement: OptionalText })

type Fields = Record<string, string>

/** The window of the list's failure count. */
const FAILURE_WINDOW_MS = 24 * 60 * 60 * 1000

/** Where a refused Add channel returns: the list with the form open again, to correct and resend. */
const ADD_AGAIN = "/settings/alerts?add=1"

/** A row of the one query as the list shows it. */
const stateOf = (row: ChannelDeliveryState): ChannelState => ({
  failures: row.failures,
  last:
    row.lastId === null || row.lastDeliveryStatus === null || row.lastCreatedAt === null
      ? null
      : {
          id: row.lastId,
          type: row.lastType ?? "",
          status: row.lastDeliveryStatus,
          attempts: row.lastAttempts ?? 0,
          response: row.lastResponse,
          error: row.lastError,
          createdAt: row.lastCreatedAt,
          attemptedAt: row.lastAttemptAt,
          deliveredAt: row.lastDeliveredAt,
          nextAttemptAt: row.lastNextAttemptAt ?? row.lastCreatedAt,
        },
})

/**
 * Settings → Alerts: channels of every kind and format, a webhook's secret (shown once), rotation as the kind needs
 * it, test sends and the delivery log with redelivery.
 */
export const alertRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const channelAdmin = yield* ChannelAdmin
    const deliveries = yield* DeliveriesRepo
    const config = yield* AppConfig
    const { page, action, flashTo, readFlash, refused } = kit
    /** How long a delivery may still be tried after it was made: the whole retry schedule. */
    const retrySpanMs = config.webhooks.retrySchedule.reduce((sum, d) => sum + Duration.toMillis(d), 0)

    const listChannels = page((s) =>
      Effect.gen(function* () {
        const now = new Date()
        const since = new Date(now.getTime() - FAILURE_WINDOW_MS)
        const [channels, rows] = yield* Effect.all([
          channelAdmin.list(s.orgId),
          deliveries.channelStates(s.orgId, since, new Date(since.getTime() - retrySpanMs)),
        ])
        const states = new Map(rows.map((row) => [row.channelId as string, stateOf(row)]))
        const addOpen = (yield* query).get("add") === "1"
        return html(
          <AlertsPage
            viewer={s.viewer}
            channels={channels}
            states={states}
            addOpen={addOpen}
            flash={yield* readFlash(s)}
            now={now}
          />,
        )
      }),
    )

    const addChannel = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(AddChannelForm)(fields)
        const created = yield* channelAdmin.create(s.orgId, form)
        return yield* flashTo(s, "/settings/alerts", createdFlash(created))
      }).pipe(refused(s, ADD_AGAIN)),
    )

    /** A channel's own page: its facts and its delivery log. */
    const showChannel = page((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        const channel = (yield* channelAdmin.list(s.orgId)).find((c) => c.id === id)
        if (channel === undefined) return notFound(s.viewer)
        const deliveries = yield* channelAdmin.deliveries(channel.id, undefined)
        const recipients =
          kindSpec(channel.kind).transport === "smtp" ? yield* channelAdmin.recipients(channel.id) : undefined
        return html(
          <DeliveryLogPage
            viewer={s.viewer}
            channel={channel}
            recipients={recipients}
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

    const invite = (s: SignedIn, id: string, back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(RecipientsForm)(fields)
        const outcomes = yield* channelAdmin.inviteRecipients(id, form.recipients)
        return yield* flashTo(s, back, invitedFlash(outcomes))
      })

    const removeRecipient = (s: SignedIn, id: string, back: string, fields: Fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(RecipientsForm)(fields)
        const done = yield* channelAdmin.removeRecipient(id, form.recipients)
        return yield* flashTo(s, back, {
          kind: "ok",
          text: `${done.removed} no longer receives this channel's alerts.`,
        })
      })

    const CHANGES = {
      test: sendTest,
      enable: setEnabled,
      disable: setEnabled,
      "sensor-health-on": setSensorHealth,
      "sensor-health-off": setSensorHealth,
      settle: setSettle,
      rotate,
      invite,
      "remove-recipient": removeRecipient,
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
