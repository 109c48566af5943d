import type { SensorView } from "../../admin/SensorAdmin.ts"
import { Csrf, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"
import { HEARTBEATS, heartbeatText, STATUS_TEXT, StatusText } from "./status.tsx"

/** A sensor's own page: its status and heartbeat, and for administrators rename, heartbeat, rotate and revoke. */
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
