import { originOf } from "../../admin/ChannelAdmin.ts"
import {
  type ChannelKindSpec,
  defaultSettleSeconds,
  type HintPart,
  listed,
  MAX_SETTLE_SECONDS,
} from "../../domain/channels/kinds.ts"
import { CHANNEL_KIND_SPECS, kindSpec } from "../../domain/channels/registry.ts"
import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"

/** D46: a view's kind (absent: a webhook), or undefined for a name that is not a kind. */
const specOf = (kind: string | undefined): ChannelKindSpec | undefined => kindSpec(kind ?? "webhook")
const kindLabel = (kind: string | undefined) => specOf(kind)?.label ?? kind

/**
 * A channel's destination as this viewer may see it. Incoming-webhook URLs often carry a token in their path or query,
 * which works as a password for the receiver: an analyst sees only scheme://host[:port], as the audit log records it
 * (D31); an admin, who set the URL and can change it, sees it whole. A Slack or Teams URL is the credential itself:
 * its origin only, for everyone (the stored view is already that; this holds even for a row that is not). A syslog
 * destination is host and port, nothing secret.
 */
const ChannelUrl = ({ viewer, url, kind }: { viewer: Viewer; url: string; kind: string | undefined }) =>
  specOf(kind)?.address.shownWhole === "everyone" ? (
    <span class="mono">{url}</span>
  ) : specOf(kind)?.credential.type === "sealedUrl" ? (
    <span>
      <span class="mono">{originOf(url)}/…</span> <span class="muted small">(stored sealed; origin only)</span>
    </span>
  ) : isAdmin(viewer) ? (
    <span class="mono">{url}</span>
  ) : (
    <span>
      <span class="mono">{originOf(url)}</span> <span class="muted small">(path and query hidden)</span>
    </span>
  )

export interface KeyView {
  readonly id: string
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  readonly createdAt: string
  readonly expiresAt: string | null
  readonly revokedAt: string | null
  readonly lastUsedAt: string | null
}

export const ApiSettingsPage = (props: {
  viewer: Viewer
  keys: ReadonlyArray<KeyView>
  flash: Flash | undefined
  now: Date
  apiUrl: string
}) => (
  <SettingsLayout viewer={props.viewer} tab="api" title="API and export" flash={props.flash}>
    <p>
      Keys for the read API at <code>{props.apiUrl}</code> (<code>Authorization: Bearer …</code>). A key is shown once,
      when it is created.
    </p>
    {isAdmin(props.viewer) && (
      <form class="panel" method="post" action="/settings/api/keys">
        <h2>Create a key</h2>
        <Csrf token={props.viewer.csrfToken} />
        <div class="field">
          <label for="key-name">Name</label>
          <input id="key-name" name="name" type="text" required maxLength={200} placeholder="SOAR integration" />
        </div>
        <fieldset class="field">
          <legend class="small muted">Scopes</legend>
          <input id="scope-incidents" type="checkbox" name="scope" value="incidents:read" checked />{" "}
          <label for="scope-incidents" class="inline-label">
            incidents:read
          </label>{" "}
          <input id="scope-events" type="checkbox" name="scope" value="events:read" checked />{" "}
          <label for="scope-events" class="inline-label">
            events:read
          </label>
        </fieldset>
        <div class="field">
          <label for="key-expires">Expires (optional, end of this UTC day)</label>
          <input id="key-expires" name="expires" type="date" />
        </div>
        <button type="submit">Create key</button>
      </form>
    )}
    <h2>Keys</h2>
    <DataTable
      columns={["Name", "Scopes", "Created", "Last used", "Expires", "State"]}
      empty="No keys yet."
      rows={props.keys}
    >
      {(k) => (
        <tr>
          <td>
            {k.name}
            <div class="mono small muted">{k.id}</div>
          </td>
          <td class="mono small">{k.scopes.join(", ")}</td>
          <td>
            <Time at={k.createdAt} now={props.now} />
          </td>
          <td>{k.lastUsedAt ? <Time at={k.lastUsedAt} now={props.now} /> : <span class="muted">never</span>}</td>
          <td>{k.expiresAt ? <Time at={k.expiresAt} now={props.now} /> : <span class="muted">never</span>}</td>
          <td>
            {k.revokedAt ? (
              <span class="status">revoked</span>
            ) : isAdmin(props.viewer) ? (
              <a href={`/settings/api/keys/${k.id}/revoke`}>Revoke…</a>
            ) : (
              <span class="status status-closed">active</span>
            )}
          </td>
        </tr>
      )}
    </DataTable>
  </SettingsLayout>
)

export const RevokeKeyPage = (props: { viewer: Viewer; key_: KeyView }) => (
  <SettingsLayout viewer={props.viewer} tab="api" title="Revoke a key" flash={undefined}>
    <div class="panel">
      <p>
        Revoke <strong>{props.key_.name}</strong> (<span class="mono">{props.key_.id}</span>)? Requests with it are
        refused (401) from now on. This cannot be undone.
      </p>
      <form method="post" action={`/settings/api/keys/${props.key_.id}/revoke`}>
        <Csrf token={props.viewer.csrfToken} />
        <button type="submit" class="danger">
          Revoke the key
        </button>{" "}
        <a href="/settings/api">Cancel</a>
      </form>
    </div>
  </SettingsLayout>
)

export interface ChannelView {
  readonly id: string
  /** D46 (absent: a webhook). */
  readonly kind?: string
  /** D47 (absent: native). */
  readonly format?: string
  readonly url: string
  readonly minSeverity: string
  readonly enabled: boolean
  /** D43: the channel also receives `sensor.silent` / `sensor.recovered`. */
  readonly sensorHealth?: boolean
  /** Its settle window in seconds (absent: 0). */
  readonly settleSeconds?: number
  readonly createdAt: string
  readonly previousSecretValidUntil: string | null
}

/** D47 as a person reads it: chat kinds always send a message for people, whatever the stored format. */
const formatLabel = (c: ChannelView) =>
  specOf(c.kind)?.formatLabel ?? (c.format === "ocsf" ? "OCSF Detection Finding" : "Native")

/** A channel's settle window as a person reads it. */
const settleLabel = (c: ChannelView) => {
  const seconds = c.settleSeconds ?? 0
  if (seconds > 0) return `${seconds} s: an incident's first message waits, then carries its state`
  return specOf(c.kind)?.settle.readers === "people" ? "off: every change is sent at once" : "none: every transition"
}

/** What the list and a channel's own page show of it. */
const ChannelFacts = ({ viewer, c, now }: { viewer: Viewer; c: ChannelView; now: Date }) => (
  <dl class="facts">
    <dt>Kind</dt>
    <dd class="channel-kind">{kindLabel(c.kind)}</dd>
    <dt>Format</dt>
    <dd class="channel-format">{formatLabel(c)}</dd>
    <dt>{specOf(c.kind)?.address.noun === "destination" ? "Destination" : "URL"}</dt>
    <dd>
      <ChannelUrl viewer={viewer} url={c.url} kind={c.kind} />
    </dd>
    <dt>Id</dt>
    <dd class="mono small">{c.id}</dd>
    <dt>Minimum severity</dt>
    <dd>{c.minSeverity}</dd>
    <dt>State</dt>
    <dd>{c.enabled ? "enabled" : "disabled"}</dd>
    <dt>Sensor-health alerts</dt>
    <dd>{c.sensorHealth === true ? "on" : "off"}</dd>
    <dt>Settle window</dt>
    <dd class="channel-settle">{settleLabel(c)}</dd>
    <dt>Created</dt>
    <dd>
      <Time at={c.createdAt} now={now} />
    </dd>
    {c.previousSecretValidUntil && (
      <>
        <dt>Previous secret</dt>
        <dd>
          also signs until <Time at={c.previousSecretValidUntil} now={now} />
        </dd>
      </>
    )}
  </dl>
)

/**
 * Rotation as the kind's credential needs it (D16, D46): a signing secret is made anew (with a grace period); a URL
 * that is a credential or a token is replaced by the new one, which the receiver made; no secret, no rotation.
 */
const RotateForm = ({ viewer, c }: { viewer: Viewer; c: ChannelView }) => {
  const credential = specOf(c.kind)?.credential
  const action = `/settings/alerts/channels/${c.id}/rotate`
  if (credential?.type === "signingSecret") {
    return (
      <form method="post" action={action}>
        <Csrf token={viewer.csrfToken} />
        <div>
          <label for={`grace-${c.id}`}>Old secret also signs for</label>
          <select id={`grace-${c.id}`} name="grace">
            <option value="">no grace</option>
            <option value="1h">1 hour</option>
            <option value="24h">24 hours</option>
            <option value="7d">7 days</option>
          </select>
        </div>
        <button type="submit" class="secondary">
          Rotate secret
        </button>
      </form>
    )
  }
  if (credential?.type === "sealedToken") {
    return (
      <form method="post" action={action}>
        <Csrf token={viewer.csrfToken} />
        <div>
          <label for={`replacement-${c.id}`}>New {credential.label}</label>
          <input
            id={`replacement-${c.id}`}
            name="replacement"
            type="password"
            autocomplete="off"
            required
            maxLength={credential.maxLength}
          />
        </div>
        <button type="submit" class="secondary">
          Replace token
        </button>
      </form>
    )
  }
  if (credential?.type === "sealedUrl") {
    return (
      <form method="post" action={action}>
        <Csrf token={viewer.csrfToken} />
        <div>
          <label for={`replacement-${c.id}`}>New URL</label>
          <input id={`replacement-${c.id}`} name="replacement" type="url" autocomplete="off" required />
        </div>
        <button type="submit" class="secondary">
          Replace URL
        </button>
      </form>
    )
  }
  return null
}

/** The settle window of a kind read by people; machine kinds have none to change. */
const SettleForm = ({ viewer, c }: { viewer: Viewer; c: ChannelView }) =>
  specOf(c.kind)?.settle.readers === "people" ? (
    <form method="post" action={`/settings/alerts/channels/${c.id}/settle`}>
      <Csrf token={viewer.csrfToken} />
      <div>
        <label for={`settle-${c.id}`}>Settle window (seconds, 0: off)</label>
        <input
          id={`settle-${c.id}`}
          name="settle"
          type="number"
          min={0}
          max={MAX_SETTLE_SECONDS}
          step={1}
          required
          value={String(c.settleSeconds ?? 0)}
        />
      </div>
      <button type="submit" class="secondary">
        Save settle window
      </button>
    </form>
  ) : null

/** An admin's actions on a channel, the same for every kind but rotation and the settle window. */
const ChannelActions = ({ viewer, c }: { viewer: Viewer; c: ChannelView }) => (
  <div class="actions">
    <form method="post" action={`/settings/alerts/channels/${c.id}/test`}>
      <Csrf token={viewer.csrfToken} />
      <button type="submit">Send test</button>
    </form>
    <form method="post" action={`/settings/alerts/channels/${c.id}/${c.enabled ? "disable" : "enable"}`}>
      <Csrf token={viewer.csrfToken} />
      <button type="submit" class="secondary">
        {c.enabled ? "Disable" : "Enable"}
      </button>
    </form>
    {/* D47: an OCSF channel carries incidents only, so it is not offered sensor-health alerts it would refuse. */}
    {(c.format !== "ocsf" || c.sensorHealth === true) && (
      <form
        method="post"
        action={`/settings/alerts/channels/${c.id}/${c.sensorHealth === true ? "sensor-health-off" : "sensor-health-on"}`}
      >
        <Csrf token={viewer.csrfToken} />
        <button type="submit" class="secondary">
          {c.sensorHealth === true ? "Stop sensor-health alerts" : "Send sensor-health alerts"}
        </button>
      </form>
    )}
    <SettleForm viewer={viewer} c={c} />
    <RotateForm viewer={viewer} c={c} />
  </div>
)

/** A kind's hint, its code parts as code. */
const Hint = ({ parts }: { parts: ReadonlyArray<HintPart> }) => (
  <>{parts.map((part) => (typeof part === "string" ? part : <code>{part.code}</code>))}</>
)

/** The kinds' short names, "A and B", for those that `pick` picks. */
const kindsWhere = (pick: (spec: ChannelKindSpec) => boolean) =>
  listed(CHANNEL_KIND_SPECS.filter(pick).map((spec) => spec.shortLabel))

/** What the form says is stored sealed: "Slack and Teams URLs and HEC tokens". */
const sealedCredentials = listed([
  ...(CHANNEL_KIND_SPECS.some((spec) => spec.credential.type === "sealedUrl")
    ? [`${kindsWhere((spec) => spec.credential.type === "sealedUrl")} URLs`]
    : []),
  ...CHANNEL_KIND_SPECS.flatMap((spec) =>
    spec.credential.type === "sealedToken" ? [`${spec.credential.label}s`] : [],
  ),
])

/** The settle field's hint, from the kinds' descriptors: who settles, by how much by default, who never does. */
const settleHint = (() => {
  const people = CHANNEL_KIND_SPECS.filter((spec) => spec.settle.readers === "people")
  const defaults = listed([...new Set(people.map((spec) => `${defaultSettleSeconds(spec.settle)}`))])
  return (
    `${listed(people.map((spec) => spec.shortLabel))}: an incident's first message waits this many seconds, so that ` +
    `the changes within them make one message with the final state; later changes are new messages at once. Empty: ` +
    `${defaults} s; 0: off; at most ${MAX_SETTLE_SECONDS}. ${kindsWhere((spec) => spec.settle.readers === "machines")} ` +
    "channels get every transition."
  )
})()

/** The token field: a label and the kinds that take it ("HEC token (Splunk HEC only)"). */
const tokenFieldLabel = listed(
  CHANNEL_KIND_SPECS.flatMap((spec) =>
    spec.credential.type === "sealedToken" ? [`${spec.credential.label} (${spec.label} only)`] : [],
  ),
)

/** D46, D47: one form for every kind (no script): each field says which kinds use it; the service checks the rest. */
const AddChannelForm = ({ viewer }: { viewer: Viewer }) => (
  <form class="panel" method="post" action="/settings/alerts/channels">
    <h2>Add a channel</h2>
    <Csrf token={viewer.csrfToken} />
    <div class="field">
      <label for="channel-kind">Kind</label>
      <select id="channel-kind" name="kind">
        {CHANNEL_KIND_SPECS.map((spec) => (
          <option value={spec.name}>{spec.label}</option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for="channel-url">URL or destination</label>
      <input
        id="channel-url"
        name="url"
        type="url"
        required
        autocomplete="off"
        placeholder="https://soar.example.com/hooks/decoy"
        aria-describedby="channel-url-hint"
      />
      <ul id="channel-url-hint" class="small muted">
        {CHANNEL_KIND_SPECS.map((spec) => (
          <li>
            <Hint parts={spec.address.hint} />
          </li>
        ))}
      </ul>
      <p class="small muted">
        {sealedCredentials} are stored sealed and never shown again. Every address must resolve to public addresses
        only.
      </p>
    </div>
    <div class="field">
      <label for="channel-token">{tokenFieldLabel}</label>
      <input id="channel-token" name="token" type="password" autocomplete="off" maxLength={256} />
    </div>
    <div class="field">
      <label for="channel-format">Format ({kindsWhere((spec) => spec.formats.includes("ocsf"))})</label>
      <select id="channel-format" name="format" aria-describedby="channel-format-hint">
        <option value="native">Native</option>
        <option value="ocsf">OCSF Detection Finding</option>
      </select>
      <p id="channel-format-hint" class="small muted">
        {kindsWhere((spec) => !spec.formats.includes("ocsf"))} always get a message for people. An OCSF channel carries
        incidents only, not sensor-health alerts.
      </p>
    </div>
    <div class="field">
      <label for="channel-min">Minimum severity</label>
      <select id="channel-min" name="minSeverity">
        {["low", "medium", "high", "critical"].map((s) => (
          <option value={s}>{s}</option>
        ))}
      </select>
    </div>
    <div class="field">
      <label for="channel-settle">
        Settle window in seconds ({kindsWhere((spec) => spec.settle.readers === "people")})
      </label>
      <input
        id="channel-settle"
        name="settle"
        type="number"
        min={0}
        max={MAX_SETTLE_SECONDS}
        step={1}
        aria-describedby="channel-settle-hint"
      />
      <p id="channel-settle-hint" class="small muted">
        {settleHint}
      </p>
    </div>
    <div class="field">
      <label for="channel-sensor-health" class="inline-label">
        <input id="channel-sensor-health" type="checkbox" name="sensorHealth" value="on" /> Also sensor-health alerts:{" "}
        <code>sensor.silent</code>, <code>sensor.recovered</code> (native format only)
      </label>
    </div>
    <button type="submit">Add channel</button>
  </form>
)

export const AlertsPage = (props: {
  viewer: Viewer
  channels: ReadonlyArray<ChannelView>
  flash: Flash | undefined
  now: Date
}) => (
  <SettingsLayout viewer={props.viewer} tab="alerts" title="Alerts" flash={props.flash}>
    <p>
      Channels receive <code>incident.created</code>, <code>incident.escalated</code> and <code>incident.reopened</code>
      : a webhook signed with the channel's secret, a Slack or Microsoft Teams message, syslog over TLS, or a Splunk HEC
      event. A channel that opts in to sensor-health alerts also receives <code>sensor.silent</code> and{" "}
      <code>sensor.recovered</code> when a sensor misses three heartbeats and when it is heard from again. A channel in
      the OCSF format also receives <code>incident.closed</code> (the finding's Close activity). Channels read by people
      ({kindsWhere((spec) => spec.settle.readers === "people")}) wait their settle window after an incident's first
      message, so that changes within seconds make one message with the final state; the others get every transition at
      once.
    </p>
    {isAdmin(props.viewer) && <AddChannelForm viewer={props.viewer} />}
    <h2>Channels</h2>
    {props.channels.length === 0 && <p class="muted">No channels yet.</p>}
    {props.channels.map((c) => (
      <div class="panel channel" id={`channel-${c.id}`}>
        <ChannelFacts viewer={props.viewer} c={c} now={props.now} />
        <p>
          <a href={`/settings/alerts/channels/${c.id}`}>Delivery log</a>
        </p>
        {isAdmin(props.viewer) && <ChannelActions viewer={props.viewer} c={c} />}
      </div>
    ))}
  </SettingsLayout>
)

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

/** D49: how long this organization's events are kept; an admin may set its own number of days. */
export const RetentionPage = (props: {
  viewer: Viewer
  flash: Flash | undefined
  /** The organization's own setting; null: the service's RETENTION_DAYS. */
  days: number | null
  defaultDays: number
  feedDays: number
}) => (
  <SettingsLayout viewer={props.viewer} tab="retention" title="Retention" flash={props.flash}>
    <p>
      Events are kept for <strong>{props.days ?? props.defaultDays} days</strong>
      {props.days === null
        ? " (the service's default)"
        : ` (this organization's setting; the default is ${props.defaultDays})`}{" "}
      after they were stored, then deleted, with the incidents left without events. The API's change feeds keep{" "}
      {props.feedDays} days of incident changes; a feed client away longer starts again with <code>from</code>.
    </p>
    {isAdmin(props.viewer) && (
      <form class="panel" method="post" action="/settings/retention">
        <h2>Keep events for</h2>
        <Csrf token={props.viewer.csrfToken} />
        <div class="field">
          <label for="retention-days">Days (blank for the default, {props.defaultDays})</label>
          <input
            id="retention-days"
            name="days"
            type="number"
            min={1}
            max={100000}
            step={1}
            value={props.days === null ? "" : String(props.days)}
          />
        </div>
        <button type="submit">Save</button>
      </form>
    )}
  </SettingsLayout>
)

export interface UserView {
  readonly id: string
  readonly email: string
  readonly role: string
  readonly status: string
  readonly createdAt: string
}

export const UsersPage = (props: {
  viewer: Viewer & { readonly userId: string }
  users: ReadonlyArray<UserView>
  flash: Flash | undefined
  now: Date
}) => (
  <SettingsLayout viewer={props.viewer} tab="users" title="Users" flash={props.flash}>
    {isAdmin(props.viewer) && (
      <form class="panel" method="post" action="/settings/users">
        <h2>Invite a user</h2>
        <Csrf token={props.viewer.csrfToken} />
        <div class="field">
          <label for="user-email">Email</label>
          <input id="user-email" name="email" type="email" required />
        </div>
        <div class="field">
          <label for="user-role">Role</label>
          <select id="user-role" name="role">
            <option value="analyst">analyst (reads, closes incidents)</option>
            <option value="admin">admin (everything)</option>
          </select>
        </div>
        <button type="submit">Create user and link</button>
      </form>
    )}
    {/* No empty message: the list holds at least the viewer. */}
    <DataTable columns={["Email", "Role", "State", "Created", "Actions"]} rows={props.users}>
      {(u) => (
        <tr>
          <td>
            {u.email}
            <div class="mono small muted">{u.id}</div>
          </td>
          <td>{u.role}</td>
          <td>{u.status}</td>
          <td>
            <Time at={u.createdAt} now={props.now} />
          </td>
          <td>
            {isAdmin(props.viewer) && u.id !== props.viewer.userId && (
              <>
                <form class="inline" method="post" action={`/settings/users/${u.id}/reset`}>
                  <Csrf token={props.viewer.csrfToken} />
                  <button type="submit" class="secondary">
                    New link
                  </button>
                </form>{" "}
                {u.status !== "disabled" && (
                  <form class="inline" method="post" action={`/settings/users/${u.id}/disable`}>
                    <Csrf token={props.viewer.csrfToken} />
                    <button type="submit" class="danger">
                      Disable
                    </button>
                  </form>
                )}
              </>
            )}
          </td>
        </tr>
      )}
    </DataTable>
  </SettingsLayout>
)

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
