import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { DEVICE_COOKIE, prepareSignIn, SignIn } from "../../admin/SignIn.ts"
import { AppConfig } from "../../platform/config.ts"
import { FORM_COOKIE, formCookie } from "../csrf.ts"
import { formFields, html, isCrossSite, safeNext, seeOther, tokensEqual } from "../http.ts"
import { HTTPS_REQUIRED_TEXT, HTTPS_REQUIRED_TITLE, httpsRequired } from "../httpsRequired.ts"
import type { Kit } from "../kit.ts"
import { MessagePage, SetPasswordPage, SignInPage } from "../pages/auth.tsx"
import { forbidden, linkExpired } from "../responses.tsx"
import { cookieOptions, deviceCookieOptions, query, request, SESSION_COOKIE } from "../session.ts"

/** Sign-in, sign-out and the set-password link (D26, D27); the sign-in and set-password forms carry FORM_COOKIE. */
export const authRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const signIn = yield* SignIn
    const { ipOf, action } = kit
    const appOrigin = new URL(config.appUrl).origin
    prepareSignIn()
    return HttpRouter.empty.pipe(
      // --- Sign-in and sign-out (D27) ---------------------------------------------------------------------------------
      HttpRouter.get(
        "/sign-in",
        Effect.gen(function* () {
          const params = yield* query
          const token = formCookie()
          const done = params.get("done") === "password"
          return yield* HttpServerResponse.setCookie(
            html(
              <SignInPage
                next={safeNext(params.get("next") ?? undefined)}
                csrf={token}
                error={params.get("expired") === "1" ? "Your session has ended. Sign in again." : undefined}
                notice={done ? "Your password is set. Sign in with it." : undefined}
              />,
            ),
            FORM_COOKIE,
            token,
            cookieOptions,
          )
        }),
      ),
      HttpRouter.post(
        "/sign-in",
        Effect.gen(function* () {
          const req = yield* request
          if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
          const form = yield* formFields
          const next = safeNext(form.next)
          const again = (status: number, error: string, headers: Record<string, string> = {}) => {
            const token = formCookie()
            return HttpServerResponse.setCookie(
              html(<SignInPage next={next} csrf={token} error={error} email={form.email ?? ""} />, status, headers),
              FORM_COOKIE,
              token,
              cookieOptions,
            )
          }
          if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE])) {
            // No form cookie at all over plain HTTP on a non-local host: the browser dropped it (Secure), not expired.
            const facts = {
              tls: Option.isSome(config.consoleTls),
              peer: Option.getOrUndefined(req.remoteAddress),
              headers: req.headers,
              trustProxy: config.trustProxy,
            }
            if (req.cookies[FORM_COOKIE] === undefined && httpsRequired(facts)) {
              return html(<MessagePage title={HTTPS_REQUIRED_TITLE} text={HTTPS_REQUIRED_TEXT} />, 403)
            }
            return yield* again(403, "The sign-in form expired. Please try again.")
          }
          const result = yield* signIn.signIn(
            form.email ?? "",
            form.password ?? "",
            ipOf(req),
            req.cookies[SESSION_COOKIE],
            req.cookies[DEVICE_COOKIE],
          )
          if (result._tag === "Throttled") {
            return yield* again(
              429,
              `Too many failed sign-ins. Try again in ${Math.ceil(result.retryAfterSeconds / 60)} minute(s).`,
              { "retry-after": String(result.retryAfterSeconds) },
            )
          }
          if (result._tag === "Refused") return yield* again(401, "Wrong email or password.")
          return yield* seeOther(next).pipe(
            HttpServerResponse.setCookie(SESSION_COOKIE, result.token, { ...cookieOptions, maxAge: "7 days" }),
            Effect.flatMap(HttpServerResponse.setCookie(DEVICE_COOKIE, result.device, deviceCookieOptions)),
            Effect.flatMap(HttpServerResponse.expireCookie(FORM_COOKIE, { path: "/", secure: true })),
          )
        }),
      ),
      HttpRouter.post(
        "/sign-out",
        action(
          (s) =>
            Effect.zipRight(
              signIn.signOut({ token: s.token, userId: s.userId, orgId: s.orgId, ip: s.actor.ip }),
              HttpServerResponse.expireCookie(seeOther("/sign-in"), SESSION_COOKIE, { path: "/", secure: true }),
            ),
          false,
        ),
      ),
      HttpRouter.get(
        "/set-password/:token",
        Effect.gen(function* () {
          const { token } = yield* HttpRouter.params
          const state = token === undefined ? "unknown" : yield* signIn.linkState(token)
          if (state !== "valid") return linkExpired()
          const csrf = formCookie()
          return yield* HttpServerResponse.setCookie(
            html(<SetPasswordPage token={token as string} csrf={csrf} />),
            FORM_COOKIE,
            csrf,
            cookieOptions,
          )
        }),
      ),
      HttpRouter.post(
        "/set-password/:token",
        Effect.gen(function* () {
          const req = yield* request
          if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
          const { token } = yield* HttpRouter.params
          const form = yield* formFields
          if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE]) || token === undefined) {
            return forbidden("This form has expired. Open the link again.")
          }
          return yield* signIn.setPassword(token, form.password ?? "", ipOf(req)).pipe(
            Effect.flatMap((done) =>
              HttpServerResponse.setCookie(
                seeOther("/sign-in?done=password"),
                DEVICE_COOKIE,
                done.device,
                deviceCookieOptions,
              ),
            ),
            Effect.catchTag("LinkExpired", () => Effect.succeed(linkExpired())),
            Effect.catchTag("Invalid", (e) => {
              const csrf = formCookie()
              return HttpServerResponse.setCookie(
                html(<SetPasswordPage token={token} csrf={csrf} error={e.message} />, 400),
                FORM_COOKIE,
                csrf,
                cookieOptions,
              )
            }),
          )
        }),
      ),
    )
  })
