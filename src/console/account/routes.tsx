import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { SignIn } from "../../admin/SignIn.ts"
import { TwoFactor } from "../../admin/TwoFactor.ts"
import { html, seeOther } from "../http.ts"
import type { Kit } from "../kit.ts"
import { notFound } from "../responses.tsx"
import { SESSION_COOKIE } from "../session.ts"
import { SessionsPage } from "./sessionsPage.tsx"
import { RecoveryCodesPage, TwoFactorPage } from "./twoFactorPage.tsx"

/**
 * The signed-in user's own account, whatever their role: their sessions, each of which they can end, or every other
 * one at once. A session id that is not one of the user's own (another user's, an ended one) is the 404 page, and
 * nothing ends.
 */
export const accountRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const signIn = yield* SignIn
    const twoFactor = yield* TwoFactor
    const { page, action, flashTo, readFlash } = kit

    /** Codes on, or the enrolment in progress (a QR code and the key as text, a code to confirm). */
    const showTwoFactor = page((s) =>
      Effect.gen(function* () {
        const enrolment = yield* twoFactor.beginEnrolment({ userId: s.userId, email: s.email })
        return html(
          <TwoFactorPage
            viewer={s.viewer}
            enrolment={enrolment}
            required={yield* twoFactor.required(s.orgId)}
            mustEnrol={s.enrolOnly}
            flash={yield* readFlash(s)}
          />,
        )
      }),
    )

    /** A current code confirms the enrolment: the recovery codes are shown this once (the page is not cached). */
    const confirmTwoFactor = action((s, form) =>
      Effect.gen(function* () {
        const codes = yield* twoFactor.confirmEnrolment(
          { userId: s.userId, orgId: s.orgId, ip: s.actor.ip },
          form.code ?? "",
        )
        if (codes === undefined) {
          return yield* flashTo(s, "/account/two-factor", {
            kind: "error",
            text: "That code is not the current one. Check the time on your device and try the next code.",
          })
        }
        return html(<RecoveryCodesPage viewer={s.viewer} codes={codes} />)
      }),
    )

    /** The user turns codes off with a current code; not while the organization requires them. */
    const disableTwoFactor = action((s, form) =>
      Effect.gen(function* () {
        if (yield* twoFactor.required(s.orgId)) {
          return yield* flashTo(s, "/account/two-factor", {
            kind: "error",
            text: "Your organization requires two-factor codes.",
          })
        }
        const off = yield* twoFactor.disable({ userId: s.userId, orgId: s.orgId, ip: s.actor.ip }, form.code ?? "")
        return yield* flashTo(
          s,
          "/account/two-factor",
          off
            ? { kind: "ok", text: "Two-factor codes are off." }
            : { kind: "error", text: "That code is not right: two-factor codes are still on." },
        )
      }),
    )

    const showSessions = page((s) =>
      Effect.gen(function* () {
        const sessions = (yield* signIn.sessionsOf(s.userId)).map((row) => ({
          id: row.id,
          createdAt: row.createdAt,
          lastSeenAt: row.lastSeenAt,
          ip: row.ip,
          userAgent: row.userAgent,
          current: row.id === s.sessionId,
        }))
        return html(<SessionsPage viewer={s.viewer} sessions={sessions} flash={yield* readFlash(s)} now={new Date()} />)
      }),
    )

    const endSession = action((s) =>
      Effect.gen(function* () {
        const { id = "" } = yield* HttpRouter.params
        const by = { userId: s.userId, orgId: s.orgId, ip: s.actor.ip }
        if (!(yield* signIn.endSession(by, id))) return notFound(s.viewer)
        // Ending the session this request came with is signing out.
        if (id === s.sessionId) {
          return yield* HttpServerResponse.expireCookie(seeOther("/sign-in"), SESSION_COOKIE, {
            path: "/",
            secure: true,
          })
        }
        return yield* flashTo(s, "/account/sessions", { kind: "ok", text: "Session ended." })
      }),
    )

    const endOthers = action((s) =>
      Effect.gen(function* () {
        const ended = yield* signIn.endOtherSessions({
          token: s.token,
          userId: s.userId,
          orgId: s.orgId,
          ip: s.actor.ip,
        })
        return yield* flashTo(s, "/account/sessions", {
          kind: "ok",
          text: ended === 1 ? "1 other session ended." : `${ended} other sessions ended.`,
        })
      }),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/account/two-factor", showTwoFactor),
      HttpRouter.post("/account/two-factor/confirm", confirmTwoFactor),
      HttpRouter.post("/account/two-factor/disable", disableTwoFactor),
      HttpRouter.get("/account/sessions", showSessions),
      HttpRouter.post("/account/sessions/end-others", endOthers),
      HttpRouter.post("/account/sessions/:id/end", endSession),
    )
  })
