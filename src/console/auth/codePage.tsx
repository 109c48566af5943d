import { Layout } from "../layout.tsx"

/**
 * The second step of a sign-in for a user with two-factor codes: the 6-digit code of their authenticator app, or one
 * of their recovery codes.
 */
export const CodePage = (props: { next: string; csrf: string; error?: string | undefined }) => (
  <Layout title="Two-factor code" section="none">
    <div class="signin panel">
      <h1>Two-factor code</h1>
      {props.error && (
        <div class="notice notice-error" role="alert">
          {props.error}
        </div>
      )}
      <form method="post" action="/sign-in/code">
        <input type="hidden" name="csrf" value={props.csrf} />
        <input type="hidden" name="next" value={props.next} />
        <div class="field">
          <label for="code">Code from your authenticator app, or a recovery code</label>
          <input
            id="code"
            name="code"
            type="text"
            inputmode="numeric"
            autocomplete="one-time-code"
            maxlength={64}
            required
          />
        </div>
        <button type="submit">Sign in</button>
      </form>
      <p>
        <a href="/sign-in">Start again</a>
      </p>
    </div>
  </Layout>
)
