import { Csrf, DataTable, type Flash, Time, type Viewer } from "../components.tsx"
import { isAdmin, SettingsLayout } from "../layout.tsx"

export interface UserView {
  readonly id: string
  readonly email: string
  readonly role: string
  readonly status: string
  readonly createdAt: string
  /** Whether the user has two-factor codes on. */
  readonly twoFactor: boolean
}

export const UsersPage = (props: {
  viewer: Viewer & { readonly userId: string }
  users: ReadonlyArray<UserView>
  /** Whether the organization requires two-factor codes of every user. */
  requireTwoFactor: boolean
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
            <option value="viewer">viewer (reads incidents and events, changes nothing)</option>
            <option value="admin">admin (everything)</option>
          </select>
        </div>
        <button type="submit">Create user and link</button>
      </form>
    )}
    <section class="panel" aria-labelledby="two-factor-requirement">
      <h2 id="two-factor-requirement">Two-factor codes</h2>
      <p>
        {props.requireTwoFactor
          ? "Required: every user signs in with a code from an authenticator app; users without one set it up at their next sign-in."
          : "Not required: each user can turn them on in their account."}
      </p>
      {isAdmin(props.viewer) && (
        <form method="post" action="/settings/users/two-factor">
          <Csrf token={props.viewer.csrfToken} />
          <input type="hidden" name="state" value={props.requireTwoFactor ? "off" : "on"} />
          <button type="submit" class={props.requireTwoFactor ? "secondary" : undefined}>
            {props.requireTwoFactor ? "Stop requiring two-factor codes" : "Require two-factor codes"}
          </button>
        </form>
      )}
    </section>
    {/* No empty message: the list holds at least the viewer. */}
    <DataTable columns={["Email", "Role", "State", "Two-factor", "Created", "Actions"]} rows={props.users}>
      {(u) => (
        <tr>
          <td>
            {u.email}
            <div class="mono small muted">{u.id}</div>
          </td>
          <td>{u.role}</td>
          <td>{u.status}</td>
          <td>{u.twoFactor ? "on" : "off"}</td>
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
                <form class="inline" method="post" action={`/settings/users/${u.id}/end-sessions`}>
                  <Csrf token={props.viewer.csrfToken} />
                  <button type="submit" class="secondary">
                    End sessions
                  </button>
                </form>{" "}
                {u.twoFactor && (
                  <>
                    <form class="inline" method="post" action={`/settings/users/${u.id}/reset-two-factor`}>
                      <Csrf token={props.viewer.csrfToken} />
                      <button type="submit" class="secondary">
                        Reset two-factor
                      </button>
                    </form>{" "}
                  </>
                )}
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
