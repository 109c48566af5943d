import type { Event } from "../../domain/models.ts"
import { Attacker, DataTable, SeverityBadge, Time, type Viewer } from "../components.tsx"
import { Layout } from "../layout.tsx"

/** An ignored event and the rule that ignored it. */
export interface IgnoredEvent {
  readonly event: Event
  readonly ruleId: string
  readonly ruleNote: string
}

/** Events → Show ignored events: newest first, each with the rule that ignored it. */
export const IgnoredEventsPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<IgnoredEvent>
  next: string | undefined
  now: Date
}) => (
  <Layout title="Ignored events" viewer={props.viewer} section="events">
    <p class="small">
      <a href="/events">← Events (hide ignored events)</a>
    </p>
    <h1>Ignored events</h1>
    <p>
      Events an <a href="/settings/ignore">ignore rule</a> matched when they arrived: kept here, in no incident, sent
      nowhere and not returned by the API.
    </p>
    <DataTable
      columns={["Time", "Severity", "Type", "Summary", { label: "Source", class: "hide-sm" }, "Ignored by"]}
      empty="No ignored events."
      rows={props.rows}
    >
      {(r) => (
        <tr id={r.event.id}>
          <td>
            <Time at={r.event.time} now={props.now} />
          </td>
          <td>
            <SeverityBadge severity={r.event.severity} />
          </td>
          <td class="mono small">{r.event.type}</td>
          <td>
            <Attacker value={r.event.summary} />
            <div class="mono small muted">{r.event.id}</div>
          </td>
          <td class="hide-sm mono">
            {r.event.sourceIp} → {r.event.sensor.name}/{r.event.port}
          </td>
          <td>
            <span class="mono small">{r.ruleId}</span>
            {r.ruleNote !== "" && <div class="small user-text">{r.ruleNote}</div>}
          </td>
        </tr>
      )}
    </DataTable>
    <div class="pager">{props.next && <a href={props.next}>Next page</a>}</div>
  </Layout>
)
