import type { shownProvider } from "../../admin/SignInProviderAdmin.ts"
import { Csrf, type Flash, Time, type Viewer } from "../components.tsx"
import { SettingsLayout } from "../layout.tsx"

type Provider = ReturnType<typeof shownProvider>

/**
 * Settings → Sign-in (administrators only): the organization's OpenID Connect provider. The redirect URL to register
 * comes first (the provider's admin needs it before there is anything to type here); the client secret is never
 * shown, a new one replaces it.
 */
export const SignInSettingsPage = (props: {
  viewer: Viewer
  flash: Flash | undefined
  provider: Provider | undefined
  redirectUrl: string
  startUrl: string
  now: Date
  /** What the admin typed, kept after a refusal (never the secret). */
  typed?: Readonly<Record<string, string>> | undefined
}) => {
  const p = props.provider
  const value = (name: string, stored: string | null | undefined) => props.typed?.[name] ?? stored ?? ""
  const defaultRole = value("defaultRole", p === undefined ? "viewer" : (p.defaultRole ?? "none"))
  const passwordSignIn = value("passwordSignIn", p === undefined || p.passwordSignIn === "allowed" ? "on" : "off")
  return (
    <SettingsLayout viewer={props.viewer} tab="signin" title="Sign-in" flash={props.flash}>
      <p>
        Let your people sign in through your identity provider (Microsoft Entra ID, Okta, Google Workspace, Keycloak or
        any OpenID Connect provider). Register this service at the provider as a web application with this redirect URL:
      </p>
      <pre class="snippet">
        <code>{props.redirectUrl}</code>
      </pre>
      <p class="small muted">
        A user signs in with "Continue with your organization's sign-in" on the sign-in page (their email's domain finds
        the provider), or from a link in the provider's app list: <code>{props.startUrl}</code>. The provider's own
        sign-in policy, its second factor included, applies; a user is created at their first sign-in, and a disabled
        user stays out.
      </p>
      {p !== undefined && (
        <section class="panel" aria-labelledby="current-title">
          <h2 id="current-title">Current provider</h2>
          <dl class="facts">
            <dt>Issuer</dt>
            <dd class="mono user-text">{p.issuer}</dd>
            <dt>Client ID</dt>
            <dd class="mono user-text">{p.clientId}</dd>
            <dt>Client secret</dt>
            <dd>sealed; it is never shown again</dd>
            <dt>Email domains</dt>
            <dd class="user-text">{p.allowedDomains.join(", ")}</dd>
            <dt>Role claim</dt>
            <dd class="mono user-text">{p.roleClaim ?? "none"}</dd>
            <dt>Default role</dt>
            <dd>{p.defaultRole ?? "none: a user the claim gives no role is refused"}</dd>
            <dt>Password sign-in</dt>
            <dd>{p.passwordSignIn === "allowed" ? "allowed" : "off: only the provider signs people in"}</dd>
            <dt>Changed</dt>
            <dd>
              <Time at={p.updatedAt} now={props.now} />
            </dd>
          </dl>
        </section>
      )}
      <form class="panel" method="post" action="/settings/sign-in" id="provider">
        <h2>{p === undefined ? "Set up single sign-on" : "Change the provider"}</h2>
        <Csrf token={props.viewer.csrfToken} />
        <div class="field">
          <label for="issuer">Issuer URL</label>
          <input
            id="issuer"
            name="issuer"
            type="url"
            class="wide"
            required
            maxLength={2048}
            placeholder="https://login.microsoftonline.com/<tenant-id>/v2.0"
            value={value("issuer", p?.issuer)}
          />
          <p class="small muted">
            Its discovery document is read now, and every address it names must be public (https).
          </p>
        </div>
        <div class="field">
          <label for="clientId">Client ID</label>
          <input
            id="clientId"
            name="clientId"
            type="text"
            class="wide"
            required
            maxLength={255}
            autocomplete="off"
            value={value("clientId", p?.clientId)}
          />
        </div>
        <div class="field">
          <label for="clientSecret">Client secret</label>
          <input
            id="clientSecret"
            name="clientSecret"
            type="password"
            class="wide"
            maxLength={1024}
            autocomplete="off"
            required={p === undefined}
          />
          {p !== undefined && <p class="small muted">Leave empty to keep the sealed one.</p>}
        </div>
        <div class="field">
          <label for="domains">Email domains</label>
          <input
            id="domains"
            name="domains"
            type="text"
            class="wide"
            required
            maxLength={4000}
            placeholder="example.com, example.org"
            value={value("domains", p?.allowedDomains.join(", "))}
          />
          <p class="small muted">Only addresses in these domains sign in; a domain signs in to one organization.</p>
        </div>
        <div class="field">
          <label for="roleClaim">Role claim</label>
          <input
            id="roleClaim"
            name="roleClaim"
            type="text"
            maxLength={100}
            autocomplete="off"
            placeholder="roles"
            value={value("roleClaim", p?.roleClaim)}
          />
          <p class="small muted">
            A claim holding admin, analyst or viewer (a string or a list; the highest counts; a dotted name such as
            realm_access.roles reads a nested claim). Empty: everyone gets the default role.
          </p>
        </div>
        <div class="field">
          <label for="defaultRole">Default role</label>
          <select id="defaultRole" name="defaultRole">
            {(["viewer", "analyst", "admin", "none"] as const).map((role) => (
              <option value={role} selected={defaultRole === role}>
                {role === "none" ? "none (refuse a user the claim gives no role)" : role}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="passwordSignIn">Password sign-in</label>
          <select id="passwordSignIn" name="passwordSignIn">
            <option value="on" selected={passwordSignIn === "on"}>
              allowed as well
            </option>
            <option value="off" selected={passwordSignIn === "off"}>
              off (only the provider signs people in)
            </option>
          </select>
          <p class="small muted">
            An operator turns passwords back on from the server if the provider fails:{" "}
            <code>bun run admin sign-in passwords --org &lt;org-id&gt; on</code>.
          </p>
        </div>
        <button type="submit">{p === undefined ? "Save and check the provider" : "Save changes"}</button>
      </form>
      {p !== undefined && (
        <form class="panel" method="post" action="/settings/sign-in/remove">
          <h2>Remove single sign-on</h2>
          <Csrf token={props.viewer.csrfToken} />
          <p>
            Users keep their accounts and roles; those without a password ask an administrator for a set-password link
            (Settings → Users, Reset).
          </p>
          <button type="submit" class="danger">
            Remove the provider
          </button>
        </form>
      )}
    </SettingsLayout>
  )
}
