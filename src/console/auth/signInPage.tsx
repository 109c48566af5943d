import { Layout } from "../layout.tsx"

/** Sign-in. `next` is a same-site path the form returns to (an incident's `url`, from an alert or the API). */
export const SignInPage = (props: {
  next: string
  csrf: string
  error?: string | undefined
  notice?: string | undefined
  email?: string
  /** The single sign-on form's own message (no provider for that domain, the provider cannot be reached). */
  ssoError?: string | undefined
  /** The work email as typed in the single sign-on form, kept after its message. */
  ssoEmail?: string | undefined
}) => (
  <Layout title="Sign in" section="none">
    <div class="signin panel">
      <h1>Sign in</h1>
      {props.notice && (
        <div class="notice notice-ok" role="status">
          {props.notice}
        </div>
      )}
      {props.error && (
        <div class="notice notice-error" role="alert">
          {props.error}
        </div>
      )}
      <form method="post" action="/sign-in">
        <input type="hidden" name="csrf" value={props.csrf} />
        <input type="hidden" name="next" value={props.next} />
        <div class="field">
          <label for="email">Email</label>
          <input id="email" name="email" type="email" autocomplete="username" required value={props.email ?? ""} />
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
        </div>
        <button type="submit">Sign in</button>
      </form>
      <section class="sso" aria-labelledby="sso-title">
        <h2 id="sso-title">Single sign-on</h2>
        {props.ssoError && (
          <div class="notice notice-error" role="alert">
            {props.ssoError}
          </div>
        )}
        <form method="post" action="/sign-in/sso">
          <input type="hidden" name="csrf" value={props.csrf} />
          <input type="hidden" name="next" value={props.next} />
          <div class="field">
            <label for="sso-email">Work email</label>
            <input
              id="sso-email"
              name="email"
              type="email"
              autocomplete="username"
              required
              value={props.ssoEmail ?? ""}
            />
          </div>
          <button type="submit" class="secondary">
            Continue with your organization's sign-in
          </button>
        </form>
      </section>
      <FirstSignIn />
    </div>
  </Layout>
)

/**
 * How an account is made: there is no sign-up. An operator with shell access runs the admin CLI, which prints a
 * one-time link (24 h) to set the password; the first administrator is made the same way.
 */
const FirstSignIn = () => (
  <section class="first-signin" aria-labelledby="first-signin-title">
    <h2 id="first-signin-title">No account yet?</h2>
    <p>
      If your organization uses single sign-on, your first sign-in above makes your account. Otherwise accounts are made
      on the server, not here: whoever runs the service creates one (the first administrator too) with:
    </p>
    <pre class="snippet">
      <code>bun run admin user create --org &lt;org-id&gt; --email &lt;email&gt; --role admin</code>
    </pre>
    <p>
      It prints a one-time link, valid for 24 hours: open it to set your password, then sign in here.{" "}
      <code>bun run admin org list</code> shows the organization ids (<code>bun run admin org create --name</code> makes
      one); use <code>--role analyst</code> for users who triage incidents, <code>--role viewer</code> for read-only
      users.
    </p>
  </section>
)

/**
 * On the way to the provider. The sign-in form's POST cannot be answered with a redirect to the provider: the
 * console's CSP (`form-action 'self'`) covers a form's redirects too, and the browser would stop there. This page
 * goes on by itself (a meta refresh, no script) and has the link for a browser that does not.
 */
export const ToProviderPage = (props: { url: string }) => (
  <Layout title="Signing in" section="none" refreshTo={props.url}>
    <div class="signin panel">
      <h1>Signing in</h1>
      <p>
        On to your organization's sign-in. <a href={props.url}>Continue</a> if nothing happens.
      </p>
    </div>
  </Layout>
)
