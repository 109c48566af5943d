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
  /** Each attempt's answer: an SMTP server's reply ("250 2.0.0 Ok: queued …") is how an email delivery shows it. */
  readonly log?: ReadonlyArray<{ readonly response: string | null }>
}

/** The last attempt's answer when it is not an HTTP status (an SMTP reply), cut for the table. */
const replyOf = (d: DeliveryView): string | undefined => {
  const reply = d.log?.at(-1)?.response?.trim()
  if (reply === undefined || reply === "") return undefined
  return reply.length > 80 ? `${reply.slice(0, 80)}…` : reply
}

/** An email channel's recipient as its page lists them. */
export interface RecipientView {
  readonly address: string
  readonly state: "confirmed" | "waiting"
  readonly invitedAt: string
  readonly confirmedAt: string | null
  readonly linkValidUntil: string | null
}

/**
 * An email channel's recipients: who gets its alerts (confirmed) and who has not confirmed yet (and until when their
 * link works, or that it expired); an admin invites more, mails a waiting one a fresh link, or removes one.
 */
const Recipients = (props: {
  viewer: Viewer
  channelId: string
  recipients: ReadonlyArray<RecipientView>
  now: Date
}) => {
  const action = `/settings/alerts/channels/${props.channelId}`
  const admin = isAdmin(props.viewer)
  return (
    <section id="recipients" aria-labelledby="recipients-title">
      <h2 id="recipients-title">Recipients</h2>
      <p class="muted small">
        Each recipient gets alerts only after confirming by the link mailed to them; until then they get nothing but
        that one message. A link works for 7 days.
      </p>
      <DataTable
        columns={admin ? ["Address", "State", "Since", "Action"] : ["Address", "State", "Since"]}
        empty="No recipients: this channel mails nobody."
        rows={props.recipients}
      >
        {(r) => (
          <tr>
            <td class="mono">{r.address}</td>
            <td class={`recipient-${r.state}`}>
              {r.state === "confirmed"
                ? "confirmed"
                : r.linkValidUntil !== null && new Date(r.linkValidUntil) > props.now
                  ? "waiting for confirmation"
                  : "link expired"}
            </td>
            <td>
              {r.state === "confirmed" ? (
                <Time at={r.confirmedAt ?? r.invitedAt} now={props.now} />
              ) : (
                <>
                  mailed <Time at={r.invitedAt} now={props.now} />
                </>
              )}
            </td>
            {admin && (
              <td>
                {r.state === "waiting" && (
                  <form class="inline" method="post" action={`${action}/invite`}>
                    <Csrf token={props.viewer.csrfToken} />
                    <input type="hidden" name="recipients" value={r.address} />
                    <button type="submit" class="secondary">
                      Mail a new link
                    </button>
                  </form>
                )}{" "}
                <form class="inline" method="post" action={`${action}/remove-recipient`}>
                  <Csrf token={props.viewer.csrfToken} />
                  <input type="hidden" name="recipients" value={r.address} />
                  <button type="submit" class="secondary">
                    Remove
                  </button>
                </form>
              </td>
            )}
          </tr>
        )}
      </DataTable>
      {admin && (
        <form method="post" action={`${action}/invite`} class="panel">
          <Csrf token={props.viewer.csrfToken} />
          <div class="field">
            <label for="invite-recipients">Invite recipients</label>
            <input
              id="invite-recipients"
              name="recipients"
              type="text"
              autocomplete="off"
              required
              maxLength={6000}
              placeholder="soc@example.com, oncall@example.com"
              aria-describedby="invite-recipients-hint"
            />
            <p id="invite-recipients-hint" class="small muted">
              Addresses separated by commas or spaces; each is mailed a confirmation link.
            </p>
          </div>
          <button type="submit">Invite</button>
        </form>
      )}
    </section>
  )
}

export const DeliveryLogPage = (props: {
  viewer: Viewer
  channel: ChannelView
  /** An email channel's recipients (undefined for the other kinds). */
  recipients?: ReadonlyArray<RecipientView> | undefined
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
    {props.recipients !== undefined && (
      <Recipients viewer={props.viewer} channelId={props.channel.id} recipients={props.recipients} now={props.now} />
    )}
    <h2>Latest deliveries</h2>
    <section id="deliveries" aria-label="Latest deliveries">
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
              {d.lastStatus === null ? (replyOf(d) ?? "—") : `HTTP ${d.lastStatus}`}
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
    </section>
  </SettingsLayout>
)
