import { Effect, Option } from "effect"
import { newId } from "../domain/ids.ts"
import { meetsMinimum, type Severity } from "../domain/severity.ts"
import { AppConfig } from "../platform/config.ts"
import { EventsRepo } from "./EventsRepo.ts"
import { type IncidentRow, IncidentsRepo } from "./IncidentsRepo.ts"
import { type NewDelivery, WebhooksRepo } from "./WebhooksRepo.ts"
import { serializeWebhookBody, WEBHOOK_EVENTS, webhookIncident, webhookTypeOf } from "../domain/webhookBody.ts"

export interface RecordedTransition {
  readonly id: string
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly toSeverity: Severity
  readonly at: Date
}

export interface OutboxEntry {
  readonly orgId: string
  readonly incidentId: string
  readonly sensorProfile: string
  readonly transitions: ReadonlyArray<RecordedTransition>
  /**
   * The incident exactly as this transaction leaves it, when the caller has it (ingestion just wrote it): saves
   * re-reading it. Without it the row is read back.
   */
  readonly incident?: IncidentRow | undefined
}

/**
 * The webhook outbox (D15, D17): called inside the transaction that records incident transitions, it writes one
 * delivery row per (announced transition, matching channel) with its final body, so a delivery exists exactly when
 * its transition does: nothing is lost on a crash, and every retry sends the same bytes.
 */
export class WebhookOutbox extends Effect.Service<WebhookOutbox>()("WebhookOutbox", {
  effect: Effect.gen(function* () {
    const webhooks = yield* WebhooksRepo
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const config = yield* AppConfig

    /**
     * The deliveries of many incidents' transitions (one ingestion request): each organization's channels are read
     * once, and all rows are written with one insert and one NOTIFY. Nothing is read when no transition is announced.
     */
    const enqueueAll = Effect.fn("WebhookOutbox.enqueueAll")(function* (entries: ReadonlyArray<OutboxEntry>) {
      const announced = entries.filter((e) => e.transitions.some((t) => webhookTypeOf(t.kind) !== undefined))
      if (announced.length === 0) return 0
      // D15: a channel receives an incident whose severity is at least its minimum (enabled channels, by id).
      const channelsOf = new Map<string, ReadonlyArray<{ readonly id: string; readonly minSeverity: Severity }>>()
      for (const orgId of new Set(announced.map((e) => e.orgId))) {
        const all = yield* webhooks.listChannels(orgId)
        channelsOf.set(
          orgId,
          all.filter((c) => c.enabled).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
        )
      }
      const rows: Array<NewDelivery> = []
      for (const entry of announced) {
        const channels = channelsOf.get(entry.orgId) ?? []
        if (channels.length === 0) continue
        let incident: Parameters<typeof webhookIncident> | undefined
        for (const transition of entry.transitions) {
          const type = webhookTypeOf(transition.kind)
          if (type === undefined) continue
          const matching = channels.filter((c) => meetsMinimum(transition.toSeverity, c.minSeverity))
          if (matching.length === 0) continue
          if (incident === undefined) {
            // The incident as this transaction leaves it, with its newest events.
            let row = entry.incident
            if (row === undefined) {
              const found = yield* incidents.findById(entry.orgId, entry.incidentId)
              if (Option.isNone(found)) return yield* Effect.dieMessage(`incident ${entry.incidentId} vanished`)
              row = found.value
            }
            const recent = yield* events.recent(entry.orgId, entry.incidentId, WEBHOOK_EVENTS)
            incident = [row, entry.sensorProfile, recent, config.appUrl]
          }
          const payload = webhookIncident(...incident)
          for (const channel of matching) {
            const id = newId("webhookDelivery", transition.at.getTime())
            rows.push({
              id,
              orgId: entry.orgId,
              channelId: channel.id,
              transitionId: transition.id,
              type,
              incidentId: entry.incidentId,
              body: serializeWebhookBody({ id, type, createdAt: transition.at, incident: payload }),
              status: "pending",
              nextAttemptAt: transition.at,
              createdAt: transition.at,
            })
          }
        }
      }
      if (rows.length === 0) return 0
      yield* webhooks.insertDeliveries(rows)
      yield* webhooks.notify
      return rows.length
    })

    return { enqueueAll } as const
  }),
}) {}
