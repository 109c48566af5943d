import type { Enrolment } from "../../admin/TwoFactor.ts"
import { Csrf, type Flash, FlashNotice, type Viewer } from "../components.tsx"
import { Layout } from "../layout.tsx"

/**
 * The signed-in user's two-factor codes: on (and how to turn them off, with a current code), or the enrolment: the
 * QR code (SVG made on the server, shown as an image: no script), the secret as text, and a current code to confirm.
 */
export const TwoFactorPage = (props: {
  viewer: Viewer
  enrolment: Enrolment | undefined
  required: boolean
  mustEnrol: boolean
  flash: Flash | undefined
}) => (
  <Layout title="Two-factor codes" viewer={props.viewer} section="none">
    <h1>Two-factor codes</h1>
    <FlashNotice flash={props.flash} />
    {props.mustEnrol && (
      <div class="notice notice-error" role="alert">
        <p>Your organization requires two-factor codes. Set them up to use the console.</p>
      </div>
    )}
    {props.enrolment === undefined ? (
      <section class="panel" aria-labelledby="two-factor-on">
        <h2 id="two-factor-on">Two-factor codes are on</h2>
        <p>Each sign-in asks for a code from your authenticator app (or one of your recovery codes).</p>
        {props.required ? (
          <p>Your organization requires them: an administrator can reset them if you lose your device.</p>
        ) : (
          <form method="post" action="/account/two-factor/disable">
            <Csrf token={props.viewer.csrfToken} />
            <div class="field">
              <label for="disable-code">Current code, to turn them off</label>
              <input
                id="disable-code"
                name="code"
                type="text"
                inputmode="numeric"
                autocomplete="one-time-code"
                maxlength={64}
                required
              />
            </div>
            <button type="submit" class="danger">
              Turn off two-factor codes
            </button>
          </form>
        )}
      </section>
    ) : (
      <section class="panel" aria-labelledby="two-factor-enrol">
        <h2 id="two-factor-enrol">Set up two-factor codes</h2>
        <ol>
          <li>Scan this QR code with your authenticator app, or type the key below into it.</li>
          <li>Enter the 6-digit code the app shows.</li>
        </ol>
        <img
          class="qr-code"
          src={`data:image/svg+xml;base64,${Buffer.from(props.enrolment.qrSvg).toString("base64")}`}
          alt="QR code for your authenticator app (the same key as the text below)"
          width="200"
          height="200"
        />
        <p>
          Key: <code class="mono two-factor-secret">{props.enrolment.secret}</code>
        </p>
        <form method="post" action="/account/two-factor/confirm">
          <Csrf token={props.viewer.csrfToken} />
          <div class="field">
            <label for="confirm-code">Code from the app</label>
            <input
              id="confirm-code"
              name="code"
              type="text"
              inputmode="numeric"
              autocomplete="one-time-code"
              maxlength={6}
              required
            />
          </div>
          <button type="submit">Turn on two-factor codes</button>
        </form>
      </section>
    )}
  </Layout>
)

/** The ten recovery codes, shown this once (the page is never cached; only their hashes are kept). */
export const RecoveryCodesPage = (props: { viewer: Viewer; codes: ReadonlyArray<string> }) => (
  <Layout title="Recovery codes" viewer={props.viewer} section="none">
    <h1>Two-factor codes are on</h1>
    <div class="notice notice-ok" role="status">
      <p>
        Keep these recovery codes somewhere safe: each signs you in once instead of a code from your app. They are shown
        only now.
      </p>
    </div>
    <ul class="recovery-codes mono">
      {props.codes.map((code) => (
        <li>{code}</li>
      ))}
    </ul>
    <p>
      <a href="/">Continue to the console</a>
    </p>
  </Layout>
)
