import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"
import { EmailConfirmations } from "../../admin/EmailConfirmations.ts"
import { AppConfig } from "../../platform/config.ts"
import type { PendingConfirmation } from "../../repos/EmailRecipientsRepo.ts"
import { FORM_COOKIE, formCookie } from "../csrf.ts"
import { decodeForm, Text } from "../forms.ts"
import { formFields, html, isCrossSite, tokensEqual } from "../http.ts"
import type { Kit } from "../kit.ts"
import { Layout } from "../layout.tsx"
import { forbidden, MessagePage } from "../responses.tsx"
import { cookieOptions, request } from "../session.ts"

/** The confirmation form: its double-submit token (no session: the recipient need not have an account). */
const ConfirmForm = Schema.Struct({ csrf: Text })

const linkGone = () =>
  html(
    <MessagePage
      title="Link expired"
      text="This confirmation link has expired or was already used. Ask the administrator who added you to mail you a new one."
    />,
    410,
  )

/** What the recipient is asked to confirm: their address, the organization and the channel, and one button. */
const ConfirmPage = (props: { token: string; csrf: string; pending: PendingConfirmation }) => (
  <Layout title="Confirm email alerts" section="none">
    <div class="signin panel">
      <h1>Confirm email alerts</h1>
      <p>
        <strong class="mono">{props.pending.address}</strong> was added as a recipient of alerts of{" "}
        <strong>{props.pending.organization}</strong> (channel <span class="mono">{props.pending.channelId}</span>).
      </p>
      <p class="muted">
        Confirm to receive its incident alerts by email. If you did not expect this, ignore it: without a confirmation
        you get nothing more.
      </p>
      <form method="post" action={`/email/confirm/${props.token}`}>
        <input type="hidden" name="csrf" value={props.csrf} />
        <button type="submit">Confirm</button>
      </form>
    </div>
  </Layout>
)

/**
 * The link an email recipient is mailed: GET shows what it confirms, POST (the button) confirms. The link's token is
 * the proof; the form carries FORM_COOKIE as the sign-in form does (no session), and a form from another site is
 * refused. The token never reaches a log line (http.ts redactPath).
 */
export const confirmationRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const confirmations = yield* EmailConfirmations
    const config = yield* AppConfig
    const appOrigin = new URL(config.appUrl).origin
    const { ipOf } = kit

    const show = Effect.gen(function* () {
      const { token = "" } = yield* HttpRouter.params
      const pending = yield* confirmations.pending(token)
      if (pending === undefined) return linkGone()
      const csrf = formCookie()
      return yield* HttpServerResponse.setCookie(
        html(<ConfirmPage token={token} csrf={csrf} pending={pending} />),
        FORM_COOKIE,
        csrf,
        cookieOptions,
      )
    })

    const submit = Effect.gen(function* () {
      const req = yield* request
      if (isCrossSite(req.headers, appOrigin)) return forbidden("This form was sent from another site.")
      const { token = "" } = yield* HttpRouter.params
      const form = yield* Effect.flatMap(formFields, decodeForm(ConfirmForm))
      if (!tokensEqual(form.csrf, req.cookies[FORM_COOKIE]))
        return forbidden("This form has expired. Open the link again.")
      const done = yield* confirmations.confirm(token, ipOf(req))
      if (done === undefined) return linkGone()
      return html(
        <MessagePage
          title="Confirmed"
          text={`${done.address} now receives this channel's alerts. To stop them, ask an administrator of the organization to remove you.`}
        />,
      )
    })

    return HttpRouter.empty.pipe(
      HttpRouter.get("/email/confirm/:token", show),
      HttpRouter.post("/email/confirm/:token", submit),
    )
  })
