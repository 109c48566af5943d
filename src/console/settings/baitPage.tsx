import type { BaitCredentialView } from "../../admin/JudgementAdmin.ts"
import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { SettingsLayout } from "../layout.tsx"

/**
 * Settings → Bait credentials (administrators only): the usernames planted where only an intruder would read them; a
 * login with one makes its incident critical. Usernames and "where it is planted" are an administrator's words,
 * shown as typed, as text.
 */
export const BaitPage = (props: {
  viewer: Viewer
  flash: Flash | undefined
  baits: ReadonlyArray<BaitCredentialView>
  now: Date
}) => (
  <SettingsLayout viewer={props.viewer} tab="bait" title="Bait credentials" flash={props.flash}>
    <p>
      A username and password you planted somewhere only an intruder would look (a configuration file, a script, a
      password manager entry). It works nowhere, so a login with it on any decoy means someone read it where it was
      planted: its incident is <strong>critical</strong> and says "Bait credential used". OpenCanary's own bait
      (honeycred) counts too.
    </p>
    <p class="small muted">
      Only a keyed fingerprint of the password is stored: it cannot be shown again, here or anywhere.
    </p>
    <form class="panel" method="post" action="/settings/bait" id="add">
      <h2>Add a bait credential</h2>
      <Csrf token={props.viewer.csrfToken} />
      <div class="field">
        <label for="bait-username">Username</label>
        <input id="bait-username" name="username" type="text" required maxLength={256} autocomplete="off" />
      </div>
      <div class="field">
        <label for="bait-password">Password</label>
        <input id="bait-password" name="password" type="password" required maxLength={256} autocomplete="off" />
      </div>
      <div class="field">
        <label for="bait-label">Where it is planted</label>
        <input
          id="bait-label"
          name="label"
          type="text"
          class="wide"
          maxLength={200}
          placeholder="/etc/backup.conf on fs-01"
        />
      </div>
      <button type="submit">Add</button>
    </form>
    <h2>Registered</h2>
    <DataTable
      columns={["Username", "Where it is planted", "Added", ""]}
      empty="No bait credentials."
      rows={props.baits}
    >
      {(b) => (
        <tr id={b.id}>
          <td class="mono user-text">{b.username}</td>
          <td class="user-text">{b.label === "" ? <span class="muted">—</span> : b.label}</td>
          <td>
            <Time at={b.createdAt} now={props.now} />
          </td>
          <td>
            <a href={`/settings/bait/${b.id}/remove`} aria-label={`Remove bait credential ${b.username}`}>
              Remove…
            </a>
          </td>
        </tr>
      )}
    </DataTable>
  </SettingsLayout>
)

export const RemoveBaitPage = (props: { viewer: Viewer; bait: BaitCredentialView }) => (
  <SettingsLayout viewer={props.viewer} tab="bait" title="Remove a bait credential" flash={undefined}>
    <div class="panel">
      <p>
        Remove the bait credential <code class="user-text">{props.bait.username}</code>
        {props.bait.label !== "" && (
          <>
            {" "}
            (planted: <span class="user-text">{props.bait.label}</span>)
          </>
        )}
        ? Later logins with it are no longer marked as bait; incidents already judged keep their judgement.
      </p>
      <form method="post" action={`/settings/bait/${props.bait.id}/remove`}>
        <Csrf token={props.viewer.csrfToken} />
        <button type="submit" class="danger">
          Remove it
        </button>{" "}
        <a href="/settings/bait">Cancel</a>
      </form>
    </div>
  </SettingsLayout>
)
