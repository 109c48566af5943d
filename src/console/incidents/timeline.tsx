import { eventTypeSpec } from "../../domain/eventTypes.ts"
import type { Event } from "../../domain/models.ts"
import { codePointLength, firstCodePoints } from "../../domain/sanitize.ts"
import { type TimelineItem, timelineItems } from "../../domain/timelineGroups.ts"
import { DataTable, SeverityBadge, Time } from "../components.tsx"
import { EVENT_COLUMNS, EventRow, EventTable } from "../eventTable.tsx"

/**
 * An incident's timeline (oldest first): a run of consecutive events of one type is one row that says how many and
 * what varied ("30 × SSH login attempt: 14 usernames: root ×9, admin ×6, …"), opened with a <details> (no script) to
 * the events themselves; every other event is a row of its own, as on the Events page.
 */

/** A value named in a run's line is cut shorter than elsewhere: the line holds several. */
const RUN_VALUE_CUT = 48

/**
 * An attacker value inside a run's <summary>: boxed and marked like every attacker value, cut without a <details> of
 * its own (the summary is already the control that opens the run; the events below show each value whole).
 */
const RunValue = ({ value }: { value: string }) => (
  <code class="atk" title="Attacker-supplied text">
    {codePointLength(value) > RUN_VALUE_CUT ? `${firstCodePoints(value, RUN_VALUE_CUT)}…` : value}
  </code>
)

type Run = Extract<TimelineItem<Event>, { kind: "run" }>

/** A run's line: how many of which type, then what varied and its most frequent values. */
const RunLine = ({ run }: { run: Run }) => {
  const spec = eventTypeSpec(run.type)
  const d = run.detail
  const more = d === undefined ? 0 : d.distinct - d.top.length
  return (
    <>
      <strong>
        {run.events.length} × {spec?.label ?? run.type}
      </strong>{" "}
      <span class="mono small muted">{run.type}</span>
      {d !== undefined && (
        <span class="ind-run-detail">
          {" "}
          · {d.distinct} {d.distinct === 1 ? d.one : d.noun}:{" "}
          {d.top.map((v, i) => (
            <>
              {i > 0 && ", "}
              <RunValue value={v.value} /> <span class="ind-times">×{v.count}</span>
            </>
          ))}
          {more > 0 && `, and ${more} more`}
        </span>
      )}
    </>
  )
}

/** A run as one row: its first time (and last), its highest severity, its line; opened, its events. */
const RunRow = ({ run, now }: { run: Run; now: Date }) => (
  <tr class="ind-run" id={`run-${run.events[0]?.id ?? ""}`}>
    <td>
      <Time at={run.first} now={now} />
      <div class="small muted">
        to <Time at={run.last} now={now} />
      </div>
    </td>
    <td>
      <SeverityBadge severity={run.severity} />
    </td>
    <td colSpan={3}>
      <details class="ind-run-events">
        <summary>
          <RunLine run={run} />
        </summary>
        <EventTable events={run.events} now={now} />
      </details>
    </td>
  </tr>
)

/** The timeline of the events shown on the page (the caller bounds them and says what it left out). */
export const Timeline = ({ events, now }: { events: ReadonlyArray<Event>; now: Date }) => (
  <DataTable columns={EVENT_COLUMNS} empty="No events." rows={timelineItems(events)}>
    {(item) => (item.kind === "run" ? <RunRow run={item} now={now} /> : <EventRow e={item.event} now={now} />)}
  </DataTable>
)
