import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { maskSecret } from "../domain/attackerInput.ts"
import { type IncidentId, isId, type OrgId, type SensorId } from "../domain/ids.ts"
import { incidentTexts } from "../domain/narrative.ts"
import {
  classifySource,
  formatNetworkList,
  type OwnNetwork,
  parseNetworkList,
  type SourceClassification,
} from "../domain/networks.ts"
import { sanitizeText } from "../domain/sanitize.ts"
import { type Severity, severityRank } from "../domain/severity.ts"
import { judgedSeverity } from "../domain/significance.ts"
import { dbErrors } from "../platform/db/errors.ts"
import { Keys } from "../platform/keys.ts"
import { AlertOutbox } from "../repos/AlertOutbox.ts"
import { BaitCredentialsRepo } from "../repos/BaitCredentialsRepo.ts"
import { NetworksRepo } from "../repos/NetworksRepo.ts"
import { OrgsRepo } from "../repos/OrgsRepo.ts"
import { TransitionsRepo } from "../repos/TransitionsRepo.ts"
import { requireAdmin, requireScope } from "./actor.ts"
import { auditing } from "./common.ts"
import { invalid, malformed, missing, notFound } from "./errors.ts"
import { OrgAdmin } from "./OrgAdmin.ts"

/** The longest username and password a bait pair may have (a planted credential is short; this bounds the input). */
export const BAIT_FIELD_MAX = 256

export interface NetworksView {
  readonly networks: ReadonlyArray<OwnNetwork>
  /** False while the organization has the default private ranges (nobody edited the list). */
  readonly custom: boolean
}

export interface BaitCredentialView {
  readonly id: string
  readonly username: string
  readonly label: string
  readonly createdAt: string
}

/** An incident as re-judging reads it. */
interface JudgedRow {
  // Branded as read: the table's keys guarantee the kinds.
  readonly id: IncidentId
  readonly sensorId: SensorId
  readonly sensorName: string
  readonly sensorProfile: string
  readonly sourceIp: string
  readonly status: "open" | "closed"
  readonly severity: Severity
  readonly eventsSeverity: Severity
  readonly eventCount: number
  readonly eventTypes: ReadonlyArray<string>
  readonly typeCounts: Record<string, number>
  readonly usernames: ReadonlyArray<string>
  readonly baitCredential: boolean
  readonly linked: boolean
  readonly otherSensors: number
}

/** Incidents re-judged per statement when the list changes (bounded memory however many an organization has). */
const REJUDGE_PAGE = 500

const sameClassification = (a: SourceClassification, scope: string, network: unknown) =>
  a.scope === scope && JSON.stringify(a.network) === JSON.stringify(scope === "internal" ? network : null)

/**
 * How incidents are judged, as an organization sets it: its own networks (a source inside one is internal) and the
 * credentials it planted as bait. Administrators change them, anyone of the organization reads them; every change
 * is audited. A change of the networks re-judges the organization's incidents in the same transaction: an open
 * incident whose severity rises is escalated (and alerted) like any other.
 */
export class JudgementAdmin extends Effect.Service<JudgementAdmin>()("JudgementAdmin", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const networksRepo = yield* NetworksRepo
    const baits = yield* BaitCredentialsRepo
    const orgs = yield* OrgsRepo
    const orgAdmin = yield* OrgAdmin
    const transitions = yield* TransitionsRepo
    const outbox = yield* AlertOutbox
    const { sealer } = yield* Keys
    const { audited } = yield* auditing

    const networks = Effect.fn("JudgementAdmin.networks")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      return (yield* networksRepo.get(orgId)) satisfies NetworksView
    })

    /** Every incident of the organization whose source changes side or network gets its judgement written again. */
    const rejudge = Effect.fn("JudgementAdmin.rejudge")(function* (orgId: OrgId, list: ReadonlyArray<OwnNetwork>) {
      const now = new Date()
      const sources = yield* sql<{ sourceIp: string; sourceScope: string; sourceNetwork: unknown }>`
        select distinct source_ip, source_scope, source_network from incidents where org_id = ${orgId}`.pipe(dbErrors)
      const changed = new Map<string, SourceClassification>()
      for (const s of sources) {
        const now = classifySource(s.sourceIp, list)
        if (!sameClassification(now, s.sourceScope, s.sourceNetwork)) changed.set(s.sourceIp, now)
      }
      const ips = [...changed.keys()]
      let rejudged = 0
      for (let i = 0; i < ips.length; i += REJUDGE_PAGE) {
        const page = ips.slice(i, i + REJUDGE_PAGE)
        const rows = yield* sql<JudgedRow>`
          select i.id, i.sensor_id, s.name as sensor_name, s.profile as sensor_profile, i.source_ip, i.status,
            i.severity, coalesce(i.events_severity, i.severity) as events_severity, i.event_count, i.event_types, i.type_counts, i.usernames,
            i.bait_credential, i.linked, i.other_sensors
          from incidents i join sensors s on s.id = i.sensor_id
          where i.org_id = ${orgId} and i.source_ip in ${sql.in(page)}
          order by i.id for update of i`.pipe(dbErrors)
        const updates = rows.map((r) => {
          const network = changed.get(r.sourceIp)?.network ?? null
          const severity = judgedSeverity(r, { internal: network !== null, linked: r.linked })
          const texts = incidentTexts({
            eventTypes: r.eventTypes,
            typeCounts: r.typeCounts,
            sensorName: r.sensorName,
            sourceIp: r.sourceIp,
            eventCount: r.eventCount,
            usernames: r.usernames,
            bait: r.baitCredential,
            insideNetwork: network,
            otherSensors: r.otherSensors,
          })
          return { row: r, severity, network, texts }
        })
        yield* sql`
          update incidents i set source_scope = u.source_scope, source_network = u.source_network,
            severity = u.severity, title = u.title, narrative = u.narrative, recommended_action = u.recommended_action,
            updated_at = ${now}
          from jsonb_to_recordset(${JSON.stringify(
            updates.map((u) => ({
              id: u.row.id,
              source_scope: u.network === null ? "external" : "internal",
              source_network: u.network,
              severity: u.severity,
              title: u.texts.title,
              narrative: u.texts.narrative,
              recommended_action: u.texts.recommendedAction,
            })),
          )}::text::jsonb) as u(id text, source_scope text, source_network jsonb, severity text, title text,
            narrative text, recommended_action text)
          where i.id = u.id and i.org_id = ${orgId}`.pipe(dbErrors)
        // An open incident that now reads more severe is escalated, as new activity would escalate it.
        const rising = updates.filter(
          (u) => u.row.status === "open" && severityRank(u.severity) > severityRank(u.row.severity),
        )
        const ids = yield* transitions.insert(
          rising.map((u) => ({
            orgId,
            incidentId: u.row.id,
            kind: "escalated" as const,
            fromSeverity: u.row.severity,
            toSeverity: u.severity,
            at: now,
          })),
        )
        yield* outbox.enqueueAll(
          rising.map((u, n) => ({
            orgId,
            incidentId: u.row.id,
            sensorProfile: u.row.sensorProfile,
            transitions: [{ id: ids[n] ?? "", kind: "escalated" as const, toSeverity: u.severity, at: now }],
          })),
        )
        rejudged += rows.length
      }
      return rejudged
    })

    /**
     * Sets the organization's networks from an admin's text (one `cidr label` a line), or back to the default
     * private ranges with `null`; re-judges its incidents in the same transaction.
     */
    const setNetworks = Effect.fn("JudgementAdmin.setNetworks")(
      function* (org: string, text: string | null) {
        yield* requireAdmin
        const orgId = (yield* orgAdmin.require(org)).id
        let list: ReadonlyArray<OwnNetwork> | null = null
        if (text !== null) {
          const read = parseNetworkList(text)
          if ("problem" in read) {
            return yield* malformed("networks", `line ${read.problem.line}: ${read.problem.reason}`)
          }
          list = read.networks
        }
        // Taken for update: ingestion classifying a new incident holds the row shared until it commits, so every
        // incident is either judged by the new list there or re-judged here.
        yield* networksRepo.lock(orgId)
        yield* networksRepo.set(orgId, list)
        const view = yield* networksRepo.get(orgId)
        const rejudged = yield* rejudge(orgId, view.networks)
        yield* audited(
          orgId,
          list === null ? "networks.reset" : "networks.set",
          orgId,
          `${view.networks.length} networks; ${rejudged} incidents re-judged`,
        )
        return { ...view, rejudged, text: formatNetworkList(view.networks) }
      },
      (effect) => sql.withTransaction(effect),
    )

    const viewOf = (r: { id: string; username: string; label: string; createdAt: Date }): BaitCredentialView => ({
      id: r.id,
      username: r.username,
      label: r.label,
      createdAt: new Date(r.createdAt).toISOString(),
    })

    const baitList = Effect.fn("JudgementAdmin.baitList")(function* (org: string) {
      const orgId = (yield* orgAdmin.require(org)).id
      return (yield* baits.list(orgId)).map(viewOf)
    })

    /**
     * Registers a username and password planted as bait. The password is kept only as the keyed fingerprint
     * captured passwords get (HMAC with the organization's own key), so a login with it is recognised and the
     * password itself is stored nowhere.
     */
    const baitAdd = Effect.fn("JudgementAdmin.baitAdd")(
      function* (
        orgText: string,
        input: { username?: string | undefined; password?: string | undefined; label?: string | undefined },
      ) {
        yield* requireAdmin
        const orgId = (yield* orgAdmin.require(orgText)).id
        if (input.username === undefined || input.username === "") return yield* missing("username")
        if (input.password === undefined || input.password === "") return yield* missing("password")
        const username = sanitizeText(input.username)
        if (username !== input.username || [...username].length > BAIT_FIELD_MAX) {
          return yield* malformed("username", `must be at most ${BAIT_FIELD_MAX} printable characters`)
        }
        if ([...input.password].length > BAIT_FIELD_MAX) {
          return yield* malformed("password", `must be at most ${BAIT_FIELD_MAX} characters`)
        }
        const label = (input.label ?? "").trim()
        if (label.length > 200 || /[\p{Cc}\p{Cf}]/u.test(label)) {
          return yield* malformed("label", "must be at most 200 printable characters")
        }
        const org = yield* orgs.findById(orgId)
        const key = Option.isSome(org) ? sealer.open(org.value.fingerprintKey) : undefined
        if (key === undefined) return yield* Effect.dieMessage(`fingerprint key of ${orgId} cannot be opened`)
        const now = new Date()
        const id = yield* baits.add(
          orgId,
          { username, passwordFingerprint: maskSecret(input.password, key).fingerprint, label },
          now,
        )
        if (id === undefined)
          return yield* invalid({
            field: "username",
            reason: "taken",
            detail: "this username and password are already registered as bait",
          })
        yield* audited(orgId, "bait.add", id, `username ${JSON.stringify(username)}`)
        return viewOf({ id, username, label, createdAt: now })
      },
      (effect) => sql.withTransaction(effect),
    )

    const baitRemove = Effect.fn("JudgementAdmin.baitRemove")(
      function* (id: string) {
        yield* requireAdmin
        const unknown = notFound("baitCredential", id.slice(0, 64))
        // The foreign key guarantees the kind of id.
        const rows = isId("baitCredential", id)
          ? yield* sql<{ orgId: OrgId }>`select org_id from bait_credentials where id = ${id}`.pipe(dbErrors)
          : []
        const orgId = rows[0]?.orgId
        if (orgId === undefined) return yield* unknown
        yield* requireScope(orgId, "baitCredential", id.slice(0, 64))
        if (!(yield* baits.remove(orgId, id))) return yield* unknown
        yield* audited(orgId, "bait.remove", id, null)
        return { id, removed: true as const }
      },
      (effect) => sql.withTransaction(effect),
    )

    return { networks, setNetworks, baitList, baitAdd, baitRemove } as const
  }),
}) {}
