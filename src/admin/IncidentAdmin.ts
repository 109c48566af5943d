import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option } from "effect"
import { isId, type OrgId } from "../domain/ids.ts"
import { canonicalIp } from "../domain/ip.ts"
import { parseTimestamp } from "../domain/time.ts"
import { parseShortDuration } from "../platform/config.ts"
import { AlertOutbox, closedDeliveries } from "../repos/AlertOutbox.ts"
import { IncidentNotesRepo } from "../repos/IncidentNotesRepo.ts"
import { type BulkCloseFilter, IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { SensorsRepo } from "../repos/SensorsRepo.ts"
import { CLOSE_REASONS, type CloseReason, closedTransitions, TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { AdminActor, requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { type Field, invalid, malformed, missing, notFound } from "./errors.ts"

/** A note (on an incident, or with a close) is at most this many characters. */
export const NOTE_MAX = 2000
/** A bulk close closes at most this many incidents; the rest stay open for the next one. */
export const BULK_CLOSE_MAX = 10_000

/** What a person gives when closing: a reason (required) and an optional note. */
export interface CloseInput {
  readonly reason: string | undefined
  readonly note?: string | undefined
}

/** A bulk close's filter as typed (CLI flags, console fields); at least one of the three is required. */
export interface BulkFilterInput {
  readonly sensor?: string | undefined
  readonly source?: string | undefined
  /** A duration before now (`7d`, `12h`, `30m`) or a time (`2026-11-01`, `2026-11-01T00:00:00Z`). */
  readonly olderThan?: string | undefined
}

export const checkReason = (reason: string | undefined) => {
  if (reason === undefined || reason.trim() === "") return Effect.fail(missing("reason"))
  const r = reason.trim()
  return (CLOSE_REASONS as ReadonlyArray<string>).includes(r)
    ? Effect.succeed(r as CloseReason)
    : Effect.fail(malformed("reason", `must be one of ${CLOSE_REASONS.join(", ")}`))
}

// Control characters (a line break too, as everywhere in the console's forms), and the bidirectional controls that
// reorder what is shown.
const REFUSED = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u

/**
 * A note as stored: plain text, trimmed, 1 to NOTE_MAX characters; its line breaks are kept (as \n), any other control
 * character is refused. Undefined for an empty optional note.
 */
export const checkNote = (field: Field, text: string | undefined, required: boolean) => {
  const trimmed = (text ?? "").replace(/\r\n?/g, "\n").trim()
  if (trimmed === "") return required ? Effect.fail(missing(field)) : Effect.succeed(undefined)
  if (trimmed.length > NOTE_MAX) return Effect.fail(malformed(field, `may be at most ${NOTE_MAX} characters`))
  if (REFUSED.test(trimmed.replaceAll("\n", "")) || !trimmed.isWellFormed()) {
    return Effect.fail(malformed(field, "may not hold control characters"))
  }
  return Effect.succeed(trimmed)
}

/** "Last seen older than": a duration before `now`, a date (midnight UTC) or an RFC 3339 time. */
export const parseOlderThan = (text: string, now: Date): Date | undefined => {
  const t = text.trim()
  const duration = parseShortDuration(t)
  if (duration !== undefined) return new Date(now.getTime() - Duration.toMillis(duration))
  if (/^\d{4}-\d{2}-\d{2}$/.test(t)) return parseTimestamp(`${t}T00:00:00Z`)
  return parseTimestamp(t)
}

/**
 * Incidents as a person triages them: closing one with a reason and a note, notes, and closing every open
 * incident that a filter matches. Any user of the incident's organization (admin or analyst) may do each; the
 * operator any organization's. Each is audited.
 */
export class IncidentAdmin extends Effect.Service<IncidentAdmin>()("IncidentAdmin", {
  effect: Effect.gen(function* () {
    const incidents = yield* IncidentsRepo
    const transitions = yield* TransitionsRepo
    const outbox = yield* AlertOutbox
    const notes = yield* IncidentNotesRepo
    const sensors = yield* SensorsRepo
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing

    /** The organization of an incident the actor may see; another organization's is unknown, as if it did not exist. */
    const ownerOf = (incidentId: string, reason: "unknown" | "notOpen") =>
      Effect.gen(function* () {
        if (!isId("incident", incidentId)) return yield* notFound("incident", incidentId, reason)
        // The foreign key guarantees the kind of id.
        const rows = yield* sql<{ orgId: OrgId }>`select org_id from incidents where id = ${incidentId}`
        const owner = rows[0]?.orgId
        if (owner === undefined) return yield* notFound("incident", incidentId, reason)
        yield* requireScope(owner, "incident", incidentId, reason)
        return { orgId: owner, id: incidentId }
      })

    /**
     * resolvedAt is set, a `closed` transition with the reason, note and closer recorded and the close audited
     * (with its reason), in one transaction.
     */
    const close = Effect.fn("IncidentAdmin.close")(function* (incidentId: string, input: CloseInput) {
      const reason = yield* checkReason(input.reason)
      const note = yield* checkNote("note", input.note, false)
      const owned = yield* ownerOf(incidentId, "notOpen")
      const actor = yield* AdminActor
      const now = new Date()
      const closed = yield* incidents.close(owned.id, now)
      if (Option.isNone(closed)) return yield* notFound("incident", incidentId, "notOpen")
      const c = closed.value
      const ids = yield* transitions.insert(
        closedTransitions([c], now, { reason, note: note ?? null, actor: actor.id }),
      )
      yield* outbox.enqueueClosed(closedDeliveries([c], ids, now))
      yield* audited(c.orgId, "incident.close", c.id, `reason ${reason}${note === undefined ? "" : ", with a note"}`)
      return { id: c.id, status: "closed" as const, reason, resolvedAt: c.resolvedAt.toISOString() }
    }, sql.withTransaction)

    /** A note on an incident of the actor's organization: plain text, its author and time. */
    const addNote = Effect.fn("IncidentAdmin.addNote")(function* (incidentId: string, text: string | undefined) {
      const body = yield* checkNote("note", text, true)
      if (body === undefined) return yield* missing("note")
      const { orgId, id } = yield* ownerOf(incidentId, "unknown")
      const actor = yield* AdminActor
      const added = yield* notes.add({ orgId, incidentId: id, author: actor.id, body })
      yield* audited(orgId, "incident.note", id, `${body.length} characters`)
      return { id: added.id, incidentId: id, createdAt: added.createdAt.toISOString() }
    }, sql.withTransaction)

    /** The filter checked: the organization in scope, a sensor of it, a source address, a time. */
    const bulkFilter = (orgId: string | undefined, input: BulkFilterInput, now: Date) =>
      Effect.gen(function* () {
        const actor = yield* AdminActor
        const org = orgId ?? (actor._tag === "OrgUser" ? actor.orgId : undefined)
        if (org === undefined || org === "") return yield* missing("org")
        if (!isId("organization", org)) return yield* notFound("organization", org)
        yield* requireScope(org, "organization", org)
        const given = (s: string | undefined) => (s === undefined || s.trim() === "" ? undefined : s.trim())
        const sensor = given(input.sensor)
        const source = given(input.source)
        const olderThan = given(input.olderThan)
        if (sensor === undefined && source === undefined && olderThan === undefined) {
          return yield* invalid({ reason: "required", oneOf: ["sensor", "source", "olderThan"] })
        }
        const filter: { -readonly [K in keyof BulkCloseFilter]: BulkCloseFilter[K] } = { orgId: org }
        if (sensor !== undefined) {
          const found = isId("sensor", sensor) ? yield* sensors.findById(sensor) : Option.none()
          if (Option.isNone(found) || found.value.orgId !== org) {
            return yield* malformed("sensor", "must be a sensor id of this organization")
          }
          filter.sensorId = found.value.id
        }
        if (source !== undefined) {
          const ip = canonicalIp(source)
          if (ip === undefined) return yield* malformed("source", "must be an IP address")
          filter.sourceIp = ip
        }
        if (olderThan !== undefined) {
          const before = parseOlderThan(olderThan, now)
          if (before === undefined) {
            return yield* malformed("olderThan", "must be a duration such as 7d or 12h, or a date such as 2026-11-01")
          }
          filter.seenBefore = before
        }
        return filter as BulkCloseFilter
      })

    /** How many open incidents the filter matches now, and how many a bulk close would close (the cap). */
    const previewBulk = Effect.fn("IncidentAdmin.previewBulk")(function* (
      orgId: string | undefined,
      input: BulkFilterInput,
    ) {
      const filter = yield* bulkFilter(orgId, input, new Date())
      const matching = yield* incidents.countMatching(filter)
      return { orgId: filter.orgId, matching, wouldClose: Math.min(matching, BULK_CLOSE_MAX), filter }
    })

    /**
     * Closes the open incidents the filter matches (at most BULK_CLOSE_MAX, least recently seen first), each with a
     * `closed` transition carrying the reason, note and closer; one audit row with the count.
     *
     * `expected` is the count a preview showed (the console's confirm): then at most that many are closed, and when
     * more match now than were previewed nothing is closed and the new count is returned to be previewed again. The
     * console sends `olderThan` as the absolute time its preview resolved, so the confirm closes the same filter.
     */
    const closeBulk = Effect.fn("IncidentAdmin.closeBulk")(function* (
      orgId: string | undefined,
      input: BulkFilterInput,
      close: CloseInput,
      expected?: number,
    ) {
      const reason = yield* checkReason(close.reason)
      const note = yield* checkNote("note", close.note, false)
      const now = new Date()
      const filter = yield* bulkFilter(orgId, input, now)
      const actor = yield* AdminActor
      if (expected !== undefined) {
        const matching = yield* incidents.countMatching(filter)
        if (matching > expected) {
          return {
            _tag: "Changed" as const,
            orgId: filter.orgId,
            matching,
            wouldClose: Math.min(matching, BULK_CLOSE_MAX),
            previewed: expected,
            filter,
          }
        }
      }
      const cap = expected === undefined ? BULK_CLOSE_MAX : Math.min(expected, BULK_CLOSE_MAX)
      const closed = cap <= 0 ? [] : yield* incidents.closeMatching(filter, now, cap)
      const ids = yield* transitions.insert(
        closedTransitions(closed, now, { reason, note: note ?? null, actor: actor.id }),
      )
      yield* outbox.enqueueClosed(closedDeliveries(closed, ids, now))
      const remaining = yield* incidents.countMatching(filter)
      const described = [
        filter.sensorId && `sensor ${filter.sensorId}`,
        filter.sourceIp && `source ${filter.sourceIp}`,
        filter.seenBefore && `last seen before ${filter.seenBefore.toISOString()}`,
      ].filter(Boolean)
      yield* audited(
        filter.orgId,
        "incident.bulk_close",
        null,
        `${closed.length} closed, reason ${reason}${note === undefined ? "" : ", with a note"}; ${described.join(", ")}`,
      )
      return { _tag: "Closed" as const, orgId: filter.orgId, closed: closed.length, remaining, reason }
    }, sql.withTransaction)

    return { close, addNote, previewBulk, closeBulk } as const
  }),
}) {}
