import { randomBytes } from "node:crypto"
import type { HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AdminActor } from "../admin/actor.ts"
import { AppConfig } from "../platform/config.ts"
import { formFields, isCrossSite, seeOther, tokensEqual } from "./http.ts"
import { forbidden, sessionExpired } from "./responses.tsx"
import { ENROL_PATH, enrolmentAllows, request, roleRefusal, type Sessions, type SignedIn } from "./session.ts"

/** Sign-in and set-password forms have no session yet: a double-submit token in its own cookie (login CSRF). */
export const FORM_COOKIE = "__Host-form"
export const formCookie = () => randomBytes(24).toString("base64url")

/**
 * The guard of every state change (a POST form with a CSRF token). Cross-site requests are refused before anything
 * runs; then the session, its CSRF token (constant time), the role (the role table, routeRoles.ts); the handler, run
 * with the session's user as the AdminActor, answers with a 303.
 */
export const makeAction = (sessions: Sessions) =>
  Effect.map(AppConfig, (config) => {
    const appOrigin = new URL(config.appUrl).origin
    return <E, R>(
      run: (s: SignedIn, form: Record<string, string>) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    ) =>
      Effect.gen(function* () {
        const req = yield* request
        if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
        const session = yield* sessions.currentSession
        if (Option.isNone(session)) return sessionExpired()
        const form = yield* formFields
        if (!tokensEqual(form.csrf, session.value.csrfToken)) {
          return forbidden("This form has expired. Reload the page and try again.", session.value.viewer)
        }
        if (!(yield* enrolmentAllows(session.value))) return seeOther(ENROL_PATH)
        const refusal = yield* roleRefusal(session.value, true)
        if (refusal !== undefined) return forbidden(refusal, session.value.viewer)
        return yield* Effect.provideService(run(session.value, form), AdminActor, session.value.actor)
      })
  })
