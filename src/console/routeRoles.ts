import type { Role } from "../repos/ConsoleUsersRepo.ts"
import { ASSETS } from "./assets.ts"

/**
 * Who may use each console route, in one table: the page and action guards (session.ts, csrf.ts) look up the
 * request's route here, and the console does not start with a route missing from it (app.ts).
 *
 * - `public`: no session needed (sign-in and its two-factor code step, set-password, email confirmation, the static assets);
 * - `viewer`: any signed-in user (the pages and exports an analyst reads, signing out, their own sessions);
 * - `analyst`: an analyst or an administrator (changes to incidents, and the Settings pages, which they read);
 * - `admin`: an administrator (every change to settings, and the pages that only lead to one).
 */
export type Who = "public" | Role

export interface RouteRole {
  readonly method: "GET" | "POST"
  /** The path pattern exactly as the route is registered. */
  readonly path: string
  readonly who: Who
}

const get = (path: string, who: Who): RouteRole => ({ method: "GET", path, who })
const post = (path: string, who: Who): RouteRole => ({ method: "POST", path, who })

export const ROUTE_ROLES: ReadonlyArray<RouteRole> = [
  // Signing in and out, a set-password link, an email recipient's confirmation link.
  get("/sign-in", "public"),
  post("/sign-in", "public"),
  get("/sign-in/code", "public"),
  post("/sign-in/code", "public"),
  post("/sign-in/sso", "public"),
  get("/sign-in/sso/callback", "public"),
  get("/sign-in/sso/:org", "public"),
  post("/sign-out", "viewer"),
  get("/set-password/:token", "public"),
  post("/set-password/:token", "public"),
  get("/email/confirm/:token", "public"),
  post("/email/confirm/:token", "public"),
  ...ASSETS.map((asset) => get(asset.path, "public")),
  // A user's own two-factor codes: every user sets them up, and turns them off with a current code.
  get("/account/two-factor", "viewer"),
  post("/account/two-factor/confirm", "viewer"),
  post("/account/two-factor/disable", "viewer"),
  // A user's own sessions: every user sees theirs and ends them, as signing out.
  get("/account/sessions", "viewer"),
  post("/account/sessions/end-others", "viewer"),
  post("/account/sessions/:id/end", "viewer"),

  // What everyone signed in reads: the overview, incidents, events, sources and their exports.
  get("/", "viewer"),
  get("/incidents", "viewer"),
  get("/live/incidents", "viewer"),
  get("/incidents.csv", "viewer"),
  get("/incidents/:id", "viewer"),
  get("/events", "viewer"),
  get("/events.csv", "viewer"),
  get("/events/ignored", "viewer"),
  get("/sources/:ip", "viewer"),

  // Triage: what an analyst changes, and the bulk close's preview, which only leads to a close.
  post("/incidents/:id/close", "analyst"),
  post("/incidents/:id/notes", "analyst"),
  post("/incidents/:id/acknowledge", "analyst"),
  post("/incidents/:id/assign", "analyst"),
  post("/incidents/triage", "analyst"),
  get("/incidents/bulk-close", "analyst"),
  post("/incidents/bulk-close", "analyst"),

  // Settings: analysts read them, administrators change them.
  get("/settings", "analyst"),
  get("/settings/api", "analyst"),
  post("/settings/api/keys", "admin"),
  post("/settings/api/tlp", "admin"),
  get("/settings/api/keys/:id/revoke", "admin"),
  post("/settings/api/keys/:id/revoke", "admin"),
  get("/settings/users", "analyst"),
  post("/settings/users", "admin"),
  post("/settings/users/two-factor", "admin"),
  post("/settings/users/:id/:verb", "admin"),
  get("/settings/retention", "analyst"),
  post("/settings/retention", "admin"),
  get("/settings/audit", "admin"),
  get("/settings/networks", "analyst"),
  post("/settings/networks", "admin"),
  post("/settings/networks/reset", "admin"),
  get("/settings/sign-in", "admin"),
  post("/settings/sign-in", "admin"),
  post("/settings/sign-in/remove", "admin"),
  get("/settings/bait", "admin"),
  post("/settings/bait", "admin"),
  get("/settings/bait/:id/remove", "admin"),
  post("/settings/bait/:id/remove", "admin"),
  get("/settings/ignore", "analyst"),
  post("/settings/ignore", "admin"),
  post("/settings/ignore/:id/remove", "admin"),
  get("/settings/alerts", "analyst"),
  post("/settings/alerts/channels", "admin"),
  get("/settings/alerts/channels/:id", "analyst"),
  post("/settings/alerts/channels/:id/:verb", "admin"),
  post("/settings/alerts/deliveries/:id/redeliver", "admin"),
  get("/settings/sensors", "analyst"),
  post("/settings/sensors", "admin"),
  get("/settings/sensors/:id", "analyst"),
  post("/settings/sensors/:id/:verb", "admin"),
]

const key = (method: string, path: string) => `${method} ${path}`
const BY_ROUTE = new Map(ROUTE_ROLES.map((r) => [key(r.method, r.path), r.who]))

/** Who may use the route registered as `method` `path`; undefined for a route missing from the table. */
export const whoMayUse = (method: string, path: string): Who | undefined => BY_ROUTE.get(key(method, path))

const RANK: Readonly<Record<Role, number>> = { viewer: 0, analyst: 1, admin: 2 }

/** Whether a signed-in user of `role` may use a route for `who`. */
export const mayUse = (role: Role, who: Who): boolean => who === "public" || RANK[role] >= RANK[who]

/**
 * The routes registered and the table, compared: each route registered but not in the table, each listed in the
 * table but not registered, each in the table more than once. Empty when they agree.
 */
export const tableMismatches = (registered: ReadonlyArray<{ readonly method: string; readonly path: string }>) => {
  const listed = new Map<string, number>()
  for (const r of ROUTE_ROLES) listed.set(key(r.method, r.path), (listed.get(key(r.method, r.path)) ?? 0) + 1)
  const routes = new Set(registered.map((r) => key(r.method, r.path)))
  return [
    ...[...routes].filter((k) => !listed.has(k)).map((k) => `${k}: registered but not in the role table`),
    ...[...listed.keys()].filter((k) => !routes.has(k)).map((k) => `${k}: in the role table but not registered`),
    ...[...listed].filter(([, n]) => n > 1).map(([k]) => `${k}: in the role table more than once`),
  ]
}
