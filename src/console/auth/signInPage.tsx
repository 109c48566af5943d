import { Layout } from "../layout.tsx"

/** Sign-in. `next` is a same-site path the form returns to (an incident's `url`, from an alert or the API). */
export const SignInPage = (props: {
  next: string
  csrf: string
  error?: string | undefined
  notice?: string | undefined
  email?: string
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
      Accounts are made on the server, not here. Whoever runs the service creates one (the first administrator too)
      with:
    </p>
    <pre class="snippet">
      <code>bun run admin user create --org &lt;org-id&gt; --email &lt;email&gt; --role admin</code>
    </pre>
    <p>
      It prints a one-time link, valid for 24 hours: open it to set your password, then sign in here.{" "}
      <code>bun run admin org list</code> shows the organization ids (<code>bun run admin org create --name</code> makes
      one); use <code>--role analyst</code> for read-only users.
    </p>
  </section>
)
