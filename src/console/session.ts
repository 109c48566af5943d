import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AdminActor, type AdminActorValue, orgUser } from "../admin/actor.ts"
import { DEVICE_COOKIE_DAYS, SignIn } from "../admin/SignIn.ts"
import type { UserId } from "../domain/ids.ts"
import { AppConfig } from "../platform/config.ts"
import { clientIp } from "../platform/http/clientIp.ts"
import type { SessionRow } from "../repos/ConsoleUsersRepo.ts"
import type { Viewer } from "./components.tsx"
import { seeOther } from "./http.ts"
import { NO_SETTINGS_TEXT, READ_ONLY_TEXT } from "./refusals.ts"
import { forbidden } from "./responses.tsx"
import { mayUse, type Who, whoMayUse } from "./routeRoles.ts"

/** The session cookie; `__Host-` binds it to this host, Secure, Path=/ and no Domain. */
export const SESSION_COOKIE = "__Host-session"
export const cookieOptions = { httpOnly: true, secure: true, sameSite: "lax" as const, path: "/" }
/** The known-device cookie (SignIn.ts DEVICE_COOKIE), sent only with this site's own requests. */
export const deviceCookieOptions = {
  httpOnly: true,
  secure: true,
  sameSite: "strict" as const,
  path: "/",
  maxAge: `${DEVICE_COOKIE_DAYS} days` as const,
}

/** A signed-in session as the routes see it. */
export interface SignedIn extends SessionRow {
  readonly token: string
  readonly viewer: Viewer & { readonly userId: UserId }
  /** The acting user the admin services check (their organization and role). */
  readonly actor: AdminActorValue
}

export const request = HttpServerRequest.HttpServerRequest
export const query = Effect.map(request, (req) => new URL(req.url, "http://console").searchParams)

/** Who may use the route being answered, from the role table (routeRoles.ts); undefined for a route not in it. */
export const routeWho = Effect.map(HttpRouter.RouteContext, (context): Who | undefined =>
  whoMayUse(context.route.method, context.route.path),
)

/** Where a session that must enrol in two-factor codes first is sent, and what it may reach: enrolment, sign-out. */
export const ENROL_PATH = "/account/two-factor"
const OPEN_WHILE_ENROLLING = new Set(["GET /account/two-factor", "POST /account/two-factor/confirm", "POST /sign-out"])

/** Whether this session may use the route being answered: every route, unless it must enrol first. */
export const enrolmentAllows = (session: SignedIn) =>
  Effect.map(
    HttpRouter.RouteContext,
    (context) => !session.enrolOnly || OPEN_WHILE_ENROLLING.has(`${context.route.method} ${context.route.path}`),
  )

/**
 * Why the signed-in user may not use this route (the 403 page's text), or undefined when they may. A route missing
 * from the table is refused to everyone (app.ts logs each at start-up).
 */
export const roleRefusal = (
  session: SignedIn,
  change: boolean,
): Effect.Effect<string | undefined, never, HttpRouter.RouteContext> =>
  Effect.gen(function* () {
    const who = yield* routeWho
    if (who === undefined) {
      yield* Effect.logError("console route missing from the role table")
      return "This page is not open to anyone."
    }
    if (mayUse(session.role, who)) return undefined
    if (who === "admin")
      return change ? "Only an administrator can change settings." : "Only an administrator can do this."
    const context = yield* HttpRouter.RouteContext
    return !change && context.route.path.startsWith("/settings") ? NO_SETTINGS_TEXT : READ_ONLY_TEXT
  })

/**
 * Sessions: the client's address, the session of the request's cookie, and `page`, the guard of every page
 * for a signed-in user. The admin services run with the session's user as their AdminActor.
 */
export const makeSessions = Effect.gen(function* () {
  const config = yield* AppConfig
  const signIn = yield* SignIn

  const ipOf = (req: HttpServerRequest.HttpServerRequest) =>
    clientIp(Option.getOrUndefined(req.remoteAddress), req.headers["x-forwarded-for"], config.trustProxy)

  /**
   * The signed-in session, one that must enrol in two-factor codes first included (the guards below send it to
   * enrolment).
   */
  const anySessionOf = (options: { readonly touch: boolean }) =>
    Effect.gen(function* () {
      const req = yield* request
      const token = req.cookies[SESSION_COOKIE]
      if (token === undefined) return Option.none<SignedIn>()
      const found = yield* signIn.session(token, options)
      return Option.map(
        found,
        (s): SignedIn => ({
          ...s,
          token,
          viewer: { email: s.email, role: s.role, csrfToken: s.csrfToken, userId: s.userId },
          actor: orgUser({ id: s.userId, ip: ipOf(req), orgId: s.orgId, role: s.role }),
        }),
      )
    })
  const currentSession = anySessionOf({ touch: true })
  /**
   * The signed-in session for a read outside the guards (a tab's background poll); `touch: false` for those that
   * must not keep a session alive. A session that must enrol first is none.
   */
  const sessionOf = (options: { readonly touch: boolean }) =>
    Effect.map(
      anySessionOf(options),
      Option.filter((s) => !s.enrolOnly),
    )

  /** To sign-in and back here after it; a cookie that no longer opens a session says so on the sign-in page. */
  const toSignIn = Effect.map(request, (req) => {
    const url = new URL(req.url, "http://console")
    const expired = req.cookies[SESSION_COOKIE] !== undefined ? "&expired=1" : ""
    return seeOther(`/sign-in?next=${encodeURIComponent(url.pathname + url.search)}${expired}`)
  })

  /**
   * A page for a signed-in user whose role the role table allows (routeRoles.ts); another role gets the 403 page
   * saying why. No session: to sign-in, and straight back here after it.
   */
  const page = <E, R>(render: (s: SignedIn) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function* () {
      const session = yield* currentSession
      if (Option.isNone(session)) return yield* toSignIn
      if (!(yield* enrolmentAllows(session.value))) return seeOther(ENROL_PATH)
      const refusal = yield* roleRefusal(session.value, false)
      if (refusal !== undefined) return forbidden(refusal, session.value.viewer)
      return yield* Effect.provideService(render(session.value), AdminActor, session.value.actor)
    })

  return { ipOf, sessionOf, currentSession, page } as const
})
export type Sessions = Effect.Effect.Success<typeof makeSessions>
