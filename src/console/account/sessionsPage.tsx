import { Csrf, DataTable, type Flash, FlashNotice, Time, type Viewer } from "../components.tsx"
import { Layout } from "../layout.tsx"

export interface SessionView {
  readonly id: string
  readonly createdAt: Date
  readonly lastSeenAt: Date
  readonly ip: string
  /** As the browser sent it at sign-in, cut to USER_AGENT_MAX (client text: rendered as text, escaped). */
  readonly userAgent: string | null
  readonly current: boolean
}

/**
 * The signed-in user's own sessions (any role): when each began and was last used, from which address and browser,
 * this one marked; each can be ended, or every other one at once.
 */
export const SessionsPage = (props: {
  viewer: Viewer
  sessions: ReadonlyArray<SessionView>
  flash: Flash | undefined
  now: Date
}) => (
  <Layout title="Your sessions" viewer={props.viewer} section="none">
    <h1>Your sessions</h1>
    <FlashNotice flash={props.flash} />
    <p>
      Where you are signed in to the console as {props.viewer.email}. End any session you do not recognise; its browser
      is signed out at its next request.
    </p>
    <p>
      <a href="/account/two-factor">Two-factor codes</a>: a code from an authenticator app at each sign-in.
    </p>
    <DataTable
      columns={["Browser", "Address", "Signed in", "Last used", "Actions"]}
      rows={props.sessions}
      empty="No sessions."
    >
      {(s) => (
        <tr id={`session-${s.id}`} class={s.current ? "current-session" : undefined}>
          <td>
            <span class="small user-agent">{s.userAgent ?? "unknown browser"}</span>
            {s.current && (
              <>
                {" "}
                <strong class="this-session">(this session)</strong>
              </>
            )}
          </td>
          <td class="mono small">{s.ip}</td>
          <td>
            <Time at={s.createdAt} now={props.now} />
          </td>
          <td>
            <Time at={s.lastSeenAt} now={props.now} />
          </td>
          <td>
            <form class="inline" method="post" action={`/account/sessions/${s.id}/end`}>
              <Csrf token={props.viewer.csrfToken} />
              <button type="submit" class={s.current ? "secondary" : "danger"}>
                {s.current ? "End (sign out)" : "End"}
              </button>
            </form>
          </td>
        </tr>
      )}
    </DataTable>
    {props.sessions.some((s) => !s.current) && (
      <form class="panel" method="post" action="/account/sessions/end-others">
        <Csrf token={props.viewer.csrfToken} />
        <button type="submit" class="danger">
          End all other sessions
        </button>
      </form>
    )}
  </Layout>
)
