import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"
import { ChannelActions, ChannelFacts, ChannelUrl, type ChannelView, kindLabel } from "./channel.tsx"

export interface DeliveryView {
  readonly id: string
  readonly type: string
  readonly status: string
  readonly attempts: number
  readonly lastStatus: number | null
  readonly lastError: string | null
  readonly createdAt: string
  readonly nextAttemptAt: string | null
  readonly deliveredAt: string | null
}

export const DeliveryLogPage = (props: {
  viewer: Viewer
  channel: ChannelView
  deliveries: ReadonlyArray<DeliveryView>
  flash: Flash | undefined
  now: Date
}) => (
  <SettingsLayout viewer={props.viewer} tab="alerts" title="Delivery log" flash={props.flash}>
    <p>
      <a href="/settings/alerts">← Alerts</a> · {kindLabel(props.channel.kind)} ·{" "}
      <ChannelUrl viewer={props.viewer} url={props.channel.url} kind={props.channel.kind} />
    </p>
    <div class="panel channel" id={`channel-${props.channel.id}`}>
      <ChannelFacts viewer={props.viewer} c={props.channel} now={props.now} />
      {isAdmin(props.viewer) && <ChannelActions viewer={props.viewer} c={props.channel} />}
    </div>
    <h2>Latest deliveries</h2>
    <DataTable
      columns={["Created", "Type", "Status", "Attempts", "Response", "Next retry", "Action"]}
      empty="No deliveries yet."
      rows={props.deliveries}
    >
      {(d) => (
        <tr>
          <td>
            <Time at={d.createdAt} now={props.now} />
            <div class="mono small muted">{d.id}</div>
          </td>
          <td class="mono">{d.type}</td>
          <td class={`status delivery-${d.status}`}>{d.status}</td>
          <td>{d.attempts}</td>
          <td class="mono">
            {d.lastStatus === null ? "—" : `HTTP ${d.lastStatus}`}
            {d.lastError && <div class="small muted">{d.lastError}</div>}
          </td>
          <td>{d.nextAttemptAt ? <Time at={d.nextAttemptAt} now={props.now} /> : "—"}</td>
          <td>
            {isAdmin(props.viewer) && (
              <form class="inline" method="post" action={`/settings/alerts/deliveries/${d.id}/redeliver`}>
                <Csrf token={props.viewer.csrfToken} />
                <button type="submit" class="secondary">
                  Redeliver
                </button>
              </form>
            )}
          </td>
        </tr>
      )}
    </DataTable>
  </SettingsLayout>
)
