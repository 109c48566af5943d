import { HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AdminActor, type AdminActorValue, orgUser } from "../admin/actor.ts"
import { DEVICE_COOKIE_DAYS, SignIn } from "../admin/SignIn.ts"
import type { UserId } from "../domain/ids.ts"
import { AppConfig } from "../platform/config.ts"
import { clientIp } from "../platform/http/clientIp.ts"
import type { SessionRow } from "../repos/ConsoleUsersRepo.ts"
import type { Viewer } from "./components.tsx"
import { seeOther } from "./http.ts"
import { forbidden } from "./responses.tsx"

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

/**
 * Sessions: the client's address, the session of the request's cookie, and `page`, the guard of every page
 * for a signed-in user. The admin services run with the session's user as their AdminActor.
 */
export const makeSessions = Effect.gen(function* () {
  const config = yield* AppConfig
  const signIn = yield* SignIn

  const ipOf = (req: HttpServerRequest.HttpServerRequest) =>
    clientIp(Option.getOrUndefined(req.remoteAddress), req.headers["x-forwarded-for"], config.trustProxy)

  /** The signed-in session; `touch: false` for background reads that must not keep a session alive. */
  const sessionOf = (options: { readonly touch: boolean }) =>
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
  const currentSession = sessionOf({ touch: true })

  /** To sign-in and back here after it; a cookie that no longer opens a session says so on the sign-in page. */
  const toSignIn = Effect.map(request, (req) => {
    const url = new URL(req.url, "http://console")
    const expired = req.cookies[SESSION_COOKIE] !== undefined ? "&expired=1" : ""
    return seeOther(`/sign-in?next=${encodeURIComponent(url.pathname + url.search)}${expired}`)
  })

  /** A page for a signed-in user; otherwise to sign-in, and straight back here after it. */
  const page = <E, R>(
    render: (s: SignedIn) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    adminOnly = false,
  ) =>
    Effect.gen(function* () {
      const session = yield* currentSession
      if (Option.isNone(session)) return yield* toSignIn
      if (adminOnly && session.value.role !== "admin") {
        return forbidden("Only an administrator can do this.", session.value.viewer)
      }
      return yield* Effect.provideService(render(session.value), AdminActor, session.value.actor)
    })

  return { ipOf, sessionOf, currentSession, page } as const
})
export type Sessions = Effect.Effect.Success<typeof makeSessions>
