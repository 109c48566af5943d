/**
 * An incident's timeline in readable pieces: a run of consecutive events of one type (30 SSH login attempts, a port
 * scan's probes) becomes one item that says how many and what varied ("14 usernames: root ×9, admin ×6, …"), and
 * every other event stays an item of its own, in order. Pure; nothing is left out (a run holds its events).
 */
import { isMaskedSecretShape } from "./attackerInput.ts"
import { isRecord } from "./json.ts"
import { SEVERITIES } from "./severity.ts"

/** A run shorter than this stays as single events: grouping two or three saves little and hides them. */
export const RUN_MIN = 4

/** A run's detail names at most this many of its values (the most frequent); the rest are counted. */
export const RUN_TOP = 5

/**
 * The member that says what varied in a run, and what its values are called: the first of these that any event of the
 * run carries as text or a number.
 */
export const RUN_MEMBERS: ReadonlyArray<readonly [member: string, noun: string, one: string]> = [
  ["username", "usernames", "username"],
  ["command", "commands", "command"],
  ["input", "inputs", "input"],
  ["url", "URLs", "URL"],
  ["fileName", "files", "file"],
  ["path", "paths", "path"],
  ["dpt", "ports", "port"],
  ["dstPort", "ports", "port"],
  ["ports", "ports", "port"],
  ["targetHost", "targets", "target"],
  ["queryHostname", "names", "name"],
]

/** What the timeline needs of an event. */
export interface TimelineEvent {
  readonly type: string
  readonly time: Date
  readonly severity: string
  readonly attackerInput: Readonly<Record<string, unknown>>
}

/** What varied in a run: the member's noun, how many distinct values, the most frequent ones with their counts. */
export interface RunDetail {
  readonly member: string
  readonly noun: string
  readonly one: string
  readonly distinct: number
  readonly top: ReadonlyArray<{ readonly value: string; readonly count: number }>
}

export type TimelineItem<E extends TimelineEvent> =
  | { readonly kind: "event"; readonly event: E }
  | {
      readonly kind: "run"
      readonly type: string
      readonly events: ReadonlyArray<E>
      readonly first: Date
      readonly last: Date
      /** The highest severity among the run's events. */
      readonly severity: string
      readonly detail: RunDetail | undefined
    }

const rank = (s: string) => (SEVERITIES as ReadonlyArray<string>).indexOf(s)

/** A member value as a run counts it: text or a number; anything else (a masked secret, an object) is not counted. */
const countable = (v: unknown): string | undefined =>
  typeof v === "string"
    ? v === ""
      ? undefined
      : v
    : typeof v === "number" && Number.isFinite(v)
      ? String(v)
      : undefined

/** What varied across a run's events, by the first of RUN_MEMBERS that they carry. */
export const runDetail = (events: ReadonlyArray<TimelineEvent>): RunDetail | undefined => {
  for (const [member, noun, one] of RUN_MEMBERS) {
    const counts = new Map<string, number>()
    for (const e of events) {
      const input = e.attackerInput
      if (!isRecord(input) || !Object.hasOwn(input, member)) continue
      const raw = input[member]
      if (isMaskedSecretShape(raw)) continue
      const value = countable(raw)
      if (value !== undefined) counts.set(value, (counts.get(value) ?? 0) + 1)
    }
    if (counts.size === 0) continue
    const top = [...counts.entries()]
      .map(([value, count]) => ({ value, count }))
      .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
      .slice(0, RUN_TOP)
    return { member, noun, one, distinct: counts.size, top }
  }
  return undefined
}

/**
 * The events in order, each run of at least `min` consecutive events of one type as one item (its events, first and
 * last time, highest severity and what varied), every other event as an item of its own.
 */
export const timelineItems = <E extends TimelineEvent>(
  events: ReadonlyArray<E>,
  min: number = RUN_MIN,
): ReadonlyArray<TimelineItem<E>> => {
  const items: Array<TimelineItem<E>> = []
  let start = 0
  while (start < events.length) {
    const type = (events[start] as E).type
    let end = start + 1
    while (end < events.length && (events[end] as E).type === type) end++
    const run = events.slice(start, end)
    if (run.length >= Math.max(2, min)) {
      let severity = (run[0] as E).severity
      for (const e of run) if (rank(e.severity) > rank(severity)) severity = e.severity
      items.push({
        kind: "run",
        type,
        events: run,
        first: (run[0] as E).time,
        last: (run[run.length - 1] as E).time,
        severity,
        detail: runDetail(run),
      })
    } else {
      for (const event of run) items.push({ kind: "event", event })
    }
    start = end
  }
  return items
}
