import { SqlClient } from "@effect/sql"
import { Duration, Effect, Option } from "effect"
import { type IncidentId, isId, type OrgId, type UserId } from "../domain/ids.ts"
import { canonicalIp } from "../domain/ip.ts"
import { parseTimestamp } from "../domain/time.ts"
import { parseShortDuration } from "../platform/config.ts"
import { AlertOutbox, closedDeliveries } from "../repos/AlertOutbox.ts"
import { ConsoleUsersRepo } from "../repos/ConsoleUsersRepo.ts"
import { IncidentNotesRepo } from "../repos/IncidentNotesRepo.ts"
import { type BulkCloseFilter, IncidentsRepo } from "../repos/IncidentsRepo.ts"
import { SensorsRepo } from "../repos/SensorsRepo.ts"
import { CLOSE_REASONS, type CloseReason, closedTransitions, TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { AdminActor, requireScope, requireWriter } from "./actor.ts"
import { auditing } from "./common.ts"
import { type Field, invalid, malformed, missing, notFound } from "./errors.ts"

/** A note (on an incident, or with a close) is at most this many characters. */
export const NOTE_MAX = 2000
/** A bulk close closes at most this many incidents; the rest stay open for the next one. */
export const BULK_CLOSE_MAX = 10_000
/** A bulk close's preview lists this many of the incidents it would close (and counts the rest). */
export const BULK_PREVIEW_LISTED = 50
/** One acknowledge or assign changes at most this many incidents. */
export const TRIAGE_MAX = 100

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
 * Incidents as a person triages them: closing one with a reason and a note, notes, closing every open incident
 * that a filter matches, acknowledging and assigning. An administrator or analyst of the incident's organization (not a viewer) may do each; the
 * operator any organization's. Each is audited.
 */
export class IncidentAdmin extends Effect.Service<IncidentAdmin>()("IncidentAdmin", {
  effect: Effect.gen(function* () {
    const incidents = yield* IncidentsRepo
    const transitions = yield* TransitionsRepo
    const outbox = yield* AlertOutbox
    const notes = yield* IncidentNotesRepo
    const sensors = yield* SensorsRepo
    const users = yield* ConsoleUsersRepo
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
      yield* requireWriter
      const reason = yield* checkReason(input.reason)
      const note = yield* checkNote("note", input.note, false)
      const owned = yield* ownerOf(incidentId, "notOpen")
      const actor = yield* AdminActor
      const now = new Date()
      const closed = yield* incidents.close(owned.id, now, reason)
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
      yield* requireWriter
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
      // The first of those a close would close (least recently seen first), for a person to look at before closing.
      const first = matching === 0 ? [] : yield* incidents.previewMatching(filter, BULK_PREVIEW_LISTED)
      return { orgId: filter.orgId, matching, wouldClose: Math.min(matching, BULK_CLOSE_MAX), filter, first }
    })

    /**
     * The incidents a triage change is about: 1 to TRIAGE_MAX ids (repeats counted once), every one an incident of
     * the organization, locked until the transaction ends. Any other id (malformed, unknown, another organization's)
     * refuses the whole change as an unknown incident, before anything is written.
     */
    const triageTargets = (orgId: string | undefined, ids: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const actor = yield* AdminActor
        const org = orgId ?? (actor._tag === "OrgUser" ? actor.orgId : undefined)
        if (org === undefined || org === "") return yield* missing("org")
        if (!isId("organization", org)) return yield* notFound("organization", org)
        yield* requireScope(org, "organization", org)
        const unique = [...new Set(ids.map((id) => id.trim()))]
        if (unique.length === 0 || unique.length > TRIAGE_MAX) {
          return yield* invalid({ reason: "malformed", detail: `Choose 1 to ${TRIAGE_MAX} incidents at once.` })
        }
        const wellFormed: Array<IncidentId> = []
        for (const id of unique) {
          if (!isId("incident", id)) return yield* notFound("incident", id.slice(0, 64))
          wellFormed.push(id)
        }
        const owned = new Set(yield* incidents.lockOwned(org, wellFormed))
        const stranger = wellFormed.find((id) => !owned.has(id))
        if (stranger !== undefined) return yield* notFound("incident", stranger)
        return { orgId: org, ids: wellFormed, actor }
      })

    /**
     * Acknowledges (someone has seen them) 1 to TRIAGE_MAX incidents of an organization, open or closed: the first
     * acknowledgement stands, so one acknowledged already is left as it is. Each change is a row update (the incident
     * feed shows it), a history row and an audit row, in one transaction. Returns the ids it changed.
     */
    const acknowledge = Effect.fn("IncidentAdmin.acknowledge")(function* (
      orgId: string | undefined,
      ids: ReadonlyArray<string>,
    ) {
      yield* requireWriter
      const target = yield* triageTargets(orgId, ids)
      const changed = yield* incidents.acknowledge(target.orgId, target.ids, target.actor.id, new Date())
      for (const id of changed) yield* audited(target.orgId, "incident.acknowledge", id, null)
      return { orgId: target.orgId, asked: target.ids.length, changed }
    }, sql.withTransaction)

    /**
     * Assigns 1 to TRIAGE_MAX incidents of an organization to one of its enabled users, or to nobody (null or "").
     * An incident that has that owner already is left as it is. Each change is a row update (the incident feed shows
     * it), a history row and an audit row naming the assignee, in one transaction. Returns the ids it changed.
     */
    const assign = Effect.fn("IncidentAdmin.assign")(function* (
      orgId: string | undefined,
      ids: ReadonlyArray<string>,
      assigneeUserId: string | null,
    ) {
      yield* requireWriter
      const target = yield* triageTargets(orgId, ids)
      const wanted = assigneeUserId === null ? "" : assigneeUserId.trim()
      let assignee: { id: UserId; email: string } | null = null
      if (wanted !== "") {
        const user = isId("consoleUser", wanted) ? yield* users.findById(wanted) : Option.none()
        if (Option.isNone(user) || user.value.orgId !== target.orgId || user.value.disabledAt !== null) {
          return yield* malformed("assignee", "must be an enabled user of this organization")
        }
        assignee = { id: user.value.id, email: user.value.email }
      }
      const changed = yield* incidents.assign(
        target.orgId,
        target.ids,
        assignee?.id ?? null,
        target.actor.id,
        new Date(),
      )
      for (const id of changed) {
        yield* audited(
          target.orgId,
          "incident.assign",
          id,
          assignee === null ? "unassigned" : `assigned to ${assignee.email} (${assignee.id})`,
        )
      }
      return { orgId: target.orgId, asked: target.ids.length, changed, assignee: assignee?.email ?? null }
    }, sql.withTransaction)

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
      yield* requireWriter
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
            first: yield* incidents.previewMatching(filter, BULK_PREVIEW_LISTED),
          }
        }
      }
      const cap = expected === undefined ? BULK_CLOSE_MAX : Math.min(expected, BULK_CLOSE_MAX)
      const closed = cap <= 0 ? [] : yield* incidents.closeMatching(filter, now, cap, reason)
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

    return { close, addNote, previewBulk, closeBulk, acknowledge, assign } as const
  }),
}) {}
