import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { ProviderSignIn } from "../../admin/ProviderSignIn.ts"
import { DEVICE_COOKIE, hashToken, prepareSignIn, SignIn, type SignInResult } from "../../admin/SignIn.ts"
import { AppConfig } from "../../platform/config.ts"
import { ConsoleUsersRepo } from "../../repos/ConsoleUsersRepo.ts"
import { FORM_COOKIE, formCookie } from "../csrf.ts"
import { Blank, decodeForm, Text } from "../forms.ts"
import { formFields, html, isCrossSite, safeNext, seeOther, tokensEqual, toProviderAt } from "../http.ts"
import type { Kit } from "../kit.ts"
import { invalidText } from "../refusals.ts"
import { forbidden, linkExpired, MessagePage } from "../responses.tsx"
import { cookieOptions, deviceCookieOptions, ENROL_PATH, query, request, SESSION_COOKIE } from "../session.ts"
import { CodePage } from "./codePage.tsx"
import { HTTPS_REQUIRED_TEXT, HTTPS_REQUIRED_TITLE, httpsRequired } from "./httpsRequired.ts"
import { SetPasswordPage } from "./setPasswordPage.tsx"
import { SignInPage, ToProviderPage } from "./signInPage.tsx"

/**
 * After a password is set, the account's email for the sign-in form that follows (so the person signs in to the
 * account the link was for). A cookie, not a query parameter, so the email stays out of URLs and access logs;
 * `__Host-`, HttpOnly, SameSite=Strict, for 10 minutes.
 */
export const SIGNIN_EMAIL_COOKIE = "__Host-signin-email"
const signInEmailCookieOptions = { ...cookieOptions, sameSite: "strict" as const, maxAge: "10 minutes" as const }

/**
 * Between a right password and the two-factor code: the pending sign-in's token (SignIn.signInWithCode), bound to
 * the user and this browser. `__Host-`, HttpOnly, SameSite=Strict, for 5 minutes.
 */
export const PENDING_COOKIE = "__Host-signin-pending"
const pendingCookieOptions = { ...cookieOptions, sameSite: "strict" as const, maxAge: "5 minutes" as const }

/**
 * A sign-in at the organization's provider: the state the provider must bring back, and where to go after it,
 * as `<state>.<next, base64url>`. `__Host-`, HttpOnly, SameSite=Lax (the provider's redirect back is a cross-site
 * navigation, which must bring it), for 10 minutes.
 */
export const PROVIDER_STATE_COOKIE = "__Host-sso-state"
const providerStateCookieOptions = { ...cookieOptions, sameSite: "lax" as const, maxAge: "10 minutes" as const }

/** The single sign-on form: its token, where to go after it, and the work email whose domain finds the provider. */
const SsoForm = Schema.Struct({ csrf: Text, next: Text, email: Blank })

/** The second step: its form's token, where to go after it, and the code (TOTP or recovery). */
const CodeForm = Schema.Struct({ csrf: Text, next: Text, code: Blank })

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
    const providerSignIn = yield* ProviderSignIn
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
        req.headers["user-agent"],
      )
      if (result._tag === "Throttled") {
        return yield* again(
          429,
          `Too many failed sign-ins. Try again in ${Math.ceil(result.retryAfterSeconds / 60)} minute(s).`,
          { "retry-after": String(result.retryAfterSeconds) },
        )
      }
      if (result._tag === "Refused" || result._tag === "PendingExpired") {
        return yield* again(401, "Wrong email or password.")
      }
      if (result._tag === "PasswordOff") {
        return yield* again(
          403,
          "Your organization signs in through its own provider, not with passwords: use single sign-on below.",
        )
      }
      if (result._tag === "CodeNeeded") {
        return yield* HttpServerResponse.setCookie(
          seeOther(`/sign-in/code?next=${encodeURIComponent(next)}`),
          PENDING_COOKIE,
          result.pending,
          pendingCookieOptions,
        )
      }
      return yield* signedIn(result, next)
    })

    /** The session's cookies, and on to `next` (or to enrolment, for a user who must set up two-factor codes). */
    const signedIn = (result: Extract<SignInResult, { _tag: "SignedIn" }>, next: string) =>
      seeOther(result.enrolOnly ? ENROL_PATH : next).pipe(
        HttpServerResponse.setCookie(SESSION_COOKIE, result.token, { ...cookieOptions, maxAge: "7 days" }),
        Effect.flatMap(HttpServerResponse.setCookie(DEVICE_COOKIE, result.device, deviceCookieOptions)),
        Effect.flatMap(HttpServerResponse.expireCookie(FORM_COOKIE, { path: "/", secure: true })),
        Effect.flatMap(HttpServerResponse.expireCookie(SIGNIN_EMAIL_COOKIE, { path: "/", secure: true })),
        Effect.flatMap(HttpServerResponse.expireCookie(PENDING_COOKIE, { path: "/", secure: true })),
      )

    /** The code step's form, while this browser has a pending sign-in; otherwise the sign-in form. */
    const showCode = Effect.gen(function* () {
      const params = yield* query
      const next = safeNext(params.get("next") ?? undefined)
      if ((yield* request).cookies[PENDING_COOKIE] === undefined) return seeOther("/sign-in")
      const token = formCookie()
      return yield* HttpServerResponse.setCookie(
        html(<CodePage next={next} csrf={token} />),
        FORM_COOKIE,
        token,
        cookieOptions,
      )
    })

    const submitCode = Effect.gen(function* () {
      const req = yield* request
      if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
      const form = yield* Effect.flatMap(formFields, decodeForm(CodeForm))
      const next = safeNext(form.next)
      const again = (status: number, error: string, headers: Record<string, string> = {}) => {
        const token = formCookie()
        return HttpServerResponse.setCookie(
          html(<CodePage next={next} csrf={token} error={error} />, status, headers),
          FORM_COOKIE,
          token,
          cookieOptions,
        )
      }
      if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE])) {
        return yield* again(403, "The form expired. Please try again.")
      }
      const result = yield* signIn.signInWithCode(
        req.cookies[PENDING_COOKIE] ?? "",
        form.code,
        ipOf(req),
        req.cookies[SESSION_COOKIE],
        req.cookies[DEVICE_COOKIE],
        req.headers["user-agent"],
      )
      switch (result._tag) {
        case "SignedIn":
          return yield* signedIn(result, next)
        case "Throttled":
          return yield* again(
            429,
            `Too many failed sign-ins. Try again in ${Math.ceil(result.retryAfterSeconds / 60)} minute(s).`,
            { "retry-after": String(result.retryAfterSeconds) },
          )
        case "Refused":
          return yield* again(401, "Wrong code.")
        default:
          return yield* HttpServerResponse.expireCookie(
            seeOther(`/sign-in?next=${encodeURIComponent(next)}&expired=1`),
            PENDING_COOKIE,
            { path: "/", secure: true },
          )
      }
    })

    /** To the provider, keeping the state (and where to go after) in this browser. */
    const toProvider = (by: { readonly org: string } | { readonly email: string }, next: string, email = "") =>
      Effect.gen(function* () {
        const started = yield* providerSignIn.start(by)
        if (started._tag === "Redirect") {
          const value = `${started.state}.${Buffer.from(next).toString("base64url")}`
          // A form's POST may not redirect to another site (CSP form-action): it gets the page that moves on.
          const answer = "email" in by ? html(<ToProviderPage url={started.url} />) : toProviderAt(started.url)
          return yield* HttpServerResponse.setCookie(answer, PROVIDER_STATE_COOKIE, value, providerStateCookieOptions)
        }
        const ssoError =
          started._tag === "NoProvider"
            ? "email" in by
              ? "No organization signs in with single sign-on for that email domain. Sign in with your password."
              : "This organization has no single sign-on."
            : `Your organization's sign-in provider cannot be used right now (${started.reason}). Try again later, or sign in with your password if your organization allows it.`
        const token = formCookie()
        return yield* HttpServerResponse.setCookie(
          html(
            <SignInPage next={next} csrf={token} email={email} ssoError={ssoError} />,
            started._tag === "NoProvider" ? 404 : 502,
          ),
          FORM_COOKIE,
          token,
          cookieOptions,
        )
      })

    const submitSso = Effect.gen(function* () {
      const req = yield* request
      if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
      const form = yield* Effect.flatMap(formFields, decodeForm(SsoForm))
      const next = safeNext(form.next)
      if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE])) {
        const token = formCookie()
        return yield* HttpServerResponse.setCookie(
          html(<SignInPage next={next} csrf={token} ssoError="The sign-in form expired. Please try again." />, 403),
          FORM_COOKIE,
          token,
          cookieOptions,
        )
      }
      return yield* toProvider({ email: form.email }, next, form.email)
    })

    /** An organization's own start link (a tile in the provider's app list). */
    const startSso = Effect.gen(function* () {
      const { org } = yield* HttpRouter.params
      const params = yield* query
      return yield* toProvider({ org: org ?? "" }, safeNext(params.get("next") ?? undefined))
    })

    /** The provider's return: a session, or a page that says why not. */
    const ssoCallback = Effect.gen(function* () {
      const req = yield* request
      const [cookieState, nextText] = (req.cookies[PROVIDER_STATE_COOKIE] ?? "").split(".")
      const search = req.url.includes("?") ? req.url.slice(req.url.indexOf("?") + 1) : ""
      const result = yield* providerSignIn.finish(
        search.slice(0, 8192),
        cookieState === "" ? undefined : cookieState,
        ipOf(req),
        req.cookies[SESSION_COOKIE],
        req.headers["user-agent"],
      )
      const clear = HttpServerResponse.expireCookie(PROVIDER_STATE_COOKIE, { path: "/", secure: true })
      if (result._tag === "Refused") {
        // An answer without a state is malformed (400); any other refusal is a refusal (403).
        const status = new URLSearchParams(search).get("state") ? 403 : 400
        return yield* clear(
          html(
            <MessagePage
              title="Sign-in refused"
              text={`Your organization's sign-in provider did not sign you in here: ${result.reason}. Start again from the sign-in page; if it keeps happening, tell your administrator (the audit trail has the details).`}
              link={{ href: "/sign-in", label: "Back to sign-in" }}
            />,
            status,
          ),
        )
      }
      let next = "/"
      try {
        next = safeNext(Buffer.from(nextText ?? "", "base64url").toString("utf8"))
      } catch {}
      return yield* Effect.flatMap(signedIn(result, next), clear)
    })

    const signOut = action((s) =>
      Effect.zipRight(
        signIn.signOut({ token: s.token, userId: s.userId, orgId: s.orgId, ip: s.actor.ip }),
        HttpServerResponse.expireCookie(seeOther("/sign-in"), SESSION_COOKIE, { path: "/", secure: true }),
      ),
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
      HttpRouter.get("/sign-in/code", showCode),
      HttpRouter.post("/sign-in/code", submitCode),
      HttpRouter.post("/sign-in/sso", submitSso),
      HttpRouter.get("/sign-in/sso/callback", ssoCallback),
      HttpRouter.get("/sign-in/sso/:org", startSso),
      HttpRouter.post("/sign-out", signOut),
      HttpRouter.get("/set-password/:token", showSetPassword),
      HttpRouter.post("/set-password/:token", submitSetPassword),
    )
  })
