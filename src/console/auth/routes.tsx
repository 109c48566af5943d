import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { DEVICE_COOKIE, hashToken, prepareSignIn, SignIn } from "../../admin/SignIn.ts"
import { AppConfig } from "../../platform/config.ts"
import { ConsoleUsersRepo } from "../../repos/ConsoleUsersRepo.ts"
import { FORM_COOKIE, formCookie } from "../csrf.ts"
import { Blank, decodeForm, Text } from "../forms.ts"
import { formFields, html, isCrossSite, safeNext, seeOther, tokensEqual } from "../http.ts"
import type { Kit } from "../kit.ts"
import { invalidText } from "../refusals.ts"
import { forbidden, linkExpired, MessagePage } from "../responses.tsx"
import { cookieOptions, deviceCookieOptions, query, request, SESSION_COOKIE } from "../session.ts"
import { HTTPS_REQUIRED_TEXT, HTTPS_REQUIRED_TITLE, httpsRequired } from "./httpsRequired.ts"
import { SetPasswordPage } from "./setPasswordPage.tsx"
import { SignInPage } from "./signInPage.tsx"

/**
 * After a password is set, the account's email for the sign-in form that follows (so the person signs in to the
 * account the link was for). A cookie, not a query parameter, so the email stays out of URLs and access logs;
 * `__Host-`, HttpOnly, SameSite=Strict, for 10 minutes.
 */
export const SIGNIN_EMAIL_COOKIE = "__Host-signin-email"
const signInEmailCookieOptions = { ...cookieOptions, sameSite: "strict" as const, maxAge: "10 minutes" as const }

/** Sign-in: its form's token (FORM_COOKIE's twin), where to go after it, the email and the password. */
const SignInForm = Schema.Struct({ csrf: Text, next: Text, email: Blank, password: Blank })
/** Set a password from a one-time link: its form's token and the new password. */
const SetPasswordForm = Schema.Struct({ csrf: Text, password: Blank })

/**
 * Sign-in, sign-out and the set-password link: who may use the console, and the sessions they get. The sign-in and
 * set-password forms come before any session, so they carry FORM_COOKIE (a double-submit token) instead.
 */
export const authRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const signIn = yield* SignIn
    const users = yield* ConsoleUsersRepo
    const { ipOf, action } = kit
    const appOrigin = new URL(config.appUrl).origin
    prepareSignIn()

    /** The email of the account a live set-password link is for. */
    const linkEmail = (token: string) =>
      Effect.gen(function* () {
        const link = yield* users.findLink(hashToken(token))
        if (Option.isNone(link)) return undefined
        const user = yield* users.findById(link.value.userId)
        return Option.isSome(user) ? user.value.email : undefined
      })

    const showSignIn = Effect.gen(function* () {
      const params = yield* query
      const token = formCookie()
      const done = params.get("done") === "password"
      const setFor = done ? (yield* request).cookies[SIGNIN_EMAIL_COOKIE] : undefined
      return yield* HttpServerResponse.setCookie(
        html(
          <SignInPage
            next={safeNext(params.get("next") ?? undefined)}
            csrf={token}
            error={params.get("expired") === "1" ? "Your session has ended. Sign in again." : undefined}
            notice={done ? "Your password is set. Sign in with it." : undefined}
            email={setFor ?? ""}
          />,
        ),
        FORM_COOKIE,
        token,
        cookieOptions,
      )
    })

    const submitSignIn = Effect.gen(function* () {
      const req = yield* request
      if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
      const form = yield* Effect.flatMap(formFields, decodeForm(SignInForm))
      const next = safeNext(form.next)
      const again = (status: number, error: string, headers: Record<string, string> = {}) => {
        const token = formCookie()
        return HttpServerResponse.setCookie(
          html(<SignInPage next={next} csrf={token} error={error} email={form.email} />, status, headers),
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
        form.email,
        form.password,
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
        Effect.flatMap(HttpServerResponse.expireCookie(SIGNIN_EMAIL_COOKIE, { path: "/", secure: true })),
      )
    })

    const signOut = action(
      (s) =>
        Effect.zipRight(
          signIn.signOut({ token: s.token, userId: s.userId, orgId: s.orgId, ip: s.actor.ip }),
          HttpServerResponse.expireCookie(seeOther("/sign-in"), SESSION_COOKIE, { path: "/", secure: true }),
        ),
      false,
    )

    const showSetPassword = Effect.gen(function* () {
      const { token } = yield* HttpRouter.params
      const state = token === undefined ? "unknown" : yield* signIn.linkState(token)
      if (state !== "valid" || token === undefined) return linkExpired()
      const csrf = formCookie()
      return yield* HttpServerResponse.setCookie(
        html(<SetPasswordPage token={token} csrf={csrf} email={yield* linkEmail(token)} />),
        FORM_COOKIE,
        csrf,
        cookieOptions,
      )
    })

    const submitSetPassword = Effect.gen(function* () {
      const req = yield* request
      if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
      const { token } = yield* HttpRouter.params
      const form = yield* Effect.flatMap(formFields, decodeForm(SetPasswordForm))
      if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE]) || token === undefined) {
        return forbidden("This form has expired. Open the link again.")
      }
      return yield* signIn.setPassword(token, form.password, ipOf(req)).pipe(
        Effect.flatMap((done) =>
          HttpServerResponse.setCookie(
            seeOther("/sign-in?done=password"),
            DEVICE_COOKIE,
            done.device,
            deviceCookieOptions,
          ).pipe(
            Effect.flatMap(HttpServerResponse.setCookie(SIGNIN_EMAIL_COOKIE, done.email, signInEmailCookieOptions)),
          ),
        ),
        Effect.catchTag("LinkExpired", () => Effect.succeed(linkExpired())),
        Effect.catchTag("Invalid", (e) =>
          Effect.gen(function* () {
            const csrf = formCookie()
            return yield* HttpServerResponse.setCookie(
              html(
                <SetPasswordPage token={token} csrf={csrf} error={invalidText(e)} email={yield* linkEmail(token)} />,
                400,
              ),
              FORM_COOKIE,
              csrf,
              cookieOptions,
            )
          }),
        ),
      )
    })

    return HttpRouter.empty.pipe(
      HttpRouter.get("/sign-in", showSignIn),
      HttpRouter.post("/sign-in", submitSignIn),
      HttpRouter.post("/sign-out", signOut),
      HttpRouter.get("/set-password/:token", showSetPassword),
      HttpRouter.post("/set-password/:token", submitSetPassword),
    )
  })
