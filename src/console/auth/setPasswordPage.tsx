import { Layout } from "../layout.tsx"

/** The one-time link's form; it names the account (email) the password is for. */
export const SetPasswordPage = (props: {
  token: string
  csrf: string
  error?: string | undefined
  email?: string | undefined
}) => (
  <Layout title="Set your password" section="none">
    <div class="signin panel">
      <h1>Set your password</h1>
      {props.email !== undefined && (
        <p>
          For the account <strong class="account-email">{props.email}</strong>. You sign in with this email.
        </p>
      )}
      <p class="muted">12 to 256 characters. A passphrase of several words is easiest.</p>
      {props.error && (
        <div class="notice notice-error" role="alert">
          {props.error}
        </div>
      )}
      <form method="post" action={`/set-password/${props.token}`}>
        <input type="hidden" name="csrf" value={props.csrf} />
        <div class="field">
          <label for="password">New password</label>
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="new-password"
            minLength={12}
            maxLength={256}
            required
          />
        </div>
        <button type="submit">Set password</button>
      </form>
    </div>
  </Layout>
)
