import type { SensorView } from "../../admin/SensorAdmin.ts"
import { plainIngestWarning, SENSOR_PROFILES, type Snippet, setupSnippets } from "../../admin/sensorSetup.ts"
import { parseToken, SENSOR_TOKEN } from "../../domain/secretToken.ts"
import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"
import { HEARTBEATS, heartbeatText, SilentNotice, StatusText } from "./status.tsx"

/**
 * Settings → Sensors: the list with status and last contact (every user: analysts read Settings too),
 * create, rename, heartbeat, rotate and revoke (admins). A token is shown once, on the page a create or rotate
 * redirects to, with its set-up snippets filled in; it is never in a URL and never shown again.
 */

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
