/**
 * How significant an incident's activity is, and so what its title, severity and advice follow: its most
 * significant activity, not its first event. The order, most significant first:
 *
 * 1. a bait credential used (someone read a planted credential where it was planted, inside),
 * 2. commands run or a file written (hands on the decoy),
 * 3. a login that succeeded,
 * 4. a file uploaded or downloaded,
 * 5. an exploitation attempt,
 * 6. brute force (two or more login attempts),
 * 7. a single login attempt,
 * 8. a scan or a probe,
 * 9. a bare connection.
 *
 * Within one activity the type with the most events leads (then the more severe type, then the first by name), so
 * an incident of 30 FTP and 3 MySQL login attempts is an FTP brute force whichever came first.
 */
import { EVENT_TYPES, type EventTypeSpec } from "./eventTypes.ts"
import { maxSeverity, SEVERITIES, type Severity, severityRank } from "./severity.ts"

export const ACTIVITIES = [
  "bait_credential",
  "commands",
  "login_success",
  "transfer",
  "exploit_attempt",
  "brute_force",
  "login_attempt",
  "scan",
  "connection",
] as const
export type Activity = (typeof ACTIVITIES)[number]

/** The words an analyst reads for each activity (docs, console). */
export const ACTIVITY_NAMES: Readonly<Record<Activity, string>> = {
  bait_credential: "bait credential used",
  commands: "commands run or file written",
  login_success: "login success",
  transfer: "upload or download",
  exploit_attempt: "exploitation attempt",
  brute_force: "brute force",
  login_attempt: "single login attempt",
  scan: "scan or probe",
  connection: "bare connection",
}

/**
 * The least severity an activity gives its incident; the member events' own severities still count (an
 * exploit that succeeded is critical whatever its activity).
 */
const ACTIVITY_FLOOR: Readonly<Record<Activity, Severity>> = {
  bait_credential: "critical",
  commands: "high",
  login_success: "high",
  transfer: "low",
  exploit_attempt: "low",
  brute_force: "low",
  login_attempt: "low",
  scan: "low",
  connection: "low",
}

/** The tag an event carries when its login used a bait credential (it also gives the event T1078). */
export const BAIT_CREDENTIAL_TAG = "bait-credential"

/** Event types whose action alone does not say their activity. */
const BY_TYPE: Readonly<Record<string, Activity>> = {
  "ssh.port_forward": "commands",
  "ssh.exploit_success": "commands",
  "telnet.exploit_success": "commands",
  "smb.file_open": "transfer",
  "git.clone_request": "transfer",
  "tftp.request": "transfer",
  "llmnr.poisoning": "exploit_attempt",
  "http.request": "scan",
  "ntp.monlist": "scan",
  "snmp.request": "scan",
  "sip.request": "scan",
}

const BY_ACTION: Readonly<Record<string, Activity>> = {
  command: "commands",
  login_success: "login_success",
  file_download: "transfer",
  file_upload: "transfer",
  file_download_failed: "transfer",
  exploit_attempt: "exploit_attempt",
  login_attempt: "login_attempt",
  pubkey_attempt: "login_attempt",
  scan: "scan",
}

/** The activity of one event type (unknown types are bare connections: nothing more is known of them). */
export const activityOfType = (type: string): Activity => {
  const byType = BY_TYPE[type]
  if (byType !== undefined) return byType
  const spec = EVENT_TYPES.get(type)
  return (spec === undefined ? undefined : BY_ACTION[spec.action]) ?? "connection"
}

const rank = (a: Activity): number => ACTIVITIES.indexOf(a)

/** Services that are not a decoy service an attacker talked to (a scan touches ports, not a service). */
const NOT_A_SERVICE: ReadonlySet<string> = new Set(["portscan", "decoy", "tcp"])

export interface ActivityJudgement {
  /** The most significant activity. */
  readonly activity: Activity
  /** The event type that leads it, undefined when the incident has no known type. */
  readonly primary: EventTypeSpec | undefined
  /** How many events of the primary type. */
  readonly primaryCount: number
  /** Decoy services other than the primary's that the source talked to. */
  readonly otherServices: ReadonlyArray<string>
}

/**
 * The most significant activity of an incident from its event counts by type. `bait` is whether any member event
 * used a bait credential (that outranks everything, whatever the event's type).
 */
export const judgeActivity = (counts: Readonly<Record<string, number>>, bait: boolean): ActivityJudgement => {
  const loginAttempts = Object.entries(counts)
    .filter(([type]) => activityOfType(type) === "login_attempt")
    .reduce((n, [, c]) => n + c, 0)
  let best: { activity: Activity; spec: EventTypeSpec; count: number } | undefined
  for (const [type, count] of Object.entries(counts)) {
    const spec = EVENT_TYPES.get(type)
    if (spec === undefined || count <= 0) continue
    let activity = activityOfType(type)
    if (activity === "login_attempt" && loginAttempts >= 2) activity = "brute_force"
    if (best === undefined) {
      best = { activity, spec, count }
      continue
    }
    const byActivity = rank(best.activity) - rank(activity)
    const byCount = count - best.count
    const bySeverity = severityRank(spec.severity) - severityRank(best.spec.severity)
    if (
      byActivity > 0 ||
      (byActivity === 0 &&
        (byCount > 0 || (byCount === 0 && (bySeverity > 0 || (bySeverity === 0 && type < best.spec.type)))))
    ) {
      best = { activity, spec, count }
    }
  }
  // A bait credential is used in a login: that login's type names the incident, whatever else the source did
  // (a success before an attempt, then the type with more events, then by name).
  if (bait) {
    const logins = Object.entries(counts)
      .filter(
        ([type, n]) =>
          n > 0 && EVENT_TYPES.has(type) && ["login_success", "login_attempt"].includes(activityOfType(type)),
      )
      .sort(
        ([a, n], [b, m]) => rank(activityOfType(a)) - rank(activityOfType(b)) || m - n || (a < b ? -1 : a > b ? 1 : 0),
      )
    const [type, count] = logins[0] ?? []
    const spec = type === undefined ? undefined : EVENT_TYPES.get(type)
    if (spec !== undefined) best = { activity: activityOfType(spec.type), spec, count: count ?? 0 }
  }
  const services = new Set(
    Object.keys(counts)
      .map((t) => EVENT_TYPES.get(t)?.service)
      .filter((s): s is string => s !== undefined && !NOT_A_SERVICE.has(s)),
  )
  if (best !== undefined) services.delete(best.spec.service)
  return {
    activity: bait ? "bait_credential" : (best?.activity ?? "connection"),
    primary: best?.spec,
    primaryCount: best?.count ?? 0,
    otherServices: [...services].sort(),
  }
}

/** One step up the scale, at most critical. */
export const stepUp = (s: Severity): Severity => SEVERITIES[Math.min(severityRank(s) + 1, SEVERITIES.length - 1)] ?? s

export interface SeverityInputs {
  /** The highest severity of the member events. */
  readonly eventsSeverity: Severity
  readonly activity: Activity
  /** The source is inside one of the organization's networks. */
  readonly internal: boolean
  /** The source was already seen on another of the organization's sensors when this incident began. */
  readonly linked: boolean
}

/**
 * An incident's severity: the highest of its events and of its activity's floor; at least high from inside the
 * organization's networks; one step up when the same source had already touched another decoy (it is sweeping
 * the decoys or moving laterally).
 */
export const incidentSeverity = (i: SeverityInputs): Severity => {
  let severity = maxSeverity(i.eventsSeverity, ACTIVITY_FLOOR[i.activity])
  if (i.internal) severity = maxSeverity(severity, "high")
  if (i.linked) severity = stepUp(severity)
  return severity
}

/**
 * The severity of an incident from what it keeps (its events' highest severity, its events by type, the bait flag)
 * and where its source is: the one rule ingestion and the re-judging of a changed network list both apply.
 */
export const judgedSeverity = (
  a: {
    readonly eventsSeverity: Severity
    readonly typeCounts: Readonly<Record<string, number>>
    readonly baitCredential: boolean
  },
  where: { readonly internal: boolean; readonly linked: boolean },
): Severity =>
  incidentSeverity({
    eventsSeverity: a.eventsSeverity,
    activity: judgeActivity(a.typeCounts, a.baitCredential).activity,
    internal: where.internal,
    linked: where.linked,
  })
