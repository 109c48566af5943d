/**
 * The incident texts (title, narrative, recommended action), written by the service from the event-type table and
 * the incident's judgement: its most significant activity (`significance.ts`), whether its source is inside the
 * organization's networks, whether a bait credential was used, and whether the source touched other decoys.
 * Attacker text only appears quoted (`quoteAttackerText`), so it reads as data and cannot pose as the service's words.
 */
import { quoteAttackerText } from "./eventSummary.ts"
import { EVENT_TYPES } from "./eventTypes.ts"
import type { OwnNetwork } from "./networks.ts"
import { BAIT_ACTION, ISOLATE_SOURCE, insideAction } from "./recommendedActions.ts"
import { judgeActivity } from "./significance.ts"

/** At most this many usernames are quoted in an incident narrative. */
export const NARRATIVE_MAX_USERNAMES = 5
/** At most this many event types are named in an incident narrative. */
const NARRATIVE_MAX_TYPES = 6

const GENERIC_TITLE = "Decoy activity"
const GENERIC_ACTION = ISOLATE_SOURCE

const typeLabel = (type: string): string => EVENT_TYPES.get(type)?.label ?? `event type ${quoteAttackerText(type)}`

const listWithMore = (items: ReadonlyArray<string>, max: number, noun?: string): string => {
  const shown = items.slice(0, max).join(", ")
  const rest = items.length - max
  if (rest <= 0) return shown
  return noun === undefined ? `${shown} and ${rest} more` : `${shown} and ${rest} more ${noun}`
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

/** "from inside your network (Office LAN)": the words every text and alert uses for an internal source. */
export const insideWords = (network: OwnNetwork): string => `from inside your network (${network.label})`

export interface IncidentTextInput {
  readonly eventTypes: ReadonlyArray<string>
  /** Events by type; without it each type present counts once and the incident's count goes to the first. */
  readonly typeCounts?: Readonly<Record<string, number>> | undefined
  readonly sensorName: string
  readonly sourceIp: string
  readonly eventCount: number
  readonly usernames: ReadonlyArray<string>
  /** A member event logged in with a bait credential. */
  readonly bait?: boolean | undefined
  /** The organization's network holding the source; undefined or null for an external source. */
  readonly insideNetwork?: OwnNetwork | null | undefined
  /** Other sensors of the organization that saw the same source within the linking window. */
  readonly otherSensors?: number | undefined
}

const countsOf = (i: IncidentTextInput): Readonly<Record<string, number>> => {
  if (i.typeCounts !== undefined && Object.keys(i.typeCounts).length > 0) return i.typeCounts
  const counts: Record<string, number> = {}
  for (const type of i.eventTypes) counts[type] = 1
  const first = i.eventTypes[0]
  if (first !== undefined && i.eventTypes.length === 1) counts[first] = Math.max(1, i.eventCount)
  return counts
}

/** The advice of an event type without the opening every one of them shares. */
const specificAdvice = (action: string): string =>
  action.startsWith(ISOLATE_SOURCE) ? action.slice(ISOLATE_SOURCE.length).trim() : action

/**
 * The incident texts. `usernames` are already-sanitized attacker text and only appear quoted; `sensorName` (set by
 * an admin) is quoted as well; a network's label is the admin's words.
 *
 * - title: the most significant activity's heading (its event label when that type has a single event, the
 *   incident title otherwise; brute force when two or more login attempts), "and N other services" when the source
 *   talked to more, the source address (and "from inside your network (label)") and the sensor.
 * - narrative: what matters first (a bait credential used, an inside source), then counts and types, the usernames
 *   tried (at most 5 quoted), the other sensors that saw the source, and why it matters.
 * - recommendedAction: the bait advice, else the inside advice with the activity's own, else the activity's own.
 */
export const incidentTexts = (
  i: IncidentTextInput,
): { readonly title: string; readonly narrative: string; readonly recommendedAction: string } => {
  const sensor = JSON.stringify(i.sensorName)
  const judged = judgeActivity(countsOf(i), i.bait === true)
  const primary = judged.primary
  let heading = GENERIC_TITLE
  if (primary !== undefined) {
    if (judged.activity === "bait_credential") heading = `Bait credential used: ${primary.label}`
    else if (judged.activity === "brute_force") heading = primary.incidentTitle
    else heading = judged.primaryCount === 1 ? primary.label : primary.incidentTitle
  }
  let others = judged.otherServices.length
  // Single attempts spread over services are no one service's brute force: the title says how many services.
  if (judged.activity === "brute_force" && judged.primaryCount === 1 && others > 0) {
    heading = `Login attempts on ${others + 1} services`
    others = 0
  }
  const more = others === 0 ? "" : ` and ${plural(others, "other service", "other services")}`
  const inside = i.insideNetwork ?? null
  const from = inside === null ? `from ${i.sourceIp}` : `${insideWords(inside)}: ${i.sourceIp}`
  const title = `${heading}${more} ${from} on sensor ${sensor}`

  const types = [...new Set(i.eventTypes)]
  const count = Number.isFinite(i.eventCount) && i.eventCount >= 0 ? Math.floor(i.eventCount) : 0
  const sentences: Array<string> = []
  if (i.bait === true) {
    sentences.push(
      "A bait credential was used: it exists only where it was planted, so whoever logged in read it there, inside.",
    )
  }
  if (inside !== null) {
    sentences.push(
      `The source is ${insideWords(inside).slice("from ".length)}, ${inside.cidr}: one of your own machines touched a decoy.`,
    )
  }
  const typesText = types.length === 0 ? "" : `: ${listWithMore(types.map(typeLabel), NARRATIVE_MAX_TYPES, "types")}`
  sentences.push(`${plural(count, "event", "events")} from ${i.sourceIp} on decoy sensor ${sensor}${typesText}.`)
  const usernames = [...new Set(i.usernames.filter((u) => u.length > 0))]
  if (usernames.length > 0) {
    const quoted = usernames.map(quoteAttackerText)
    const what = usernames.length === 1 ? "Username tried" : "Usernames tried"
    sentences.push(`${what}: ${listWithMore(quoted, NARRATIVE_MAX_USERNAMES)}.`)
  }
  const otherSensors = i.otherSensors ?? 0
  if (otherSensors > 0) {
    sentences.push(
      `The same address touched ${plural(otherSensors, "other decoy sensor", "other decoy sensors")} of yours in the last 7 days: it is sweeping your decoys or moving laterally.`,
    )
  }
  sentences.push("No legitimate user or system has a reason to contact a decoy.")

  const own = primary?.recommendedAction ?? GENERIC_ACTION
  const recommendedAction =
    i.bait === true
      ? BAIT_ACTION
      : inside !== null
        ? `${insideAction(inside.label)} ${specificAdvice(own)}`.trim()
        : own
  return { title, narrative: sentences.join(" "), recommendedAction }
}
