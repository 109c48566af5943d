import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"

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
