import type { SensorView } from "../../admin/SensorAdmin.ts"
import { plainIngestWarning, SENSOR_PROFILES, type Snippet, setupSnippets } from "../../admin/sensorSetup.ts"
import { parseToken, SENSOR_TOKEN } from "../../domain/secretToken.ts"
import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"

/**
 * Settings → Sensors (D43): the list with status and last contact (every user; D26 lets analysts read Settings),
 * create, rename, heartbeat, rotate and revoke (admins). A token is shown once, on the page a create or rotate
 * redirects to, with its set-up snippets filled in; it is never in a URL and never shown again.
 */

/** Value sent, label, and the interval in seconds it sets (null: none expected). */
const HEARTBEATS: ReadonlyArray<readonly [string, string, number | null]> = [
  ["", "none expected", null],
  ["60s", "every minute", 60],
  ["5m", "every 5 minutes", 300],
  ["15m", "every 15 minutes", 900],
  ["1h", "every hour", 3600],
  ["24h", "every day", 86400],
]

const STATUS_TEXT: Readonly<Record<string, string>> = {
  alive: "heard from within three heartbeat intervals",
  silent: "missed three heartbeats",
  unknown: "no heartbeat expected, or none received yet",
  revoked: "its token is refused",
}

const StatusText = ({ status }: { status: string }) => (
  <span
    class={`status ${status === "alive" ? "status-closed" : status === "silent" ? "status-silent" : ""}`}
    title={STATUS_TEXT[status] ?? ""}
  >
    {status}
  </span>
)

/** D43: silent sensors, said first and as a warning (the alert channels that opted in were told too). */
export const SilentNotice = ({ count, link }: { count: number; link?: boolean }) =>
  count > 0 ? (
    <div class="notice notice-warn" role="status">
      <p>
        <strong>{count === 1 ? "1 sensor is silent" : `${count} sensors are silent`}</strong>:{" "}
        {count === 1 ? "it has" : "they have"} missed three heartbeats.{" "}
        {link === true && <a href="/settings/sensors">See the sensors</a>}
      </p>
    </div>
  ) : null

const heartbeatText = (seconds: number | null) => {
  if (seconds === null) return "none expected"
  if (seconds % 3600 === 0) return `every ${seconds / 3600} h`
  if (seconds % 60 === 0) return `every ${seconds / 60} min`
  return `every ${seconds} s`
}

/** The sensor a flashed secret is the token of (a create or a rotate), if it is one of this list. */
const tokenSensor = (flash: Flash | undefined, sensors: ReadonlyArray<SensorView>) => {
  const value = flash?.secret?.value
  const parsed = value === undefined ? undefined : parseToken(SENSOR_TOKEN, value)
  const sensor = parsed === undefined ? undefined : sensors.find((s) => s.id === parsed.id)
  return sensor === undefined || value === undefined ? undefined : { sensor, token: value }
}

const SnippetBlock = ({ snippet }: { snippet: Snippet }) => {
  const id = `snippet-${snippet.kind}`
  return (
    <section class="panel">
      <h3>{snippet.title}</h3>
      <p class="small">{snippet.where}</p>
      {/* Long lines wrap on screen only: the Copy button and a selection copy the text exactly as written. */}
      <pre id={id} class="snippet">
        {snippet.text}
      </pre>
      <button type="button" class="secondary" data-copy={id}>
        Copy
      </button>
    </section>
  )
}

export const SensorsPage = (props: {
  viewer: Viewer
  sensors: ReadonlyArray<SensorView>
  flash: Flash | undefined
  now: Date
  ingestUrl: string
  /** APP_URL: over HTTPS, a plain-HTTP ingest address is warned about. */
  appUrl?: string
}) => {
  const shown = tokenSensor(props.flash, props.sensors)
  const plain = plainIngestWarning(props.appUrl ?? "", props.ingestUrl)
  const plainNotice = plain && (
    <div class="notice notice-warn" role="alert">
      <p>
        <strong>Plain HTTP.</strong> {plain}
      </p>
    </div>
  )
  return (
    <SettingsLayout viewer={props.viewer} tab="sensors" title="Sensors" flash={props.flash}>
      <p>
        Sensors report to the ingest address <code>{props.ingestUrl}</code> with their own token. A sensor that expects
        a heartbeat and misses three is <strong>silent</strong>.
      </p>
      {plainNotice}
      <SilentNotice count={props.sensors.filter((s) => s.status === "silent").length} />
      {shown && (
        <div class="panel" id="setup">
          <h2>Set up {shown.sensor.name}</h2>
          <p>
            Paste one of these into the sensor's configuration. They hold the token above: like it, they are shown only
            now.
          </p>
          {plainNotice}
          {setupSnippets({ ingestUrl: props.ingestUrl, token: shown.token, profile: shown.sensor.profile }).map((s) => (
            <SnippetBlock snippet={s} />
          ))}
        </div>
      )}
      {isAdmin(props.viewer) && (
        <form class="panel" method="post" action="/settings/sensors">
          <h2>Add a sensor</h2>
          <Csrf token={props.viewer.csrfToken} />
          <div class="field">
            <label for="sensor-name">Name</label>
            <input id="sensor-name" name="name" type="text" required maxLength={200} placeholder="dmz-web-01" />
          </div>
          <div class="field">
            <label for="sensor-profile">Profile</label>
            <select id="sensor-profile" name="profile">
              {SENSOR_PROFILES.map((p) => (
                <option value={p.id} selected={p.id === "opencanary"}>
                  {`${p.label} (${p.id})`}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="sensor-heartbeat">Heartbeat</label>
            <select id="sensor-heartbeat" name="heartbeatInterval">
              {HEARTBEATS.map(([value, label]) => (
                <option value={value}>{label}</option>
              ))}
            </select>
          </div>
          <button type="submit">Add sensor</button>
        </form>
      )}
      <h2>Sensors</h2>
      <DataTable
        columns={["Name", "Profile", "Status", "Last heard from", "Heartbeat", "Created", ""]}
        empty="No sensors yet."
        rows={props.sensors}
      >
        {(s) => (
          <tr>
            <td>
              {s.name}
              <div class="mono small muted">{s.id}</div>
            </td>
            <td class="mono small">{s.profile}</td>
            <td>
              <StatusText status={s.status} />
            </td>
            <td>{s.lastSeenAt ? <Time at={s.lastSeenAt} now={props.now} /> : <span class="muted">never</span>}</td>
            <td class="small">{heartbeatText(s.heartbeatIntervalSeconds)}</td>
            <td>
              <Time at={s.createdAt} now={props.now} />
            </td>
            <td>
              {s.revokedAt === null && (
                <a href={`/settings/sensors/${s.id}`}>{isAdmin(props.viewer) ? "Manage…" : "Details"}</a>
              )}
            </td>
          </tr>
        )}
      </DataTable>
      <details class="panel small">
        <summary>Profiles</summary>
        <dl class="facts">
          {SENSOR_PROFILES.map((p) => (
            <>
              <dt class="mono">{p.id}</dt>
              <dd>{p.description}</dd>
            </>
          ))}
        </dl>
      </details>
    </SettingsLayout>
  )
}

export const SensorPage = (props: { viewer: Viewer; sensor: SensorView; flash: Flash | undefined; now: Date }) => {
  const s = props.sensor
  const base = `/settings/sensors/${s.id}`
  return (
    <SettingsLayout viewer={props.viewer} tab="sensors" title={`Sensor ${s.name}`} flash={props.flash}>
      <p>
        <a href="/settings/sensors">← Sensors</a>
      </p>
      <div class="panel">
        <dl class="facts">
          <dt>Id</dt>
          <dd class="mono small">{s.id}</dd>
          <dt>Profile</dt>
          <dd class="mono">{s.profile}</dd>
          <dt>Status</dt>
          <dd>
            <StatusText status={s.status} /> <span class="muted small">({STATUS_TEXT[s.status] ?? ""})</span>
          </dd>
          <dt>Last heard from</dt>
          <dd>{s.lastSeenAt ? <Time at={s.lastSeenAt} now={props.now} /> : <span class="muted">never</span>}</dd>
          <dt>Heartbeat</dt>
          <dd>{heartbeatText(s.heartbeatIntervalSeconds)}</dd>
          <dt>Created</dt>
          <dd>
            <Time at={s.createdAt} now={props.now} />
          </dd>
          {s.previousTokenValidUntil && (
            <>
              <dt>Previous token</dt>
              <dd>
                also works until <Time at={s.previousTokenValidUntil} now={props.now} />
              </dd>
            </>
          )}
        </dl>
      </div>
      {isAdmin(props.viewer) && s.revokedAt === null && (
        <>
          <form class="panel" method="post" action={`${base}/rename`}>
            <h2>Rename</h2>
            <Csrf token={props.viewer.csrfToken} />
            <div class="field">
              <label for="rename-name">New name</label>
              <input id="rename-name" name="name" type="text" required maxLength={200} value={s.name} />
            </div>
            <button type="submit" class="secondary">
              Rename
            </button>
          </form>
          <form class="panel" method="post" action={`${base}/heartbeat`}>
            <h2>Heartbeat</h2>
            <Csrf token={props.viewer.csrfToken} />
            <div class="field">
              <label for="heartbeat-interval">Expected heartbeat</label>
              <select id="heartbeat-interval" name="heartbeatInterval">
                {HEARTBEATS.map(([value, label, seconds]) => (
                  <option value={value} selected={seconds === s.heartbeatIntervalSeconds}>
                    {label}
                  </option>
                ))}
                {s.heartbeatIntervalSeconds !== null &&
                  !HEARTBEATS.some(([, , seconds]) => seconds === s.heartbeatIntervalSeconds) && (
                    <option value={`${s.heartbeatIntervalSeconds}s`} selected>
                      {heartbeatText(s.heartbeatIntervalSeconds)}
                    </option>
                  )}
              </select>
            </div>
            <button type="submit" class="secondary">
              Save
            </button>
          </form>
          <form class="panel" method="post" action={`${base}/rotate`}>
            <h2>Rotate the token</h2>
            <Csrf token={props.viewer.csrfToken} />
            <div class="field">
              <label for="rotate-grace">The old token also works for</label>
              <select id="rotate-grace" name="grace">
                <option value="">no grace (it stops now)</option>
                <option value="1h">1 hour</option>
                <option value="24h">24 hours</option>
                <option value="7d">7 days</option>
              </select>
            </div>
            {s.previousTokenValidUntil && (
              <div class="field">
                <p class="small">
                  The token of an earlier rotation still works until{" "}
                  <Time at={s.previousTokenValidUntil} now={props.now} />: rotating again before then is refused unless
                  you end that grace now.
                </p>
                <input id="rotate-force" type="checkbox" name="force" value="yes" />{" "}
                <label for="rotate-force" class="inline-label">
                  End the earlier grace now
                </label>
              </div>
            )}
            <button type="submit" class="secondary">
              Rotate token
            </button>
          </form>
          <form class="panel" method="post" action={`${base}/revoke`}>
            <h2>Revoke</h2>
            <Csrf token={props.viewer.csrfToken} />
            <p>
              Its token is refused (401) from the next request on, in every process. This cannot be undone; the sensor's
              events and incidents stay.
            </p>
            <div class="field">
              <input id="revoke-confirm" type="checkbox" name="confirm" value="yes" required />{" "}
              <label for="revoke-confirm" class="inline-label">
                Revoke {s.name}
              </label>
            </div>
            <button type="submit" class="danger">
              Revoke the sensor
            </button>
          </form>
        </>
      )}
    </SettingsLayout>
  )
}
