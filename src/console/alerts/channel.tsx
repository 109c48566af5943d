import { originOf } from "../../admin/ChannelAdmin.ts"
import { type ChannelKindSpec, MAX_SETTLE_SECONDS } from "../../domain/channels/kinds.ts"
import { kindSpec } from "../../domain/channels/registry.ts"
import { Csrf, Time, type Viewer } from "../components.tsx"
import { isAdmin } from "../layout.tsx"

/** A channel as the alerts pages show it: its facts, its address as the viewer may see it, an admin's actions. */

/** A view's kind (absent: a webhook), or undefined for a name that is not a kind. */
export const specOf = (kind: string | undefined): ChannelKindSpec | undefined => kindSpec(kind ?? "webhook")
export const kindLabel = (kind: string | undefined) => specOf(kind)?.label ?? kind

/**
 * A channel's destination as this viewer may see it. Incoming-webhook URLs often carry a token in their path or query,
 * which works as a password for the receiver: an analyst sees only scheme://host[:port], as the audit log records it; an admin, who set the URL and can change it, sees it whole. A Slack or Teams URL is the credential itself:
 * its origin only, for everyone (the stored view is already that; this holds even for a row that is not). A syslog
 * destination is host and port, nothing secret.
 */
export const ChannelUrl = ({ viewer, url, kind }: { viewer: Viewer; url: string; kind: string | undefined }) =>
  specOf(kind)?.address.scheme === "mailto" ? (
    <span class="muted">to its confirmed recipients</span>
  ) : specOf(kind)?.address.shownWhole === "everyone" ? (
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

export interface ChannelView {
  readonly id: string
  /** Its kind (absent: a webhook). */
  readonly kind?: string
  /** Its format (absent: native). */
  readonly format?: string
  readonly url: string
  readonly minSeverity: string
  readonly enabled: boolean
  /** The channel also receives `sensor.silent` / `sensor.recovered`. */
  readonly sensorHealth?: boolean
  /** Its settle window in seconds (absent: 0). */
  readonly settleSeconds?: number
  readonly createdAt: string
  readonly previousSecretValidUntil: string | null
}

/** The format as a person reads it: chat kinds always send a message for people, whatever the stored format. */
export const formatLabel = (c: ChannelView) =>
  specOf(c.kind)?.formatLabel ?? (c.format === "ocsf" ? "OCSF Detection Finding" : "Native")

/** A channel's settle window as a person reads it. */
export const settleLabel = (c: ChannelView) => {
  const seconds = c.settleSeconds ?? 0
  if (seconds > 0) return `${seconds} s: an incident's first message waits, then carries its state`
  return specOf(c.kind)?.settle.readers === "people" ? "off: every change is sent at once" : "none: every transition"
}

/** What the list and a channel's own page show of it. */
export const ChannelFacts = ({ viewer, c, now }: { viewer: Viewer; c: ChannelView; now: Date }) => (
  <dl class="facts">
    <dt>Kind</dt>
    <dd class="channel-kind">{kindLabel(c.kind)}</dd>
    <dt>Format</dt>
    <dd class="channel-format">{formatLabel(c)}</dd>
    {specOf(c.kind)?.address.scheme === "mailto" ? (
      <>
        <dt>Recipients</dt>
        <dd>
          its confirmed recipients, through the server's mail server (
          <a href={`/settings/alerts/channels/${c.id}#recipients`}>recipients</a>)
        </dd>
      </>
    ) : (
      <>
        <dt>{specOf(c.kind)?.address.noun === "destination" ? "Destination" : "URL"}</dt>
        <dd>
          <ChannelUrl viewer={viewer} url={c.url} kind={c.kind} />
        </dd>
      </>
    )}
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
 * Rotation as the kind's credential needs it: a signing secret is made anew (with a grace period); a URL
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
export const ChannelActions = ({ viewer, c }: { viewer: Viewer; c: ChannelView }) => (
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
    {/* An OCSF channel carries incidents only, so it is not offered sensor-health alerts it would refuse. */}
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

/** A channel's latest delivery and its recent failures, as the alerts list shows them (read in one query). */
export interface ChannelState {
  readonly last: {
    readonly id: string
    readonly type: string
    readonly status: "pending" | "failed" | "succeeded" | "dead"
    readonly attempts: number
    readonly response: number | null
    readonly error: string | null
    readonly createdAt: Date
    readonly attemptedAt: Date | null
    readonly deliveredAt: Date | null
    readonly nextAttemptAt: Date
  } | null
  /** Failed attempts in the last 24 hours. */
  readonly failures: number
}

/** The longest error text of an attempt shown in the list (the delivery log has the attempt's detail). */
const ERROR_SHOWN = 160

/** "HTTP 503" and the attempt's error, or the error alone (syslog, no connection). */
const DeliveryResponse = ({ response, error }: { response: number | null; error: string | null }) => {
  // The sender words a bare failed status as "HTTP 503": said once, not twice.
  const said = error === null || (response !== null && error === `HTTP ${response}`) ? null : error
  return (
    <>
      {response !== null && <span class="mono">HTTP {response}</span>}
      {response !== null && said !== null && " "}
      {said !== null && (
        <span class="mono small alerts-error">
          ({said.length > ERROR_SHOWN ? `${said.slice(0, ERROR_SHOWN)}…` : said})
        </span>
      )}
    </>
  )
}

/**
 * The latest delivery in words: never used, queued, delivered (when), retrying (what the receiver answered, when
 * the next try is), or failed for good. Then the failed attempts of the last 24 hours.
 */
export const ChannelStatus = ({ state, now }: { state: ChannelState; now: Date }) => {
  const last = state.last
  return (
    <div class="alerts-status">
      <p class="alerts-last">
        <span class="alerts-label">Last delivery:</span>{" "}
        {last === null ? (
          <span class="alerts-never muted">never used (no delivery yet)</span>
        ) : last.status === "succeeded" ? (
          <>
            <span class="alerts-state alerts-delivered">delivered</span>{" "}
            {last.response !== null && (
              <>
                <span class="mono">HTTP {last.response}</span>{" "}
              </>
            )}
            <Time at={last.deliveredAt ?? last.attemptedAt ?? last.createdAt} now={now} />
          </>
        ) : last.status === "failed" ? (
          <>
            <span class="alerts-state alerts-retrying">retrying</span> after{" "}
            <DeliveryResponse response={last.response} error={last.error} />{" "}
            <Time at={last.attemptedAt ?? last.createdAt} now={now} />; next retry{" "}
            <Time at={last.nextAttemptAt} now={now} />
          </>
        ) : last.status === "dead" ? (
          <>
            <span class="alerts-state alerts-failed">failed</span>{" "}
            <DeliveryResponse response={last.response} error={last.error} />{" "}
            <Time at={last.attemptedAt ?? last.createdAt} now={now} />; no more retries (Redeliver in the delivery log)
          </>
        ) : (
          <>
            <span class="alerts-state alerts-queued">queued</span>{" "}
            <Time at={last.attempts === 0 ? last.createdAt : (last.attemptedAt ?? last.createdAt)} now={now} />
          </>
        )}
        {last !== null && <span class="mono small muted"> {last.type}</span>}
      </p>
      <p class={state.failures > 0 ? "alerts-failures alerts-has-failures" : "alerts-failures muted"}>
        {state.failures === 0
          ? "No failed attempt in the last 24 h."
          : `${state.failures} failed ${state.failures === 1 ? "attempt" : "attempts"} in the last 24 h.`}
      </p>
    </div>
  )
}
