// channelsByOrg runs in each ingestion transaction that announces a transition (hot path): fnUntraced, no span.
import { Effect, Option } from "effect"
import {
  type AlertIncident,
  alertIncident,
  alertTypeOf,
  type IncidentMessageType,
  MESSAGE_EVENTS,
  serializeAlertMessage,
} from "../domain/alertMessage.ts"
import { channelsReached } from "../domain/alertRouting.ts"
import { type ChannelId, type IncidentId, newId, type OrgId } from "../domain/ids.ts"
import type { Severity } from "../domain/severity.ts"
import { AppConfig } from "../platform/config.ts"
import { type ChannelRow, ChannelsRepo } from "./ChannelsRepo.ts"
import { DeliveriesRepo, type NewDelivery } from "./DeliveriesRepo.ts"
import { EventsRepo } from "./EventsRepo.ts"
import { type IncidentRow, IncidentsRepo } from "./IncidentsRepo.ts"
import { SensorsRepo } from "./SensorsRepo.ts"

export interface RecordedTransition {
  readonly id: string
  readonly kind: "created" | "escalated" | "reopened" | "closed"
  readonly toSeverity: Severity
  readonly at: Date
}

export interface OutboxEntry {
  readonly orgId: OrgId
  readonly incidentId: IncidentId
  readonly sensorProfile: string
  readonly transitions: ReadonlyArray<RecordedTransition>
  /**
   * The incident exactly as this transaction leaves it, when the caller has it (ingestion just wrote it): saves
   * re-reading it. Without it the row is read back.
   */
  readonly incident?: IncidentRow | undefined
}

/** What enqueueClosed takes for incidents just closed, given their `closed` transitions' ids in the same order. */
export const closedDeliveries = (
  closed: ReadonlyArray<{ readonly orgId: OrgId; readonly id: IncidentId; readonly severity: Severity }>,
  transitionIds: ReadonlyArray<string>,
  at: Date,
) =>
  closed.map((c, i) => ({
    orgId: c.orgId,
    incidentId: c.id,
    transitionId: transitionIds[i] ?? "",
    severity: c.severity,
    at,
  }))

/** An announced transition that a channel with a settle window matched, and the incident as it leaves it. */
interface Held {
  readonly entry: OutboxEntry
  readonly channel: OutboxChannel
  readonly transition: RecordedTransition
  readonly type: IncidentMessageType
  readonly incident: AlertIncident
}

type OutboxChannel = Pick<ChannelRow, "id" | "enabled" | "minSeverity" | "settleSeconds">

/**
 * The alert outbox: called inside the transaction that records incident transitions, it writes one
 * delivery row per (announced transition, channel it reaches) with its final message, so a delivery exists exactly when
 * its transition does: nothing is lost on a crash, and every retry sends the same bytes.
 *
 * Human channels settle: on a channel with a settle window (Slack, Teams; kinds.ts), an incident's first message is
 * due when the window ends instead of at once, and a later transition while it waits (never attempted nor claimed)
 * rewrites its body with the incident as it now stands instead of adding a row. So created → escalated → escalated
 * within the window is one message with the final severity, title and narrative; it keeps its first type (for people
 * who never saw the incident, it is new: "escalated" would speak of a state they were never told), its id and its
 * row, and its `createdAt` is the time of the state it carries. A channel whose minimum the incident reaches only
 * later gets its first message then, held by its window in the same way, with the state at the end of the window.
 * Once the first message has been claimed by a dispatcher, each later transition is a message of its own, at once.
 * The rewrite is in this transaction, so the message and the transitions still commit together, and the row stays the
 * one the dispatcher sends and retries byte for byte once it has been claimed. Machine channels (window 0) get a row
 * per transition, as ever.
 */
export class AlertOutbox extends Effect.Service<AlertOutbox>()("AlertOutbox", {
  effect: Effect.gen(function* () {
    const channelRepo = yield* ChannelsRepo
    const deliveryRepo = yield* DeliveriesRepo
    const incidents = yield* IncidentsRepo
    const events = yield* EventsRepo
    const sensors = yield* SensorsRepo
    const config = yield* AppConfig

    /** Each organization's channels that `keep` accepts, read once per organization (by id, as listed). */
    const channelsByOrg = Effect.fnUntraced(function* (
      orgIds: Iterable<OrgId>,
      keep: (channel: ChannelRow) => boolean,
    ) {
      const byOrg = new Map<string, ReadonlyArray<OutboxChannel>>()
      for (const orgId of new Set(orgIds)) {
        byOrg.set(orgId, (yield* channelRepo.listChannels(orgId)).filter(keep))
      }
      return byOrg
    })

    /** One delivery per channel of a transition, its body the native message of `type` at the transition's time. */
    const deliveriesOf = (
      target: { readonly orgId: OrgId; readonly incidentId: IncidentId },
      transition: { readonly id: string; readonly at: Date },
      type: IncidentMessageType,
      incident: AlertIncident,
      channels: ReadonlyArray<{ readonly id: ChannelId }>,
      after?: { readonly settleSeconds: number },
    ): Array<NewDelivery> =>
      channels.map((channel) => {
        const id = newId("webhookDelivery", transition.at.getTime())
        return {
          id,
          orgId: target.orgId,
          channelId: channel.id,
          transitionId: transition.id,
          type,
          incidentId: target.incidentId,
          body: serializeAlertMessage({ id, type, createdAt: transition.at, incident }),
          status: "pending",
          nextAttemptAt:
            after === undefined ? transition.at : new Date(transition.at.getTime() + after.settleSeconds * 1000),
          createdAt: transition.at,
        }
      })

    /**
     * The rows of transitions that channels with a settle window matched (see above), in transition order: one row
     * due at the end of the window for an incident's first message to a channel, with the state the last of these
     * transitions leaves; a waiting first message rewritten with that state; or, after the first message was claimed,
     * one row per transition, at once.
     */
    const settled = Effect.fnUntraced(function* (held: ReadonlyArray<Held>) {
      const groups = new Map<string, Array<Held>>()
      for (const h of held) {
        const key = `${h.channel.id} ${h.entry.incidentId}`
        const group = groups.get(key)
        if (group === undefined) groups.set(key, [h])
        else group.push(h)
      }
      const firsts = yield* deliveryRepo.firstDeliveries(
        [...new Set(held.map((h) => h.channel.id))],
        [...new Set(held.map((h) => h.entry.incidentId))],
      )
      const firstOf = new Map(firsts.map((f) => [`${f.channelId} ${f.incidentId}`, f]))
      const rows: Array<NewDelivery> = []
      for (const [key, group] of groups) {
        const head = group[0]
        const last = group[group.length - 1]
        if (head === undefined || last === undefined) continue
        const first = firstOf.get(key)
        if (first === undefined) {
          const [row] = deliveriesOf(
            head.entry,
            head.transition,
            head.type,
            last.incident,
            [head.channel],
            head.channel,
          )
          if (row !== undefined) {
            rows.push({
              ...row,
              body: serializeAlertMessage({
                id: row.id,
                type: head.type,
                createdAt: last.transition.at,
                incident: last.incident,
              }),
            })
          }
          continue
        }
        if (first.waiting) {
          const body = serializeAlertMessage({
            id: first.id,
            type: first.type,
            createdAt: last.transition.at,
            incident: last.incident,
          })
          if (yield* deliveryRepo.replaceWaitingBody(first.id, body)) continue
        }
        // The first message is out, or being sent: these transitions are messages of their own.
        for (const h of group) rows.push(...deliveriesOf(h.entry, h.transition, h.type, h.incident, [h.channel]))
      }
      return rows
    })

    /** The rows in one insert, and one NOTIFY once the transaction commits; how many. */
    const write = (rows: ReadonlyArray<NewDelivery>) =>
      rows.length === 0
        ? Effect.succeed(0)
        : Effect.as(Effect.zipRight(deliveryRepo.insertDeliveries(rows), deliveryRepo.notify), rows.length)

    /**
     * The deliveries of many incidents' transitions (one ingestion request): each organization's channels are read
     * once, and all rows are written with one insert and one NOTIFY. Nothing is read when no transition is announced.
     */
    const enqueueAll = Effect.fn("AlertOutbox.enqueueAll")(function* (entries: ReadonlyArray<OutboxEntry>) {
      const announced = entries.filter((e) => e.transitions.some((t) => alertTypeOf(t.kind) !== undefined))
      if (announced.length === 0) return 0
      const channelsOf = yield* channelsByOrg(
        announced.map((e) => e.orgId),
        () => true,
      )
      const rows: Array<NewDelivery> = []
      const held: Array<Held> = []
      for (const entry of announced) {
        const channels = channelsOf.get(entry.orgId) ?? []
        if (channels.length === 0) continue
        let incident: Parameters<typeof alertIncident> | undefined
        for (const transition of entry.transitions) {
          const type = alertTypeOf(transition.kind)
          if (type === undefined) continue
          const matching = channelsReached(channels, transition.toSeverity)
          if (matching.length === 0) continue
          if (incident === undefined) {
            // The incident as this transaction leaves it, with its newest events.
            let row = entry.incident
            if (row === undefined) {
              const found = yield* incidents.findById(entry.orgId, entry.incidentId)
              if (Option.isNone(found)) return yield* Effect.dieMessage(`incident ${entry.incidentId} vanished`)
              row = found.value
            } else {
              // Ingestion's own row has no enrichment: what is known of the address by now goes with the message.
              row = { ...row, ...(yield* incidents.sourceFacts(row.sourceIp)) }
            }
            const recent = yield* events.recent(entry.orgId, entry.incidentId, MESSAGE_EVENTS)
            incident = [row, entry.sensorProfile, recent, config.appUrl]
          }
          const payload = alertIncident(...incident)
          rows.push(
            ...deliveriesOf(
              entry,
              transition,
              type,
              payload,
              matching.filter((c) => c.settleSeconds === 0),
            ),
          )
          for (const channel of matching) {
            if (channel.settleSeconds > 0) held.push({ entry, channel, transition, type, incident: payload })
          }
        }
      }
      if (held.length > 0) rows.push(...(yield* settled(held)))
      return yield* write(rows)
    })

    /**
     * The deliveries of closes, to the channels that send OCSF (its Close activity; the spec's webhook announces
     * no close), in the transaction that closed the incidents. `closed` lists each incident with its `closed`
     * transition. Without an OCSF channel in these organizations it reads one list of channels and writes nothing.
     */
    const enqueueClosed = Effect.fn("AlertOutbox.enqueueClosed")(function* (
      closed: ReadonlyArray<{
        readonly orgId: OrgId
        readonly incidentId: IncidentId
        readonly transitionId: string
        readonly severity: Severity
        readonly at: Date
      }>,
    ) {
      if (closed.length === 0) return 0
      const channelsOf = yield* channelsByOrg(
        closed.map((c) => c.orgId),
        (c) => c.format === "ocsf",
      )
      const rows: Array<NewDelivery> = []
      const profiles = new Map<string, string>()
      for (const entry of closed) {
        const matching = channelsReached(channelsOf.get(entry.orgId) ?? [], entry.severity)
        if (matching.length === 0) continue
        const found = yield* incidents.findById(entry.orgId, entry.incidentId)
        if (Option.isNone(found)) return yield* Effect.dieMessage(`incident ${entry.incidentId} vanished`)
        const row = found.value
        let profile = profiles.get(row.sensorId)
        if (profile === undefined) {
          const sensor = yield* sensors.findById(row.sensorId)
          profile = Option.isSome(sensor) ? sensor.value.profile : "unknown"
          profiles.set(row.sensorId, profile)
        }
        const recent = yield* events.recent(entry.orgId, entry.incidentId, MESSAGE_EVENTS)
        const payload = alertIncident(row, profile, recent, config.appUrl)
        rows.push(
          ...deliveriesOf(entry, { id: entry.transitionId, at: entry.at }, "incident.closed", payload, matching),
        )
      }
      return yield* write(rows)
    })

    return { enqueueAll, enqueueClosed } as const
  }),
}) {}
