import { HttpRouter } from "@effect/platform"
import { Effect, Schema } from "effect"
import { ApiKeyAdmin } from "../../admin/ApiKeyAdmin.ts"
import { OrgAdmin } from "../../admin/OrgAdmin.ts"
import { TwoFactor } from "../../admin/TwoFactor.ts"
import { UserAdmin } from "../../admin/UserAdmin.ts"
import { AppConfig } from "../../platform/config.ts"
import { AuditRepo } from "../../repos/AuditRepo.ts"
import { Blank, decodeForm, Text } from "../forms.ts"
import { formEntries, html, seeOther } from "../http.ts"
import type { Kit } from "../kit.ts"
import { PAGE_SIZE } from "../listFilters.ts"
import { notFound } from "../responses.tsx"
import { query } from "../session.ts"
import { ApiSettingsPage, RevokeKeyPage } from "./apiPage.tsx"
import { AuditPage } from "./auditPage.tsx"
import { judgementRoutes } from "./judgementRoutes.tsx"
import { RetentionPage } from "./retentionPage.tsx"
import { signInSettingsRoutes } from "./signInRoutes.tsx"
import { UsersPage } from "./usersPage.tsx"

/** A key's last day, as the date field sends it, is valid to its end (UTC); empty: the key does not expire. */
const EndOfDay = Schema.transform(Schema.UndefinedOr(Schema.String), Schema.UndefinedOr(Schema.String), {
  strict: true,
  decode: (day) => (day ? `${day}T23:59:59.999Z` : undefined),
  encode: (time) => time?.slice(0, 10),
})
/** Create an API key: its name, its scopes (one checkbox each) and its last day. */
const ApiKeyForm = Schema.Struct({ name: Text, scope: Schema.Array(Schema.String), expires: EndOfDay })
const UserForm = Schema.Struct({ email: Blank, role: Blank })
const RetentionForm = Schema.Struct({ days: Text })
const TlpForm = Schema.Struct({ tlp: Blank })
const TwoFactorRequirementForm = Schema.Struct({ state: Blank })

/**
 * The Settings area: API and export (keys), Users, Retention and the Audit log here, every change through the admin
 * services (audited); Networks and Bait credentials in judgementRoutes.tsx. Alerts, Sensors and Ignore rules are
 * settings tabs with areas of their own.
 */
export const settingsRoutes = (kit: Kit) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const keyAdmin = yield* ApiKeyAdmin
    const userAdmin = yield* UserAdmin
    const orgAdmin = yield* OrgAdmin
    const twoFactor = yield* TwoFactor
    const audit = yield* AuditRepo
    const { page, action, flashTo, readFlash, refused } = kit
    const apiUrl = config.baseUrl ?? `http://localhost:${config.port}`

    // --- API and export ---------------------------------------------------------------------------------------------

    const showApi = page((s) =>
      Effect.gen(function* () {
        const keys = yield* keyAdmin.list(s.orgId)
        const org = yield* orgAdmin.require(s.orgId)
        return html(
          <ApiSettingsPage
            viewer={s.viewer}
            keys={keys}
            flash={yield* readFlash(s)}
            now={new Date()}
            apiUrl={apiUrl}
            tlp={org.tlp}
          />,
        )
      }),
    )

    const createKey = action((s, fields) =>
      Effect.gen(function* () {
        const scope = (yield* formEntries).filter(([k]) => k === "scope").map(([, v]) => v)
        const form = yield* decodeForm(ApiKeyForm)({ ...fields, scope })
        const created = yield* keyAdmin.create(s.orgId, {
          name: form.name,
          scopes: form.scope.join(","),
          expires: form.expires,
        })
        return yield* flashTo(s, "/settings/api", {
          kind: "ok",
          text: `Key ${created.id} created.`,
          secret: { label: "The new API key.", value: created.key },
        })
      }).pipe(refused(s, "/settings/api")),
    )

    const setTlp = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(TlpForm)(fields)
        const done = yield* orgAdmin.setTlp(s.orgId, form.tlp)
        return yield* flashTo(s, "/settings/api", {
          kind: "ok",
          text: `The TAXII collection's objects are marked TLP:${done.tlp.toUpperCase()}.`,
        })
      }).pipe(refused(s, "/settings/api")),
    )

    const confirmRevokeKey = page((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        const key = (yield* keyAdmin.list(s.orgId)).find((k) => k.id === id && k.revokedAt === null)
        if (key === undefined) return notFound(s.viewer)
        return html(<RevokeKeyPage viewer={s.viewer} key_={key} />)
      }),
    )

    const revokeKey = action((s) =>
      Effect.gen(function* () {
        const { id } = yield* HttpRouter.params
        const done = yield* keyAdmin.revoke(id ?? "")
        return yield* flashTo(s, "/settings/api", { kind: "ok", text: `Key ${done.id} revoked.` })
      }).pipe(refused(s, "/settings/api")),
    )

    // --- Users ------------------------------------------------------------------------------------------------------

    const listUsers = page((s) =>
      Effect.gen(function* () {
        const list = yield* userAdmin.list(s.orgId)
        const enrolled = yield* twoFactor.enrolledIn(s.orgId)
        return html(
          <UsersPage
            viewer={s.viewer}
            users={list.map((u) => ({ ...u, twoFactor: enrolled.has(u.id) }))}
            requireTwoFactor={yield* twoFactor.required(s.orgId)}
            flash={yield* readFlash(s)}
            now={new Date()}
          />,
        )
      }),
    )

    /** Require two-factor codes of every user of the organization, or not (audited). */
    const requireTwoFactor = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(TwoFactorRequirementForm)(fields)
        const done = yield* twoFactor.setRequired(s.orgId, form.state)
        return yield* flashTo(s, "/settings/users", {
          kind: "ok",
          text:
            done.twoFactor === "on"
              ? "Two-factor codes are required: users without them set them up at their next sign-in."
              : "Two-factor codes are no longer required.",
        })
      }).pipe(refused(s, "/settings/users")),
    )

    const createUser = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(UserForm)(fields)
        const created = yield* userAdmin.create({ orgId: s.orgId, email: form.email, role: form.role })
        return yield* flashTo(s, "/settings/users", {
          kind: "ok",
          text: `User ${created.email} created. Send them this link (valid 24 h, once) to set a password.`,
          secret: { label: "Set-password link.", value: created.link },
        })
      }).pipe(refused(s, "/settings/users")),
    )

    /**
     * POST /settings/users/<id>/disable, /reset, /end-sessions or /reset-two-factor; another verb is the 404 page.
     */
    const changeUser = action((s) =>
      Effect.gen(function* () {
        const { id = "", verb } = yield* HttpRouter.params
        if (verb === "disable") {
          yield* userAdmin.disable(id)
          return yield* flashTo(s, "/settings/users", { kind: "ok", text: "User disabled; their sessions ended." })
        }
        if (verb === "end-sessions") {
          const done = yield* userAdmin.endSessions(id)
          return yield* flashTo(s, "/settings/users", {
            kind: "ok",
            text: `${done.ended === 1 ? "1 session" : `${done.ended} sessions`} of ${done.email} ended.`,
          })
        }
        if (verb === "reset-two-factor") {
          const done = yield* twoFactor.reset(id)
          return yield* flashTo(s, "/settings/users", {
            kind: "ok",
            text: `Two-factor codes of ${done.email} reset; their sessions ended.`,
          })
        }
        if (verb === "reset") {
          const reset = yield* userAdmin.reset(id)
          return yield* flashTo(s, "/settings/users", {
            kind: "ok",
            text: `New link for ${reset.email}; their sessions ended.`,
            secret: { label: "Set-password link.", value: reset.link },
          })
        }
        return notFound(s.viewer)
      }).pipe(refused(s, "/settings/users")),
    )

    // --- Retention --------------------------------------------------------------------------------------------------

    const showRetention = page((s) =>
      Effect.gen(function* () {
        const org = yield* orgAdmin.require(s.orgId)
        return html(
          <RetentionPage
            viewer={s.viewer}
            flash={yield* readFlash(s)}
            days={org.retentionDays}
            defaultDays={config.retentionDays}
            feedDays={config.feedRetentionDays}
          />,
        )
      }),
    )

    const setRetention = action((s, fields) =>
      Effect.gen(function* () {
        const form = yield* decodeForm(RetentionForm)(fields)
        const done = yield* orgAdmin.setRetention(s.orgId, form.days)
        return yield* flashTo(s, "/settings/retention", {
          kind: "ok",
          text:
            done.retentionDays === null
              ? `Events are kept for the default ${config.retentionDays} days.`
              : `Events are kept for ${done.retentionDays} days.`,
        })
      }).pipe(refused(s, "/settings/retention")),
    )

    // --- Audit log --------------------------------------------------------------------------------------------------

    const showAudit = page((s) =>
      Effect.gen(function* () {
        const before = (yield* query).get("before") ?? undefined
        const rows = yield* audit.list(s.orgId, PAGE_SIZE + 1, before)
        const shown = rows.slice(0, PAGE_SIZE)
        const actors = Object.fromEntries((yield* userAdmin.list(s.orgId)).map((u) => [u.id, u.email]))
        const last = shown[shown.length - 1]
        return html(
          <AuditPage
            viewer={s.viewer}
            rows={shown}
            actors={actors}
            next={rows.length > PAGE_SIZE && last ? `/settings/audit?before=${last.id}` : undefined}
            now={new Date()}
          />,
        )
      }),
    )

    const routes = HttpRouter.empty.pipe(
      HttpRouter.get(
        "/settings",
        page(() => Effect.succeed(seeOther("/settings/api"))),
      ),
      HttpRouter.get("/settings/api", showApi),
      HttpRouter.post("/settings/api/keys", createKey),
      HttpRouter.post("/settings/api/tlp", setTlp),
      HttpRouter.get("/settings/api/keys/:id/revoke", confirmRevokeKey),
      HttpRouter.post("/settings/api/keys/:id/revoke", revokeKey),
      HttpRouter.get("/settings/users", listUsers),
      HttpRouter.post("/settings/users", createUser),
      HttpRouter.post("/settings/users/two-factor", requireTwoFactor),
      HttpRouter.post("/settings/users/:id/:verb", changeUser),
      HttpRouter.get("/settings/retention", showRetention),
      HttpRouter.post("/settings/retention", setRetention),
      HttpRouter.get("/settings/audit", showAudit),
    )
    return HttpRouter.concatAll(routes, yield* judgementRoutes(kit), yield* signInSettingsRoutes(kit))
  })
