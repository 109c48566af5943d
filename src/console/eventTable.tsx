import { isMaskedSecretShape, type MaskedSecret } from "../domain/attackerInput.ts"
import { eventTypeSpec } from "../domain/eventTypes.ts"
import type { Event } from "../domain/models.ts"
import { Attacker, attackerCost, attackerText, DataTable, ServiceText, SeverityBadge, Time } from "./components.tsx"

/**
 * Events as the console shows them (incident timeline, Events page), bounded by size as well as by count: each
 * attacker value is cut (components.tsx `Attacker`), at most EVENT_MEMBERS_SHOWN attacker-input members are shown
 * per event, and a page stops adding events once PAGE_ATTACKER_BUDGET of attacker text is rendered, saying how many
 * it left out. Every event type renders the same way: its label and name, the summary the service wrote, a one-line
 * digest of the facts a type carries (protocol, ports, count), and the attacker input as a two-column table, folded
 * away when it is long or is packet fields.
 */

/** At most this many attacker-input members are shown per event; the rest are counted. */
export const EVENT_MEMBERS_SHOWN = 20
/** An event with more attacker-input members than this shows them folded, behind a <details>. */
export const MEMBERS_OPEN_MAX = 6
/**
 * The attacker text a page renders, in UTF-16 units: a page stops adding events past it. One event costs at most
 * about 20 × 2 × (160 + 4000), under this, so the first event always shows; escaped, the page stays around 1 MB.
 */
export const PAGE_ATTACKER_BUDGET = 180_000

/** Member names are shorter than values: cut earlier. */
const MEMBER_NAME_CUT = 64

type Member = readonly [name: string, value: unknown]

/**
 * A fact's label: "port" for one port (a number, or digits), "ports" for a list or range; the others as they are.
 * The value is boxed either way: it comes from the event, which an attacker's traffic shaped.
 */
const factLabel = (label: string, value: unknown): string =>
  label === "ports" && (typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value)))
    ? "port"
    : label

/**
 * A masked secret exactly as this service writes one (stars, a length, a hex fingerprint): anything else that merely
 * has such members is attacker input like any other, shown as the rest of it is.
 */
const isMasked = isMaskedSecretShape

/** The members shown of an event, and how many are left out. */
const shownMembers = (input: Event["attackerInput"]): { members: ReadonlyArray<Member>; more: number } => {
  const all = Object.entries(input)
  return { members: all.slice(0, EVENT_MEMBERS_SHOWN), more: Math.max(0, all.length - EVENT_MEMBERS_SHOWN) }
}

/** An upper bound of the attacker text one event renders. */
export const eventCost = (e: Event): number => {
  let cost = e.summary.length
  for (const [name, value] of shownMembers(e.attackerInput).members) {
    cost += attackerCost(name, MEMBER_NAME_CUT)
    cost += isMasked(value) ? 64 : attackerCost(attackerText(value))
  }
  return cost
}

/** The events that fit in `budget` (at least the first), in order, and how many did not. */
export const fitEvents = (
  events: ReadonlyArray<Event>,
  budget: number = PAGE_ATTACKER_BUDGET,
): { shown: ReadonlyArray<Event>; left: number } => {
  let spent = 0
  let n = 0
  for (const e of events) {
    const cost = eventCost(e)
    if (n > 0 && spent + cost > budget) break
    spent += cost
    n++
  }
  return { shown: events.slice(0, n), left: events.length - n }
}

const FACTS: ReadonlyArray<readonly [label: string, names: ReadonlyArray<string>]> = [
  ["protocol", ["protocol", "proto", "transport"]],
  ["ports", ["ports", "dstPorts", "destinationPorts", "dpt", "dstPort", "destinationPort"]],
  ["count", ["count", "probes", "packets", "attempts"]],
  ["flags", ["flags", "tcpFlags"]],
]

/** The facts a reader wants first, picked from the attacker input by member name (any event type). */
const factsOf = (input: Event["attackerInput"]): Array<readonly [string, unknown]> => {
  const facts: Array<readonly [string, unknown]> = []
  for (const [label, names] of FACTS) {
    const name = names.find((n) => {
      const v = input[n]
      return v !== undefined && v !== null && v !== "" && !isMasked(v)
    })
    if (name !== undefined) facts.push([label, input[name]])
  }
  return facts
}

/**
 * A masked secret: its stars and fingerprint stay in the attacker box (they come from an attacker's event, even when
 * their shape is the service's), the length is a number.
 */
const MaskedValue = ({ value }: { value: MaskedSecret }) => (
  <span>
    <Attacker value={value.masked} />{" "}
    <span class="muted small">
      masked, {String(value.length)} {value.length === 1 ? "character" : "characters"}
      {value.fingerprint !== "" && ", fingerprint "}
    </span>
    {value.fingerprint !== "" && <Attacker value={value.fingerprint} />}
  </span>
)

/** An event's attacker input: member names and values in two columns, every one marked as attacker text. */
export const AttackerInputTable = ({ input }: { input: Event["attackerInput"] }) => {
  const { members, more } = shownMembers(input)
  if (members.length === 0) return <span class="muted small">No attacker input.</span>
  return (
    <table class="kv">
      <tbody>
        {members.map(([name, value]) => (
          <tr>
            <th scope="row">
              <Attacker value={name} cut={MEMBER_NAME_CUT} />
            </th>
            <td>{isMasked(value) ? <MaskedValue value={value} /> : <Attacker value={value} />}</td>
          </tr>
        ))}
        {more > 0 && (
          <tr>
            <td colSpan={2} class="muted small">
              {more} more {more === 1 ? "member" : "members"} not shown; the API returns them all.
            </td>
          </tr>
        )}
      </tbody>
    </table>
  )
}

/** Summary, digest and attacker input of one event. */
const EventDetail = ({ e }: { e: Event }) => {
  const spec = eventTypeSpec(e.type)
  const members = Object.keys(e.attackerInput).length
  const facts = factsOf(e.attackerInput)
  const scan = spec?.action === "scan"
  const folded = scan || members > MEMBERS_OPEN_MAX
  if (scan && !facts.some(([label]) => label === "ports") && e.port > 0) {
    // The event's port where the attacker input names none: after the protocol, boxed as packet fields' ports are.
    facts.splice(facts[0]?.[0] === "protocol" ? 1 : 0, 0, ["ports", e.port])
  }
  return (
    <>
      <div>
        <ServiceText text={e.summary} />
      </div>
      {facts.length > 0 && (
        <div class="digest small">
          {facts.map(([label, value], i) => (
            <>
              {i > 0 && " · "}
              {factLabel(label, value)} <Attacker value={value} cut={MEMBER_NAME_CUT} />
            </>
          ))}
        </div>
      )}
      {members > 0 &&
        (folded ? (
          <details class="fields">
            <summary class="small">
              {scan ? "Packet fields" : "Attacker input"} ({members})
            </summary>
            <AttackerInputTable input={e.attackerInput} />
          </details>
        ) : (
          <AttackerInputTable input={e.attackerInput} />
        ))}
    </>
  )
}

/** The event type: its label when the type is known, and its name. */
export const EventType = ({ e }: { e: Event }) => {
  const spec = eventTypeSpec(e.type)
  return (
    <>
      {spec?.label ?? e.type}
      {spec && <div class="mono small muted">{e.type}</div>}
      {e.tags.length > 0 && (
        <div class="tags">
          {e.tags.map((t) => (
            <span>{t}</span>
          ))}
        </div>
      )}
    </>
  )
}

/** The columns of an events table (the incident's timeline uses them too). */
export const EVENT_COLUMNS = [
  "Time",
  "Severity",
  "Type",
  "Summary and attacker input",
  { label: "Source", class: "hide-sm" },
] as const

/** One event as a row of an events table. */
export const EventRow = ({ e, now }: { e: Event; now: Date }) => (
  <tr id={e.id}>
    <td>
      <Time at={e.time} now={now} />
    </td>
    <td>
      <SeverityBadge severity={e.severity} />
    </td>
    <td class="type">
      <EventType e={e} />
    </td>
    <td>
      <EventDetail e={e} />
    </td>
    <td class="hide-sm mono">
      {e.sourceIp}:{e.sourcePort} → {e.service}/{e.port}
    </td>
  </tr>
)

/** A page's events, as many as PAGE_ATTACKER_BUDGET allows (the caller says what to do about the rest). */
export const EventTable = ({ events, now }: { events: ReadonlyArray<Event>; now: Date }) => (
  <DataTable columns={EVENT_COLUMNS} empty="No events." rows={events}>
    {(e) => <EventRow e={e} now={now} />}
  </DataTable>
)

/** The line under a page whose events did not all fit: how many, and where the rest are. */
export const EventsLeftOut = (props: {
  n: number
  link: readonly [href: string, label: string] | undefined
  api: string
}) =>
  props.n > 0 ? (
    <p class="notice notice-info left-out" role="status">
      {props.n} more {props.n === 1 ? "event" : "events"} not shown here, to keep this page small. See{" "}
      {props.link && (
        <>
          <a href={props.link[0]}>{props.link[1]}</a> or{" "}
        </>
      )}
      the API: <code>{props.api}</code>
    </p>
  ) : null
