import type { IncidentId } from "../domain/ids.ts"
import { incidentTexts } from "../domain/narrative.ts"
import type { OwnNetwork } from "../domain/networks.ts"
import { maxSeverity, type Severity, severityRank } from "../domain/severity.ts"
import { BAIT_CREDENTIAL_TAG, judgedSeverity } from "../domain/significance.ts"

/**
 * The grouping rules as pure functions: which incident an event joins, how an incident's
 * aggregate changes, which transitions that records. The Ingestor applies them inside one transaction.
 */

export interface IncidentAggregate {
  readonly status: "open" | "closed"
  /** The judged severity (`severityInContext`). */
  readonly severity: Severity
  /** The highest severity of the member events. */
  readonly eventsSeverity: Severity
  readonly eventCount: number
  readonly eventTypes: ReadonlyArray<string>
  /** Member events by type. */
  readonly typeCounts: Readonly<Record<string, number>>
  /** A member event logged in with a bait credential. */
  readonly baitCredential: boolean
  readonly tags: ReadonlyArray<string>
  readonly usernames: ReadonlyArray<string>
  readonly highConfidence: boolean
  readonly firstSeenAt: Date
  readonly lastSeenAt: Date
  readonly resolvedAt: Date | null
}

export interface CurrentIncident extends IncidentAggregate {
  readonly id: IncidentId
  readonly sourceScope: "internal" | "external"
  readonly sourceNetwork: OwnNetwork | null
  readonly linked: boolean
  /** Other sensors that saw the source, as last written (optional: rows of tests and older versions). */
  readonly otherSensors?: number | undefined
}

/**
 * What an incident is judged with besides its events: where its source is (the organization's network holding it,
 * or null outside), whether the source was on another sensor when the incident began (kept for its life), and how
 * many other sensors saw it lately (for the texts).
 */
export interface IncidentContext {
  readonly insideNetwork: OwnNetwork | null
  readonly linked: boolean
  readonly otherSensors: number
}

export const NO_CONTEXT: IncidentContext = { insideNetwork: null, linked: false, otherSensors: 0 }

/** The severity of an aggregate in its context: its events, its most significant activity, inside, linked. */
export const severityInContext = (
  a: Pick<IncidentAggregate, "eventsSeverity" | "typeCounts" | "baitCredential">,
  context: IncidentContext,
): Severity => judgedSeverity(a, { internal: context.insideNetwork !== null, linked: context.linked })

/** What an event brings to its incident. */
export interface EventContribution {
  readonly time: Date
  readonly type: string
  readonly severity: Severity
  readonly confidence: "low" | "normal" | "high"
  readonly tags: ReadonlyArray<string>
  readonly username: string | undefined
}

export type Decision =
  | { readonly kind: "create" }
  | { readonly kind: "join"; readonly incident: CurrentIncident }
  | { readonly kind: "reopen"; readonly incident: CurrentIncident }

/**
 * Join the key's newest incident when it is open, or re-open it when it was resolved within the window
 * (measured back from now, the arrival of the activity); otherwise start a new incident.
 */
export const decide = (newest: CurrentIncident | undefined, nowMs: number, reopenWindowMs: number): Decision => {
  if (newest === undefined) return { kind: "create" }
  if (newest.status === "open") return { kind: "join", incident: newest }
  if (newest.resolvedAt !== null && nowMs - newest.resolvedAt.getTime() <= reopenWindowMs) {
    return { kind: "reopen", incident: newest }
  }
  return { kind: "create" }
}

export const MAX_USERNAMES = 5
const union = (a: ReadonlyArray<string>, b: Iterable<string>) => [...new Set([...a, ...b])].sort()

/**
 * The aggregate after adding events: highConfidence is any high, and the severity is judged from the events'
 * highest, the most significant activity and the context (`severityInContext`).
 */
export const merge = (
  base: IncidentAggregate | undefined,
  events: ReadonlyArray<EventContribution>,
  context: IncidentContext = NO_CONTEXT,
): IncidentAggregate => {
  const times = events.map((e) => e.time.getTime())
  // An incident all of whose events an ignore rule came to ignore (a Cowrie session completed late) has no times of
  // its own: the first events to join it again set them, as for a new incident.
  const seen = base !== undefined && base.eventCount > 0 ? base : undefined
  const first = Math.min(...times, seen?.firstSeenAt.getTime() ?? Number.POSITIVE_INFINITY)
  // lastSeenAt is the latest event time, also when events arrive out of order.
  const last = Math.max(...times, seen?.lastSeenAt.getTime() ?? Number.NEGATIVE_INFINITY)
  const usernames = [...(base?.usernames ?? [])]
  for (const e of events) {
    if (e.username && usernames.length < MAX_USERNAMES && !usernames.includes(e.username)) usernames.push(e.username)
  }
  const typeCounts: Record<string, number> = { ...(base?.typeCounts ?? {}) }
  for (const e of events) typeCounts[e.type] = (typeCounts[e.type] ?? 0) + 1
  const eventsSeverity = events.reduce<Severity>(
    (acc, e) => maxSeverity(acc, e.severity),
    base?.eventsSeverity ?? "low",
  )
  const baitCredential = (base?.baitCredential ?? false) || events.some((e) => e.tags.includes(BAIT_CREDENTIAL_TAG))
  const judged = severityInContext({ eventsSeverity, typeCounts, baitCredential }, context)
  return {
    status: "open",
    // Never below what the incident already announced: a severity only rises while the incident lives.
    severity: base === undefined ? judged : maxSeverity(base.severity, judged),
    eventsSeverity,
    typeCounts,
    baitCredential,
    eventCount: (base?.eventCount ?? 0) + events.length,
    eventTypes: union(
      base?.eventTypes ?? [],
      events.map((e) => e.type),
    ),
    tags: union(
      base?.tags ?? [],
      events.flatMap((e) => e.tags),
    ),
    usernames,
    highConfidence: (base?.highConfidence ?? false) || events.some((e) => e.confidence === "high"),
    firstSeenAt: new Date(first),
    lastSeenAt: new Date(last),
    resolvedAt: null,
  }
}

export type TransitionKind = "created" | "escalated" | "reopened" | "closed"
export interface Transition {
  readonly kind: TransitionKind
  readonly fromSeverity: Severity | null
  readonly toSeverity: Severity
}

/**
 * The transitions one change records. A re-open is one `reopened` transition even when the severity also rose
 * (it carries the new severity); an open incident whose severity rose records `escalated`.
 */
export const transitionsOf = (decision: Decision, after: IncidentAggregate): ReadonlyArray<Transition> => {
  switch (decision.kind) {
    case "create":
      return [{ kind: "created", fromSeverity: null, toSeverity: after.severity }]
    case "reopen":
      return [{ kind: "reopened", fromSeverity: decision.incident.severity, toSeverity: after.severity }]
    case "join":
      return severityRank(after.severity) > severityRank(decision.incident.severity)
        ? [{ kind: "escalated", fromSeverity: decision.incident.severity, toSeverity: after.severity }]
        : []
  }
}

/** The service's texts for an incident, from its most significant activity and its context. */
export const textsFor = (
  aggregate: IncidentAggregate,
  sensorName: string,
  sourceIp: string,
  context: IncidentContext = NO_CONTEXT,
) =>
  incidentTexts({
    eventTypes: aggregate.eventTypes,
    typeCounts: aggregate.typeCounts,
    sensorName,
    sourceIp,
    eventCount: aggregate.eventCount,
    usernames: aggregate.usernames,
    bait: aggregate.baitCredential,
    insideNetwork: context.insideNetwork,
    otherSensors: context.otherSensors,
  })
