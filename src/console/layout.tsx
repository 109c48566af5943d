import type { Child } from "hono/jsx"
import { SCRIPT, STYLESHEET } from "./assets.ts"
import { Csrf, type Flash, FlashNotice, type Viewer } from "./components.tsx"

/** The frame of every page: the main navigation, and the settings tabs around every Settings page. */

export type Section = "overview" | "incidents" | "events" | "settings" | "none"

/** Whether the user changes incidents (close, note, acknowledge, assign): an analyst or an administrator. */
export const canTriage = (viewer: Viewer) => viewer.role === "admin" || viewer.role === "analyst"

/** Whether the user reads Settings: not a viewer. */
export const readsSettings = (viewer: Viewer | undefined) => viewer !== undefined && viewer.role !== "viewer"

const NAV: ReadonlyArray<readonly [Section, string, string]> = [
  ["overview", "/", "Overview"],
  ["incidents", "/incidents", "Incidents"],
  ["events", "/events", "Events"],
  ["settings", "/settings/api", "Settings"],
]

/** A page. Its `title` (the browser tab's, where nothing can be marked as attacker text) is never attacker-derived. */
export const Layout = (props: {
  title: string
  viewer?: Viewer | undefined
  section: Section
  children: Child
  /** A page that moves on by itself to this address (the way to a sign-in provider). */
  refreshTo?: string | undefined
}) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      {props.refreshTo !== undefined && <meta http-equiv="refresh" content={`0;url=${props.refreshTo}`} />}
      <title>{`${props.title} · Decoy console`}</title>
      <link rel="stylesheet" href={STYLESHEET.path} />
      <script src={SCRIPT.path} defer />
    </head>
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/">
          Decoy console
        </a>
        {props.viewer && (
          <>
            <nav aria-label="Main">
              {NAV.filter(([section]) => section !== "settings" || readsSettings(props.viewer)).map(
                ([section, href, label]) => (
                  <a href={href} aria-current={props.section === section ? "page" : undefined}>
                    {label}
                  </a>
                ),
              )}
            </nav>
            <div class="who">
              <span>
                <a href="/account/sessions" title="Your sessions">
                  {props.viewer.email}
                </a>{" "}
                ({props.viewer.role})
              </span>
              <form class="inline" method="post" action="/sign-out">
                <Csrf token={props.viewer.csrfToken} />
                <button type="submit">Sign out</button>
              </form>
            </div>
          </>
        )}
      </header>
      <main id="main">{props.children}</main>
    </body>
  </html>
)

type Tab = "api" | "alerts" | "sensors" | "networks" | "bait" | "ignore" | "users" | "signin" | "retention" | "audit"
const TABS: ReadonlyArray<readonly [Tab, string, string]> = [
  ["api", "/settings/api", "API and export"],
  ["alerts", "/settings/alerts", "Alerts"],
  ["sensors", "/settings/sensors", "Sensors"],
  ["networks", "/settings/networks", "Networks"],
  ["bait", "/settings/bait", "Bait credentials"],
  ["ignore", "/settings/ignore", "Ignore rules"],
  ["users", "/settings/users", "Users"],
  ["signin", "/settings/sign-in", "Sign-in"],
  ["retention", "/settings/retention", "Retention"],
  ["audit", "/settings/audit", "Audit log"],
]

export const SettingsLayout = (props: {
  viewer: Viewer
  tab: Tab
  title: string
  flash: Flash | undefined
  children: Child
}) => (
  <Layout title={props.title} viewer={props.viewer} section="settings">
    <nav aria-label="Settings" class="panel small">
      {TABS.map(([tab, href, label], i) => (
        <>
          {i > 0 && " · "}
          <a href={href} aria-current={props.tab === tab ? "page" : undefined}>
            {label}
          </a>
        </>
      ))}
    </nav>
    <h1>{props.title}</h1>
    <FlashNotice flash={props.flash} />
    {props.viewer.role !== "admin" && (
      <p class="notice notice-info" role="note">
        You can read these settings; only an administrator can change them.
      </p>
    )}
    {props.children}
  </Layout>
)

export const isAdmin = (viewer: Viewer) => viewer.role === "admin"
