/**
 * D14: the incident texts (title, narrative, recommended action), written by the service from the event-type table.
 * Attacker text only appears quoted (`quoteAttackerText`), so it reads as data and cannot pose as the service's words.
 */
import { quoteAttackerText } from "./eventSummary.ts"
import { EVENT_TYPES, mostSevereEventType } from "./eventTypes.ts"
import { ISOLATE_SOURCE } from "./recommendedActions.ts"

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

/**
 * D14: the incident texts, written by the service from the templates of its event types. `usernames` are
 * already-sanitized attacker text and only appear quoted; `sensorName` (set by an admin) is quoted as well.
 *
 * - title: the primary type's incident title (its event label when the incident has a single event), the source
 *   address and the sensor, e.g. `SSH brute force from 203.0.113.7 on sensor "web-01"`.
 * - narrative: two or three sentences: counts and types, the usernames tried (at most 5 quoted), and why it matters.
 * - recommendedAction: the advice of the most severe event type present.
 */
export const incidentTexts = (i: {
  readonly eventTypes: ReadonlyArray<string>
  readonly primaryType: string
  readonly sensorName: string
  readonly sourceIp: string
  readonly eventCount: number
  readonly usernames: ReadonlyArray<string>
}): { readonly title: string; readonly narrative: string; readonly recommendedAction: string } => {
  const sensor = JSON.stringify(i.sensorName)
  const primary = EVENT_TYPES.get(i.primaryType) ?? mostSevereEventType(i.eventTypes)
  const heading = primary === undefined ? GENERIC_TITLE : i.eventCount === 1 ? primary.label : primary.incidentTitle
  const title = `${heading} from ${i.sourceIp} on sensor ${sensor}`

  const types = [...new Set(i.eventTypes)]
  const count = Number.isFinite(i.eventCount) && i.eventCount >= 0 ? Math.floor(i.eventCount) : 0
  const sentences: Array<string> = []
  const typesText = types.length === 0 ? "" : `: ${listWithMore(types.map(typeLabel), NARRATIVE_MAX_TYPES, "types")}`
  sentences.push(`${plural(count, "event", "events")} from ${i.sourceIp} on decoy sensor ${sensor}${typesText}.`)
  const usernames = [...new Set(i.usernames.filter((u) => u.length > 0))]
  if (usernames.length > 0) {
    const quoted = usernames.map(quoteAttackerText)
    const what = usernames.length === 1 ? "Username tried" : "Usernames tried"
    sentences.push(`${what}: ${listWithMore(quoted, NARRATIVE_MAX_USERNAMES)}.`)
  }
  sentences.push("No legitimate user or system has a reason to contact a decoy.")

  const worst = mostSevereEventType(types, i.primaryType)
  return {
    title,
    narrative: sentences.join(" "),
    recommendedAction: worst === undefined ? GENERIC_ACTION : worst.recommendedAction,
  }
}
