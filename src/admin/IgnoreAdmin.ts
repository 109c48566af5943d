import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import { EVENT_TYPE_NAMES } from "../domain/eventTypes.ts"
import { isId, newId, type OrgId, type SensorId } from "../domain/ids.ts"
import { parseNetwork } from "../domain/ip.ts"
import { parseTimestamp } from "../domain/time.ts"
import { parseShortDuration } from "../platform/config.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { type IgnoreRuleRow, IgnoreRulesRepo } from "../repos/IgnoreRulesRepo.ts"
import { requireAdmin, requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { invalid, malformed, missing, notFound } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"

/** The longest note a rule keeps (it says why the activity is harmless: whose scanner, which ticket). */
export const NOTE_MAX = 500

/** What a rule is given, as the CLI's flags and the console's form fields spell it (all text, all checked here). */
export interface IgnoreRuleInput {
  /** An address (`192.0.2.7`, `2001:db8::7`) or a network (`192.0.2.0/24`, `2001:db8::/48`). */
  readonly source: string | undefined
  readonly sensor?: string | undefined
  readonly port?: string | undefined
  readonly type?: string | undefined
  readonly note?: string | undefined
  /** A duration from now (`30m`, `12h`, `7d`) or an RFC 3339 time with its zone. */
  readonly expires?: string | undefined
}

/** A rule as the CLI and the console show it. */
export interface IgnoreRuleView {
  readonly id: string
  readonly source: string
  readonly sensorId: SensorId | null
  readonly port: number | null
  readonly eventType: string | null
  readonly note: string
  readonly createdBy: string
  readonly createdAt: string
  readonly expiresAt: string | null
  readonly expired: boolean
  readonly hitCount: number
  readonly lastHitAt: string | null
  /** Ids of the other rules of the list that match exactly the same events (same source, sensor, port, type). */
  readonly sameAs: ReadonlyArray<string>
}

const blank = (value: string | undefined) => value === undefined || value.trim() === ""

/** The broadest network a rule may ignore: a /8 of IPv4, a /16 of IPv6 (a typo such as /1 would ignore half the world). */
export const BROADEST_PREFIX = { 4: 8, 6: 16 } as const

const matchKey = (r: IgnoreRuleRow) => `${r.source}|${r.sensorId ?? ""}|${r.port ?? ""}|${r.eventType ?? ""}`

const viewOf = (r: IgnoreRuleRow, all: ReadonlyArray<IgnoreRuleRow>, now: Date): IgnoreRuleView => ({
  id: r.id,
  source: r.source,
  sensorId: r.sensorId,
  port: r.port,
  eventType: r.eventType,
  note: r.note,
  createdBy: r.createdBy,
  createdAt: r.createdAt.toISOString(),
  expiresAt: r.expiresAt?.toISOString() ?? null,
  expired: r.expiresAt !== null && r.expiresAt.getTime() <= now.getTime(),
  hitCount: Number(r.hitCount),
  lastHitAt: r.lastHitAt?.toISOString() ?? null,
  sameAs: all.filter((o) => o.id !== r.id && matchKey(o) === matchKey(r)).map((o) => o.id),
})

/**
 * Ignore rules: an administrator of the organization (or the operator) adds and removes them, anyone of the
 * organization lists them; every change is audited. A rule applies to events ingested after it is added and until
 * it expires or is removed; it never changes what is already stored.
 */
export class IgnoreAdmin extends Effect.Service<IgnoreAdmin>()("IgnoreAdmin", {
  effect: Effect.gen(function* () {
    const rules = yield* IgnoreRulesRepo
    const orgAdmin = yield* OrgAdmin
    const sql = yield* SqlClient.SqlClient
    const { audited } = yield* auditing

    /** The rule as it would be stored, every field checked; nothing is written. */
    const check = Effect.fn("IgnoreAdmin.check")(function* (orgId: OrgId, input: IgnoreRuleInput, now: Date) {
      if (blank(input.source)) return yield* missing("source")
      const network = parseNetwork(input.source ?? "")
      if (network === undefined) {
        return yield* malformed("source", "must be an IP address or a network such as 192.0.2.0/24 or 2001:db8::/48")
      }
      if (network.prefix < BROADEST_PREFIX[network.version]) {
        return yield* malformed(
          "source",
          `is too broad: ${network.cidr} (a rule may ignore at most a /${BROADEST_PREFIX[network.version]} of IPv${network.version})`,
        )
      }
      const source = network.cidr
      let sensorId: SensorId | null = null
      if (!blank(input.sensor)) {
        const id = (input.sensor ?? "").trim()
        const unknown = invalid({
          field: "sensor",
          reason: "unknown",
          rule: `unknown sensor of this organization: ${id.slice(0, 64)}`,
        })
        if (!isId("sensor", id)) return yield* unknown
        const rows = yield* sql<{ orgId: string }>`select org_id from sensors where id = ${id}`.pipe(dbErrors)
        if (rows[0]?.orgId !== orgId) return yield* unknown
        sensorId = id
      }
      let port: number | null = null
      if (!blank(input.port)) {
        const text = (input.port ?? "").trim()
        if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) return yield* malformed("port", "must be 0 to 65535")
        port = Number(text)
      }
      let eventType: string | null = null
      if (!blank(input.type)) {
        const type = (input.type ?? "").trim()
        if (!EVENT_TYPE_NAMES.includes(type)) {
          return yield* invalid({
            field: "type",
            reason: "unknown",
            rule: `unknown event type ${type.slice(0, 64)} (docs/ingestion.md lists them)`,
          })
        }
        eventType = type
      }
      const note = (input.note ?? "").trim()
      if (note.length > NOTE_MAX || /[\p{Cc}\p{Cf}]/u.test(note.replace(/\n/g, ""))) {
        return yield* malformed("note", `must be at most ${NOTE_MAX} printable characters`)
      }
      let expiresAt: Date | null = null
      if (!blank(input.expires)) {
        const text = (input.expires ?? "").trim()
        const duration = parseShortDuration(text)
        const at = duration !== undefined ? new Date(now.getTime() + Duration.toMillis(duration)) : parseTimestamp(text)
        if (at === undefined) {
          return yield* malformed("expires", "must be a duration such as 12h or 7d, or an RFC 3339 time with its zone")
        }
        if (at.getTime() <= now.getTime()) return yield* malformed("expires", "must be in the future")
        expiresAt = at
      }
      return { source, sensorId, port, eventType, note, expiresAt }
    })

    const add = Effect.fn("IgnoreAdmin.add")(function* (org: string, input: IgnoreRuleInput) {
      const actor = yield* requireAdmin
      const orgId = (yield* orgAdmin.require(org)).id
      const now = new Date()
      const rule = yield* check(orgId, input, now)
      const created = yield* rules.create({
        id: newId("ignoreRule", now.getTime()),
        orgId,
        ...rule,
        createdBy: actor.id,
        createdAt: now,
      })
      const narrowing = [
        rule.sensorId && `sensor ${rule.sensorId}`,
        rule.port !== null && `port ${rule.port}`,
        rule.eventType && `type ${rule.eventType}`,
        rule.expiresAt && `until ${rule.expiresAt.toISOString()}`,
      ].filter(Boolean)
      yield* audited(orgId, "ignore.add", created.id, [rule.source, ...narrowing].join(" "))
      return viewOf(created, yield* rules.listByOrg(orgId), now)
    }, sql.withTransaction)

    /** The organization's rules (expired ones too, marked), oldest first; anyone of the organization may list. */
    const list = Effect.fn("IgnoreAdmin.list")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      const rows = yield* rules.listByOrg(orgId)
      const now = new Date()
      return rows.map((r) => viewOf(r, rows, now))
    })

    /** The rule, if the actor may see it (another organization's rule is unknown). */
    const find = Effect.fn("IgnoreAdmin.find")(function* (ruleId: string) {
      const unknown = notFound("ignoreRule", ruleId)
      const row = isId("ignoreRule", ruleId) ? yield* rules.findById(ruleId) : undefined
      if (row === undefined || row.removedAt !== null) return yield* unknown
      yield* requireScope(row.orgId, "ignoreRule", ruleId)
      return row
    })

    /** Removed: later events are no longer ignored by it; the events it ignored stay as they are. */
    const remove = Effect.fn("IgnoreAdmin.remove")(function* (ruleId: string) {
      const actor = yield* requireAdmin
      const row = yield* find(ruleId)
      const removed = yield* rules.remove(row.id, actor.id, new Date())
      if (!removed) return yield* notFound("ignoreRule", ruleId)
      yield* audited(row.orgId, "ignore.remove", row.id, `${row.source} (${row.hitCount} hits)`)
      return { id: row.id, removed: true as const }
    }, sql.withTransaction)

    return { add, list, find, remove, check } as const
  }),
}) {}
