import { Effect, Option } from "effect"
import { AppConfig } from "../config.ts"
import { newId } from "../domain/ids.ts"
import type { Severity } from "../domain/severity.ts"
import { EventsRepo } from "../repos/EventsRepo.ts"
import { IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { type NewDelivery, WebhooksRepo } from "../repos/WebhooksRepo.ts"
import { serializeWebhookBody, WEBHOOK_EVENTS, webhookIncident, webhookTypeOf } from "./payload.ts"

export interface RecordedTransition {
  readonly id: string
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly toSeverity: Severity
  readonly at: Date
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

    const enqueue = (input: {
      readonly orgId: string
      readonly incidentId: string
      readonly sensorProfile: string
      readonly transitions: ReadonlyArray<RecordedTransition>
    }) =>
      Effect.gen(function* () {
        const rows: Array<NewDelivery> = []
        let incident: Parameters<typeof webhookIncident> | undefined
        for (const transition of input.transitions) {
          const type = webhookTypeOf(transition.kind)
          if (type === undefined) continue
          const channels = yield* webhooks.matchingChannels(input.orgId, transition.toSeverity)
          if (channels.length === 0) continue
          if (incident === undefined) {
            // The incident as this transaction leaves it, with its newest events.
            const row = yield* incidents.findById(input.orgId, input.incidentId)
            if (Option.isNone(row)) return yield* Effect.dieMessage(`incident ${input.incidentId} vanished`)
            const recent = yield* events.recent(input.orgId, input.incidentId, WEBHOOK_EVENTS)
            incident = [row.value, input.sensorProfile, recent, config.appUrl]
          }
          const payload = webhookIncident(...incident)
          for (const channelId of channels) {
            const id = newId("webhookDelivery", transition.at.getTime())
            rows.push({
              id,
              orgId: input.orgId,
              channelId,
              transitionId: transition.id,
              type,
              incidentId: input.incidentId,
              body: serializeWebhookBody({ id, type, createdAt: transition.at, incident: payload }),
              status: "pending",
              nextAttemptAt: transition.at,
              createdAt: transition.at,
            })
          }
        }
        if (rows.length === 0) return 0
        yield* webhooks.insertDeliveries(rows)
        yield* webhooks.notify
        return rows.length
      })

    return { enqueue } as const
  }),
}) {}
