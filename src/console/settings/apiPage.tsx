import { TLP_LEVELS, type TlpLevel } from "../../domain/stix.ts"
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

/** What each TLP 2.0 level tells whoever reads the organization's TAXII feed. */
export const TLP_MEANINGS: Readonly<Record<TlpLevel, string>> = {
  clear: "the reader may share it with anyone, publicly included.",
  green: "the reader may share it within their community (peers and partner organizations), not publicly.",
  amber: "the reader may share it within their own organization and with its clients who need to know, no further.",
  "amber+strict": "the reader may share it within their own organization only, with those who need to know.",
  red: "for the reader's eyes only: no sharing at all, not even within their organization.",
}

/** The organization's TLP 2.0 marking of its STIX objects; an admin may change it. */
const TlpPanel = (props: { viewer: Viewer; tlp: TlpLevel; apiUrl: string }) => (
  <section class="panel" aria-labelledby="tlp-heading">
    <h2 id="tlp-heading">Threat intelligence sharing: TLP for STIX/TAXII</h2>
    <p>
      Every STIX object of this organization's TAXII collection (<code>{props.apiUrl}/taxii2/</code>) carries the TLP
      2.0 marking <strong id="tlp-current">TLP:{props.tlp.toUpperCase()}</strong>: it tells whoever reads the feed how
      far they may share what the decoys saw.
    </p>
    {isAdmin(props.viewer) ? (
      <form method="post" action="/settings/api/tlp">
        <Csrf token={props.viewer.csrfToken} />
        <fieldset class="field">
          <legend class="small muted">TLP level</legend>
          {TLP_LEVELS.map((level) => (
            <div>
              <input id={`tlp-${level}`} type="radio" name="tlp" value={level} checked={level === props.tlp} />{" "}
              <label for={`tlp-${level}`} class="inline-label">
                <strong>TLP:{level.toUpperCase()}</strong>: {TLP_MEANINGS[level]}
              </label>
            </div>
          ))}
        </fieldset>
        <button type="submit">Save the TLP</button>
      </form>
    ) : (
      <p class="small muted">
        TLP:{props.tlp.toUpperCase()}: {TLP_MEANINGS[props.tlp]} An administrator can change it.
      </p>
    )}
  </section>
)

export const ApiSettingsPage = (props: {
  viewer: Viewer
  keys: ReadonlyArray<KeyView>
  flash: Flash | undefined
  now: Date
  apiUrl: string
  tlp: TlpLevel
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
          </label>{" "}
          <input id="scope-intel" type="checkbox" name="scope" value="intel:read" />{" "}
          <label for="scope-intel" class="inline-label">
            intel:read
          </label>{" "}
          <input id="scope-audit" type="checkbox" name="scope" value="audit:read" />{" "}
          <label for="scope-audit" class="inline-label">
            audit:read
          </label>
          <p class="small muted">
            intel:read alone is for a firewall: it reads the blocklist at <code>{props.apiUrl}/v1/blocklist.txt</code>{" "}
            and no incident or event. audit:read reads the audit log (<code>{props.apiUrl}/v1/audit</code>), for a SIEM
            or an archive.
          </p>
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
    <TlpPanel viewer={props.viewer} tlp={props.tlp} apiUrl={props.apiUrl} />
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
