import { HttpRouter } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { PROVIDER_CALLBACK_PATH, SignInProviderAdmin } from "../../admin/SignInProviderAdmin.ts"
import { AppConfig } from "../../platform/config.ts"
import { Blank, decodeForm } from "../forms.ts"
import { html } from "../http.ts"
import type { Kit } from "../kit.ts"
import { invalidText } from "../refusals.ts"
import { SignInSettingsPage } from "./signInPage.tsx"

const ProviderForm = Schema.Struct({
  issuer: Blank,
  clientId: Blank,
  clientSecret: Blank,
  domains: Blank,
  roleClaim: Blank,
  defaultRole: Blank,
  passwordSignIn: Blank,
})

/**
 * Settings → Sign-in (administrators only): the organization's OpenID Connect provider, through SignInProviderAdmin
 * (checked against the provider before it is stored; audited without the secret). A refusal comes back on the same
 * page with what was typed, the secret excepted.
 */
export const signInSettingsRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const admin = yield* SignInProviderAdmin
    const { appUrl } = yield* AppConfig
    const { page, action, flashTo, readFlash, refused } = kit

    const render = (
      s: Parameters<Parameters<typeof page>[0]>[0],
      typed: Readonly<Record<string, string>> | undefined,
      flash: Parameters<typeof SignInSettingsPage>[0]["flash"],
      status = 200,
    ) =>
      Effect.gen(function* () {
        const provider = Option.getOrUndefined(yield* admin.get(s.orgId))
        return html(
          <SignInSettingsPage
            viewer={s.viewer}
            flash={flash}
            provider={provider}
            redirectUrl={`${appUrl}${PROVIDER_CALLBACK_PATH}`}
            startUrl={`${appUrl}/sign-in/sso/${s.orgId}`}
            now={new Date()}
            typed={typed}
          />,
          status,
        )
      })

    const show = page((s) => Effect.flatMap(readFlash(s), (flash) => render(s, undefined, flash)))

    const save = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(ProviderForm)(fields)
        const done = yield* admin
          .set(s.orgId, {
            issuer: form.issuer,
            clientId: form.clientId,
            clientSecret: form.clientSecret === "" ? undefined : form.clientSecret,
            domains: form.domains,
            roleClaim: form.roleClaim,
            defaultRole: form.defaultRole,
            passwordSignIn: form.passwordSignIn,
          })
          .pipe(Effect.catchTag("Invalid", (e) => Effect.succeed({ refused: invalidText(e) })))
        if ("refused" in done) {
          const { clientSecret: _secret, ...typed } = form
          return yield* render(s, typed, { kind: "error", text: `Nothing was saved: ${done.refused}` }, 400)
        }
        return yield* flashTo(s, "/settings/sign-in", {
          kind: "ok",
          text: `Saved: people of ${done.allowedDomains.join(", ")} can sign in through ${done.issuer}.`,
        })
      }).pipe(refused(s, "/settings/sign-in")),
    )

    const remove = action((s) =>
      Effect.gen(function* () {
        const done = yield* admin.remove(s.orgId)
        return yield* flashTo(s, "/settings/sign-in", {
          kind: "ok",
          text: done.removed ? "Single sign-on removed: people sign in with passwords." : "There was no provider.",
        })
      }).pipe(refused(s, "/settings/sign-in")),
    )

    return HttpRouter.empty.pipe(
      HttpRouter.get("/settings/sign-in", show),
      HttpRouter.post("/settings/sign-in", save),
      HttpRouter.post("/settings/sign-in/remove", remove),
    )
  })
