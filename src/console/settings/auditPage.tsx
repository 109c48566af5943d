import { DataTable, Time, type Viewer } from "../components.tsx"
import { SettingsLayout } from "../layout.tsx"

export interface AuditView {
  readonly id: string
  readonly actor: string
  readonly action: string
  readonly target: string | null
  readonly ip: string | null
  readonly detail: string | null
  readonly at: Date
}

export const AuditPage = (props: {
  viewer: Viewer
  rows: ReadonlyArray<AuditView>
  actors: Readonly<Record<string, string>>
  next: string | undefined
  now: Date
}) => (
  <SettingsLayout viewer={props.viewer} tab="audit" title="Audit log" flash={undefined}>
    <DataTable
      columns={["Time", "Actor", "Action", "Target", "IP", "Detail"]}
      empty="Nothing recorded yet."
      rows={props.rows}
    >
      {(r) => (
        <tr>
          <td>
            <Time at={r.at} now={props.now} />
          </td>
          <td>{props.actors[r.actor] ?? r.actor}</td>
          <td class="mono">{r.action}</td>
          <td class="mono small">{r.target ?? "—"}</td>
          <td class="mono small">{r.ip ?? "—"}</td>
          <td class="small">{r.detail ?? ""}</td>
        </tr>
      )}
    </DataTable>
    <div class="pager">{props.next && <a href={props.next}>Older entries</a>}</div>
  </SettingsLayout>
)
